import Foundation
import TillCore

extension TransactionReceipt {
    /// The signed inner plist of an iOS 6-style receipt: a flat dictionary of strings.
    ///
    /// ```
    /// {
    /// 	"transaction-id" = "160000408504141";
    /// 	"purchase-date-ms" = "1514048624000";
    /// 	"purchase-date" = "2017-12-23 17:03:44 Etc/GMT";
    /// 	"purchase-date-pst" = "2017-12-23 09:03:44 America/Los_Angeles";
    /// 	"expires-date" = "1516727024000";        (subscriptions; milliseconds, unlike the other `-date` keys)
    /// 	…
    /// }
    /// ```
    ///
    /// Every key is kept as Apple wrote it in ``fields`` (unknown keys too); the typed accessors
    /// read from there and are nil when a key is absent or not in Apple's spelling.
    public struct PurchaseInfo: Sendable, Hashable {
        /// Every key and value, as written.
        public var fields: [String: String]

        public init(fields: [String: String]) {
            self.fields = fields
        }

        /// The raw value of any key.
        public subscript(key: String) -> String? {
            get { fields[key] }
            set { fields[key] = newValue }
        }

        /// The keys this type knows, in the order Apple's documentation lists them.
        public enum Key {
            public static let originalPurchaseDatePST = "original-purchase-date-pst"
            public static let purchaseDateMs = "purchase-date-ms"
            public static let uniqueIdentifier = "unique-identifier"
            public static let originalTransactionId = "original-transaction-id"
            public static let bundleVersion = "bvrs"
            public static let transactionId = "transaction-id"
            public static let quantity = "quantity"
            public static let originalPurchaseDateMs = "original-purchase-date-ms"
            public static let uniqueVendorIdentifier = "unique-vendor-identifier"
            public static let itemId = "item-id"
            public static let versionExternalIdentifier = "version-external-identifier"
            public static let productId = "product-id"
            public static let purchaseDate = "purchase-date"
            public static let originalPurchaseDate = "original-purchase-date"
            public static let bundleId = "bid"
            public static let purchaseDatePST = "purchase-date-pst"
            public static let appItemId = "app-item-id"
            /// Milliseconds since 1970, unlike the other `-date` keys.
            public static let expiresDate = "expires-date"
            public static let expiresDateFormatted = "expires-date-formatted"
            public static let expiresDateFormattedPST = "expires-date-formatted-pst"
            public static let webOrderLineItemId = "web-order-line-item-id"
            public static let isTrialPeriod = "is-trial-period"
            public static let isInIntroOfferPeriod = "is-in-intro-offer-period"

            /// All known keys: the ones every purchase has, then the subscription ones.
            public static let all: [String] = [
                originalPurchaseDatePST, purchaseDateMs, uniqueIdentifier, originalTransactionId, bundleVersion,
                transactionId, quantity, originalPurchaseDateMs, uniqueVendorIdentifier, itemId,
                versionExternalIdentifier, productId, purchaseDate, originalPurchaseDate, bundleId, purchaseDatePST,
                appItemId, expiresDate, expiresDateFormatted, expiresDateFormattedPST, webOrderLineItemId,
                isTrialPeriod, isInIntroOfferPeriod,
            ]
        }

        /// The keys this type does not know, with their values.
        public var additionalFields: [String: String] {
            fields.filter { !Key.all.contains($0.key) }
        }

        public var transactionId: String? { fields[Key.transactionId] }
        public var originalTransactionId: String? { fields[Key.originalTransactionId] }
        public var productId: String? { fields[Key.productId] }
        /// `bid`.
        public var bundleId: String? { fields[Key.bundleId] }
        /// `bvrs`: the app's `CFBundleVersion`.
        public var bundleVersion: String? { fields[Key.bundleVersion] }
        public var quantity: Int? { fields[Key.quantity].flatMap { Self.integer($0, maxDigits: 9) }.map { Int($0) } }
        /// From `purchase-date-ms`.
        public var purchaseDate: Date? { date(Key.purchaseDateMs) }
        /// From `original-purchase-date-ms`.
        public var originalPurchaseDate: Date? { date(Key.originalPurchaseDateMs) }
        /// From `expires-date`, which holds milliseconds.
        public var expiresDate: Date? { date(Key.expiresDate) }
        public var webOrderLineItemId: String? { fields[Key.webOrderLineItemId] }
        public var isTrialPeriod: Bool? { fields[Key.isTrialPeriod].flatMap(Self.boolean) }
        public var isInIntroOfferPeriod: Bool? { fields[Key.isInIntroOfferPeriod].flatMap(Self.boolean) }
        /// The app's Apple ID (`app-item-id`).
        public var appItemId: String? { fields[Key.appItemId] }
        /// The product's Apple ID (`item-id`).
        public var itemId: String? { fields[Key.itemId] }
        /// The device's identifier as Apple knew it (`unique-identifier`).
        public var uniqueIdentifier: String? { fields[Key.uniqueIdentifier] }
        /// The app's `identifierForVendor` (`unique-vendor-identifier`).
        public var uniqueVendorIdentifier: String? { fields[Key.uniqueVendorIdentifier] }
        /// The App Store build identifier (`version-external-identifier`).
        public var versionExternalIdentifier: String? { fields[Key.versionExternalIdentifier] }

        private func date(_ key: String) -> Date? {
            fields[key].flatMap { Self.integer($0, maxDigits: 16) }.map { Date(millisecondsSince1970: $0) }
        }

        /// Apple's unsigned decimal spelling: 1 to `maxDigits` ASCII digits, nothing else.
        static func integer(_ text: String, maxDigits: Int) -> Int64? {
            let utf8 = text.utf8
            guard !utf8.isEmpty, utf8.count <= maxDigits, utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return nil
            }
            return Int64(text)
        }

        /// `true` or `false`.
        static func boolean(_ text: String) -> Bool? {
            switch text {
            case "true": true
            case "false": false
            default: nil
            }
        }
    }
}

extension TransactionReceipt.PurchaseInfo {
    /// The purchase-info the App Store writes for `transaction`, with every key Apple writes.
    ///
    /// Dates are written as milliseconds (`-ms`, and `expires-date`), as `YYYY-MM-DD HH:MM:SS Etc/GMT`
    /// and in Pacific time (`-pst`). The subscription keys (`expires-date*`, `is-trial-period`,
    /// `is-in-intro-offer-period`) are written when the transaction has an expiry date,
    /// `web-order-line-item-id` when it has one. The original purchase date defaults to the purchase date.
    public init(
        transaction: PurchaseTransaction,
        bundleVersion: String,
        itemId: String,
        appItemId: String,
        versionExternalIdentifier: String,
        uniqueIdentifier: String,
        uniqueVendorIdentifier: String,
        additionalFields: [String: String] = [:]
    ) {
        typealias Key = Self.Key
        let purchased = transaction.purchaseDate
        let original = transaction.originalPurchaseDate ?? purchased
        var fields = additionalFields
        fields[Key.originalPurchaseDatePST] = ReceiptDate.formatPacific(original)
        fields[Key.purchaseDateMs] = String(purchased.millisecondsSince1970)
        fields[Key.uniqueIdentifier] = uniqueIdentifier
        fields[Key.originalTransactionId] = transaction.originalTransactionId
        fields[Key.bundleVersion] = bundleVersion
        fields[Key.transactionId] = transaction.transactionId
        fields[Key.quantity] = String(transaction.quantity)
        fields[Key.originalPurchaseDateMs] = String(original.millisecondsSince1970)
        fields[Key.uniqueVendorIdentifier] = uniqueVendorIdentifier
        fields[Key.itemId] = itemId
        fields[Key.versionExternalIdentifier] = versionExternalIdentifier
        fields[Key.productId] = transaction.productId
        fields[Key.purchaseDate] = ReceiptDate.formatGMT(purchased)
        fields[Key.originalPurchaseDate] = ReceiptDate.formatGMT(original)
        fields[Key.bundleId] = transaction.bundleId
        fields[Key.purchaseDatePST] = ReceiptDate.formatPacific(purchased)
        fields[Key.appItemId] = appItemId
        if let expires = transaction.expiresDate {
            fields[Key.expiresDate] = String(expires.millisecondsSince1970)
            fields[Key.expiresDateFormatted] = ReceiptDate.formatGMT(expires)
            fields[Key.expiresDateFormattedPST] = ReceiptDate.formatPacific(expires)
            fields[Key.isTrialPeriod] = String(transaction.isTrialPeriod)
            fields[Key.isInIntroOfferPeriod] = String(transaction.isInIntroOfferPeriod)
        }
        if let webOrderLineItemId = transaction.webOrderLineItemId {
            fields[Key.webOrderLineItemId] = webOrderLineItemId
        }
        self.init(fields: fields)
    }

    /// The plist Apple's layout writes: known keys in ``Key/all`` order, then unknown keys sorted.
    public var plist: OpenStepPlist {
        let known = Key.all.compactMap { key in fields[key].map { OpenStepPlist.Entry(key: key, value: .string($0)) } }
        let unknown = additionalFields.sorted { $0.key < $1.key }.map {
            OpenStepPlist.Entry(key: $0.key, value: .string($0.value))
        }
        return .dictionary(known + unknown)
    }

    /// Reads a purchase-info plist, which must be a dictionary of strings.
    public init(plist: OpenStepPlist) throws(TransactionReceiptError) {
        guard let entries = plist.dictionaryEntries else {
            throw .unexpectedStructure.with("the purchase-info is not a dictionary")
        }
        var fields: [String: String] = [:]
        for entry in entries {
            guard let value = entry.value.stringValue else {
                throw .unexpectedStructure.with("the purchase-info value of \"\(entry.key)\" is not a string")
            }
            fields[entry.key] = value
        }
        self.init(fields: fields)
    }
}
