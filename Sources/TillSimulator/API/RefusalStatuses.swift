import HTTPTypes
import TillCore
import TillHTTPKit

// The HTTP layer's one mapping per room: the status each reason a room refuses with is answered with. A reason added
// to a room does not build until it has its status here.

extension AppStoreConnectReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .environmentIsFixed, .invalidBillingPlan, .invalidBundleId, .invalidEnvironment, .invalidGracePeriod,
            .invalidGroupLevel, .invalidPrice, .invalidProductId, .invalidProductType, .invalidStorefront, .invalidURL,
            .invalidVendorIdentifier, .notASubscription, .subscriptionNeedsGroup, .typeIsFixed:
            .badRequest
        case .appExists, .productExists: .conflict
        case .accountNotFound, .productNotFound: .notFound
        }
    }
}

extension FaultReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .invalidFault: .badRequest
        }
    }
}

extension StoreEventReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .invalidEnvironment, .invalidSubtype, .invalidTokenType, .wrongEnvironment: .badRequest
        case .accountNotFound, .subscriptionNotFound: .notFound
        }
    }
}

extension OfferReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .invalidCount, .invalidOffer: .badRequest
        case .codeExists, .codeLimitReached, .codeRedeemed, .offerExists, .offerNotInStorefront: .conflict
        case .offerCodeNotFound, .offerNotFound, .productNotFound: .notFound
        }
    }
}

extension PaymentReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .invalidUserAction, .wrongEnvironment: .badRequest
        case .cannotComplete, .notDeferred, .notFinishable: .conflict
        case .accountDeleted: .forbidden
        case .inconsistentSubscription: .internalServerError
        case .deviceNotFound, .paymentNotFound, .queueEntryNotFound, .subscriptionNotFound: .notFound
        case .receiptNotSimulated: .notImplemented
        case .storeUnavailable: .serviceUnavailable
        }
    }
}

extension RetentionReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .imageNotFound, .messageNotFound, .subscriptionNotFound: .notFound
        }
    }
}

extension LookupReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .wrongEnvironment: .badRequest
        case .accountDeleted: .forbidden
        case .accountNotFound, .appNotFound, .deviceNotFound: .notFound
        }
    }
}

extension SubscriptionReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .invalidPercentage, .invalidPrice, .invalidReason, .invalidStorefront: .badRequest
        case .alreadyRevoked, .noPendingPriceIncrease, .noRefundRequest, .notFamilyShared, .notRefunded: .conflict
        case .appNotFound, .productNotFound, .subscriptionNotFound, .transactionNotFound: .notFound
        }
    }
}
