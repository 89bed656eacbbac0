/// Why the store refused a payment, a restore or a lookup: StoreKit 2's `StoreKitError` and `Product.PurchaseError`
/// and StoreKit 1's `SKError`, as one typed value.
///
/// Each StoreKit 2 error has a code of its own; StoreKit 1's codes map to the StoreKit 2 code of the same meaning
/// (`SKError.paymentCancelled` is ``Code/userCancelled``, `SKError.storeProductNotAvailable` is
/// ``Code/productUnavailable``), and ``Code/skErrorCode`` gives the number back. A code this version does not name
/// survives as ``Code/other(_:)``.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Sendable, Hashable, CustomStringConvertible {
        /// `StoreKitError.unknown`, `SKError.unknown` (0; the simulator's declined card).
        case unknown
        /// `StoreKitError.userCancelled`, `SKError.paymentCancelled` (2): the customer cancelled.
        case userCancelled
        /// `StoreKitError.networkError`, `SKError.cloudServiceNetworkConnectionFailed` (7).
        case networkError
        /// `StoreKitError.systemError`.
        case systemError
        /// `StoreKitError.notAvailableInStorefront`.
        case notAvailableInStorefront
        /// `StoreKitError.notEntitled`.
        case notEntitled
        /// `StoreKitError.unsupported`, `SKError.unsupportedPlatform` (19).
        case unsupported
        /// `SKError.clientInvalid` (1).
        case clientInvalid
        /// `Product.PurchaseError.invalidQuantity`.
        case invalidQuantity
        /// `SKError.paymentInvalid` (3): a quantity, an app account token or another payment field is invalid.
        case paymentInvalid
        /// `Product.PurchaseError.purchaseNotAllowed`, `SKError.paymentNotAllowed` (4): Screen Time restrictions.
        case purchaseNotAllowed
        /// `Product.PurchaseError.productUnavailable`, `SKError.storeProductNotAvailable` (5).
        case productUnavailable
        /// `SKError.cloudServicePermissionDenied` (6).
        case cloudServicePermissionDenied
        /// `SKError.cloudServiceRevoked` (8).
        case cloudServiceRevoked
        /// `SKError.privacyAcknowledgementRequired` (9).
        case privacyAcknowledgementRequired
        /// `SKError.unauthorizedRequestData` (10).
        case unauthorizedRequestData
        /// `Product.PurchaseError.invalidOfferIdentifier`, `SKError.invalidOfferIdentifier` (11).
        case invalidOfferIdentifier
        /// `Product.PurchaseError.invalidOfferSignature`, `SKError.invalidSignature` (12).
        case invalidOfferSignature
        /// `Product.PurchaseError.missingOfferParameters`, `SKError.missingOfferParams` (13).
        case missingOfferParameters
        /// `Product.PurchaseError.invalidOfferPrice`, `SKError.invalidOfferPrice` (14).
        case invalidOfferPrice
        /// `Product.PurchaseError.ineligibleForOffer`, `SKError.ineligibleForOffer` (18).
        case ineligibleForOffer
        /// An `SKError` code this version does not name (the overlay's 15–17 and 20 among them).
        case other(Int)

        /// The code of StoreKit 1's `SKError.Code` value (the simulator's numbers too).
        public init(skErrorCode: Int) {
            self = Self.bySKErrorCode[skErrorCode] ?? .other(skErrorCode)
        }

        /// StoreKit 1's number for the code; nil for StoreKit 2's codes that `SKError` has no number for.
        public var skErrorCode: Int? {
            switch self {
            case .unknown: 0
            case .clientInvalid: 1
            case .userCancelled: 2
            case .paymentInvalid, .invalidQuantity: 3
            case .purchaseNotAllowed: 4
            case .productUnavailable: 5
            case .cloudServicePermissionDenied: 6
            case .networkError: 7
            case .cloudServiceRevoked: 8
            case .privacyAcknowledgementRequired: 9
            case .unauthorizedRequestData: 10
            case .invalidOfferIdentifier: 11
            case .invalidOfferSignature: 12
            case .missingOfferParameters: 13
            case .invalidOfferPrice: 14
            case .ineligibleForOffer: 18
            case .unsupported: 19
            case .other(let code): code
            case .systemError, .notAvailableInStorefront, .notEntitled: nil
            }
        }

        private static let bySKErrorCode: [Int: Code] = [
            0: .unknown, 1: .clientInvalid, 2: .userCancelled, 3: .paymentInvalid, 4: .purchaseNotAllowed,
            5: .productUnavailable, 6: .cloudServicePermissionDenied, 7: .networkError, 8: .cloudServiceRevoked,
            9: .privacyAcknowledgementRequired, 10: .unauthorizedRequestData, 11: .invalidOfferIdentifier,
            12: .invalidOfferSignature, 13: .missingOfferParameters, 14: .invalidOfferPrice, 18: .ineligibleForOffer,
            19: .unsupported,
        ]

        public var description: String {
            switch self {
            case .unknown: "unknown"
            case .userCancelled: "userCancelled"
            case .networkError: "networkError"
            case .systemError: "systemError"
            case .notAvailableInStorefront: "notAvailableInStorefront"
            case .notEntitled: "notEntitled"
            case .unsupported: "unsupported"
            case .clientInvalid: "clientInvalid"
            case .invalidQuantity: "invalidQuantity"
            case .paymentInvalid: "paymentInvalid"
            case .purchaseNotAllowed: "purchaseNotAllowed"
            case .productUnavailable: "productUnavailable"
            case .cloudServicePermissionDenied: "cloudServicePermissionDenied"
            case .cloudServiceRevoked: "cloudServiceRevoked"
            case .privacyAcknowledgementRequired: "privacyAcknowledgementRequired"
            case .unauthorizedRequestData: "unauthorizedRequestData"
            case .invalidOfferIdentifier: "invalidOfferIdentifier"
            case .invalidOfferSignature: "invalidOfferSignature"
            case .missingOfferParameters: "missingOfferParameters"
            case .invalidOfferPrice: "invalidOfferPrice"
            case .ineligibleForOffer: "ineligibleForOffer"
            case .other(let code): "SKError \(code)"
            }
        }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The customer cancelled: not a failure to show as one.
    public var isCancellation: Bool { code == .userCancelled }

    public var description: String { "\(code): \(message)" }
}
