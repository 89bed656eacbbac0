/// One subscription group of a ``StatusResponse``.
///
/// ```
/// {"subscriptionGroupIdentifier":"sub_group_one","lastTransactions":[…]}
/// ```
public struct SubscriptionGroupIdentifierItem: Codable, Sendable, Hashable {
    public var subscriptionGroupIdentifier: String?
    /// The latest transaction of each subscription chain in the group.
    public var lastTransactions: [LastTransactionsItem]?

    public init(subscriptionGroupIdentifier: String? = nil, lastTransactions: [LastTransactionsItem]? = nil) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.lastTransactions = lastTransactions
    }
}
