/// What a Till server says a customer has, at one moment: the payload of the signed snapshot the server hands
/// to apps (`GET /v1/customers/{id}/snapshot`) and that TillClient keeps on disk.
///
/// The app trusts it only with the server's signature (see `SnapshotVerifier` in TillFormats), so that editing
/// the file cannot grant content or credits. Times are UNIX milliseconds.
public struct EntitlementSnapshot: Codable, Sendable, Hashable {
    /// What a snapshot promises about one entitlement.
    public struct Grant: Codable, Sendable, Hashable {
        public var id: String
        public var productId: String
        /// Nil for entitlements that do not expire (non-consumables, free subscriptions).
        public var expiresDate: Int64?
        /// True until Apple has confirmed the purchase that grants it.
        public var provisional: Bool

        public init(id: String, productId: String, expiresDate: Int64?, provisional: Bool) {
            self.id = id
            self.productId = productId
            self.expiresDate = expiresDate
            self.provisional = provisional
        }
    }

    /// One purchase the server recorded for the customer.
    public struct Purchase: Codable, Sendable, Hashable {
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String
        /// A `ProductType` raw value, or nil when the catalogue did not say.
        public var productType: String?
        public var quantity: Int
        public var purchaseDate: Int64
        public var expiresDate: Int64?
        public var revoked: Bool
        public var confirmed: Bool

        public init(
            transactionId: String,
            originalTransactionId: String,
            productId: String,
            productType: String?,
            quantity: Int,
            purchaseDate: Int64,
            expiresDate: Int64?,
            revoked: Bool,
            confirmed: Bool
        ) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.productType = productType
            self.quantity = quantity
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.revoked = revoked
            self.confirmed = confirmed
        }
    }

    /// The app the snapshot is for.
    public var bundleId: String
    /// The customer id the app asked about.
    public var customerId: String
    /// Who owns the purchases after aliases (a guest's device id resolves to its account).
    public var owner: String
    /// When the server signed it.
    public var issuedAt: Int64
    public var entitlements: [Grant]
    /// Consumable credits left, by credit name.
    public var balances: [String: Int64]
    public var purchases: [Purchase]

    public init(
        bundleId: String,
        customerId: String,
        owner: String,
        issuedAt: Int64,
        entitlements: [Grant],
        balances: [String: Int64],
        purchases: [Purchase]
    ) {
        self.bundleId = bundleId
        self.customerId = customerId
        self.owner = owner
        self.issuedAt = issuedAt
        self.entitlements = entitlements
        self.balances = balances
        self.purchases = purchases
    }

    /// Whether `entitlement` is granted at `now` (an expiring one only until its end).
    public func grants(_ entitlement: String, at now: Int64) -> Bool {
        entitlements.contains { $0.id == entitlement && ($0.expiresDate.map { $0 > now } ?? true) }
    }

    /// The credits of `name` left.
    public func balance(_ name: String) -> Int64 { balances[name] ?? 0 }
}
