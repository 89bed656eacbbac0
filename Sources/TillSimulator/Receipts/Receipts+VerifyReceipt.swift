import Foundation
import Logging
import SQLKit
import TillCore
import TillFormats
import TillStorage

extension Receipts {
    /// Apple's verifyReceipt for one environment, with its status codes (apple-formats.md §3).
    ///
    /// HTTP is always 200; the outcome is `status`. Faults (latency, outages, forced statuses) are applied by the
    /// HTTP layer before this is called.
    public func verifyReceipt(body: [UInt8]?, isPOST: Bool, environment: AppStoreEnvironment) async
        -> VerifyReceiptResponse
    {
        guard isPOST, let body, let request = try? JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(body))
        else {
            return VerifyReceiptResponse(status: .badRequest)
        }
        guard let text = request.receiptData, !text.isEmpty, let bytes = Base64.decode(text, alphabet: .standard),
            let first = bytes.first
        else { return VerifyReceiptResponse(status: .malformedReceiptData) }
        do {
            if first == UInt8(ascii: "{") {
                return try await verifyTransactionReceipt(text, request: request, environment: environment)
            }
            return try await verifyAppReceipt(bytes, request: request, environment: environment)
        } catch {
            logger.error("verifyReceipt failed: \(error)")
            return VerifyReceiptResponse(status: .internalDataAccessError)
        }
    }

    private func verifyAppReceipt(_ bytes: [UInt8], request: VerifyReceiptRequest, environment: AppStoreEnvironment)
        async throws
        -> VerifyReceiptResponse
    {
        switch try await readAppReceipt(bytes, request: request, environment: environment) {
        case .answered(let status): return VerifyReceiptResponse(status: status)
        case .read(let reading): return answer(reading, request: request, environment: environment)
        }
    }

    /// What verifyReceipt knows of an app receipt: the receipt, and what the store holds of its app and account.
    ///
    /// A class, read by one async function and answered from by a synchronous one: an async function keeps each value
    /// it holds across a suspension in its frame, and with the answer built inline the simulator's verifyReceipt
    /// took tens of kilobytes a call from the task's allocator (heaptrack over `till bench submissions`).
    private final class AppReceiptReading {
        let receipt: AppReceipt
        var account: SimAccount?
        var transactions: [SimTransaction] = []
        var latestReceipt: [UInt8]?
        var subscriptions: [SimSubscription] = []

        init(receipt: AppReceipt) {
            self.receipt = receipt
        }

        /// Whether the receipt or the account's transactions hold an auto-renewable subscription.
        var hasSubscriptions: Bool {
            receipt.inAppPurchases.contains { $0.productType == .autoRenewable }
                || transactions.contains { $0.productType == .autoRenewable }
        }
    }

    private enum AppReceiptRead {
        case read(AppReceiptReading)
        /// The answer is this status alone.
        case answered(ReceiptStatus)
    }

    private func readAppReceipt(_ bytes: [UInt8], request: VerifyReceiptRequest, environment: AppStoreEnvironment)
        async throws -> AppReceiptRead
    {
        let receipt: AppReceipt
        switch await receiptVerifier.verify(der: bytes) {
        case .valid(let verified):
            receipt = verified.receipt
        case .invalid(let failure):
            let malformed = [.invalidFormat, .malformedPayload, .tooLarge].contains(failure.reason)
            return .answered(malformed ? .malformedReceiptData : .notAuthenticated)
        }
        if let redirect = redirect(receiptEnvironment: receipt.environment, endpoint: environment) {
            return .answered(redirect)
        }
        let db = store.sql
        guard let bundleId = receipt.bundleId, let app = try await store.appStoreConnect.app(bundleId: bundleId, on: db)
        else {
            return .answered(.notAuthenticated)
        }
        let reading = AppReceiptReading(receipt: receipt)
        let owner = try await store.purchases.receiptOwner(opaqueValue: hex(receipt.opaqueValue), on: db)
        if let owner { reading.account = try await store.appStoreConnect.account(id: owner.accountId, on: db) }
        if reading.account?.deleted == true { return .answered(.accountNotFound) }
        if let account = reading.account {
            reading.transactions = try await store.purchases.transactions(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment,
                on: db
            )
        }
        if reading.hasSubscriptions, request.password != app.sharedSecret { return .answered(.sharedSecretMismatch) }
        guard reading.hasSubscriptions, let account = reading.account else { return .read(reading) }
        if let owner, let device = try await store.appStoreConnect.device(id: owner.deviceId, on: db) {
            reading.latestReceipt = try await appReceipt(account: account, device: device, app: app, on: db)
        }
        reading.subscriptions = try await store.subscriptions.subscriptions(
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: environment,
            on: db
        )
        return .read(reading)
    }

    /// The answer to an app receipt that verified: the receipt, and for subscriptions the latest receipt, every
    /// transaction and the pending renewals.
    private func answer(_ reading: AppReceiptReading, request: VerifyReceiptRequest, environment: AppStoreEnvironment)
        -> VerifyReceiptResponse
    {
        var response = VerifyReceiptResponse(
            status: .valid,
            environment: environment,
            receipt: ReceiptInfoJSON(reading.receipt, requestDate: clock.now())
        )
        guard reading.hasSubscriptions, reading.account != nil else { return response }
        response.latestReceipt = reading.latestReceipt.map { Base64.encode($0) }
        var latest = reading.transactions.filter { !($0.productType == .consumable && $0.finished) }
        if request.excludeOldTransactions == true {
            let newestPerSubscription = Dictionary(
                grouping: latest.filter { $0.productType == .autoRenewable },
                by: \.originalTransactionId
            ).compactMapValues { $0.max { $0.purchaseDate < $1.purchaseDate } }
            latest = latest.filter { $0.productType != .autoRenewable } + newestPerSubscription.values
        }
        response.latestReceiptInfo = latest.sorted {
            ($0.purchaseDate, $0.signedSequence) > ($1.purchaseDate, $1.signedSequence)
        }
        .map(latestReceiptInfo)
        response.pendingRenewalInfo = reading.subscriptions.map(pendingRenewalInfo)
        return response
    }

    private func verifyTransactionReceipt(
        _ text: String,
        request: VerifyReceiptRequest,
        environment: AppStoreEnvironment
    ) async throws
        -> VerifyReceiptResponse
    {
        let verification = await transactionReceiptVerifier.verify(base64: text)
        guard case .valid(let decoded) = verification else {
            return VerifyReceiptResponse(
                status: verification.failure?.reason == .invalidFormat ? .malformedReceiptData : .notAuthenticated
            )
        }
        let db = store.sql
        // The receipt's own environment key is not signed: the store knows where the transaction happened.
        guard let id = decoded.purchaseInfo.transactionId,
            let tx = try await store.purchases.transaction(id: id, on: db),
            let app = try await store.appStoreConnect.app(appAppleId: tx.appAppleId, on: db)
        else { return VerifyReceiptResponse(status: .notAuthenticated) }
        if let redirect = redirect(receiptEnvironment: tx.environment, endpoint: environment) {
            return VerifyReceiptResponse(status: redirect)
        }
        if try await store.appStoreConnect.account(id: tx.accountId, on: db)?.deleted == true {
            return VerifyReceiptResponse(status: .accountNotFound)
        }
        var response = VerifyReceiptResponse(
            status: .valid,
            environment: environment,
            transactionReceipt: transactionReceiptInfo(tx, app: app, decoded: decoded)
        )
        guard tx.productType == .autoRenewable,
            let subscription = try await store.subscriptions.subscription(
                originalTransactionId: tx.originalTransactionId,
                on: db
            ),
            let newest = try await store.purchases.transaction(id: subscription.lastTransactionId, on: db)
        else { return response }
        guard request.password == app.sharedSecret else { return VerifyReceiptResponse(status: .sharedSecretMismatch) }
        response.autoRenewStatus = AutoRenewStatus(rawValue: subscription.autoRenewStatus ? 1 : 0)
        response.autoRenewProductId = subscription.autoRenewProductId
        response.expirationIntent = subscription.expirationIntent.map(ExpirationIntent.init(rawValue:))
        response.isInBillingRetryPeriod = subscription.billingRetry
        let newestInfo = transactionReceiptInfo(newest, app: app, decoded: decoded)
        if let expires = newest.expiresDate, expires <= clock.nowMilliseconds,
            subscription.status != AppStoreSubscriptionStatus.gracePeriod.rawValue
        {
            // An expired iOS 6-style auto-renewable receipt: 21006, with the receipt still decoded.
            response.status = .subscriptionExpired
            response.latestExpiredReceiptInfo = newestInfo
        } else {
            response.latestTransactionReceiptInfo = newestInfo
            response.latestReceipt = try transactionReceipt(newest, app: app, device: nil)
        }
        return response
    }

    /// The status of a receipt asked of the other environment's endpoint, or of none (nil: this endpoint answers it).
    private func redirect(receiptEnvironment: AppStoreEnvironment?, endpoint: AppStoreEnvironment) -> ReceiptStatus? {
        if receiptEnvironment == .sandbox && endpoint == .production { return .sandboxReceiptInProduction }
        if receiptEnvironment == .production && endpoint == .sandbox { return .productionReceiptInSandbox }
        if receiptEnvironment != .sandbox && receiptEnvironment != .production { return .notAuthenticated }
        return nil
    }

    private func latestReceiptInfo(_ tx: SimTransaction) -> InAppReceiptInfoJSON {
        var info = InAppReceiptInfoJSON(
            receiptEntries([tx]).first ?? InAppPurchase(productId: tx.productId, transactionId: tx.transactionId)
        )
        info.cancellationReason = tx.revocationReason.map(RevocationReason.init(rawValue:))
        info.isUpgraded = tx.isUpgraded ? true : nil
        info.subscriptionGroupIdentifier = tx.subscriptionGroup
        info.inAppOwnershipType = tx.ownership
        info.appAccountToken = tx.appAccountToken
        info.offerCodeRefName = tx.offerType == OfferType.subscriptionOfferCode.rawValue ? tx.offerIdentifier : nil
        return info
    }

    /// A subscription's pending renewal: with the offer code or promotional offer its next renewal gets, and the
    /// customer's answer to a price increase (`price_consent_status` only when consent was asked for).
    private func pendingRenewalInfo(_ subscription: SimSubscription) -> PendingRenewalInfoJSON {
        let offer = subscription.appliedOffer.flatMap { $0.remainingRenewals > 0 ? $0 : nil }
        var info = PendingRenewalInfoJSON(
            autoRenewProductId: subscription.autoRenewProductId,
            autoRenewStatus: AutoRenewStatus(rawValue: subscription.autoRenewStatus ? 1 : 0),
            expirationIntent: subscription.expirationIntent.map(ExpirationIntent.init(rawValue:)),
            gracePeriodExpiresDate: subscription.gracePeriodExpiresDate.map(Date.init(milliseconds:)),
            isInBillingRetryPeriod: subscription.status == AppStoreSubscriptionStatus.expired.rawValue
                ? nil : subscription.billingRetry,
            originalTransactionId: subscription.originalTransactionId,
            productId: subscription.productId
        )
        info.offerCodeRefName = offer?.type == OfferType.subscriptionOfferCode.rawValue ? offer?.identifier : nil
        info.promotionalOfferId = offer?.type == OfferType.promotionalOffer.rawValue ? offer?.identifier : nil
        if let status = subscription.priceIncreaseStatus {
            info.priceIncreaseStatus = PriceIncreaseStatus(rawValue: status)
            info.priceConsentStatus = status
        }
        return info
    }

    private func transactionReceiptInfo(_ tx: SimTransaction, app: SimApp, decoded: TransactionReceipt)
        -> TransactionReceiptInfoJSON
    {
        TransactionReceiptInfoJSON(
            bid: app.bundleId,
            bvrs: decoded.purchaseInfo.bundleVersion,
            itemId: decoded.purchaseInfo.fields["item-id"],
            appItemId: decoded.purchaseInfo.fields["app-item-id"],
            productId: tx.productId,
            transactionId: tx.transactionId,
            originalTransactionId: tx.originalTransactionId,
            purchaseDate: Date(milliseconds: tx.purchaseDate),
            originalPurchaseDate: Date(milliseconds: tx.originalPurchaseDate),
            quantity: tx.quantity,
            uniqueIdentifier: decoded.purchaseInfo.fields["unique-identifier"],
            uniqueVendorIdentifier: decoded.purchaseInfo.fields["unique-vendor-identifier"],
            versionExternalIdentifier: decoded.purchaseInfo.fields["version-external-identifier"],
            webOrderLineItemId: tx.webOrderLineItemId,
            expiresDate: tx.expiresDate.map(Date.init(milliseconds:)),
            isTrialPeriod: tx.productType == .autoRenewable ? tx.isTrial : nil,
            isInIntroOfferPeriod: tx.productType == .autoRenewable ? tx.isInIntroOfferPeriod : nil,
            inAppOwnershipType: tx.ownership
        )
    }
}
