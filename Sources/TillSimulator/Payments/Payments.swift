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
    let offers: Offers
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
    /// A promotional offer with the developer's signature.
    public var promotionalOffer: PromotionalOfferInput?
    /// The developer's signed word on the introductory offer (a compact JWS, `aud` `introductory-offer-eligibility`).
    public var introductoryOfferEligibility: String?
    /// A win-back offer of the product.
    public var winBackOfferId: String?
    /// An offer code being redeemed (the redemption sheet sets it).
    public var offerCode: String?
    /// `MONTHLY`: a 1-year subscription billed monthly with a 12-month commitment (`BILLED_UPFRONT` by default).
    public var billingPlanType: String?

    public init(
        deviceId: String,
        bundleId: String,
        productId: String,
        quantity: Int? = nil,
        applicationUsername: String? = nil,
        appAccountToken: String? = nil,
        userAction: String? = nil,
        promotionalOffer: PromotionalOfferInput? = nil,
        introductoryOfferEligibility: String? = nil,
        winBackOfferId: String? = nil,
        offerCode: String? = nil,
        billingPlanType: String? = nil
    ) {
        self.deviceId = deviceId
        self.bundleId = bundleId
        self.productId = productId
        self.quantity = quantity
        self.applicationUsername = applicationUsername
        self.appAccountToken = appAccountToken
        self.userAction = userAction
        self.promotionalOffer = promotionalOffer
        self.introductoryOfferEligibility = introductoryOfferEligibility
        self.winBackOfferId = winBackOfferId
        self.offerCode = offerCode
        self.billingPlanType = billingPlanType
    }
}

/// A transaction in a device's payment queue, as the app sees it.
public struct QueueTransaction: Codable, Sendable, Hashable {
    public struct Failure: Codable, Sendable, Hashable {
        /// StoreKit's `SKError.Code`.
        public var code: Int
        public var message: String
    }

    /// `SKPaymentTransactionState`, as the device API's contract names it (`TransactionState` in
    /// Client/Sources/TillSimulatorContract/openapi.yaml; `DeviceAPIContractTests` holds the two to the same values).
    public enum State: String, Codable, Sendable, Hashable, CaseIterable {
        case purchasing, purchased, failed, restored, deferred
    }

    /// The queue entry, what `finish` takes.
    public var id: String
    public var state: State
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
    /// How many times the queue has handed this entry to the app (each `GET …/queue` while it is unfinished).
    public var deliveries: Int?
}

/// The outcome of "restore completed transactions".
public struct RestoreResult: Codable, Sendable {
    /// How a restore ended, as the device API's contract names it (`RestoreResult.status`; `DeviceAPIContractTests`
    /// holds the two to the same values).
    public enum Status: String, Codable, Sendable, Hashable, CaseIterable {
        case completed, failed
    }

    public var status: Status
    public var transactions: [QueueTransaction]
    public var error: QueueTransaction.Failure?
}

extension Payments {
    /// Adds a payment: it ends purchased, failed or deferred, and lands in the device's queue.
    public func addPayment(_ request: PaymentRequest, environment: AppStoreEnvironment) async throws -> QueueTransaction
    {
        guard [nil, "confirm", "cancel"].contains(request.userAction) else {
            throw PaymentRefusal(.invalidUserAction, "userAction is confirm (the default) or cancel")
        }
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
                environment: environment,
                productId: request.productId,
                quantity: request.quantity ?? 1,
                applicationUsername: request.applicationUsername,
                appAccountToken: request.appAccountToken?.lowercased(),
                state: .purchasing,
                errorCode: nil,
                transactionId: nil,
                createdAt: now,
                updatedAt: now
            )
            let product = try await self.store.appStoreConnect.product(
                appAppleId: app.appAppleId,
                productId: request.productId,
                on: db
            )

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
            let committed = request.billingPlanType == BillingPlanType.monthly.rawValue
            if failure == nil, let plan = request.billingPlanType {
                failure = try await self.commitmentRefusal(
                    plan: plan,
                    product: product!,
                    account: account,
                    app: app,
                    on: db
                )
            }
            // The offer is decided with the payment: a signature's nonce is spent even when the payment fails later.
            // Offers are set per billing plan, and the simulator's are for plans billed up front.
            var offer: OfferChoice?
            if failure == nil, !committed, let product {
                switch try await self.offers.choose(for: request, account: account, app: app, product: product, on: db)
                {
                case .success(let chosen): offer = chosen
                case .failure(let refusal): failure = refusal
                }
            }

            let entry: SimQueueEntry
            if let failure {
                payment.state = .failed
                payment.errorCode = failure.rawValue
                try await self.store.insert(payment, on: db)
                entry = try await self.enqueue(
                    payment: payment,
                    state: .failed,
                    transactionId: nil,
                    error: failure,
                    on: db
                )
            } else if account.askToBuy {
                payment.state = .deferred
                try await self.store.insert(payment, on: db)
                entry = try await self.enqueue(
                    payment: payment,
                    state: .deferred,
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
                    offer: offer,
                    committed: committed,
                    on: db
                )
                entry = try await self.enqueue(
                    payment: payment,
                    state: .purchased,
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
            guard var payment = try await self.store.purchases.payment(id: id, on: db) else {
                throw PaymentRefusal(.paymentNotFound, "no payment \(id)")
            }
            guard payment.state == .deferred else {
                throw PaymentRefusal(.notDeferred, "payment \(id) is \(payment.state.rawValue), not deferred")
            }
            guard var entry = try await self.store.purchases.queueEntries(paymentId: id, on: db).first else {
                throw PaymentRefusal(.queueEntryNotFound, "no queueEntry \(id)")
            }
            if approve {
                guard let account = try await self.store.appStoreConnect.account(id: payment.accountId, on: db),
                    !account.deleted,
                    let app = try await self.store.appStoreConnect.app(appAppleId: payment.appAppleId, on: db),
                    let product = try await self.store.appStoreConnect.product(
                        appAppleId: app.appAppleId,
                        productId: payment.productId,
                        on: db
                    )
                else {
                    throw PaymentRefusal(
                        .cannotComplete,
                        "the account, app or product of payment \(id) is gone"
                    )
                }
                // An approved payment gets what is automatic (the introductory offer): a signed offer the app asked
                // for when it added the payment is not kept while the parent decides.
                let request = PaymentRequest(
                    deviceId: payment.deviceId,
                    bundleId: app.bundleId,
                    productId: payment.productId,
                    applicationUsername: payment.applicationUsername,
                    appAccountToken: payment.appAccountToken
                )
                let offer = try? await self.offers.choose(
                    for: request,
                    account: account,
                    app: app,
                    product: product,
                    on: db
                ).get()
                let tx = try await self.completePurchase(
                    payment: &payment,
                    account: account,
                    app: app,
                    product: product,
                    offer: offer ?? nil,
                    on: db
                )
                entry.state = .purchased
                entry.transactionId = tx.transactionId
            } else {
                payment.state = .failed
                payment.errorCode = StoreKitErrorCode.unknown.rawValue
                try await self.store.update(payment, on: db)
                entry.state = .failed
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

    // MARK: Internals

    func enqueue(
        payment: SimPayment,
        state: QueueTransaction.State,
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
        guard let entry = try await store.purchases.queueEntry(id: entryId, on: db) else {
            throw PaymentRefusal(.queueEntryNotFound, "no queueEntry \(entryId)")
        }
        var view = QueueTransaction(
            id: entry.id,
            state: entry.state,
            productId: entry.productId,
            paymentId: entry.paymentId,
            error: entry.errorCode.map { .init(code: $0, message: entry.errorMessage ?? "") },
            deliveries: entry.deliveries
        )
        if let id = entry.transactionId, let tx = try await store.purchases.transaction(id: id, on: db),
            let app = try await store.appStoreConnect.app(appAppleId: tx.appAppleId, on: db)
        {
            let device = try await store.appStoreConnect.device(id: entry.deviceId, on: db)
            view.transactionId = entry.restoredTransactionId ?? tx.transactionId
            view.originalTransactionId =
                entry.restoredTransactionId == nil ? tx.originalTransactionId : tx.transactionId
            view.purchaseDate = tx.purchaseDate
            view.quantity = tx.quantity
            view.signedTransaction = try receipts.signTransaction(tx, app: app)
            // StoreKit Testing in Xcode: StoreKit 2's signed transactions only (see appReceipt).
            if !tx.environment.isLocallySigned {
                view.transactionReceipt = try receipts.transactionReceipt(tx, app: app, device: device)
            }
        }
        return view
    }

    /// Waits or fails as the StoreKit faults say.
    func faultsForStoreKit(_ environment: AppStoreEnvironment) async throws {
        guard let rule = faults.take(environment: environment, endpoint: .storeKit) else { return }
        if let latency = rule.latency { try await Task.sleep(for: .seconds(latency)) }
        if rule.outage != nil {
            throw PaymentRefusal(.storeUnavailable, "Cannot connect to the App Store.")
        }
    }
}

extension Payments {
    /// The device's receipt file for an app (PKCS#7 DER).
    public func appReceipt(deviceId: String, bundleId: String, environment: AppStoreEnvironment) async throws -> [UInt8]
    {
        guard !environment.isLocallySigned else {
            throw PaymentRefusal(
                .receiptNotSimulated,
                "StoreKit Testing in Xcode is simulated for StoreKit 2's signed data only; its receipts are not"
            )
        }
        try await faultsForStoreKit(environment)
        return try await database.transaction { db in
            let (device, account) = try await store.requireDevice(deviceId, environment: environment, on: db)
            let app = try await store.requireApp(bundleId: bundleId, on: db)
            return try await receipts.appReceipt(account: account, device: device, app: app, on: db)
        }
    }
}
