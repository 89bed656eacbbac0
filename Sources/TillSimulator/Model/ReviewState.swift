import TillCore

/// The review state of an in-app purchase product in App Store Connect.
public enum ReviewState: String, Codable, Sendable, CaseIterable {
    case pendingDeveloperApproval = "Pending Developer Approval"
    case waitingForReview = "Waiting for Review"
    case inReview = "In Review"
    case developerActionNeeded = "Developer Action Needed"
    case approved = "Approved"
    case readyForSale = "Ready for Sale"
    case rejected = "Rejected"
    case developerRemovedFromSale = "Developer Removed from Sale"

    /// Production sells only products that are Ready for Sale; the sandbox sells any product that was
    /// neither rejected nor removed from sale, as Apple's sandbox does.
    public func isSellable(in environment: AppStoreEnvironment) -> Bool {
        if environment == .production { return self == .readyForSale }
        return self != .rejected && self != .developerRemovedFromSale
    }
}

/// A subscription's billing period (ISO 8601 duration, as App Store Connect offers them).
public enum SubscriptionPeriod: String, Codable, Sendable, CaseIterable {
    case oneWeek = "P1W"
    case oneMonth = "P1M"
    case twoMonths = "P2M"
    case threeMonths = "P3M"
    case sixMonths = "P6M"
    case oneYear = "P1Y"

    /// The length in months (a week counts as 0.6 month, as Apple's sandbox table has it: 3 min against 5).
    var monthsForAcceleration: Double {
        switch self {
        case .oneWeek: 0.6
        case .oneMonth: 1
        case .twoMonths: 2
        case .threeMonths: 3
        case .sixMonths: 6
        case .oneYear: 12
        }
    }
}

/// StoreKit's `SKError.Code` values the simulator reports for failed payments.
public enum StoreKitErrorCode: Int, Codable, Sendable, Error {
    case unknown = 0
    case clientInvalid = 1
    case paymentCancelled = 2
    case paymentInvalid = 3
    case paymentNotAllowed = 4
    case storeProductNotAvailable = 5
    case invalidOfferIdentifier = 11
    case invalidSignature = 12
    case missingOfferParams = 13
    case invalidOfferPrice = 14
    case ineligibleForOffer = 18

    public var message: String {
        switch self {
        case .unknown: "The payment could not be completed."
        case .clientInvalid: "The client is not allowed to issue the request."
        case .paymentCancelled: "The user cancelled the payment."
        case .paymentInvalid: "The payment parameters were not recognized."
        case .paymentNotAllowed: "This account is not allowed to make payments."
        case .storeProductNotAvailable: "The product is not available in this storefront."
        case .invalidOfferIdentifier: "The offer identifier is not valid."
        case .invalidSignature: "The offer's signature is not valid."
        case .missingOfferParams: "Parameters are missing in the payment discount."
        case .invalidOfferPrice: "The price of the offer is not valid."
        case .ineligibleForOffer: "The customer is not eligible for the offer."
        }
    }
}
