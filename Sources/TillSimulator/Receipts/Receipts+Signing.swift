import Crypto
import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

extension Receipts {
    /// A transaction as StoreKit 2 and the App Store Server API sign it.
    func transactionPayload(_ tx: SimTransaction, app: SimApp, signedAt: Date) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            transactionId: tx.transactionId,
            originalTransactionId: tx.originalTransactionId,
            webOrderLineItemId: tx.webOrderLineItemId,
            bundleId: app.bundleId,
            productId: tx.productId,
            subscriptionGroupIdentifier: tx.subscriptionGroup,
            purchaseDate: Date(milliseconds: tx.purchaseDate),
            originalPurchaseDate: Date(milliseconds: tx.originalPurchaseDate),
            expiresDate: tx.expiresDate.map(Date.init(milliseconds:)),
            quantity: tx.quantity,
            type: Self.transactionType(of: tx.productType),
            appAccountToken: tx.appAccountToken,
            inAppOwnershipType: tx.ownership,
            signedDate: signedAt,
            revocationReason: tx.revocationReason.map(RevocationReason.init(rawValue:)),
            revocationDate: tx.revocationDate.map(Date.init(milliseconds:)),
            isUpgraded: tx.isUpgraded ? true : nil,
            offerType: tx.offerType.map(OfferType.init(rawValue:)),
            offerIdentifier: tx.offerIdentifier,
            environment: tx.environment,
            storefront: tx.storefront,
            storefrontId: tx.storefrontId,
            transactionReason: tx.transactionReason,
            currency: tx.currency,
            price: tx.price,
            offerDiscountType: tx.offerDiscountType.map(OfferDiscountType.init(rawValue:)),
            appTransactionId: appTransactionId(accountId: tx.accountId, app: app),
            offerPeriod: tx.offerPeriod,
            revocationType: tx.revocationType.map(RevocationType.init(rawValue:)),
            revocationPercentage: tx.revocationPercentage ?? (tx.revocationType == "REFUND_FULL" ? 100_000 : nil),
            billingPlanType: tx.billingPlanType.map(BillingPlanType.init(rawValue:)),
            commitmentInfo: tx.commitmentPeriod.map { month in
                .init(
                    billingPeriodNumber: month,
                    commitmentExpiresDate: tx.commitmentExpiresDate.map(Date.init(milliseconds:)),
                    commitmentPrice: tx.commitmentPrice,
                    totalBillingPeriods: 12
                )
            }
        )
    }

    /// The `type` a transaction is signed with: one of Apple's four values. A free subscription (App Store
    /// Connect's old Newsstand type: free, never expires, restored) is signed as `Non-Consumable`, as its receipt
    /// entry (attribute 1707 = 0) and the history's `productType` filter (`NON_CONSUMABLE`) already describe it.
    static func transactionType(of type: ProductType) -> TransactionType {
        TransactionType(type) ?? .nonConsumable
    }

    func signTransaction(_ tx: SimTransaction, app: SimApp) throws -> String {
        try signer.jws(for: tx.environment).sign(
            transactionPayload(tx, app: app, signedAt: clock.now())
        )
    }

    /// The renewal information of a subscription: what its next renewal will be, with the offer it gets, its price,
    /// the customer's answer to a price increase, the app account token it carries, and the win-back offers a lapsed
    /// subscriber may redeem.
    func renewalPayload(
        _ subscription: SimSubscription,
        app: SimApp,
        product: SimProduct?,
        storefront: String,
        appAccountToken: String? = nil,
        winBackOfferIds: [String] = []
    ) -> JWSRenewalInfoDecodedPayload {
        let price = product?.prices[storefront]
        let offer = subscription.appliedOffer.flatMap { $0.remainingRenewals > 0 ? $0 : nil }
        let samePlan = subscription.autoRenewProductId == subscription.productId
        let renewalPrice =
            subscription.isCommitted
            ? product?.monthlyCommitmentPrices?[storefront]?.price
            : offer?.price ?? (samePlan ? subscription.renewalPrice ?? price?.price : price?.price)
        return JWSRenewalInfoDecodedPayload(
            expirationIntent: subscription.expirationIntent.map(ExpirationIntent.init(rawValue:)),
            originalTransactionId: subscription.originalTransactionId,
            autoRenewProductId: subscription.autoRenewProductId,
            productId: subscription.productId,
            autoRenewStatus: AutoRenewStatus(rawValue: subscription.autoRenewStatus ? 1 : 0),
            isInBillingRetryPeriod: subscription.billingRetry,
            priceIncreaseStatus: subscription.priceIncreaseStatus.map(PriceIncreaseStatus.init(rawValue:)),
            gracePeriodExpiresDate: subscription.gracePeriodExpiresDate.map(Date.init(milliseconds:)),
            offerType: offer.map { OfferType(rawValue: $0.type) },
            offerIdentifier: offer?.identifier,
            signedDate: clock.now(),
            environment: subscription.environment,
            recentSubscriptionStartDate: Date(milliseconds: subscription.recentStartDate),
            renewalDate: Date(milliseconds: subscription.expiresDate),
            currency: price?.currency,
            renewalPrice: renewalPrice,
            offerDiscountType: offer.map { OfferDiscountType(rawValue: $0.discountType) },
            eligibleWinBackOfferIds: winBackOfferIds.isEmpty ? nil : winBackOfferIds,
            appAccountToken: appAccountToken,
            appTransactionId: appTransactionId(accountId: subscription.accountId, app: app),
            offerPeriod: offer?.period,
            renewalBillingPlanType: subscription.isCommitted
                ? .monthly : product?.monthlyCommitmentPrices == nil ? nil : .billedUpfront,
            commitmentInfo: subscription.isCommitted
                ? commitment(of: subscription, product: product, storefront: storefront) : nil
        )
    }

    /// What the renewal info says of a monthly commitment: whether a new one follows this one, when, and its price.
    private func commitment(of subscription: SimSubscription, product: SimProduct?, storefront: String)
        -> JWSRenewalInfoDecodedPayload.CommitmentInfo
    {
        let monthly = product?.monthlyCommitmentPrices?[storefront]
        return .init(
            commitmentAutoRenewProductId: subscription.autoRenewProductId,
            commitmentAutoRenewStatus: AutoRenewStatus(rawValue: subscription.commitmentAutoRenew == false ? 0 : 1),
            commitmentRenewalBillingPlanType: .monthly,
            commitmentRenewalDate: subscription.commitmentExpiresDate.map(Date.init(milliseconds:)),
            commitmentRenewalPrice: monthly.map { $0.price * 12 }
        )
    }

    func signRenewalInfo(_ subscription: SimSubscription, app: SimApp, on db: any SQLDatabase) async throws -> String {
        let product = try await store.appStoreConnect.product(
            appAppleId: app.appAppleId,
            productId: subscription.autoRenewProductId,
            on: db
        )
        let storefront =
            try await store.appStoreConnect.account(id: subscription.accountId, on: db)?.storefront ?? "USA"
        let latest = try await store.purchases.transaction(id: subscription.lastTransactionId, on: db)
        return try signer.jws(for: subscription.environment).sign(
            renewalPayload(
                subscription,
                app: app,
                product: product,
                storefront: storefront,
                appAccountToken: latest?.appAccountToken,
                winBackOfferIds: try await offers.eligibleWinBackOfferIds(subscription, on: db)
            )
        )
    }

    /// The AppTransaction of an account's copy of an app, signed: StoreKit 2's `AppTransaction.shared` on a device
    /// (with the device verification value), or Get App Transaction Info on the server (without one).
    func signAppTransaction(account: SimAccount, device: SimDevice?, app: SimApp) throws -> String {
        let nonce = device.map { _ in UUID().uuidString.lowercased() }
        let verification = device.map { device in
            Data(SHA384.hash(data: Data((nonce! + device.vendorIdentifier.lowercased()).utf8))).base64EncodedString()
        }
        let environment = account.environment
        let payload = AppTransaction(
            receiptType: environment,
            appAppleId: environment == .production ? app.appAppleId : nil,
            bundleId: app.bundleId,
            applicationVersion: "1",
            versionExternalIdentifier: environment == .production ? 1 : 0,
            receiptCreationDate: clock.now(),
            originalPurchaseDate: Date(milliseconds: account.createdAt),
            originalApplicationVersion: "1.0",
            deviceVerification: verification,
            deviceVerificationNonce: nonce,
            appTransactionId: appTransactionId(accountId: account.id, app: app),
            originalPlatform: .iOS
        )
        return try signer.jws(for: environment).sign(payload)
    }

    /// A Retention Messaging realtime request, signed like a notification.
    func signRealtimeRequest(_ payload: DecodedRealtimeRequestBody) throws -> String {
        try signer.jws.sign(payload)
    }

    /// A stable id of an account's copy of an app.
    func appTransactionId(accountId: String, app: SimApp) -> String {
        Self.appTransactionId(accountId: accountId, appAppleId: app.appAppleId)
    }

    static func appTransactionId(accountId: String, appAppleId: Int64) -> String {
        let digest = SHA256.hash(data: Data("\(accountId)/\(appAppleId)".utf8))
        let number = digest.prefix(7).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return String(704_000_000_000_000_000 + number % 1_000_000_000_000_000)
    }

    // MARK: Receipts

    /// The in-app purchase entries an app receipt shows: everything but finished consumables.
    func receiptEntries(_ transactions: [SimTransaction]) -> [InAppPurchase] {
        transactions.filter { !($0.productType == .consumable && $0.finished) }.map { tx in
            let subscription = tx.productType == .autoRenewable
            return InAppPurchase(
                quantity: tx.quantity,
                productId: tx.productId,
                transactionId: tx.transactionId,
                purchaseDate: Date(milliseconds: tx.purchaseDate),
                originalTransactionId: tx.originalTransactionId,
                originalPurchaseDate: Date(milliseconds: tx.originalPurchaseDate),
                productTypeCode: InAppPurchase.productTypeCode(for: tx.productType),
                expiresDate: tx.expiresDate.map(Date.init(milliseconds:)),
                webOrderLineItemId: tx.webOrderLineItemId.flatMap { Int64($0) },
                cancellationDate: tx.revocationDate.map(Date.init(milliseconds:)),
                isTrialPeriod: subscription ? tx.isTrial : nil,
                isInIntroOfferPeriod: subscription ? tx.isInIntroOfferPeriod : nil,
                promotionalOfferId: tx.offerType == OfferType.promotionalOffer.rawValue ? tx.offerIdentifier : nil
            )
        }
    }

    /// The app receipt of an account on a device for an app, signed, as the device's receipt file holds it.
    /// Its opaque value is recorded so that verifyReceipt can find the account again.
    func appReceipt(account: SimAccount, device: SimDevice, app: SimApp, on db: any SQLDatabase) async throws -> [UInt8]
    {
        let environment = account.environment
        let transactions = try await store.purchases.transactions(
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: environment,
            on: db
        )
        let opaque = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let vendor =
            UUID(uuidString: device.vendorIdentifier).map { uuid in withUnsafeBytes(of: uuid.uuid) { Array($0) } } ?? []
        let bundleValue = AppReceipt(bundleId: app.bundleId).bundleIdAttributeValue
        let now = clock.now()
        let receipt = AppReceipt(
            receiptType: AppReceipt.receiptType(for: environment),
            appItemId: environment == .production ? app.appAppleId : 0,
            bundleId: app.bundleId,
            applicationVersion: "1",
            opaqueValue: opaque,
            sha1Hash: AppReceipt.deviceHash(
                identifier: vendor,
                opaqueValue: opaque,
                bundleIdAttributeValue: bundleValue
            ),
            receiptCreationDate: now,
            downloadId: 0,
            versionExternalIdentifier: 0,
            inAppPurchases: receiptEntries(transactions),
            originalPurchaseDate: environment == .production
                ? Date(milliseconds: account.createdAt) : Date(timeIntervalSince1970: 1_375_340_400),
            originalApplicationVersion: "1.0"
        )
        try await store.purchases.recordReceipt(
            opaqueValue: hex(opaque),
            accountId: account.id,
            deviceId: device.id,
            appAppleId: app.appAppleId,
            environment: environment,
            at: now.millisecondsSince1970,
            on: db
        )
        return try signer.receipts.sign(receipt, signingTime: now)
    }

    /// An iOS 6-style transaction receipt for one transaction, base64.
    func transactionReceipt(_ tx: SimTransaction, app: SimApp, device: SimDevice?) throws -> String {
        let purchase = PurchaseTransaction(
            transactionId: tx.transactionId,
            originalTransactionId: tx.originalTransactionId,
            productId: tx.productId,
            bundleId: app.bundleId,
            productType: tx.productType,
            quantity: tx.quantity,
            purchaseDate: Date(milliseconds: tx.purchaseDate),
            originalPurchaseDate: Date(milliseconds: tx.originalPurchaseDate),
            expiresDate: tx.expiresDate.map(Date.init(milliseconds:)),
            webOrderLineItemId: tx.webOrderLineItemId,
            isTrialPeriod: tx.isTrial,
            environment: tx.environment
        )
        let info = TransactionReceipt.PurchaseInfo(
            transaction: purchase,
            bundleVersion: "1",
            itemId: String(1_000_000_000 + stableNumber("\(app.appAppleId)/\(tx.productId)", below: 999_999_999)),
            appItemId: tx.environment == .production ? String(app.appAppleId) : "0",
            versionExternalIdentifier: "0",
            uniqueIdentifier: hex(Array(SHA256.hash(data: Data((device?.id ?? tx.accountId).utf8)).prefix(20))),
            uniqueVendorIdentifier: device?.vendorIdentifier.uppercased() ?? UUID().uuidString
        )
        return try signer.transactionReceipt(purchaseInfo: info, environment: tx.environment)
            .base64EncodedString()
    }
}

func hex(_ bytes: [UInt8]) -> String {
    Hex.lowercase(bytes)
}
