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
        let verification = await receiptVerifier.verify(der: bytes)
        guard case .valid(let verified) = verification else {
            let reason = verification.failure?.reason
            let malformed = reason == .invalidFormat || reason == .malformedPayload || reason == .tooLarge
            return VerifyReceiptResponse(status: malformed ? .malformedReceiptData : .notAuthenticated)
        }
        let receipt = verified.receipt
        if let redirect = redirect(receiptEnvironment: receipt.environment, endpoint: environment) { return redirect }
        let db = store.sql
        guard let bundleId = receipt.bundleId, let app = try await store.app(bundleId: bundleId, on: db) else {
            return VerifyReceiptResponse(status: .notAuthenticated)
        }
        let owner = try await store.receiptOwner(opaqueValue: hex(receipt.opaqueValue), on: db)
        let account = try await owner.asyncFlatMap { try await store.account(id: $0.accountId, on: db) }
        if account?.deleted == true { return VerifyReceiptResponse(status: .accountNotFound) }

        let transactions =
            try await account.asyncMap {
                try await store.transactions(
                    accountId: $0.id,
                    appAppleId: app.appAppleId,
                    environment: environment.rawValue,
                    on: db
                )
            } ?? []
        let hasSubscriptions =
            receipt.inAppPurchases.contains { $0.productType == .autoRenewable }
            || transactions.contains { $0.type == .autoRenewable }
        if hasSubscriptions, request.password != app.sharedSecret {
            return VerifyReceiptResponse(status: .sharedSecretMismatch)
        }
        var response = VerifyReceiptResponse(
            status: .valid,
            environment: environment,
            receipt: ReceiptInfoJSON(receipt, requestDate: clock.now())
        )
        guard hasSubscriptions, let account else { return response }

        if let device = try await owner.asyncFlatMap({ try await store.device(id: $0.deviceId, on: db) }) {
            response.latestReceipt = Base64.encode(
                try await appReceipt(account: account, device: device, app: app, on: db)
            )
        }
        var latest = transactions.filter { !($0.type == .consumable && $0.finished) }
        if request.excludeOldTransactions == true {
            let newestPerSubscription = Dictionary(
                grouping: latest.filter { $0.type == .autoRenewable },
                by: \.originalTransactionId
            ).compactMapValues { $0.max { $0.purchaseDate < $1.purchaseDate } }
            latest = latest.filter { $0.type != .autoRenewable } + newestPerSubscription.values
        }
        response.latestReceiptInfo = latest.sorted {
            ($0.purchaseDate, $0.signedSequence) > ($1.purchaseDate, $1.signedSequence)
        }
        .map(latestReceiptInfo)
        response.pendingRenewalInfo = try await store.subscriptions(
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: environment.rawValue,
            on: db
        ).map(pendingRenewalInfo)
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
        guard let id = decoded.purchaseInfo.transactionId, let tx = try await store.transaction(id: id, on: db),
            let app = try await store.app(appAppleId: tx.appAppleId, on: db)
        else { return VerifyReceiptResponse(status: .notAuthenticated) }
        if let redirect = redirect(receiptEnvironment: AppStoreEnvironment(tx.environment), endpoint: environment) {
            return redirect
        }
        if try await store.account(id: tx.accountId, on: db)?.deleted == true {
            return VerifyReceiptResponse(status: .accountNotFound)
        }
        var response = VerifyReceiptResponse(
            status: .valid,
            environment: environment,
            transactionReceipt: transactionReceiptInfo(tx, app: app, decoded: decoded)
        )
        guard tx.type == .autoRenewable,
            let subscription = try await store.subscription(originalTransactionId: tx.originalTransactionId, on: db),
            let newest = try await store.transaction(id: subscription.lastTransactionId, on: db)
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

    private func redirect(receiptEnvironment: AppStoreEnvironment?, endpoint: AppStoreEnvironment)
        -> VerifyReceiptResponse?
    {
        if receiptEnvironment == .sandbox && endpoint == .production {
            return VerifyReceiptResponse(status: .sandboxReceiptInProduction)
        }
        if receiptEnvironment == .production && endpoint == .sandbox {
            return VerifyReceiptResponse(status: .productionReceiptInSandbox)
        }
        if receiptEnvironment != .sandbox && receiptEnvironment != .production {
            return VerifyReceiptResponse(status: .notAuthenticated)
        }
        return nil
    }

    private func latestReceiptInfo(_ tx: SimTransaction) -> InAppReceiptInfoJSON {
        var info = InAppReceiptInfoJSON(
            receiptEntries([tx]).first ?? InAppPurchase(productId: tx.productId, transactionId: tx.transactionId)
        )
        info.cancellationReason = tx.revocationReason.map(RevocationReason.init(rawValue:))
        info.isUpgraded = tx.isUpgraded ? true : nil
        info.subscriptionGroupIdentifier = tx.subscriptionGroup
        info.inAppOwnershipType = Ownership(rawValue: tx.ownership)
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
            isTrialPeriod: tx.type == .autoRenewable ? tx.isTrial : nil,
            isInIntroOfferPeriod: tx.type == .autoRenewable ? tx.isInIntroOfferPeriod : nil,
            inAppOwnershipType: Ownership(rawValue: tx.ownership)
        )
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }

    func asyncFlatMap<T>(_ transform: (Wrapped) async throws -> T?) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
