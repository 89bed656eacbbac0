import Foundation
import TillContract
import TillSnapshot

/// What a SwiftUI view shows of the customer: entitlements and balances from the verified snapshot, the products
/// on sale, the purchase in progress, and whether the snapshot is too old to be believed offline.
public struct TillState: Sendable, Hashable {
    /// The products to show: the server's master list with the store's localized prices.
    public var products: [OfferedProduct] = []
    /// Master-list products the store does not sell here.
    public var invalidProductIds: [String] = []
    /// The verified snapshot: the only source of entitlements and balances.
    public var snapshot: VerifiedSnapshot?
    /// The product being bought now.
    public var purchaseInProgress: String?
    /// What became of the last purchase, restore or background event.
    public var lastOutcome: PurchaseOutcome?
    /// The last error worth telling the customer (the store or the server unreachable).
    public var lastError: String?
    /// Submissions waiting in the outbox for the server.
    public var waitingSubmissions = 0
    /// Whether the network was there at the last look (assumed until told otherwise).
    public var isOnline = true
    /// When the snapshot stops being believed offline: its signing time plus the model's
    /// ``TillModelConfiguration/maximumOfflineAge``.
    public var staleAfter: Date?
    /// Whether, at the model's last look at the clock, there was no snapshot or it was older than the offline
    /// allowance: entitlements are not granted from it until a fresh one is fetched. The model looks again when it
    /// turns stale.
    public var isStale = true

    public init() {}

    /// Whether the snapshot is stale at `now`.
    public func isStale(at now: Date) -> Bool {
        guard snapshot != nil, let staleAfter else { return true }
        return now >= staleAfter
    }

    /// Whether the customer has `entitlement` now: granted by the verified snapshot, not expired, and the snapshot
    /// not stale.
    public func isActive(_ entitlement: String, at now: Date = Date()) -> Bool {
        guard let snapshot, !isStale, !isStale(at: now) else { return false }
        return snapshot.grants(entitlement, at: now)
    }

    /// Credits of `name` left, from the verified snapshot (what the server held when it signed it).
    public func balance(of name: String) -> Int64 { snapshot?.balance(name) ?? 0 }

    /// Whether the snapshot shows the customer owning `productId` (a non-consumable or subscription bought).
    public func owns(productId: String) -> Bool { snapshot?.owns(productId: productId) ?? false }

    /// The entitlements the snapshot grants now.
    public func activeEntitlements(at now: Date = Date()) -> [String] {
        guard let snapshot, !isStale, !isStale(at: now) else { return [] }
        return snapshot.snapshot.entitlements.map(\.id).filter { snapshot.grants($0, at: now) }
    }
}

/// How the SwiftUI model behaves.
public struct TillModelConfiguration: Sendable, Hashable {
    /// How long a verified snapshot keeps entitlements working without a fresh one (offline): 7 days by default;
    /// `.infinity` for ever.
    public var maximumOfflineAge: TimeInterval
    /// How often the background work runs: due outbox submissions and unfinished transactions.
    public var retryInterval: TimeInterval
    /// Whether launch compares the store's current entitlements with the snapshot and records what the server
    /// lacks (``PurchaseCoordinator/reconcile()``).
    public var reconcilesAtLaunch: Bool

    public init(
        maximumOfflineAge: TimeInterval = 7 * 24 * 3600,
        retryInterval: TimeInterval = 30,
        reconcilesAtLaunch: Bool = true
    ) {
        self.maximumOfflineAge = maximumOfflineAge
        self.retryInterval = retryInterval
        self.reconcilesAtLaunch = reconcilesAtLaunch
    }
}
