import Foundation
import TillCore
import TillSimulatorContract

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``TillStorefront`` over `till simulator`'s device API (`/storekit/{sandbox|production|xcode}`), as one app on
/// one device sees it, through the types and client generated from the API's document
/// (Client/Sources/TillSimulatorContract/openapi.yaml).
///
/// The simulator's queue is StoreKit 1's: each payment makes an entry, purchased, failed or deferred. It maps to
/// StoreKit 2's model as StoreKit 1 does (``StoreKit1Storefront``): a cancelled payment is
/// ``StorePurchaseResult/userCancelled``, a refused one a thrown ``StoreError``, Ask to Buy
/// ``StorePurchaseResult/pending(_:)``; failed entries are finished here. Each transaction carries the JWS
/// StoreKit 2 would give, signed by the simulator, and the simulator has no payment sheet: ``paymentSheet`` plays
/// the customer. Transaction updates are found by polling the device's queue every ``pollInterval`` seconds.
public struct SimulatorStorefront: TillStorefront {
    /// The simulator's stores: a device belongs to a sandbox tester, a production customer or an Xcode account.
    public enum Environment: String, Sendable, Hashable {
        case sandbox
        case production
        case xcode
    }

    /// What the simulated customer does on the payment sheet.
    public enum SheetAction: String, Sendable, Hashable {
        case confirm
        case cancel
    }

    public let environment: Environment
    public let deviceId: String
    public let bundleId: String
    public let locale: String
    /// Seconds between two looks at the queue for ``transactionUpdates()``.
    public let pollInterval: TimeInterval
    public let paymentSheet: @Sendable (Payment) async -> SheetAction
    let calls: GeneratedCalls<Client>

    /// - Parameters:
    ///   - baseURL: the simulator, e.g. `http://127.0.0.1:8090`.
    ///   - timeout: seconds a request may take.
    ///   - paymentSheet: the customer's answer to each payment sheet; confirms by default.
    public init(
        baseURL: String,
        environment: Environment = .sandbox,
        deviceId: String,
        bundleId: String,
        locale: String = "en-US",
        timeout: TimeInterval = 30,
        pollInterval: TimeInterval = 2,
        session: URLSession = TillHTTP.shared,
        paymentSheet: @escaping @Sendable (Payment) async -> SheetAction = { _ in .confirm }
    ) {
        self.environment = environment
        self.deviceId = deviceId
        self.bundleId = bundleId
        self.locale = locale
        self.pollInterval = pollInterval
        self.paymentSheet = paymentSheet
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        calls = GeneratedCalls(
            baseURL: base + "/storekit/" + environment.rawValue,
            bearer: nil,
            timeout: timeout,
            session: session
        ) { Client(serverURL: $0, transport: $1, middlewares: $2) }
    }

    public func canMakePayments() async throws -> Bool {
        let output = try await calls.call { [deviceId] in try await $0.canMakePayments(path: .init(device: deviceId)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }.canMakePayments
    }

    public func products(_ identifiers: [String]) async throws -> ProductLookup {
        var products: [StoreProduct] = []
        var invalid: [String] = []
        // The store answers at most 200 identifiers a request.
        for start in stride(from: 0, to: identifiers.count, by: 200) {
            let body = Components.Schemas.ProductsRequest(
                bundleId: bundleId,
                productIdentifiers: Array(identifiers[start..<min(start + 200, identifiers.count)]),
                deviceId: deviceId,
                locale: locale
            )
            let output = try await calls.call { try await $0.products(body: .json(body)) }
            guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
            let answer = try GeneratedCalls<Client>.read { try ok.body.json }
            products += answer.products.map(Self.storeProduct)
            invalid += answer.invalidProductIdentifiers
        }
        return ProductLookup(products: products, invalidProductIds: invalid)
    }

    public func purchase(_ payment: Payment) async throws -> StorePurchaseResult {
        let action = await paymentSheet(payment)
        var body = Components.Schemas.PaymentRequest(
            deviceId: deviceId,
            bundleId: bundleId,
            productId: payment.productId,
            quantity: payment.quantity,
            appAccountToken: payment.appAccountToken?.uuidString.lowercased(),
            userAction: action == .cancel ? .cancel : .confirm,
            introductoryOfferEligibility: payment.introductoryOfferEligibility,
            winBackOfferId: payment.winBackOfferId
        )
        if let offer = payment.promotionalOffer {
            switch offer.signature {
            case .original(let keyIdentifier, let nonce, let timestamp, let signature):
                body.promotionalOffer = .init(
                    offerIdentifier: offer.offerIdentifier,
                    keyIdentifier: keyIdentifier,
                    nonce: nonce.uuidString.lowercased(),
                    timestamp: timestamp,
                    signature: signature
                )
            case .compactJWS(let jws):
                body.promotionalOffer = .init(offerIdentifier: offer.offerIdentifier, compactJWS: jws)
            }
        }
        let output = try await calls.call { [body] in try await $0.addPayment(body: .json(body)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try await result(of: try GeneratedCalls<Client>.read { try ok.body.json })
    }

    /// What an entry the store made for a payment (or an offer code) means: purchased, or refused (a failed entry is
    /// finished here: nothing was charged), or waiting.
    private func result(of entry: Components.Schemas.QueueTransaction) async throws -> StorePurchaseResult {
        switch entry.state {
        case .purchased:
            return .success(.verified(try Self.transaction(entry)))
        case .failed:
            try await finish(entryId: entry.id)
            let error = Self.error(entry.error)
            if error.isCancellation { return .userCancelled }
            throw error
        case .deferred, .purchasing:
            return .pending(
                PendingPurchase(productId: entry.productId, quantity: entry.quantity ?? 1, paymentId: entry.paymentId)
            )
        case .restored:
            throw TillClientError(.invalidResponse, message: "a payment answered with a restored transaction")
        }
    }

    /// The redemption sheet with the code the customer typed: the purchase the code makes.
    public func redeemOfferCode(_ code: String) async throws -> StorePurchaseResult {
        let body = Components.Schemas.RedeemRequest(bundleId: bundleId, code: code)
        let output = try await calls.call { [deviceId] in
            try await $0.redeemOfferCode(path: .init(device: deviceId), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try await result(of: try GeneratedCalls<Client>.read { try ok.body.json })
    }

    /// The device's queue as it stands: what the app has not finished.
    func queue() async throws -> [Components.Schemas.QueueTransaction] {
        let output = try await calls.call { [deviceId, bundleId] in
            try await $0.queue(path: .init(device: deviceId), query: .init(bundleId: bundleId))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    public func unfinishedTransactions() async throws -> [StoreUpdate] {
        var updates: [StoreUpdate] = []
        for entry in try await queue() {
            if let update = try await update(for: entry) { updates.append(update) }
        }
        return updates
    }

    /// An entry of the queue as an update: a transaction to deliver, or a failure (finished here). Deferred and
    /// purchasing entries say nothing yet.
    private func update(for entry: Components.Schemas.QueueTransaction) async throws -> StoreUpdate? {
        switch entry.state {
        case .purchased, .restored:
            return .transaction(.verified(try Self.transaction(entry)))
        case .failed:
            try await finish(entryId: entry.id)
            return .failed(productId: entry.productId, Self.error(entry.error))
        case .deferred, .purchasing:
            return nil
        }
    }

    /// The device's queue, polled: each unfinished entry once, and again when its state changes (a deferred payment
    /// approved or declined). The first poll happens at once; a poll that fails is tried again at the next interval.
    /// The stream ends when the task iterating it is cancelled.
    public func transactionUpdates() -> AsyncStream<StoreUpdate> {
        let storefront = self
        return AsyncStream { continuation in
            let task = Task {
                var seen: Set<String> = []
                var polled = false
                while !Task.isCancelled {
                    if polled {
                        do {
                            try await Task.sleep(nanoseconds: UInt64(storefront.pollInterval * 1_000_000_000))
                        } catch { break }
                    }
                    polled = true
                    guard let queue = try? await storefront.queue() else { continue }
                    for entry in queue where seen.insert(entry.id + " " + entry.state.rawValue).inserted {
                        if let update = try? await storefront.update(for: entry) { continuation.yield(update) }
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func finish(_ transaction: StoreTransaction) async throws {
        try await finish(entryId: transaction.id)
    }

    private func finish(entryId: String) async throws {
        let output = try await calls.call { [deviceId] in
            try await $0.finish(path: .init(device: deviceId, entry: entryId))
        }
        guard case .noContent = output else { throw GeneratedCalls<Client>.unexpected(output) }
    }

    public func restorePurchases() async throws -> StorefrontRestore {
        let body = Components.Schemas.BundleRequest(bundleId: bundleId)
        let output = try await calls.call { [deviceId] in
            try await $0.restore(path: .init(device: deviceId), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        let answer = try GeneratedCalls<Client>.read { try ok.body.json }
        switch answer.status {
        case .completed:
            let restored = try answer.transactions.map { StoreVerification.verified(try Self.transaction($0)) }
            return restored.isEmpty ? .nothingToRestore : .restored(restored)
        case .failed:
            return .failed(Self.error(answer.error))
        }
    }

    /// StoreKit 2's `Transaction.currentEntitlements`, from the account's signed transactions (`Transaction.all`):
    /// non-consumables and non-renewing subscriptions not revoked, and each subscription's latest transaction while
    /// it runs (by the simulator's clock, as the transactions were signed).
    public func currentEntitlements() async throws -> [StoreVerification<StoreTransaction>] {
        var latest: [String: (SignedPayload.Transaction, String)] = [:]
        var others: [(SignedPayload.Transaction, String)] = []
        for jws in try await signedTransactions() {
            guard let payload = SignedPayload.decode(SignedPayload.Transaction.self, from: jws),
                payload.revocationDate == nil, payload.isUpgraded != true
            else { continue }
            switch payload.productType {
            case .autoRenewable?:
                let original = payload.originalTransactionId ?? payload.transactionId
                if (latest[original]?.0.purchaseDate ?? .min) < (payload.purchaseDate ?? 0) {
                    latest[original] = (payload, jws)
                }
            case .consumable?, nil:
                continue
            default:
                others.append((payload, jws))
            }
        }
        let running = latest.values.filter { payload, _ in
            (payload.expiresDate ?? .max) > (payload.signedDate ?? Int64(Date().timeIntervalSince1970 * 1000))
        }
        return (others + running).sorted { ($0.0.purchaseDate ?? 0) < ($1.0.purchaseDate ?? 0) }.map { payload, jws in
            .verified(payload.storeTransaction(id: payload.transactionId, jws: jws, requiresFinish: false))
        }
    }

    /// `Transaction.all`, signed.
    func signedTransactions() async throws -> [String] {
        let output = try await calls.call { [deviceId, bundleId] in
            try await $0.transactions(path: .init(device: deviceId), query: .init(bundleId: bundleId))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }.signedTransactions
    }

    public func appReceipt() async throws -> String? {
        let output = try await calls.call { [deviceId, bundleId] in
            try await $0.receipt(path: .init(device: deviceId), query: .init(bundleId: bundleId))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        let receipt = try GeneratedCalls<Client>.read { try ok.body.json }.receiptData
        return receipt.isEmpty ? nil : receipt
    }

    public func appTransaction() async throws -> StoreVerification<StoreAppTransaction>? {
        let output = try await calls.call { [deviceId, bundleId] in
            try await $0.appTransaction(path: .init(device: deviceId), query: .init(bundleId: bundleId))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        let jws = try GeneratedCalls<Client>.read { try ok.body.json }.signedAppTransaction
        guard let payload = SignedPayload.decode(SignedPayload.AppTransaction.self, from: jws) else {
            throw TillClientError(.invalidResponse, message: "the app transaction is not a JWS")
        }
        return .verified(
            StoreAppTransaction(
                signedAppTransaction: jws,
                appTransactionId: payload.appTransactionId,
                bundleId: payload.bundleId,
                originalAppVersion: payload.originalApplicationVersion ?? "",
                originalPurchaseDate: Date(milliseconds: payload.originalPurchaseDate ?? 0),
                environment: payload.receiptType ?? environment.rawValue
            )
        )
    }

    /// Each subscription of the group the account has: its latest transaction, its renewal info, and its state as
    /// the simulator's clock had it when it signed them.
    public func subscriptionStatuses(groupId: String) async throws -> [StoreSubscriptionStatus] {
        var latest: [String: (SignedPayload.Transaction, String)] = [:]
        for jws in try await signedTransactions() {
            guard let payload = SignedPayload.decode(SignedPayload.Transaction.self, from: jws),
                payload.productType == .autoRenewable, payload.subscriptionGroupIdentifier == groupId
            else { continue }
            let original = payload.originalTransactionId ?? payload.transactionId
            if (latest[original]?.0.purchaseDate ?? .min) < (payload.purchaseDate ?? 0) {
                latest[original] = (payload, jws)
            }
        }
        var statuses: [StoreSubscriptionStatus] = []
        for (original, (payload, jws)) in latest.sorted(by: { $0.key < $1.key }) {
            let output = try await calls.call { [deviceId] in
                try await $0.renewalInfo(path: .init(device: deviceId, original: original))
            }
            guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
            let signed = try GeneratedCalls<Client>.read { try ok.body.json }.signedRenewalInfo
            let renewal = SignedPayload.decode(SignedPayload.RenewalInfo.self, from: signed)
            let now = payload.signedDate ?? Int64(Date().timeIntervalSince1970 * 1000)
            let state: StoreSubscriptionStatus.RenewalState
            if payload.revocationDate != nil {
                state = .revoked
            } else if (payload.expiresDate ?? .max) > now {
                state = .subscribed
            } else if let grace = renewal?.gracePeriodExpiresDate, grace > now {
                state = .inGracePeriod
            } else if renewal?.isInBillingRetryPeriod == true {
                state = .inBillingRetryPeriod
            } else {
                state = .expired
            }
            statuses.append(
                StoreSubscriptionStatus(
                    state: state,
                    transaction: .verified(
                        payload.storeTransaction(id: payload.transactionId, jws: jws, requiresFinish: false)
                    ),
                    renewalInfo: .verified(
                        StoreRenewalInfo(
                            originalTransactionId: original,
                            autoRenewProductId: renewal?.autoRenewProductId ?? payload.productId,
                            willAutoRenew: renewal?.autoRenewStatus == 1,
                            gracePeriodExpirationDate: renewal?.gracePeriodExpiresDate.map(Date.init(milliseconds:)),
                            signedRenewalInfo: signed
                        )
                    )
                )
            )
        }
        return statuses
    }
}
