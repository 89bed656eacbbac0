import Foundation
import TillCore

/// The payload of an app receipt: the app-level attributes and one entry per in-app purchase.
///
/// ```
/// Payload          ::= SET OF ReceiptAttribute
/// ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }
/// ```
/// Each `value` holds a DER UTF8String, IA5String or INTEGER (raw bytes for types 4 and 5, a nested
/// `Payload` of in-app attributes for type 17). Attributes of types Till does not name are kept in
/// ``otherAttributes``. An empty string means "absent".
public struct AppReceipt: Sendable, Hashable {
    /// 0: `Production`, `ProductionSandbox`, `ProductionVPP`, `ProductionVPPSandbox` or `Xcode`.
    public var receiptType: String?
    /// 1: the app's Apple ID (0 in the sandbox and Xcode).
    public var appItemId: Int64?
    /// 2
    public var bundleId: String?
    /// 3: CFBundleVersion on iOS, CFBundleShortVersionString on macOS.
    public var applicationVersion: String?
    /// 4: the opaque value hashed with the device identifier.
    public var opaqueValue: [UInt8]
    /// 5: SHA-1 of device identifier, opaque value and bundle id attribute.
    public var sha1Hash: [UInt8]
    /// 12
    public var receiptCreationDate: Date?
    /// 15
    public var downloadId: Int64?
    /// 16
    public var versionExternalIdentifier: Int64?
    /// 17, one per purchase, in the receipt's order (which is not chronological).
    public var inAppPurchases: [InAppPurchase]
    /// 18: when the app was first bought (sandbox: always 2013-08-01T07:00:00Z).
    public var originalPurchaseDate: Date?
    /// 19
    public var originalApplicationVersion: String?
    /// 21: volume-purchase receipts only; absent means the receipt does not expire.
    public var expirationDate: Date?
    /// Attributes of other types, kept as they were.
    public var otherAttributes: [ReceiptAttribute]
    /// The version field of the opaque value attribute (2 in App Store receipts, 1 in Xcode's).
    public var opaqueValueVersion: Int

    public init(
        receiptType: String? = nil,
        appItemId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        opaqueValue: [UInt8] = [],
        sha1Hash: [UInt8] = [],
        receiptCreationDate: Date? = nil,
        downloadId: Int64? = nil,
        versionExternalIdentifier: Int64? = nil,
        inAppPurchases: [InAppPurchase] = [],
        originalPurchaseDate: Date? = nil,
        originalApplicationVersion: String? = nil,
        expirationDate: Date? = nil,
        otherAttributes: [ReceiptAttribute] = [],
        opaqueValueVersion: Int = 2
    ) {
        self.receiptType = receiptType
        self.appItemId = appItemId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.opaqueValue = opaqueValue
        self.sha1Hash = sha1Hash
        self.receiptCreationDate = receiptCreationDate
        self.downloadId = downloadId
        self.versionExternalIdentifier = versionExternalIdentifier
        self.inAppPurchases = inAppPurchases
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.expirationDate = expirationDate
        self.otherAttributes = otherAttributes
        self.opaqueValueVersion = opaqueValueVersion
    }

    /// The environment named by the receipt type (an undefined type is kept as its own environment name).
    public var environment: AppStoreEnvironment? {
        receiptType.map { LegacyReceiptType(rawValue: $0).environment ?? AppStoreEnvironment($0) }
    }

    /// The receipt type string Apple writes for an environment.
    public static func receiptType(for environment: AppStoreEnvironment) -> String {
        switch environment {
        case .production: "Production"
        case .sandbox: "ProductionSandbox"
        default: environment.rawValue
        }
    }
}

/// One in-app purchase entry (attribute 17) of an app receipt.
public struct InAppPurchase: Sendable, Hashable {
    /// 1701
    public var quantity: Int
    /// 1702
    public var productId: String
    /// 1703
    public var transactionId: String
    /// 1704
    public var purchaseDate: Date?
    /// 1705
    public var originalTransactionId: String?
    /// 1706
    public var originalPurchaseDate: Date?
    /// 1707: −1 unknown, 0 non-consumable, 1 consumable, 2 non-renewing, 3 auto-renewable (undocumented).
    public var productTypeCode: Int?
    /// 1708: subscriptions only.
    public var expiresDate: Date?
    /// 1711: nil when 0, as on products that are not subscriptions.
    public var webOrderLineItemId: Int64?
    /// 1712: refunded or upgraded.
    public var cancellationDate: Date?
    /// 1713
    public var isTrialPeriod: Bool?
    /// 1719
    public var isInIntroOfferPeriod: Bool?
    /// 1721
    public var promotionalOfferId: String?
    /// Attributes of other types, kept as they were.
    public var otherAttributes: [ReceiptAttribute]

    public init(
        quantity: Int = 1,
        productId: String,
        transactionId: String,
        purchaseDate: Date? = nil,
        originalTransactionId: String? = nil,
        originalPurchaseDate: Date? = nil,
        productTypeCode: Int? = nil,
        expiresDate: Date? = nil,
        webOrderLineItemId: Int64? = nil,
        cancellationDate: Date? = nil,
        isTrialPeriod: Bool? = nil,
        isInIntroOfferPeriod: Bool? = nil,
        promotionalOfferId: String? = nil,
        otherAttributes: [ReceiptAttribute] = []
    ) {
        self.quantity = quantity
        self.productId = productId
        self.transactionId = transactionId
        self.purchaseDate = purchaseDate
        self.originalTransactionId = originalTransactionId
        self.originalPurchaseDate = originalPurchaseDate
        self.productTypeCode = productTypeCode
        self.expiresDate = expiresDate
        self.webOrderLineItemId = webOrderLineItemId
        self.cancellationDate = cancellationDate
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.promotionalOfferId = promotionalOfferId
        self.otherAttributes = otherAttributes
    }

    /// The product type of attribute 1707 (a free subscription is indistinguishable from a non-consumable here).
    public var productType: ProductType? {
        switch productTypeCode {
        case 0: .nonConsumable
        case 1: .consumable
        case 2: .nonRenewing
        case 3: .autoRenewable
        default: expiresDate != nil && webOrderLineItemId != nil ? .autoRenewable : nil
        }
    }

    /// The attribute 1707 code of a product type.
    public static func productTypeCode(for type: ProductType) -> Int {
        switch type {
        case .nonConsumable, .freeSubscription: 0
        case .consumable: 1
        case .nonRenewing: 2
        case .autoRenewable: 3
        }
    }

    /// The purchase in TillCore's terms, or nil without a purchase date.
    public func purchaseTransaction(bundleId: String, environment: AppStoreEnvironment) -> PurchaseTransaction? {
        guard let purchaseDate else { return nil }
        return PurchaseTransaction(
            transactionId: transactionId,
            originalTransactionId: originalTransactionId,
            productId: productId,
            bundleId: bundleId,
            productType: productType,
            quantity: quantity,
            purchaseDate: purchaseDate,
            originalPurchaseDate: originalPurchaseDate,
            expiresDate: expiresDate,
            revocationDate: cancellationDate,
            webOrderLineItemId: webOrderLineItemId.map(String.init),
            isTrialPeriod: isTrialPeriod ?? false,
            isInIntroOfferPeriod: isInIntroOfferPeriod ?? false,
            offerIdentifier: promotionalOfferId,
            environment: environment
        )
    }
}

/// A receipt attribute kept as it was: its type, version and the DER of its value.
public struct ReceiptAttribute: Sendable, Hashable {
    public var type: Int
    public var version: Int
    /// The value's bytes (a slice of the receipt: copy with `Array(value)` to keep it apart).
    public var value: ArraySlice<UInt8>

    public init(type: Int, version: Int = 1, value: some Sequence<UInt8>) {
        self.type = type
        self.version = version
        self.value = ArraySlice(value)
    }
}
