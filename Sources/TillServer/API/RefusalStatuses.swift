import HTTPTypes
import TillAppStore
import TillCatalogue
import TillConsole
import TillContent
import TillCore
import TillHTTPKit
import TillLedger
import TillWebhooks

// The HTTP layer's one mapping per room: the status each reason a room refuses with is answered with. A reason added
// to a room does not build until it has its status here.

extension IntakeReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidIdempotencyKey, .oneFormatExpected: .badRequest
        case .idempotencyKeyReused, .ownedByAnotherCustomer: .conflict
        case .submissionLost: .internalServerError
        case .submissionNotFound: .notFound
        case .invalidEnvironment, .malformedPayload, .sandboxNotAccepted, .storeKitTestingNotEnabled,
            .untrustedForProduction, .untrustedForXcode, .unverified:
            .unprocessableContent
        }
    }
}

extension ImportReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidImportFile, .invalidName, .invalidOutcome: .badRequest
        case .importEnded, .noAPIKey: .conflict
        case .importNotFound: .notFound
        }
    }
}

extension LedgerReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidAmount, .invalidCredit, .invalidExpiry, .invalidNote, .invalidRequestId: .badRequest
        case .insufficientBalance, .requestIdReused: .conflict
        case .productNotFound, .purchaseNotFound: .notFound
        }
    }
}

extension CustomerReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidAlias, .invalidCustomerId: .badRequest
        case .accountIsAGuest, .guestIsAnAccount, .guestLinkedElsewhere: .conflict
        }
    }
}

extension OfferReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .appAccountTokenWithJWS, .appTransactionIdRequired, .invalidAppAccountToken, .invalidAppTransactionId,
            .invalidOfferIdentifier, .notASubscription:
            .badRequest
        case .noSigningKey: .conflict
        case .notEligible: .forbidden
        case .offerNotFound, .overrideNotFound, .productNotFound, .subscriptionGroupNotFound: .notFound
        }
    }
}

extension CatalogueReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .bundleIdImmutable, .consumableEntitlements, .durationRequired, .invalidAPIKey, .invalidBundleId,
            .invalidCredits, .invalidCurrency, .invalidEntitlement, .invalidInAppPurchaseKey, .invalidPrice,
            .invalidProductId, .invalidStoreKitTestCertificate:
            .badRequest
        case .appExists: .conflict
        case .appNotFound: .notFound
        }
    }
}

extension ContentReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidContentType, .invalidName: .badRequest
        case .consumableContent: .conflict
        case .bodyTooLarge: .contentTooLarge
        case .invalidSignature, .notEntitled, .urlExpired: .forbidden
        case .contentNotFound, .productNotFound: .notFound
        }
    }
}

extension NotificationReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .malformedNotification: .badRequest
        case .appNotFound, .notificationNotFound: .notFound
        case .invalidSignature: .unauthorized
        }
    }
}

extension CatchUpReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .catchUpRunning, .noAPIKey: .conflict
        case .catchUpNeverRun: .notFound
        }
    }
}

extension WebhookReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidDescription, .invalidOverlap, .invalidReplay, .invalidWebhookURL: .badRequest
        case .eventNotFound, .webhookDeliveryNotFound, .webhookEndpointNotFound: .notFound
        }
    }
}

extension ConsoleReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidToken: .unauthorized
        case .tooManySignIns: .tooManyRequests
        }
    }

    package var headers: HTTPFields {
        switch self {
        case .invalidToken: [:]
        case .tooManySignIns(let seconds): [.retryAfter: String(seconds)]
        }
    }
}

extension QueueReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .noAPIKey: .badRequest
        case .databaseInUse, .notDeadLettered: .conflict
        case .databaseLockUnavailable: .internalServerError
        case .submissionNotFound: .notFound
        }
    }
}

extension AppTransactionReason: RefusalStatus {
    var status: HTTPResponse.Status {
        switch self {
        case .appTransactionNotFound: .notFound
        case .invalidEnvironment: .unprocessableContent
        }
    }
}

extension EventReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .bundleIdRequired, .invalidCursor: .badRequest
        }
    }
}

extension PageReason: RefusalStatus {
    package var status: HTTPResponse.Status {
        switch self {
        case .invalidCursor, .invalidLimit: .badRequest
        }
    }
}
