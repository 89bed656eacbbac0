import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``Storefront`` over `till simulator`'s StoreKit API (`/storekit/{sandbox|production}`), as one app on one
/// device sees it.
///
/// The simulator has no payment sheet: ``paymentSheet`` plays the customer, confirming or cancelling each
/// payment. Transaction updates are found by polling the device's queue every ``pollInterval``.
public struct SimulatorStorefront: Storefront {
    /// The simulator's two stores: a device belongs to a sandbox (tester) or production (customer) account.
    public enum Environment: String, Sendable, Hashable {
        case sandbox
        case production
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
    public let pollInterval: Duration
    public let paymentSheet: @Sendable (Payment) async -> SheetAction
    let http: HTTPService

    /// - Parameters:
    ///   - baseURL: the simulator, e.g. `http://127.0.0.1:8090`.
    ///   - paymentSheet: the customer's answer to each payment sheet; confirms by default.
    public init(
        baseURL: String,
        environment: Environment = .sandbox,
        deviceId: String,
        bundleId: String,
        locale: String = "en-US",
        timeout: Duration = .seconds(30),
        pollInterval: Duration = .seconds(2),
        session: URLSession = TillHTTP.shared,
        paymentSheet: @escaping @Sendable (Payment) async -> SheetAction = { _ in .confirm }
    ) {
        self.environment = environment
        self.deviceId = deviceId
        self.bundleId = bundleId
        self.locale = locale
        self.pollInterval = pollInterval
        self.paymentSheet = paymentSheet
        self.http = HTTPService(
            baseURL: baseURL + "/storekit/" + environment.rawValue,
            bearer: nil,
            timeout: timeout,
            session: session
        )
    }

    private var device: String { "/devices/" + PathComponent.encode(deviceId) }
    private var bundleQuery: String { "bundleId=" + PathComponent.encodeQuery(bundleId) }

    public func canMakePayments() async throws -> Bool {
        struct Answer: Decodable { var canMakePayments: Bool }
        return try await http.get(device + "/can-make-payments").decode(Answer.self).canMakePayments
    }

    public func products(_ identifiers: [String]) async throws -> ProductLookup {
        struct Query: Encodable {
            var bundleId: String
            var deviceId: String
            var productIdentifiers: [String]
            var locale: String
        }
        struct Answer: Decodable {
            var products: [StorefrontProduct]
            var invalidProductIdentifiers: [String]
        }
        var products: [StorefrontProduct] = []
        var invalid: [String] = []
        // The store answers at most 200 identifiers a request.
        for start in stride(from: 0, to: identifiers.count, by: 200) {
            let chunk = Array(identifiers[start..<min(start + 200, identifiers.count)])
            let answer = try await http.post(
                "/products",
                json: Query(bundleId: bundleId, deviceId: deviceId, productIdentifiers: chunk, locale: locale)
            ).decode(Answer.self)
            products += answer.products
            invalid += answer.invalidProductIdentifiers
        }
        return ProductLookup(products: products, invalidProductIds: invalid)
    }

    public func purchase(_ payment: Payment) async throws -> StoreTransaction {
        struct Body: Encodable {
            var deviceId: String
            var bundleId: String
            var productId: String
            var quantity: Int
            var applicationUsername: String?
            var appAccountToken: String?
            var userAction: String
            var promotionalOffer: PromotionalOffer?
            var introductoryOfferEligibility: String?
            var winBackOfferId: String?
        }
        let action = await paymentSheet(payment)
        return try await http.post(
            "/payments",
            json: Body(
                deviceId: deviceId,
                bundleId: bundleId,
                productId: payment.productId,
                quantity: payment.quantity,
                applicationUsername: payment.applicationUsername,
                appAccountToken: payment.appAccountToken,
                userAction: action.rawValue,
                promotionalOffer: payment.promotionalOffer,
                introductoryOfferEligibility: payment.introductoryOfferEligibility,
                winBackOfferId: payment.winBackOfferId
            )
        ).decode(StoreTransaction.self)
    }

    public func unfinishedTransactions() async throws -> [StoreTransaction] {
        try await http.get(device + "/queue?" + bundleQuery).decode([StoreTransaction].self)
    }

    public func finish(_ transaction: StoreTransaction) async throws {
        _ = try await http.send(
            "POST",
            device + "/queue/" + PathComponent.encode(transaction.id) + "/finish",
            body: nil
        )
    }

    public func restoreCompletedTransactions() async throws -> StorefrontRestore {
        struct Body: Encodable { var bundleId: String }
        struct Answer: Decodable {
            var status: String
            var transactions: [StoreTransaction]
            var error: StoreError?
        }
        let answer = try await http.post(device + "/restore", json: Body(bundleId: bundleId)).decode(Answer.self)
        switch answer.status {
        case "completed":
            return answer.transactions.isEmpty ? .nothingToRestore : .restored(answer.transactions)
        default:
            return .failed(answer.error ?? StoreError(code: .unknown, message: "the restore failed"))
        }
    }

    public func appReceipt() async throws -> String? {
        struct Answer: Decodable { var receiptData: String }
        let receipt = try await http.get(device + "/receipt?" + bundleQuery).decode(Answer.self).receiptData
        return receipt.isEmpty ? nil : receipt
    }

    public func transactionUpdates() -> SimulatorTransactionUpdates {
        SimulatorTransactionUpdates(storefront: self)
    }
}

/// The device's queue, polled: each unfinished transaction once, and again when its state changes (a deferred
/// payment approved or declined). The first poll happens at once; a poll that fails is retried at the next
/// interval. Iteration ends when its task is cancelled.
public struct SimulatorTransactionUpdates: AsyncSequence, Sendable {
    public typealias Element = StoreTransaction
    public typealias Failure = Never

    let storefront: SimulatorStorefront

    public func makeAsyncIterator() -> Iterator { Iterator(storefront: storefront) }

    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = StoreTransaction
        public typealias Failure = Never

        let storefront: SimulatorStorefront
        var seen: Set<String> = []
        var buffer: [StoreTransaction] = []
        var polled = false

        public mutating func next() async -> StoreTransaction? {
            while buffer.isEmpty {
                if polled {
                    do { try await Task.sleep(for: storefront.pollInterval) } catch { return nil }
                }
                polled = true
                guard !Task.isCancelled else { return nil }
                guard let queue = try? await storefront.unfinishedTransactions() else { continue }
                for transaction in queue where seen.insert(transaction.id + " " + transaction.state).inserted {
                    buffer.append(transaction)
                }
            }
            return buffer.removeFirst()
        }
    }
}
