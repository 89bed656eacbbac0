import Foundation
import Logging
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage

/// A notification whose signatures were checked, ready to be applied.
struct VerifiedNotification: Sendable {
    /// The notification decoded, as the console shows it: Apple's payload with its transaction and renewal info in
    /// place of their signed forms (a few hundred bytes where the signed notification is kilobytes of certificates).
    var decodedJSON: String? {
        struct Decoded: Encodable {
            var notification: ResponseBodyV2DecodedPayload
            var transaction: JWSTransactionDecodedPayload?
            var renewal: JWSRenewalInfoDecodedPayload?
        }
        var notification = payload
        notification.data?.signedTransactionInfo = nil
        notification.data?.signedRenewalInfo = nil
        let encoded = try? AppleJSON.makeEncoder().encode(
            Decoded(notification: notification, transaction: transaction, renewal: renewal)
        )
        return encoded.map { String(decoding: $0, as: UTF8.self) }
    }

    /// As Apple sent it.
    var signedPayload: String
    var payload: ResponseBodyV2DecodedPayload
    var uuid: String
    var type: NotificationType
    var environment: AppStoreEnvironment
    var bundleId: String
    var transaction: JWSTransactionDecodedPayload?
    var renewal: JWSRenewalInfoDecodedPayload?
}

/// Notification intake: App Store Server Notifications V2, verified (every signature, the app, the environment),
/// recorded once by UUID, and applied in the same transaction — the renewal state kept here, the transaction handed
/// to the ledger, a consumption request queued to be answered (`ConsumptionAnswers`). A notification that comes
/// before anyone owns its purchase waits, and is applied when a submission records it (`applyWaitingNotifications`).
public struct NotificationIntake: AppStoreRoom, Sendable {
    let services: AppStoreServices
    /// Apple's notifications, the purchase lock and the renewal states.
    var notificationStore: NotificationStore { NotificationStore(database: database) }
    /// The apps Till serves.
    var serverAppStore: ServerAppStore { ServerAppStore(database: database) }
    /// Where a CONSUMPTION_REQUEST goes to be answered.
    let consumption: ConsumptionAnswers

    package init(
        services: AppStoreServices,
        consumption: ConsumptionAnswers
    ) {
        self.services = services
        self.consumption = consumption
    }

    /// Notification types that change nothing the server keeps beyond the renewal state: recorded only.
    static let recordedOnly: Set<NotificationType> = [
        .test, .consumptionRequest, .refundDeclined, .priceIncrease, .renewalExtension, .externalPurchaseToken,
        .rescindConsent, .metadataUpdate, .migration, .priceChange,
    ]

    /// Receives an App Store Server Notification V2: verifies every signature, then records it once by
    /// `notificationUUID` and applies it to the ledger and subscription state in the same transaction.
    ///
    /// - Parameter recoveredByCatchUp: read back from Apple's Notification History rather than delivered (the source of
    ///   the events it makes).
    public func receiveNotification(signedPayload: String, recoveredByCatchUp: Bool = false) async throws
        -> NotificationResult
    {
        var type = "unknown"
        do {
            var notification = try await verifyEnvelope(signedPayload)
            type = notification.type.rawValue
            let result = try await receiveVerified(&notification, recoveredByCatchUp: recoveredByCatchUp)
            metrics.notification(type: type, outcome: result.status.rawValue)
            return result
        } catch {
            metrics.notification(type: type, outcome: "refused")
            throw error
        }
    }

    private func receiveVerified(_ notification: inout VerifiedNotification, recoveredByCatchUp: Bool) async throws
        -> NotificationResult
    {
        guard let app = try await serverAppStore.app(bundleId: notification.bundleId, on: database.sql) else {
            // Not acknowledged: Apple retries (production: 5 times over 3 days), which gives an operator time
            // to register the app, and App Store Connect shows the failures.
            logger.warning("notification \(notification.uuid) for unknown app \(notification.bundleId)")
            throw NotificationRefusal(.appNotFound, "no app \(notification.bundleId)")
        }
        if let expected = app.appAppleId, let given = notification.payload.identity.appAppleId, expected != given {
            logger.warning(
                "notification \(notification.uuid) for app Apple id \(given), \(app.bundleId) is \(expected)"
            )
            throw NotificationRefusal(.appNotFound, "no app \(app.bundleId) with Apple id \(given)")
        }
        try await verifyContents(of: &notification, app: app)
        return try await receive(notification, app: app, recoveredByCatchUp: recoveredByCatchUp)
    }

    /// Records a verified notification once by its UUID and applies it, in one database transaction.
    func receive(_ verified: VerifiedNotification, app: ServerApp, recoveredByCatchUp: Bool = false) async throws
        -> NotificationResult
    {
        let now = clock.milliseconds
        let catalogue = try await self.catalogue.products(of: app.bundleId)
        let result = try await ledger.transaction(
            source: verified.source(recoveredByCatchUp: recoveredByCatchUp)
        ) { changes -> NotificationResult in
            let db = changes.db
            var record = NotificationRecord(
                notificationUuid: verified.uuid,
                bundleId: app.bundleId,
                environment: verified.environment,
                type: verified.type.rawValue,
                subtype: verified.payload.subtype?.rawValue,
                signedDate: verified.payload.signedDate?.millisecondsSince1970,
                receivedAt: now,
                outcome: .applied,
                transactionId: verified.transaction?.transactionId,
                originalTransactionId: verified.transaction?.originalTransactionId
                    ?? verified.renewal?.originalTransactionId,
                customerId: nil,
                detail: nil,
                decoded: verified.decodedJSON
            )
            // The UUID goes in first: a concurrent delivery of the same notification waits on it, then sees it.
            guard try await self.notificationStore.insertOnce(record, on: db) else {
                let first = try await self.notificationStore.notification(uuid: verified.uuid, on: db)
                return NotificationResult(
                    status: .duplicate,
                    notificationUUID: verified.uuid,
                    outcome: first?.outcome ?? .applied
                )
            }
            let (outcome, customerId, detail) = try await self.apply(
                verified,
                app: app,
                catalogue: catalogue,
                now: now,
                in: changes
            )
            record.outcome = outcome
            record.customerId = customerId
            record.detail = detail
            record.signedPayload = outcome == .unmatched ? verified.signedPayload : nil
            try await self.notificationStore.update(record, on: db)
            let status: NotificationStatus =
                switch outcome {
                case .applied, .recorded: .applied
                case .unmatched, .sandboxNotAccepted, .unsupportedEnvironment: .ignored
                }
            return NotificationResult(status: status, notificationUUID: verified.uuid, outcome: outcome)
        }
        logger.info(
            "notification \(verified.type.rawValue) \(verified.uuid): \(result.status.rawValue) (\(result.outcome.rawValue))"
        )
        if verified.type == .consumptionRequest && result.status == .applied {
            consumption.jobs.wake(.consumptionAnswer)
        }
        return result
    }

    // MARK: The operator's view

    /// The app's notifications, newest first, a page at a time: every one Apple sent, applied or not; of one outcome
    /// or type, or all.
    package func log(bundleId: String, outcome: NotificationOutcome?, type: String?, page: PageRequest) async throws
        -> (records: [NotificationRecord], nextCursor: String?)
    {
        let records = try await notificationStore.notifications(
            bundleId: bundleId,
            outcome: outcome,
            type: type,
            before: page.after,
            limit: page.rowsToRead,
            on: database.sql
        )
        let (shown, nextCursor) = page.cut(records) { PageKey(number: $0.receivedAt, text: $0.notificationUuid) }
        return (shown, nextCursor)
    }

    /// One notification of the app, as it was recorded (decoded since migration 020).
    package func recorded(bundleId: String, uuid: String) async throws -> NotificationRecord {
        guard let record = try await notificationStore.notification(uuid: uuid, on: database.sql),
            record.bundleId == bundleId
        else {
            throw NotificationRefusal(.notificationNotFound, "no notification \(uuid)")
        }
        return record
    }

    /// Checks the envelope's signature (it names the app only once it is trusted), or throws (nothing recorded).
    func verifyEnvelope(_ signedPayload: String) async throws -> VerifiedNotification {
        let payload = try Self.trusted(
            await verifier.verifySigned(signedPayload, as: ResponseBodyV2DecodedPayload.self, app: nil),
            "signedPayload"
        )
        guard let uuid = payload.notificationUUID, !uuid.isEmpty, uuid.count <= 100, let type = payload.notificationType
        else {
            throw NotificationRefusal(.malformedNotification, "the notification has no notificationUUID or type")
        }
        let identity = payload.identity
        guard let bundleId = identity.bundleId, let environment = identity.environment else {
            throw NotificationRefusal(
                .malformedNotification,
                "the notification names no bundle id or environment"
            )
        }
        return VerifiedNotification(
            signedPayload: signedPayload,
            payload: payload,
            uuid: uuid,
            type: type,
            environment: environment,
            bundleId: bundleId
        )
    }

    /// Checks the signed transaction and renewal info inside a notification on their own: signed for `app`, in
    /// the notification's environment, about one subscription. Throws when one is not (nothing recorded).
    func verifyContents(of verified: inout VerifiedNotification, app: ServerApp) async throws {
        guard let data = verified.payload.data else { return }
        let environment = verified.environment
        if let jws = data.signedTransactionInfo {
            let transaction = try Self.trusted(
                await verifier.verifySigned(jws, as: JWSTransactionDecodedPayload.self, app: app),
                "signedTransactionInfo"
            )
            guard transaction.environment == environment else {
                throw NotificationRefusal(
                    .invalidSignature,
                    "signedTransactionInfo is \(transaction.environment?.rawValue ?? "unlabelled") data in a \(environment) notification"
                )
            }
            verified.transaction = transaction
        }
        if let jws = data.signedRenewalInfo {
            let renewal = try Self.trusted(
                await verifier.verifySigned(jws, as: JWSRenewalInfoDecodedPayload.self, app: app),
                "signedRenewalInfo"
            )
            guard renewal.environment == environment,
                verified.transaction == nil
                    || renewal.originalTransactionId == verified.transaction?.originalTransactionId
            else {
                throw NotificationRefusal(
                    .invalidSignature,
                    "signedRenewalInfo belongs to another environment or subscription"
                )
            }
            verified.renewal = renewal
        }
    }

    private static func trusted<T>(_ outcome: VerificationOutcome<T>, _ field: String) throws -> T {
        switch outcome {
        case .valid(let value):
            return value
        case .invalid(let failure):
            throw NotificationRefusal(.invalidSignature, "\(field): \(failure.reason): \(failure.detail)")
        }
    }

    // MARK: Applying

    /// Applies a recorded notification; returns its outcome, the customer it concerned and a detail for people.
    ///
    /// A notification about a purchase no customer owns yet changes nothing: it waits (`unmatched`) and is applied
    /// when a submission records the purchase, renewal state included, so that the same facts give the same state and
    /// the same events in any order.
    private func apply(
        _ notification: VerifiedNotification,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        now: Int64,
        in changes: ChangeSet
    ) async throws -> (NotificationOutcome, String?, String?) {
        let environment = notification.environment
        guard environment == .production || environment == .sandbox else {
            logger.info("notification \(notification.uuid): \(environment) data is never recorded by a server")
            return (.unsupportedEnvironment, nil, "\(environment) data is not recorded")
        }
        if environment != .production && !app.acceptSandbox {
            logger.info("notification \(notification.uuid): \(app.bundleId) does not accept the sandbox")
            return (.sandboxNotAccepted, nil, "\(app.bundleId) does not accept \(environment) purchases")
        }
        let db = changes.db
        let signed = notification.transaction
        let transaction = signed?.purchaseTransaction()
        guard let original = transaction?.originalTransactionId ?? notification.renewal?.originalTransactionId else {
            return (.recorded, nil, nil)
        }
        try await notificationStore.lockPurchase(
            environment: environment,
            originalTransactionId: original,
            on: db
        )
        let owner: String?
        if let transaction {
            owner = try await ledger.owner(of: transaction, bundleId: app.bundleId, on: db)
        } else {
            owner = try await ledger.owner(
                originalTransactionId: original,
                environment: environment,
                bundleId: app.bundleId,
                on: db
            )
        }
        if notification.type == .consumptionRequest, let transaction {
            // Apple waits twelve hours for what the server knows of the purchase: queued with the notification.
            try await consumption.requested(
                notification,
                transaction: transaction,
                owner: owner,
                app: app,
                now: now,
                trace: changes.trace,
                on: db
            )
            return (.recorded, owner, "consumption information queued for Send Consumption Information")
        }
        let changesLedger = transaction != nil && !Self.recordedOnly.contains(notification.type)
        guard notification.renewal != nil || changesLedger else { return (.recorded, owner, nil) }
        guard let owner else {
            return (.unmatched, nil, "no customer owns \(environment) original transaction \(original) yet")
        }
        if let renewal = notification.renewal {
            try await ledger.recordRenewalState(
                Self.state(renewal, of: notification, originalTransactionId: original, app: app, now: now),
                owner: owner,
                notificationSubtype: notification.payload.subtype,
                notificationType: notification.type,
                in: changes
            )
        }
        if Self.recordedOnly.contains(notification.type) { return (.recorded, owner, nil) }
        guard let signed, let transaction else { return (.applied, owner, nil) }
        try await ledger.applyNotified(
            transaction,
            signed: signed,
            owner: owner,
            change: Ledger.NotifiedChange(
                isFamilyRevocation: notification.type == .revoke,
                reversesRefund: notification.type == .refundReversed,
                startsUpgrade: notification.payload.subtype == .upgrade
                    && (notification.type == .didChangeRenewalPref || notification.type == .offerRedeemed)
            ),
            origin: .notification(notification.uuid),
            app: app,
            catalogue: catalogue,
            now: now,
            in: changes
        )
        return (.applied, owner, nil)
    }

    /// Applies the notifications that came before anyone owned this purchase, now that a submission recorded it
    /// (Apple often notifies before the app submits): verified again from what Apple sent, applied in the order
    /// Apple signed them, and recorded as applied. The same facts give the same state in either order; the events
    /// they make have the notification as their source.
    func applyWaitingNotifications(
        environment: AppStoreEnvironment,
        originalTransactionId: String,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        now: Int64,
        in changes: ChangeSet
    ) async throws {
        for var record in try await notificationStore.unmatchedNotifications(
            environment: environment,
            originalTransactionId: originalTransactionId,
            on: changes.db
        ) where record.bundleId == app.bundleId {
            guard let signedPayload = record.signedPayload,
                var notification = try? await verifyEnvelope(signedPayload),
                (try? await verifyContents(of: &notification, app: app)) != nil
            else { continue }
            let (outcome, customerId, detail) = try await changes.with(source: notification.source()) {
                try await apply(notification, app: app, catalogue: catalogue, now: now, in: changes)
            }
            guard outcome != .unmatched else { continue }
            record.outcome = outcome
            record.customerId = customerId
            record.detail = detail ?? "applied when a submission recorded the purchase"
            record.signedPayload = nil
            try await notificationStore.update(record, on: changes.db)
            logger.info(
                "notification \(record.type) \(record.notificationUuid): applied once the purchase was submitted"
            )
        }
    }

    /// The renewal state a notification's renewal info reports.
    private static func state(
        _ renewal: JWSRenewalInfoDecodedPayload,
        of notification: VerifiedNotification,
        originalTransactionId: String,
        app: ServerApp,
        now: Int64
    ) -> SubscriptionStateRecord {
        SubscriptionStateRecord(
            environment: notification.environment,
            originalTransactionId: originalTransactionId,
            bundleId: app.bundleId,
            productId: renewal.productId ?? notification.transaction?.productId,
            autoRenewProductId: renewal.autoRenewProductId,
            autoRenewStatus: renewal.autoRenewStatus.map { $0 == .on },
            status: notification.payload.data?.status?.rawValue,
            isInBillingRetry: renewal.isInBillingRetryPeriod ?? false,
            gracePeriodExpiresDate: renewal.gracePeriodExpiresDate?.millisecondsSince1970,
            expirationIntent: renewal.expirationIntent?.rawValue,
            renewalDate: renewal.renewalDate?.millisecondsSince1970,
            priceIncreaseStatus: renewal.priceIncreaseStatus?.rawValue,
            lastNotificationType: notification.type.rawValue,
            signedDate: (renewal.signedDate ?? notification.payload.signedDate)?.millisecondsSince1970 ?? now,
            updatedAt: now,
            billingPlanType: renewal.renewalBillingPlanType?.rawValue,
            currency: renewal.currency,
            commitmentRenewalDate: renewal.commitmentInfo?.commitmentRenewalDate?.millisecondsSince1970,
            commitmentAutoRenewStatus: renewal.commitmentInfo?.commitmentAutoRenewStatus.map { $0 == .on },
            commitmentAutoRenewProductId: renewal.commitmentInfo?.commitmentAutoRenewProductId,
            commitmentRenewalBillingPlanType: renewal.commitmentInfo?.commitmentRenewalBillingPlanType?.rawValue,
            commitmentRenewalPrice: renewal.commitmentInfo?.commitmentRenewalPrice
        )
    }
}

extension VerifiedNotification {
    /// The notification as the source of the events it makes.
    func source(recoveredByCatchUp: Bool = false) -> EventSource {
        .notification(
            uuid,
            type: type.rawValue,
            subtype: payload.subtype?.rawValue,
            recoveredByCatchUp: recoveredByCatchUp
        )
    }
}
