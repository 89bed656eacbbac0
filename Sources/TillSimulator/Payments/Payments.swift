import Foundation
import HTTPTypes
import Logging
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// Payments and the device queue: what StoreKit does on a device — product lookup, a payment (approved,
/// failed, cancelled or deferred), the transaction queue, finishing, restoring, the device's receipt.
public struct Payments: Sendable {
    let database: TillDatabase
    let store: SimulatorStore
    let clock: SimulatorClock
    let faults: FaultRegistry
    let receipts: Receipts
    let notifications: NotificationSender
}

/// A payment an app adds to the queue (`SKPayment` / `Product.purchase()`).
public struct PaymentRequest: Codable, Sendable {
    public var deviceId: String
    public var bundleId: String
    public var productId: String
    public var quantity: Int?
    public var applicationUsername: String?
    public var appAccountToken: String?
    /// What the customer does on the payment sheet: `confirm` (the default) or `cancel`.
    public var userAction: String?

    public init(
        deviceId: String,
        bundleId: String,
        productId: String,
        quantity: Int? = nil,
        applicationUsername: String? = nil,
        appAccountToken: String? = nil,
        userAction: String? = nil
    ) {
        self.deviceId = deviceId
        self.bundleId = bundleId
        self.productId = productId
        self.quantity = quantity
        self.applicationUsername = applicationUsername
        self.appAccountToken = appAccountToken
        self.userAction = userAction
    }
}

/// A transaction in a device's payment queue, as the app sees it.
public struct QueueTransaction: Codable, Sendable, Hashable {
    public struct Failure: Codable, Sendable, Hashable {
        /// StoreKit's `SKError.Code`.
        public var code: Int
        public var message: String
    }

    /// The queue entry, what `finish` takes.
    public var id: String
    /// purchased, failed, deferred, restored.
    public var state: String
    public var productId: String
    public var paymentId: String?
    /// The transaction's identifier; for a restored transaction, the restore's own identifier.
    public var transactionId: String?
    /// For a restored transaction, the purchase it restores.
    public var originalTransactionId: String?
    public var purchaseDate: Int64?
    public var quantity: Int?
    public var error: Failure?
    /// StoreKit 2's view of the transaction: the JWS of the purchase (for restored ones, of the original).
    public var signedTransaction: String?
    /// The iOS 6-style receipt of the transaction.
    public var transactionReceipt: String?
}

/// The outcome of "restore completed transactions".
public struct RestoreResult: Codable, Sendable {
    /// `completed` or `failed`.
    public var status: String
    public var transactions: [QueueTransaction]
    public var error: QueueTransaction.Failure?
}

extension Payments {
    /// Adds a payment: it ends purchased, failed or deferred, and lands in the device's queue.
    public func addPayment(_ request: PaymentRequest, environment: AppStoreEnvironment) async throws -> QueueTransaction
    {
        try await faultsForStoreKit(environment)
        let entryId = try await database.transaction { db -> String in
            let (device, account) = try await store.requireDevice(request.deviceId, environment: environment, on: db)
            let app = try await store.requireApp(bundleId: request.bundleId, on: db)
            let now = self.clock.nowMilliseconds
            var payment = SimPayment(
                id: UUID().uuidString.lowercased(),
                accountId: account.id,
                deviceId: device.id,
                appAppleId: app.appAppleId,
                environment: environment.rawValue,
                productId: request.productId,
                quantity: request.quantity ?? 1,
                applicationUsername: request.applicationUsername,
                appAccountToken: request.appAccountToken?.lowercased(),
                state: "purchasing",
                errorCode: nil,
                transactionId: nil,
                createdAt: now,
                updatedAt: now
            )
            let product = try await self.store.product(appAppleId: app.appAppleId, productId: request.productId, on: db)

            var failure: StoreKitErrorCode?
            if let token = request.appAccountToken, UUID(uuidString: token) == nil {
                failure = .paymentInvalid
            } else if !(1...10).contains(payment.quantity) {
                failure = .paymentInvalid
            } else if product == nil || !product!.reviewState.isSellable(in: environment)
                || product!.prices[account.storefront] == nil
            {
                failure = .storeProductNotAvailable
            } else if payment.quantity > 1, product!.type != .consumable {
                failure = .paymentInvalid
            } else if !account.canMakePayments {
                failure = .paymentNotAllowed
            } else if request.userAction == "cancel" {
                failure = .paymentCancelled
            } else if let declined = account.paymentFailure {
                failure = StoreKitErrorCode(rawValue: declined) ?? .unknown
            }

            let entry: SimQueueEntry
            if let failure {
                payment.state = "failed"
                payment.errorCode = failure.rawValue
                try await self.store.insert(payment, on: db)
                entry = try await self.enqueue(
                    payment: payment,
                    state: "failed",
                    transactionId: nil,
                    error: failure,
                    on: db
                )
            } else if account.askToBuy {
                payment.state = "deferred"
                try await self.store.insert(payment, on: db)
                entry = try await self.enqueue(
                    payment: payment,
                    state: "deferred",
                    transactionId: nil,
                    error: nil,
                    on: db
                )
            } else {
                try await self.store.insert(payment, on: db)
                let tx = try await self.completePurchase(
                    payment: &payment,
                    account: account,
                    app: app,
                    product: product!,
                    on: db
                )
                entry = try await self.enqueue(
                    payment: payment,
                    state: "purchased",
                    transactionId: tx.transactionId,
                    error: nil,
                    on: db
                )
            }
            return entry.id
        }
        notifications.due.signal()
        return try await queueTransaction(entryId: entryId)
    }

    /// Approves or declines a deferred (Ask to Buy) payment; its queue entry becomes purchased or failed.
    public func resolveDeferredPayment(id: String, approve: Bool) async throws -> QueueTransaction {
        let entryId = try await database.transaction { db -> String in
            guard var payment = try await self.store.payment(id: id, on: db) else {
                throw TillHTTPError.notFound("payment", id)
            }
            guard payment.state == "deferred" else {
                throw TillHTTPError.conflict("notDeferred", "payment \(id) is \(payment.state), not deferred")
            }
            guard var entry = try await self.store.queueEntries(paymentId: id, on: db).first else {
                throw TillHTTPError.notFound("queueEntry", id)
            }
            if approve {
                guard let account = try await self.store.account(id: payment.accountId, on: db), !account.deleted,
                    let app = try await self.store.app(appAppleId: payment.appAppleId, on: db),
                    let product = try await self.store.product(
                        appAppleId: app.appAppleId,
                        productId: payment.productId,
                        on: db
                    )
                else {
                    throw TillHTTPError.conflict(
                        "cannotComplete",
                        "the account, app or product of payment \(id) is gone"
                    )
                }
                let tx = try await self.completePurchase(
                    payment: &payment,
                    account: account,
                    app: app,
                    product: product,
                    on: db
                )
                entry.state = "purchased"
                entry.transactionId = tx.transactionId
            } else {
                payment.state = "failed"
                payment.errorCode = StoreKitErrorCode.unknown.rawValue
                try await self.store.update(payment, on: db)
                entry.state = "failed"
                entry.errorCode = StoreKitErrorCode.unknown.rawValue
                entry.errorMessage = "The purchase request was declined."
            }
            entry.finished = false
            try await self.store.update(entry, on: db)
            return entry.id
        }
        notifications.due.signal()
        return try await queueTransaction(entryId: entryId)
    }

    /// The device's unfinished transactions: everything the app has not finished yet comes back every time.
    public func queue(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> [QueueTransaction]
    {
        try await faultsForStoreKit(environment)
        let ids = try await database.transaction { db -> [String] in
            let (device, _) = try await store.requireDevice(deviceId, environment: environment, on: db)
            let app = try await store.requireApp(bundleId: bundleId, on: db)
            var ids: [String] = []
            for var entry in try await self.store.unfinishedQueue(
                deviceId: device.id,
                appAppleId: app.appAppleId,
                on: db
            ) {
                entry.deliveries += 1
                try await self.store.update(entry, on: db)
                ids.append(entry.id)
            }
            return ids
        }
        var result: [QueueTransaction] = []
        for id in ids { result.append(try await queueTransaction(entryId: id)) }
        return result
    }

    /// Finishes a queue entry. A finished consumable leaves the receipt; deferred entries cannot be finished.
    public func finish(entryId: String, deviceId: String, environment: AppStoreEnvironment) async throws {
        try await database.transaction { db in
            _ = try await store.requireDevice(deviceId, environment: environment, on: db)
            guard var entry = try await self.store.queueEntry(id: entryId, on: db), entry.deviceId == deviceId else {
                throw TillHTTPError.notFound("queueEntry", entryId)
            }
            guard entry.state != "deferred" && entry.state != "purchasing" else {
                throw TillHTTPError.conflict("notFinishable", "a \(entry.state) transaction cannot be finished")
            }
            entry.finished = true
            try await self.store.update(entry, on: db)
            if entry.state == "purchased", let id = entry.transactionId,
                var tx = try await self.store.transaction(id: id, on: db),
                !tx.finished
            {
                // Finishing changes nothing Apple signs: the transaction keeps its place in history.
                tx.finished = true
                try await self.store.update(tx, on: db)
            }
        }
    }

    /// Restores completed transactions on a device: every restorable transaction of the account for the app,
    /// from any device, as `restored` entries. Consumables and non-renewing subscriptions are never restored.
    public func restore(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws
        -> RestoreResult
    {
        do {
            try await faultsForStoreKit(environment)
        } catch let error as TillHTTPError where error.status == .serviceUnavailable {
            return RestoreResult(status: "failed", transactions: [], error: .init(code: 0, message: error.message))
        }
        let outcome = try await database.transaction { db -> Result<[String], TillHTTPError> in
            guard let device = try await self.store.device(id: deviceId, on: db) else {
                throw TillHTTPError.notFound("device", deviceId)
            }
            let app = try await store.requireApp(bundleId: bundleId, on: db)
            guard let account = try await self.store.account(id: device.accountId, on: db),
                account.appStoreEnvironment == environment
            else {
                throw TillHTTPError.badRequest(
                    "wrongEnvironment",
                    "the device's account is not a \(environment) account"
                )
            }
            guard !account.deleted else {
                return .failure(TillHTTPError(.forbidden, "accountDeleted", "the account was deleted"))
            }
            let transactions = try await self.store.transactions(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment.rawValue,
                on: db
            )
            var ids: [String] = []
            var restoredProducts: Set<String> = []
            for tx in transactions where tx.type.isRestorable && tx.revocationDate == nil {
                // One restore per non-consumable product; every period of a subscription.
                if tx.type != .autoRenewable {
                    guard restoredProducts.insert(tx.productId).inserted else { continue }
                }
                let seq = try await self.store.next("queue", on: db)
                let entry = SimQueueEntry(
                    id: UUID().uuidString.lowercased(),
                    deviceId: device.id,
                    appAppleId: app.appAppleId,
                    seq: seq,
                    state: "restored",
                    transactionId: tx.transactionId,
                    restoredTransactionId: try await store.nextTransactionId(environment, on: db),
                    paymentId: nil,
                    productId: tx.productId,
                    errorCode: nil,
                    errorMessage: nil,
                    finished: false,
                    deliveries: 0,
                    createdAt: self.clock.nowMilliseconds
                )
                try await self.store.insert(entry, on: db)
                ids.append(entry.id)
            }
            return .success(ids)
        }
        switch outcome {
        case .failure(let error):
            return RestoreResult(status: "failed", transactions: [], error: .init(code: 0, message: error.message))
        case .success(let ids):
            var restored: [QueueTransaction] = []
            for id in ids { restored.append(try await queueTransaction(entryId: id)) }
            return RestoreResult(status: "completed", transactions: restored, error: nil)
        }
    }

    // MARK: Internals

    private func enqueue(
        payment: SimPayment,
        state: String,
        transactionId: String?,
        error: StoreKitErrorCode?,
        on db: any SQLDatabase
    ) async throws -> SimQueueEntry {
        let entry = SimQueueEntry(
            id: UUID().uuidString.lowercased(),
            deviceId: payment.deviceId,
            appAppleId: payment.appAppleId,
            seq: try await store.next("queue", on: db),
            state: state,
            transactionId: transactionId,
            restoredTransactionId: nil,
            paymentId: payment.id,
            productId: payment.productId,
            errorCode: error?.rawValue,
            errorMessage: error?.message,
            finished: false,
            deliveries: 0,
            createdAt: clock.nowMilliseconds
        )
        try await store.insert(entry, on: db)
        return entry
    }

    /// What the app sees for a queue entry, with the JWS and iOS 6 receipt of its transaction.
    func queueTransaction(entryId: String) async throws -> QueueTransaction {
        let db = store.sql
        guard let entry = try await store.queueEntry(id: entryId, on: db) else {
            throw TillHTTPError.notFound("queueEntry", entryId)
        }
        var view = QueueTransaction(
            id: entry.id,
            state: entry.state,
            productId: entry.productId,
            paymentId: entry.paymentId,
            error: entry.errorCode.map { .init(code: $0, message: entry.errorMessage ?? "") }
        )
        if let id = entry.transactionId, let tx = try await store.transaction(id: id, on: db),
            let app = try await store.app(appAppleId: tx.appAppleId, on: db)
        {
            let device = try await store.device(id: entry.deviceId, on: db)
            view.transactionId = entry.restoredTransactionId ?? tx.transactionId
            view.originalTransactionId =
                entry.restoredTransactionId == nil ? tx.originalTransactionId : tx.transactionId
            view.purchaseDate = tx.purchaseDate
            view.quantity = tx.quantity
            view.signedTransaction = try receipts.signTransaction(tx, app: app)
            view.transactionReceipt = try receipts.transactionReceipt(tx, app: app, device: device)
        }
        return view
    }

    /// Charges the account and records the transaction a payment buys, with its subscription bookkeeping.
    func completePurchase(
        payment: inout SimPayment,
        account: SimAccount,
        app: SimApp,
        product: SimProduct,
        on db: any SQLDatabase
    ) async throws -> SimTransaction {
        let environment = account.appStoreEnvironment
        let now = clock.nowMilliseconds
        let price = product.prices[account.storefront] ?? StorefrontPrice(price: 0, currency: "USD")
        var tx = SimTransaction(
            transactionId: try await store.nextTransactionId(environment, on: db),
            originalTransactionId: "",
            accountId: account.id,
            appAppleId: app.appAppleId,
            productId: product.productId,
            productType: product.type.rawValue,
            environment: environment.rawValue,
            quantity: payment.quantity,
            purchaseDate: now,
            originalPurchaseDate: now,
            expiresDate: nil,
            webOrderLineItemId: nil,
            subscriptionGroup: product.subscriptionGroup,
            appAccountToken: payment.appAccountToken,
            ownership: Ownership.purchased.rawValue,
            price: product.type.isFree ? 0 : price.price * Int64(payment.quantity),
            currency: price.currency,
            storefront: account.storefront,
            storefrontId: Storefronts.id(for: account.storefront),
            transactionReason: "PURCHASE",
            revocationDate: nil,
            revocationReason: nil,
            revocationType: nil,
            isUpgraded: false,
            offerType: nil,
            isTrial: false,
            orderId: makeOrderId(),
            deviceId: payment.deviceId,
            finished: false,
            signedSequence: try await store.nextSequence(on: db),
            createdAt: now
        )
        tx.originalTransactionId = tx.transactionId
        var notification: (NotificationType, NotificationSubtype?)?

        switch product.type {
        case .consumable, .nonRenewing:
            notification = (.oneTimeCharge, nil)
        case .nonConsumable, .freeSubscription:
            let owned = try await store.transactions(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment.rawValue,
                on: db
            ).first { $0.productId == product.productId && $0.revocationDate == nil }
            if let owned {
                // Already bought: the store hands it out again without charging.
                tx.originalTransactionId = owned.originalTransactionId
                tx.originalPurchaseDate = owned.originalPurchaseDate
                tx.price = 0
            } else {
                notification = (.oneTimeCharge, nil)
            }
        case .autoRenewable:
            let result = try await purchaseSubscription(tx: tx, account: account, app: app, product: product, on: db)
            tx = result.transaction
            notification = result.notification
            if result.reusesExisting {
                try await recordPurchase(&payment, of: tx, notification: notification, app: app, on: db)
                return tx
            }
        }
        try await store.insert(tx, on: db)
        try await shareWithFamily(tx, account: account, product: product, on: db)
        try await recordPurchase(&payment, of: tx, notification: notification, app: app, on: db)
        return tx
    }

    /// Marks the payment purchased by `tx` and sends the purchase's notification, if it has one.
    private func recordPurchase(
        _ payment: inout SimPayment,
        of tx: SimTransaction,
        notification: (NotificationType, NotificationSubtype?)?,
        app: SimApp,
        on db: any SQLDatabase
    ) async throws {
        payment.state = "purchased"
        payment.transactionId = tx.transactionId
        payment.updatedAt = clock.nowMilliseconds
        try await store.update(payment, on: db)
        if let notification {
            try await notifications.enqueueNotification(
                app: app,
                environment: AppStoreEnvironment(tx.environment),
                type: notification.0,
                subtype: notification.1,
                transaction: tx,
                on: db
            )
        }
    }

    /// Subscribing inside a group: first purchase, resubscription, upgrade, downgrade or crossgrade.
    private func purchaseSubscription(
        tx: SimTransaction,
        account: SimAccount,
        app: SimApp,
        product: SimProduct,
        on db: any SQLDatabase
    ) async throws -> (
        transaction: SimTransaction, notification: (NotificationType, NotificationSubtype?)?, reusesExisting: Bool
    ) {
        var tx = tx
        let environment = account.appStoreEnvironment
        let group = product.subscriptionGroup ?? product.productId
        let period = product.subscriptionPeriod ?? .oneMonth
        let now = tx.purchaseDate
        tx.subscriptionGroup = group
        tx.webOrderLineItemId = try await store.nextWebOrderLineItemId(environment, on: db)

        guard
            var subscription = try await store.subscription(
                accountId: account.id,
                appAppleId: app.appAppleId,
                environment: environment.rawValue,
                group: group,
                on: db
            )
        else {
            tx.expiresDate = clock.expiry(of: period, from: now, environment: environment)
            try await store.upsert(newSubscription(tx, account: account, app: app), on: db)
            return (tx, (.subscribed, .initialBuy), false)
        }

        tx.originalTransactionId = subscription.originalTransactionId
        if let first = try await store.transaction(id: subscription.originalTransactionId, on: db) {
            tx.originalPurchaseDate = first.originalPurchaseDate
        }
        let active =
            subscription.status == SubscriptionStatus.active.rawValue
            || subscription.status == SubscriptionStatus.gracePeriod.rawValue
            || subscription.status == SubscriptionStatus.billingRetry.rawValue

        if !active {
            // Resubscribing after expiry or revocation keeps the original transaction id of the group.
            tx.expiresDate = clock.expiry(of: period, from: now, environment: environment)
            subscription = newSubscription(tx, account: account, app: app, keeping: subscription)
            try await store.upsert(subscription, on: db)
            return (tx, (.subscribed, .resubscribe), false)
        }

        guard let latest = try await store.transaction(id: subscription.lastTransactionId, on: db) else {
            throw TillHTTPError(
                .internalServerError,
                "inconsistentSubscription",
                "subscription \(subscription.originalTransactionId) has no last transaction"
            )
        }
        if product.productId == subscription.productId {
            // Already subscribed to this product: nothing is charged; a pending change is reverted.
            var change: (NotificationType, NotificationSubtype?)?
            if subscription.autoRenewProductId != product.productId {
                subscription.autoRenewProductId = product.productId
                change = (.didChangeRenewalPref, nil)
            } else if !subscription.autoRenewStatus {
                subscription.autoRenewStatus = true
                change = (.didChangeRenewalStatus, .autoRenewEnabled)
            }
            subscription.updatedAt = now
            try await store.upsert(subscription, on: db)
            return (latest, change, true)
        }

        let current = try await store.product(appAppleId: app.appAppleId, productId: subscription.productId, on: db)
        let currentPeriod = current?.subscriptionPeriod ?? .oneMonth
        let immediate =
            product.groupLevel < (current?.groupLevel ?? Int.max)
            || (product.groupLevel == current?.groupLevel && period == currentPeriod)
        guard immediate else {
            // Downgrades, and crossgrades to another duration, start at the next renewal.
            subscription.autoRenewProductId = product.productId
            subscription.updatedAt = now
            try await store.upsert(subscription, on: db)
            return (latest, (.didChangeRenewalPref, .downgrade), true)
        }
        // Upgrades, and crossgrades of the same duration, start now; the current period is cancelled.
        var replaced = latest
        replaced.isUpgraded = true
        replaced.revocationDate = now
        replaced.signedSequence = try await store.nextSequence(on: db)
        try await store.update(replaced, on: db)
        tx.expiresDate = clock.expiry(of: period, from: now, environment: environment)
        subscription.productId = product.productId
        subscription.autoRenewProductId = product.productId
        subscription.expiresDate = tx.expiresDate!
        subscription.lastTransactionId = tx.transactionId
        subscription.status = SubscriptionStatus.active.rawValue
        subscription.billingRetry = false
        subscription.gracePeriodExpiresDate = nil
        subscription.updatedAt = now
        try await store.upsert(subscription, on: db)
        return (tx, (.didChangeRenewalPref, .upgrade), false)
    }

    private func newSubscription(
        _ tx: SimTransaction,
        account: SimAccount,
        app: SimApp,
        keeping previous: SimSubscription? = nil
    ) -> SimSubscription {
        SimSubscription(
            originalTransactionId: tx.originalTransactionId,
            accountId: account.id,
            appAppleId: app.appAppleId,
            environment: tx.environment,
            subscriptionGroup: tx.subscriptionGroup ?? tx.productId,
            productId: tx.productId,
            autoRenewProductId: tx.productId,
            autoRenewStatus: true,
            expiresDate: tx.expiresDate!,
            status: SubscriptionStatus.active.rawValue,
            renewalCount: 0,
            billingRetry: false,
            gracePeriodExpiresDate: nil,
            retryUntil: nil,
            expirationIntent: nil,
            lastTransactionId: tx.transactionId,
            recentStartDate: tx.purchaseDate,
            updatedAt: tx.purchaseDate
        )
    }

    /// Family Sharing: family members get their own shared copy of a shareable non-consumable or subscription.
    private func shareWithFamily(_ tx: SimTransaction, account: SimAccount, product: SimProduct, on db: any SQLDatabase)
        async throws
    {
        guard product.familyShareable, let family = account.familyId,
            product.type == .nonConsumable || product.type == .autoRenewable
        else { return }
        for member in try await store.accounts(familyId: family, on: db)
        where member.id != account.id && !member.deleted {
            var shared = tx
            shared.transactionId = try await store.nextTransactionId(AppStoreEnvironment(tx.environment), on: db)
            shared.originalTransactionId = shared.transactionId
            shared.accountId = member.id
            shared.ownership = Ownership.familyShared.rawValue
            shared.price = 0
            shared.deviceId = nil
            shared.orderId = tx.orderId
            shared.signedSequence = try await store.nextSequence(on: db)
            try await store.insert(shared, on: db)
        }
    }

    /// Waits or fails as the StoreKit faults say.
    func faultsForStoreKit(_ environment: AppStoreEnvironment) async throws {
        guard let rule = faults.take(environment: environment, endpoint: .storeKit) else { return }
        if let latency = rule.latency { try await Task.sleep(for: .seconds(latency)) }
        if rule.outage != nil {
            throw TillHTTPError(.serviceUnavailable, "storeUnavailable", "Cannot connect to the App Store.")
        }
    }
}

extension Payments {
    /// The device's receipt file for an app (PKCS#7 DER).
    public func appReceipt(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws -> [UInt8]
    {
        try await faultsForStoreKit(environment)
        return try await database.transaction { db in
            let (device, account) = try await store.requireDevice(deviceId, environment: environment, on: db)
            let app = try await store.requireApp(bundleId: bundleId, on: db)
            return try await receipts.appReceipt(account: account, device: device, app: app, on: db)
        }
    }
}
