/// The states of a payment transaction in the device's payment queue (StoreKit's `SKPaymentTransactionState`).
public enum TransactionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Being processed by the store; the app waits.
    case purchasing
    /// Charged: the app delivers the product and then finishes the transaction.
    case purchased
    /// Not charged (an error, or the user cancelled); the app finishes the transaction.
    case failed
    /// A past purchase brought back by restore; the app delivers it again and finishes the transaction.
    case restored
    /// Waiting for an outside action such as Ask to Buy; the app must not block its UI.
    case deferred

    /// Whether the transaction stays in the queue until the app calls finish.
    public var requiresFinish: Bool {
        switch self {
        case .purchased, .failed, .restored: true
        case .purchasing, .deferred: false
        }
    }

    /// Whether the app should unlock content for this transaction.
    public var grantsContent: Bool { self == .purchased || self == .restored }

    /// Whether the state can still change without the app's doing.
    public var isPending: Bool { self == .purchasing || self == .deferred }

    /// Whether the store may move a transaction from this state to `next`.
    public func canTransition(to next: TransactionState) -> Bool {
        switch (self, next) {
        case (.purchasing, .purchased), (.purchasing, .failed), (.purchasing, .deferred): true
        case (.deferred, .purchased), (.deferred, .failed): true
        default: false
        }
    }
}
