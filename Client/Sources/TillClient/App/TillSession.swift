import Foundation
import TillContract
import TillSnapshot

/// What the SwiftUI model needs of a ``PurchaseCoordinator``, whatever its storefront: the model holds one without
/// naming the storefront's type.
protocol PurchaseEngine: Sendable {
    var entitlements: EntitlementStore { get }
    var outbox: Outbox { get }
    var events: AsyncStream<PurchaseEvent> { get }
    func start() async -> LaunchReport
    func offeredProducts() async throws -> OfferedProducts
    func purchase(_ payment: Payment) async throws -> PurchaseOutcome
    func record(_ transaction: StoreVerification<StoreTransaction>) async -> PurchaseOutcome
    func record(_ result: StorePurchaseResult, productId: String) async -> PurchaseOutcome
    func restore() async -> RestoreOutcome
    func reconcile() async -> [PurchaseOutcome]
    func resendOutbox(includingNotDue: Bool) async -> [OutboxDelivery]
    func handleUnfinished() async -> [PurchaseOutcome]
    func retry() async
    func run(every interval: TimeInterval) async
}

extension PurchaseCoordinator: PurchaseEngine {}

/// The SwiftUI model's work, shared by its two faces (``TillModel`` with Observation from iOS 17,
/// ``TillObservableObject`` with Combine before): it drives the coordinator and hands each new ``TillState`` to
/// `publish`.
@MainActor
final class TillSession {
    let engine: any PurchaseEngine
    let configuration: TillModelConfiguration
    let connectivity: (any Connectivity)?
    /// Where each new state goes (the model's observed property).
    var publish: (TillState) -> Void = { _ in }
    private(set) var state = TillState() {
        didSet { publish(state) }
    }
    private var background: [Task<Void, Never>] = []
    private var started = false
    /// The clock, for the staleness timer (a test moves it).
    let now: @Sendable () -> Date

    init(
        engine: any PurchaseEngine,
        configuration: TillModelConfiguration,
        connectivity: (any Connectivity)?,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.engine = engine
        self.configuration = configuration
        self.connectivity = connectivity
        self.now = now
    }

    /// Launch: the stored snapshot, the outbox, unfinished transactions, the products, the store's current
    /// entitlements; then the background work until ``stop()``. A second call does nothing.
    func start() async {
        guard !started else { return }
        started = true
        let report = await engine.start()
        if let outcome = report.transactions.last { state.lastOutcome = outcome }
        await refreshProducts()
        if configuration.reconcilesAtLaunch { _ = await engine.reconcile() }
        await refreshState()
        let engine = self.engine
        let interval = configuration.retryInterval
        background.append(Task { await engine.run(every: interval) })
        background.append(
            Task { [weak self] in
                for await event in engine.events {
                    guard let self else { return }
                    self.state.lastOutcome = event.outcome
                    await self.refreshState()
                }
            }
        )
        if let connectivity {
            background.append(
                Task { [weak self] in
                    var wasOnline = true
                    for await online in connectivity.changes() {
                        guard let self else { return }
                        self.state.isOnline = online
                        if online && !wasOnline { await self.networkBecameAvailable() }
                        wasOnline = online
                    }
                }
            )
        }
        background.append(
            Task { [weak self] in
                // Wakes when the snapshot turns stale, so that views stop granting from it without a refresh.
                while !Task.isCancelled {
                    guard let self else { return }
                    let wait = self.state.staleAfter.map { $0.timeIntervalSince(self.now()) } ?? 3600
                    let seconds = min(max(wait, 0.05), 3600)
                    do { try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000)) } catch { return }
                    self.touch()
                }
            }
        )
    }

    /// Stops the background work.
    func stop() {
        for task in background { task.cancel() }
        background = []
    }

    /// The app is in the foreground again: the outbox is sent, the snapshot refreshed, unfinished transactions
    /// delivered.
    func sceneBecameActive() async {
        guard started else { return }
        _ = await engine.resendOutbox(includingNotDue: true)
        _ = try? await engine.entitlements.refresh()
        _ = await engine.handleUnfinished()
        await refreshState()
    }

    /// The network is back: the outbox is sent and unfinished transactions retried at once.
    func networkBecameAvailable() async {
        _ = await engine.resendOutbox(includingNotDue: true)
        await engine.retry()
        _ = try? await engine.entitlements.refresh()
        await refreshState()
    }

    func purchase(_ payment: Payment) async -> PurchaseOutcome? {
        state.purchaseInProgress = payment.productId
        defer { state.purchaseInProgress = nil }
        do {
            let outcome = try await engine.purchase(payment)
            state.lastOutcome = outcome
            state.lastError = nil
            await refreshState()
            return outcome
        } catch {
            state.lastError = "\(error)"
            return nil
        }
    }

    func record(_ transaction: StoreVerification<StoreTransaction>) async -> PurchaseOutcome {
        let outcome = await engine.record(transaction)
        state.lastOutcome = outcome
        await refreshState()
        return outcome
    }

    func record(_ result: Result<StorePurchaseResult, StoreError>, productId: String) async -> PurchaseOutcome {
        let outcome: PurchaseOutcome
        switch result {
        case .success(let result): outcome = await engine.record(result, productId: productId)
        case .failure(let error): outcome = .refusal(productId: productId, error)
        }
        state.lastOutcome = outcome
        await refreshState()
        return outcome
    }

    func restore() async -> RestoreOutcome {
        let outcome = await engine.restore()
        await refreshState()
        return outcome
    }

    /// The products again (the master list changed, or the store could not be reached before).
    func refreshProducts() async {
        do {
            let offered = try await engine.offeredProducts()
            state.products = offered.products
            state.invalidProductIds = offered.invalidProductIds
        } catch {
            state.lastError = "\(error)"
        }
    }

    /// Reads the snapshot and the outbox into the state.
    func refreshState() async {
        let snapshot = await engine.entitlements.snapshot
        let waiting = await engine.outbox.pending.count
        var next = state
        next.snapshot = snapshot
        next.waitingSubmissions = waiting
        next.staleAfter = snapshot.map { snapshot in
            let issued = Date(timeIntervalSince1970: Double(snapshot.snapshot.issuedAt) / 1000)
            return configuration.maximumOfflineAge.isFinite
                ? issued.addingTimeInterval(configuration.maximumOfflineAge) : .distantFuture
        }
        next.isStale = next.isStale(at: now())
        if next != state { state = next }
    }

    /// Looks at the clock again: the snapshot may have turned stale, and what views compute from the time
    /// (expiry) is read anew.
    func touch() {
        let stale = state.isStale(at: now())
        if stale != state.isStale { state.isStale = stale } else { publish(state) }
    }
}
