import Foundation
import Synchronization
import TillClient
import TillCore

@testable import TillSimulator

/// StoreKit 1 played by a test, behind ``StoreKit1Storefront``: an `SKPaymentQueue` whose payments the simulator's
/// device makes (in process), whose observer hears each transaction as StoreKit reports it (purchasing, then
/// purchased, failed or deferred; restored ones, then the restore's end), and whose receipt is the device's. A test
/// scripts a payment's failure with any `SKError` code, a failing restore, a missing receipt, and Ask to Buy's
/// decision.
final class FakeStoreKit1: StoreKit1Interface, Sendable {
    private struct State {
        var handler: (@Sendable (StoreKit1Event) -> Void)?
        var failNext: (code: Int, message: String)?
        var restoreFailure: (code: Int, message: String)?
        var receiptMissing = false
        var receiptRefreshes = 0
        var added: [StoreKit1Payment] = []
        var finished: [String] = []
        /// Transactions made up by a script (not the simulator's), until finished.
        var scripted: [String: StoreKit1Transaction] = [:]
    }

    let simulator: Simulator
    let deviceId: String
    let bundleId: String
    /// The device's store, for product lookups.
    let store: SimulatorStorefront
    private let state = Mutex(State())

    init(simulator: Simulator, deviceId: String, bundleId: String, store: SimulatorStorefront) {
        self.simulator = simulator
        self.deviceId = deviceId
        self.bundleId = bundleId
        self.store = store
    }

    // MARK: What a test does

    /// The next payment fails with this `SKError` code.
    func failNextPayment(code: Int, message: String = "scripted") {
        state.withLock { $0.failNext = (code, message) }
    }

    func failRestore(code: Int, message: String) { state.withLock { $0.restoreFailure = (code, message) } }
    func removeReceipt() { state.withLock { $0.receiptMissing = true } }
    var receiptRefreshes: Int { state.withLock { $0.receiptRefreshes } }
    var added: [StoreKit1Payment] { state.withLock { $0.added } }
    var finished: [String] { state.withLock { $0.finished } }

    /// A parent decides on an Ask to Buy payment: the queue's observer hears the entry purchased or failed.
    func decide(paymentId: String, approve: Bool) async throws {
        let entry = try await simulator.payments.resolveDeferredPayment(id: paymentId, approve: approve)
        report(.updated([Self.read(entry)]))
    }

    // MARK: StoreKit1Interface

    func canMakePayments() -> Bool { true }

    func observe(_ handler: @escaping @Sendable (StoreKit1Event) -> Void) {
        state.withLock { $0.handler = handler }
    }

    func products(for identifiers: Set<String>) async throws -> ProductLookup {
        try await store.products(identifiers.sorted())
    }

    func add(_ payment: StoreKit1Payment) async throws {
        let failure = state.withLock { state in
            state.added.append(payment)
            defer { state.failNext = nil }
            return state.failNext
        }
        let handle = "scripted-\(UUID().uuidString)"
        var purchasing = StoreKit1Transaction(
            handle: handle,
            state: .purchasing,
            productIdentifier: payment.productIdentifier,
            quantity: payment.quantity,
            applicationUsername: payment.applicationUsername
        )
        report(.updated([purchasing]))
        if let failure {
            purchasing.state = .failed
            purchasing.errorCode = failure.code
            purchasing.errorMessage = failure.message
            state.withLock { $0.scripted[handle] = purchasing }
            report(.updated([purchasing]))
            return
        }
        var offer: PromotionalOfferInput?
        if let discount = payment.paymentDiscount {
            offer = PromotionalOfferInput(
                offerIdentifier: discount.identifier,
                keyIdentifier: discount.keyIdentifier,
                nonce: discount.nonce.uuidString.lowercased(),
                timestamp: discount.timestamp,
                signature: discount.signature
            )
        }
        let entry = try await simulator.payments.addPayment(
            PaymentRequest(
                deviceId: deviceId,
                bundleId: bundleId,
                productId: payment.productIdentifier,
                quantity: payment.quantity,
                applicationUsername: payment.applicationUsername,
                promotionalOffer: offer
            ),
            environment: .sandbox
        )
        var read = Self.read(entry)
        read.applicationUsername = payment.applicationUsername
        report(.updated([read]))
    }

    func transactions() async -> [StoreKit1Transaction] {
        let scripted = state.withLock { Array($0.scripted.values) }
        let queue = try? await simulator.payments.queue(deviceId: deviceId, bundleId: bundleId, environment: .sandbox)
        return (queue ?? []).map(Self.read) + scripted
    }

    func finish(handle: String) async {
        let scripted = state.withLock { state in
            state.finished.append(handle)
            return state.scripted.removeValue(forKey: handle) != nil
        }
        guard !scripted else { return }
        try? await simulator.payments.finish(entryId: handle, deviceId: deviceId, environment: .sandbox)
    }

    func restoreCompletedTransactions(applicationUsername: String?) {
        Task {
            if let failure = state.withLock({ $0.restoreFailure }) {
                report(.restoreFailed(code: failure.code, message: failure.message))
                return
            }
            let result = try await simulator.payments.restore(
                deviceId: deviceId,
                bundleId: bundleId,
                environment: .sandbox
            )
            if result.status == .completed {
                report(.updated(result.transactions.map(Self.read)))
                report(.restoreFinished)
            } else {
                report(.restoreFailed(code: result.error?.code ?? 0, message: result.error?.message ?? ""))
            }
        }
    }

    func appReceipt() async -> Data? {
        guard !state.withLock({ $0.receiptMissing }) else { return nil }
        return (try? await simulator.payments.appReceipt(deviceId: deviceId, bundleId: bundleId, environment: .sandbox))
            .map { Data($0) }
    }

    func refreshReceipt() async throws {
        state.withLock { state in
            state.receiptRefreshes += 1
            state.receiptMissing = false
        }
    }

    // MARK: Inside

    private func report(_ event: StoreKit1Event) {
        state.withLock { $0.handler }?(event)
    }

    /// A queue entry as StoreKit 1 reports its transaction.
    static func read(_ entry: QueueTransaction) -> StoreKit1Transaction {
        let state: StoreKit1Transaction.State =
            switch entry.state {
            case .purchasing: .purchasing
            case .purchased: .purchased
            case .failed: .failed
            case .restored: .restored
            case .deferred: .deferred
            }
        return StoreKit1Transaction(
            handle: entry.id,
            state: state,
            transactionIdentifier: entry.transactionId,
            originalTransactionIdentifier: entry.state == .restored ? entry.originalTransactionId : nil,
            productIdentifier: entry.productId,
            quantity: entry.quantity ?? 1,
            transactionDate: entry.purchaseDate.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            errorCode: entry.error?.code,
            errorMessage: entry.error?.message
        )
    }
}
