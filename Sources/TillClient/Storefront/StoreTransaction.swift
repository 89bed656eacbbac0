import Foundation
import TillCore

/// A transaction in the device's payment queue (`SKPaymentTransaction`; StoreKit 2's `Transaction` with its
/// `jwsRepresentation`).
///
/// ``id`` is what ``Storefront/finish(_:)`` takes: the queue entry. A StoreKit adapter keeps a map from it to the
/// `SKPaymentTransaction` or `Transaction` it stands for.
public struct StoreTransaction: Sendable, Hashable, Codable {
    /// The queue entry.
    public var id: String
    /// The state as the store reported it (`purchased`, `failed`, `deferred`, `restored`, `purchasing`);
    /// ``transactionState`` is the typed view.
    public var state: String
    public var productId: String
    /// The store's transaction id; for a restored transaction, the restore's own id.
    public var transactionId: String?
    /// For a restored transaction, the purchase it brings back.
    public var originalTransactionId: String?
    /// UNIX milliseconds.
    public var purchaseDate: Int64?
    public var quantity: Int?
    /// Why a `failed` transaction failed.
    public var error: StoreError?
    /// StoreKit 2's signed transaction (JWS); for a restored one, the original purchase's.
    public var signedTransaction: String?
    /// The iOS 6-style `transactionReceipt` (base64).
    public var transactionReceipt: String?

    public init(
        id: String,
        state: String,
        productId: String,
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        purchaseDate: Int64? = nil,
        quantity: Int? = nil,
        error: StoreError? = nil,
        signedTransaction: String? = nil,
        transactionReceipt: String? = nil
    ) {
        self.id = id
        self.state = state
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.purchaseDate = purchaseDate
        self.quantity = quantity
        self.error = error
        self.signedTransaction = signedTransaction
        self.transactionReceipt = transactionReceipt
    }

    /// The state, when it is one StoreKit defines.
    public var transactionState: TransactionState? { TransactionState(rawValue: state) }

    /// Whether the app should deliver the product for it (purchased or restored).
    public var grantsContent: Bool { transactionState?.grantsContent ?? false }
}

/// Why the store failed a payment or a restore (`SKError`; StoreKit 2's `StoreKitError` and
/// `Product.PurchaseError`).
public struct StoreError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// StoreKit's `SKError.Code`, kept as a number so that codes this version does not name survive.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public var rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let unknown = Code(rawValue: 0)
        public static let clientInvalid = Code(rawValue: 1)
        public static let paymentCancelled = Code(rawValue: 2)
        public static let paymentInvalid = Code(rawValue: 3)
        public static let paymentNotAllowed = Code(rawValue: 4)
        public static let storeProductNotAvailable = Code(rawValue: 5)
        public static let cloudServiceNetworkConnectionFailed = Code(rawValue: 7)
        public static let invalidOfferIdentifier = Code(rawValue: 11)
        public static let invalidSignature = Code(rawValue: 12)
        public static let missingOfferParams = Code(rawValue: 13)
        public static let invalidOfferPrice = Code(rawValue: 14)
        public static let ineligibleForOffer = Code(rawValue: 18)

        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(Int.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .clientInvalid: "clientInvalid"
            case .paymentCancelled: "paymentCancelled"
            case .paymentInvalid: "paymentInvalid"
            case .paymentNotAllowed: "paymentNotAllowed"
            case .storeProductNotAvailable: "storeProductNotAvailable"
            case .cloudServiceNetworkConnectionFailed: "cloudServiceNetworkConnectionFailed"
            case .invalidOfferIdentifier: "invalidOfferIdentifier"
            case .invalidSignature: "invalidSignature"
            case .missingOfferParams: "missingOfferParams"
            case .invalidOfferPrice: "invalidOfferPrice"
            case .ineligibleForOffer: "ineligibleForOffer"
            default: "SKError \(rawValue)"
            }
        }
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The customer cancelled the payment sheet: not a failure to show as one.
    public var isCancellation: Bool { code == .paymentCancelled }

    public var description: String { "\(code): \(message)" }
}
