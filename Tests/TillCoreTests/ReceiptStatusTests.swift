import Testing
import TillCore

struct ReceiptStatusTests {
    @Test(arguments: [
        (0, ReceiptStatus.Action.valid), (21006, .valid),
        (21000, .fixRequest), (21004, .fixRequest),
        (21002, .retryLater), (21005, .retryLater), (21009, .retryLater),
        (21001, .terminal), (21003, .terminal), (21010, .terminal),
        (21007, .redirect(to: .sandbox)), (21008, .redirect(to: .production)),
    ])
    func eachDocumentedStatusHasItsAction(code: Int, action: ReceiptStatus.Action) {
        #expect(ReceiptStatus(code).action() == action)
        #expect(ReceiptStatus(code).isDocumented)
    }

    @Test func theInternalErrorRangeFollowsIsRetryable() {
        for code in [21100, 21150, 21199] {
            #expect(ReceiptStatus(code).action(isRetryable: true) == .retryLater)
            #expect(ReceiptStatus(code).action(isRetryable: false) == .terminal)
            #expect(ReceiptStatus(code).carriesRetryableFlag)
        }
        #expect(!ReceiptStatus(21099).isDocumented)
        #expect(ReceiptStatus(21099).action() == .retryLater)
        #expect(!ReceiptStatus(21200).carriesRetryableFlag)
    }

    @Test func redirectsPointAtTheOtherEnvironment() {
        #expect(AppStoreEnvironment.production.verifyReceiptCounterpart == .sandbox)
        #expect(AppStoreEnvironment.sandbox.verifyReceiptCounterpart == .production)
        #expect(AppStoreEnvironment.xcode.verifyReceiptCounterpart == nil)
    }
}

struct EnvironmentTests {
    @Test func onlyProductionIsRevenueAndNamesParseLoosely() {
        #expect(AppStoreEnvironment.known.filter(\.isRevenue) == [.production])
        #expect(AppStoreEnvironment(parsing: "sandbox") == .sandbox)
        #expect(AppStoreEnvironment(parsing: "LOCALTESTING") == .localTesting)
        #expect(AppStoreEnvironment(parsing: "Staging") == nil)
        #expect(!AppStoreEnvironment("Staging").isKnown)
        #expect(AppStoreEnvironment.known.filter(\.isLocallySigned) == [.xcode, .localTesting])
    }
}

struct TransactionStateTests {
    @Test func onlyFinalStatesWaitForFinish() {
        #expect(TransactionState.allCases.filter(\.requiresFinish) == [.purchased, .failed, .restored])
        #expect(TransactionState.allCases.filter(\.grantsContent) == [.purchased, .restored])
    }

    @Test func theStoreMovesPurchasingAndDeferredTransactionsOnly() {
        #expect(TransactionState.purchasing.canTransition(to: .deferred))
        #expect(TransactionState.deferred.canTransition(to: .purchased))
        #expect(TransactionState.deferred.canTransition(to: .failed))
        #expect(!TransactionState.purchased.canTransition(to: .failed))
        #expect(!TransactionState.failed.canTransition(to: .purchased))
        #expect(!TransactionState.deferred.canTransition(to: .restored))
    }
}
