import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// The App Store Server API's calls about one transaction that are not reads of it: Get App Transaction Info,
/// Set App Account Token, Finish Transaction, and Send Consumption Information (v1 and v2).
extension ServerAPI {
    /// Get App Transaction Info: the AppTransaction of the customer who owns any of their transactions, signed as
    /// the server gets it (no device verification value: there is no device).
    func appTransactionInfo(_ transactionId: String, app: SimApp, environment: AppStoreEnvironment) async throws
        -> AppTransactionInfoResponse
    {
        let tx = try await requireTransaction(transactionId, app: app, environment: environment)
        guard let account = try await store.appStoreConnect.account(id: tx.accountId, on: store.sql) else {
            throw ServerAPIFailure(.appTransactionDoesNotExist)
        }
        return AppTransactionInfoResponse(
            signedAppTransactionInfo: try receipts.signAppTransaction(account: account, device: nil, app: app)
        )
    }

    /// Set App Account Token: the token of a purchase, set or replaced on its current transaction (for a
    /// subscription, the current period; later renewals, upgrades and downgrades copy it from the period they follow;
    /// past periods keep theirs, as Apple documents).
    func setAppAccountToken(
        _ originalTransactionId: String,
        body: [UInt8],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws {
        guard let request = try? TillFormatsJSON.decoder.decode(UpdateAppAccountTokenRequest.self, from: Data(body))
        else { throw ServerAPIFailure(.generalBadRequest) }
        let original: SimTransaction
        do {
            original = try await requireTransaction(originalTransactionId, app: app, environment: environment)
        } catch let failure as ServerAPIFailure where failure.error?.code == .transactionIdNotFound {
            throw ServerAPIFailure(.originalTransactionIdNotFound)
        }
        guard let token = request.appAccountToken, UUID(uuidString: token) != nil else {
            throw ServerAPIFailure(.invalidAppAccountTokenUUID)
        }
        guard original.ownership != .familyShared else {
            throw ServerAPIFailure(.familyTransactionNotSupported)
        }
        guard original.originalTransactionId == original.transactionId else {
            throw ServerAPIFailure(.transactionIdNotOriginalTransactionId)
        }
        try await database.transaction { db in
            let subscription = try await self.store.subscriptions.subscription(
                originalTransactionId: original.transactionId,
                on: db
            )
            var currentId = original.transactionId
            if let subscription {
                currentId = subscription.lastTransactionId
            } else if let last = try await self.store.purchases.transactions(
                originalTransactionId: original.transactionId,
                on: db
            ).last(where: { $0.appAppleId == app.appAppleId }) {
                currentId = last.transactionId
            }
            guard var current = try await self.store.purchases.transaction(id: currentId, on: db),
                current.appAccountToken != token.lowercased()
            else { return }
            current.appAccountToken = token.lowercased()
            current.signedSequence = try await self.store.nextSequence(on: db)
            try await self.store.update(current, on: db)
        }
    }

    /// Finish Transaction: the server says the content was delivered, as `Transaction.finish()` does on a device. A
    /// finished consumable leaves the receipt and History v1, and the device's queue stops delivering it.
    func finishTransaction(_ transactionId: String, app: SimApp, environment: AppStoreEnvironment) async throws {
        _ = try await requireTransaction(transactionId, app: app, environment: environment)
        try await database.transaction { db in
            guard var tx = try await self.store.purchases.transaction(id: transactionId, on: db) else { return }
            if !tx.finished {
                tx.finished = true
                try await self.store.update(tx, on: db)
            }
            try await self.store.purchases.finishQueueEntries(transactionId: transactionId, on: db)
        }
    }

    /// Send Consumption Information (v1, deprecated): consumables and auto-renewable subscriptions, every field
    /// required but `refundPreference`, each checked as Apple does, then recorded.
    func sendConsumptionInformationV1(
        _ transactionId: String,
        body: [UInt8],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws {
        guard let request = try? TillFormatsJSON.decoder.decode(ConsumptionRequestV1.self, from: Data(body)) else {
            throw ServerAPIFailure(.generalBadRequest)
        }
        func inRange(_ value: Int?, _ range: ClosedRange<Int>) -> Bool { value.map(range.contains) ?? false }
        guard request.customerConsented == true else { throw ServerAPIFailure(.invalidCustomerConsented) }
        guard inRange(request.consumptionStatus?.rawValue, 0...3) else {
            throw ServerAPIFailure(.invalidConsumptionStatus)
        }
        guard inRange(request.platform?.rawValue, 0...2) else { throw ServerAPIFailure(.invalidPlatform) }
        guard request.sampleContentProvided != nil else { throw ServerAPIFailure(.invalidSampleContentProvided) }
        guard inRange(request.deliveryStatus?.rawValue, 0...5) else { throw ServerAPIFailure(.invalidDeliveryStatus) }
        guard let token = request.appAccountToken, token.isEmpty || UUID(uuidString: token) != nil else {
            throw ServerAPIFailure(.invalidAppAccountToken)
        }
        guard inRange(request.accountTenure, 0...7) else { throw ServerAPIFailure(.invalidAccountTenure) }
        guard inRange(request.playTime, 0...7) else { throw ServerAPIFailure(.invalidPlayTime) }
        guard inRange(request.lifetimeDollarsRefunded, 0...7) else {
            throw ServerAPIFailure(.invalidLifetimeDollarsRefunded)
        }
        guard inRange(request.lifetimeDollarsPurchased, 0...7) else {
            throw ServerAPIFailure(.invalidLifetimeDollarsPurchased)
        }
        guard inRange(request.userStatus?.rawValue, 0...4) else { throw ServerAPIFailure(.invalidUserStatus) }
        if let preference = request.refundPreference, !(0...3).contains(preference.rawValue) {
            throw ServerAPIFailure(.invalidRefundPreference)
        }
        let tx = try await requireTransaction(transactionId, app: app, environment: environment)
        guard tx.productType == .consumable || tx.productType == .autoRenewable else {
            throw ServerAPIFailure(.invalidTransactionTypeNotSupported)
        }
        try await recordConsumption(tx, version: 1, body: body, app: app, environment: environment)
    }

    /// Send Consumption Information (v2, December 2025): every product type; the customer's consent, whether a
    /// sample was given, the delivery, how much was used (never for an auto-renewable subscription, whose share
    /// Apple computes from time; zero when nothing was delivered) and the developer's refund preference.
    func sendConsumptionInformation(
        _ transactionId: String,
        body: [UInt8],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws {
        let tx = try await requireTransaction(transactionId, app: app, environment: environment)
        guard let request = try? TillFormatsJSON.decoder.decode(ConsumptionRequest.self, from: Data(body)) else {
            throw ServerAPIFailure(.generalBadRequest)
        }
        let deliveryStatuses: Set<DeliveryStatus> = [
            .delivered, .undeliveredQualityIssue, .undeliveredWrongItem, .undeliveredServerOutage, .undeliveredOther,
        ]
        guard tx.ownership != .familyShared else {
            throw ServerAPIFailure(.familyTransactionNotSupported)
        }
        guard request.customerConsented == true else { throw ServerAPIFailure(.invalidCustomerConsented) }
        guard request.sampleContentProvided != nil else { throw ServerAPIFailure(.invalidSampleContentProvided) }
        guard let delivery = request.deliveryStatus, deliveryStatuses.contains(delivery) else {
            throw ServerAPIFailure(.invalidDeliveryStatus)
        }
        if let preference = request.refundPreference, ![.decline, .grantFull, .grantProrated].contains(preference) {
            throw ServerAPIFailure(.invalidRefundPreference)
        }
        if let percentage = request.consumptionPercentage {
            guard tx.productType != .autoRenewable else {
                throw ServerAPIFailure(.consumptionPercentageAutoRenewableSubscription)
            }
            // Apple names these two errors without publishing their codes: the general code stands in.
            guard (0...100_000).contains(percentage), delivery == .delivered || percentage == 0 else {
                throw ServerAPIFailure(.generalBadRequest)
            }
        }
        try await recordConsumption(tx, version: 2, body: body, app: app, environment: environment)
    }

    /// Keeps what the developer sent, with when Apple asked for it (the admin API shows both).
    private func recordConsumption(
        _ tx: SimTransaction,
        version: Int,
        body: [UInt8],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws {
        let requested = try await store.notifications.latestNotification(
            type: NotificationType.consumptionRequest.rawValue,
            transactionId: tx.transactionId,
            on: store.sql
        )
        try await store.insert(
            SimConsumptionInfo(
                id: UUID().uuidString.lowercased(),
                transactionId: tx.transactionId,
                appAppleId: app.appAppleId,
                environment: environment,
                version: version,
                body: String(decoding: body, as: UTF8.self),
                requestedAt: requested?.createdAt,
                receivedAt: clock.nowMilliseconds
            ),
            on: store.sql
        )
    }

    /// Apple's transaction ids are decimal digits, at most 30 of them.
    static func isTransactionId(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 30 && id.allSatisfy(\.isASCII) && id.allSatisfy(\.isNumber)
    }
}

extension ServerAPI {
    /// What App Store Connect shows of Send Consumption Information: each body as sent, newest last.
    public func consumptionLog(appAppleId: Int64, environment: AppStoreEnvironment) async throws
        -> [SimConsumptionInfo]
    {
        _ = try await store.requireApp(appAppleId: appAppleId, on: store.sql)
        return try await store.serverAPI.consumptionInfo(
            appAppleId: appAppleId,
            environment: environment,
            on: store.sql
        )
    }
}
