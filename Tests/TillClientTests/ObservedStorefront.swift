import Synchronization
import TillClient

/// A storefront that forwards to another and lets a test look at, or stop, each finish: to check what is true
/// when a transaction is finished, and to play a process killed just before finishing.
struct ObservedStorefront<Base: TillStorefront>: TillStorefront {
    let base: Base
    /// Runs before each finish; throwing stops the finish (the transaction stays in the queue).
    let beforeFinish: @Sendable (StoreTransaction) async throws -> Void
    /// Runs before each payment reaches the store.
    let beforePurchase: @Sendable (Payment) async -> Void
    let finishes = Counter()

    init(
        _ base: Base,
        beforeFinish: @escaping @Sendable (StoreTransaction) async throws -> Void = { _ in },
        beforePurchase: @escaping @Sendable (Payment) async -> Void = { _ in }
    ) {
        self.base = base
        self.beforePurchase = beforePurchase
        self.beforeFinish = beforeFinish
    }

    func canMakePayments() async throws -> Bool { try await base.canMakePayments() }
    func products(_ identifiers: [String]) async throws -> ProductLookup { try await base.products(identifiers) }
    func purchase(_ payment: Payment) async throws -> StorePurchaseResult {
        await beforePurchase(payment)
        return try await base.purchase(payment)
    }
    func unfinishedTransactions() async throws -> [StoreUpdate] { try await base.unfinishedTransactions() }
    func restorePurchases() async throws -> StorefrontRestore { try await base.restorePurchases() }
    func currentEntitlements() async throws -> [StoreVerification<StoreTransaction>] {
        try await base.currentEntitlements()
    }
    func appReceipt() async throws -> String? { try await base.appReceipt() }
    func appTransaction() async throws -> StoreVerification<StoreAppTransaction>? { try await base.appTransaction() }
    func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus] {
        try await base.subscriptionStatuses(groupId: groupId)
    }
    func transactionUpdates() -> AsyncStream<StoreUpdate> { base.transactionUpdates() }

    func finish(_ transaction: StoreTransaction) async throws {
        try await beforeFinish(transaction)
        try await base.finish(transaction)
        finishes.add(transaction.id)
    }
}

/// A thread-safe list of strings.
final class Counter: Sendable {
    private let values = Mutex<[String]>([])
    func add(_ value: String) { values.withLock { $0.append(value) } }
    var all: [String] { values.withLock { $0 } }
    var count: Int { all.count }
}

/// A flag a test flips while something runs.
final class Flag: Sendable {
    private let value: Mutex<Bool>
    init(_ value: Bool = false) { self.value = Mutex(value) }
    func set(_ newValue: Bool) { value.withLock { $0 = newValue } }
    var isSet: Bool { value.withLock { $0 } }
}

/// Simulated process death: what a test throws to stop a step halfway.
struct Killed: Error {}
