import TillContract
import TillCore

// The server's names for the wire types it answers with. Each is the type swift-openapi-generator made from
// Client/Sources/TillContract/openapi.yaml (see docs/contract.md): a field added there is a field here, on the
// client, in the served document and in the docs at once.

/// What an app sends after a purchase or restore: the customer and exactly one of the three formats.
public typealias SubmissionRequest = Components.Schemas.SubmissionRequest
/// A submission and where its confirmation with Apple stands.
public typealias SubmissionView = Components.Schemas.Submission
/// Where a submission's confirmation with Apple stands.
public typealias SubmissionState = Components.Schemas.SubmissionState
/// The format a submission carried.
public typealias SubmissionKind = Components.Schemas.SubmissionKind
/// Why a confirmation attempt did not settle its submission: what decides when it is tried again. Apple's answer
/// is classified once, in the worker; the queue's SQL reads the stored column rather than parsing `lastStatus`.
public typealias RetryCause = Components.Schemas.RetryCause
/// A transaction a submission carried that was not credited to this customer.
public typealias RefusedTransaction = Components.Schemas.RefusedTransaction
/// A purchase of a customer, as the server recorded it.
public typealias PurchaseView = Components.Schemas.Purchase
/// Everything the server knows a customer has.
public typealias CustomerView = Components.Schemas.Customer
/// An entitlement a customer has now.
public typealias Entitlement = Components.Schemas.Entitlement
/// A subscription's renewal state, as the customer view shows it.
public typealias SubscriptionStateView = Components.Schemas.SubscriptionState
/// The answer to a submission.
public typealias SubmissionResult = Components.Schemas.SubmissionResult
/// Revenue per day, product or currency (production only: sandbox purchases never count); amounts in milliunits
/// of their currency, refunds and revocations negative.
public typealias RevenueReport = Components.Schemas.RevenueReport
/// How a transaction already owned by one customer is treated when another customer submits it:
/// `keepWithFirstOwner` refuses it as a replay; `transferToLatest` moves it to the customer who submitted it last.
public typealias RestorePolicy = Components.Schemas.RestorePolicy
/// A new app, or the fields of one to change (`POST` and `PATCH /admin/v1/apps`).
public typealias ServerAppInput = Components.Schemas.AppInput
/// A file a customer may download now, with its signed URL (relative to the server's base URL; it works without
/// the app key, for this customer only, until `expiresAt`, in UNIX milliseconds).
public typealias ContentDownload = Components.Schemas.ContentDownload
/// A product of the master list, as apps fetch it.
public typealias MasterListProduct = Components.Schemas.MasterListProduct
/// The server-side master list of product ids; its ETag changes whenever the catalogue does.
public typealias MasterList = Components.Schemas.MasterList
/// The outcome of a restore: the submission and every purchase the customer can have back.
public typealias RestoreResult = Components.Schemas.RestoreResult
/// A catalogue product to create or replace (`PUT /admin/v1/apps/{bundle}/products/{product}`).
public typealias CatalogProductInput = Components.Schemas.ProductInput
/// A catalogue product as the admin API shows it (`CatalogProduct` is its database row).
public typealias ProductView = Components.Schemas.Product
/// The answer to a notification delivery (docs/notifications.md).
public typealias NotificationResult = Components.Schemas.NotificationResult
/// Whether a delivery was new, a retry, or deliberately not applied.
public typealias NotificationStatus = Components.Schemas.NotificationStatus
/// What the server did with a notification, as recorded in `srv_notifications.outcome`.
public typealias NotificationOutcome = Components.Schemas.NotificationOutcome
/// A file a product delivers.
public typealias ContentFile = Components.Schemas.ContentFile

extension ProductType {
    /// TillCore's product type for the contract's name of it.
    package init(_ type: Components.Schemas.ProductType) {
        switch type {
        case .consumable: self = .consumable
        case .nonConsumable: self = .nonConsumable
        case .autoRenewable: self = .autoRenewable
        case .nonRenewing: self = .nonRenewing
        case .freeSubscription: self = .freeSubscription
        }
    }
}

extension Components.Schemas.ProductType {
    /// The contract's name for one of TillCore's five product types.
    package init(_ type: ProductType) {
        switch type {
        case .consumable: self = .consumable
        case .nonConsumable: self = .nonConsumable
        case .autoRenewable: self = .autoRenewable
        case .nonRenewing: self = .nonRenewing
        case .freeSubscription: self = .freeSubscription
        }
    }
}

/// One catch-up run of an app: what it read from Apple's Notification History and Transaction History, and what it
/// applied (docs/notifications.md, "Catching up").
public typealias CatchUpRun = Components.Schemas.CatchUpRun
/// What a catch-up run read and applied in one environment.
public typealias CatchUpEnvironmentReport = Components.Schemas.CatchUpEnvironment
/// What a catch-up run read from Notification History in one environment, and what recording it did.
public typealias NotificationHistoryReport = Components.Schemas.CatchUpNotifications
/// What a catch-up run read from the customers' Transaction Histories in one environment, and what the ledger did.
public typealias TransactionHistoryReport = Components.Schemas.CatchUpTransactions
/// Why part of a catch-up run was not read (the next run reads it).
public typealias CatchUpError = Components.Schemas.CatchUpError

/// What the server tells Apple beside the ledger when it answers a consumption request: whether the app gives a
/// sample, and its refund preference (none when not set).
public typealias ConsumptionSettings = Components.Schemas.ConsumptionSettings
/// A customer's consent to share consumption data with Apple, as the app recorded it.
public typealias ConsumptionConsent = Components.Schemas.ConsumptionConsent
/// A customer's AppTransaction as the server verified and keeps it (`/v1/customers/{id}/app-transaction`).
public typealias AppTransactionView = Components.Schemas.AppTransaction
/// One CONSUMPTION_REQUEST from Apple and the server's answer to it (docs/notifications.md, "Consumption requests").
public typealias ConsumptionAnswer = Components.Schemas.ConsumptionAnswer
/// Where the answer to a consumption request stands.
public typealias ConsumptionAnswerState = Components.Schemas.ConsumptionAnswerState

extension ConsumptionSettings {
    package typealias RefundPreference = Components.Schemas.RefundPreference
}

/// Why a purchase stopped granting (the contract's enum, in Swift and in `srv_transactions.revocation_reason`).
public typealias RevocationReason = Components.Schemas.RevocationReason
/// One change the ledger made, as the feed gives it and webhooks deliver it (docs/events.md).
public typealias Event = Components.Schemas.Event
/// What happened: the contract's list of event types, in Swift and in `srv_events.type`.
public typealias EventType = Components.Schemas.EventType
/// Who told the server of a change.
public typealias EventSource = Components.Schemas.EventSource
/// A webhook's body: the Standard Webhooks payload shape around an event.
public typealias WebhookPayload = Components.Schemas.WebhookPayload
/// Where an app's events are sent.
public typealias WebhookEndpointView = Components.Schemas.WebhookEndpoint
/// One delivery of an event to an endpoint, as the admin API shows it.
public typealias WebhookDeliveryView = Components.Schemas.WebhookDelivery
/// One attempt of a delivery and what the receiver answered.
public typealias WebhookAttemptView = Components.Schemas.WebhookAttempt
/// Where a delivery stands.
public typealias WebhookDeliveryState = Components.Schemas.WebhookDeliveryState

extension EventSource {
    package static func submission(_ id: String) -> EventSource { EventSource(kind: .submission, id: id) }
    package static func confirmation(_ id: String) -> EventSource { EventSource(kind: .confirmation, id: id) }
    package static func app(_ id: String? = nil) -> EventSource { EventSource(kind: .app, id: id) }
    package static func `operator`(note: String) -> EventSource { EventSource(kind: ._operator, note: note) }
    package static func consumption(_ notificationUUID: String) -> EventSource {
        EventSource(kind: .consumption, id: notificationUUID)
    }
    package static let catchUp = EventSource(kind: .catchUp)
    /// An import of the app's existing customers (`Imports`): its id.
    package static func imported(_ importId: String) -> EventSource { EventSource(kind: ._import, id: importId) }

    /// A notification, as `NotificationIntake` applies it: delivered by Apple, or read back from Notification
    /// History by the catch-up.
    package static func notification(
        _ uuid: String,
        type: String,
        subtype: String?,
        recoveredByCatchUp: Bool = false
    ) -> EventSource {
        EventSource(
            kind: recoveredByCatchUp ? .catchUp : .notification,
            id: uuid,
            notificationType: subtype.map { "\(type)/\($0)" } ?? type
        )
    }
}
