import Foundation
import JWTKit
import Logging
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The App Store Server API: Apple's calls, authenticated with the app's key, in Apple's shapes and errors.
public struct ServerAPI: Sendable {
    let database: TillDatabase
    let store: SimulatorStore
    let clock: SimulatorClock
    let receipts: Receipts
    let notifications: NotificationSender
    let subscriptions: SubscriptionEngine
}

/// The claims of an App Store Server API bearer token.
struct AppStoreConnectClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim?
    var exp: ExpirationClaim
    var aud: AudienceClaim
    var bid: String

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        try aud.verifyIntendedAudience(includes: "appstoreconnect-v1")
    }
}

/// A failure of the App Store Server API: an HTTP status and, except for 401, Apple's error body.
public struct ServerAPIFailure: Error, Sendable {
    public var status: Int
    public var error: APIError?

    init(_ code: ServerAPIErrorCode) {
        self.status = code.httpStatus
        self.error = APIError(code)
    }

    static let unauthorized = ServerAPIFailure(status: 401, error: nil)

    init(status: Int, error: APIError?) {
        self.status = status
        self.error = error
    }
}

extension ServerAPI {
    /// Checks a bearer token exactly as Apple does: ES256 with a registered key id, `iss` of that key,
    /// `aud` = `appstoreconnect-v1`, `bid` of the key's app, not expired, and at most 60 minutes of lifetime.
    func authenticate(authorization: String?) async throws(ServerAPIFailure) -> SimApp {
        guard let authorization, authorization.hasPrefix("Bearer ") else { throw .unauthorized }
        let token = String(authorization.dropFirst("Bearer ".count))
        let segments = token.split(separator: ".")
        guard segments.count == 3, let headerBytes = Base64.decode(segments[0], alphabet: .url),
            let header = try? JSONDecoder().decode(JWSHeader.self, from: Data(headerBytes)),
            header.alg == "ES256", let kid = header.kid,
            let key = try? await store.appStoreConnect.apiKey(id: kid, on: store.sql),
            let publicKey = try? ES256PublicKey(pem: key.publicKeyPem)
        else { throw .unauthorized }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: publicKey, kid: JWKIdentifier(string: kid))
        guard let claims = try? await keys.verify(token, as: AppStoreConnectClaims.self),
            claims.iss.value == key.issuerId,
            let app = try? await store.appStoreConnect.app(appAppleId: key.appAppleId, on: store.sql),
            claims.bid == app.bundleId
        else { throw .unauthorized }
        let now = Date()
        let issued = claims.iat?.value ?? now
        guard issued <= now.addingTimeInterval(60), claims.exp.value.timeIntervalSince(issued) <= 3600 + 1,
            claims.exp.value.timeIntervalSince(now) <= 3600 + 60
        else { throw .unauthorized }
        return app
    }

    // MARK: Endpoints (§4.8)

    /// Get Transaction Info.
    func transactionInfo(_ transactionId: String, app: SimApp, environment: AppStoreEnvironment) async throws
        -> TransactionInfoResponse
    {
        let tx = try await requireTransaction(transactionId, app: app, environment: environment)
        return TransactionInfoResponse(signedTransactionInfo: try receipts.signTransaction(tx, app: app))
    }

    /// Get Transaction History: the customer's transactions in modification order, 20 a page. The revision is a
    /// position in that order (``HistoryRevision``): a transaction that changes while a client pages comes again.
    /// Version 2 returns every transaction; version 1 (deprecated, still the default of Apple's Python client) leaves
    /// out consumables the app finished, unless they were refunded or revoked.
    func transactionHistory(
        _ transactionId: String,
        version: Int = 2,
        query: [(String, String)],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws -> HistoryResponse {
        let filter: TransactionHistoryQuery
        do { filter = try TransactionHistoryQuery(queryItems: Self.normalizingBooleans(query)) } catch {
            throw ServerAPIFailure(status: 400, error: error)
        }
        var token: HistoryRevision.Token?
        if let revision = filter.revision {
            guard let parsed = HistoryRevision.Token(revision) else {
                throw ServerAPIFailure(.invalidRequestRevision)
            }
            token = parsed
        }
        let tx = try await requireTransaction(
            transactionId,
            app: app,
            environment: environment,
            acceptsAppTransactionId: true
        )
        var transactions = try await store.purchases.transactions(
            accountId: tx.accountId,
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        )
        transactions = transactions.filter { candidate in
            if version == 1, candidate.productType == .consumable, candidate.finished, candidate.revocationDate == nil {
                return false
            }
            if let start = filter.startDate, candidate.purchaseDate < start.millisecondsSince1970 { return false }
            if let end = filter.endDate, candidate.purchaseDate >= end.millisecondsSince1970 { return false }
            if !filter.productIds.isEmpty, !filter.productIds.contains(candidate.productId) { return false }
            if !filter.productTypes.isEmpty, !filter.productTypes.contains(Self.historyType(candidate.productType)) {
                return false
            }
            if !filter.subscriptionGroupIdentifiers.isEmpty,
                !filter.subscriptionGroupIdentifiers.contains(candidate.subscriptionGroup ?? "")
            {
                return false
            }
            if let ownership = filter.inAppOwnershipType, ownership != candidate.ownership { return false }
            if let revoked = filter.revoked, revoked != (candidate.revocationDate != nil) { return false }
            return true
        }
        let page = try HistoryRevision.page(of: transactions, after: token, descending: filter.sort == .descending)
        return HistoryResponse(
            revision: page.revision.token,
            hasMore: page.hasMore,
            bundleId: app.bundleId,
            appAppleId: app.appAppleId,
            environment: environment,
            signedTransactions: try page.items.map { try receipts.signTransaction($0, app: app) }
        )
    }

    /// Get All Subscription Statuses.
    func subscriptionStatuses(
        _ transactionId: String,
        query: [(String, String)],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws -> StatusResponse {
        let filter: SubscriptionStatusQuery
        do { filter = try SubscriptionStatusQuery(queryItems: query) } catch {
            throw ServerAPIFailure(status: 400, error: error)
        }
        let tx = try await requireTransaction(
            transactionId,
            app: app,
            environment: environment,
            acceptsAppTransactionId: true
        )
        let subscriptions = try await store.subscriptions.subscriptions(
            accountId: tx.accountId,
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        )
        var groups: [SubscriptionGroupIdentifierItem] = []
        for (group, members) in Dictionary(grouping: subscriptions, by: \.subscriptionGroup).sorted(by: {
            $0.key < $1.key
        }) {
            var items: [LastTransactionsItem] = []
            for subscription in members {
                let status = AppStoreSubscriptionStatus(rawValue: subscription.status)
                guard filter.status.isEmpty || filter.status.contains(status),
                    let latest = try await store.purchases.transaction(
                        id: subscription.lastTransactionId,
                        on: store.sql
                    )
                else { continue }
                items.append(
                    LastTransactionsItem(
                        status: status,
                        originalTransactionId: subscription.originalTransactionId,
                        signedTransactionInfo: try receipts.signTransaction(latest, app: app),
                        signedRenewalInfo: try await receipts.signRenewalInfo(subscription, app: app, on: store.sql)
                    )
                )
            }
            if !items.isEmpty {
                groups.append(
                    SubscriptionGroupIdentifierItem(subscriptionGroupIdentifier: group, lastTransactions: items)
                )
            }
        }
        return StatusResponse(
            environment: environment,
            bundleId: app.bundleId,
            appAppleId: app.appAppleId,
            data: groups
        )
    }

    /// Look Up Order ID.
    func lookUpOrder(_ orderId: String, app: SimApp, environment: AppStoreEnvironment) async throws
        -> OrderLookupResponse
    {
        let transactions = try await store.purchases.transactions(orderId: orderId, on: store.sql)
            .filter {
                $0.appAppleId == app.appAppleId && $0.environment == environment
                    && $0.ownership == .purchased
            }
        guard !transactions.isEmpty else { return OrderLookupResponse(status: .invalid, signedTransactions: []) }
        return OrderLookupResponse(
            status: .valid,
            signedTransactions: try transactions.map { try receipts.signTransaction($0, app: app) }
        )
    }

    /// Get Refund History (v2): the customer's refunded transactions by revocation date, 20 a page.
    func refundHistory(_ transactionId: String, revision: String?, app: SimApp, environment: AppStoreEnvironment)
        async throws
        -> RefundHistoryResponse
    {
        let tx = try await requireTransaction(
            transactionId,
            app: app,
            environment: environment,
            acceptsAppTransactionId: true
        )
        let refunded = try await store.purchases.transactions(
            accountId: tx.accountId,
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        ).filter { $0.revocationDate != nil && $0.revocationType != "FAMILY_REVOKE" }
            .sorted { ($0.revocationDate!, $0.signedSequence) < ($1.revocationDate!, $1.signedSequence) }
        let page = try paginate(refunded, revision: revision)
        return RefundHistoryResponse(
            signedTransactions: try page.items.map { try receipts.signTransaction($0, app: app) },
            revision: page.revision,
            hasMore: page.hasMore
        )
    }

    // MARK: Helpers

    /// The transaction a call names. Calls about a customer take any of their ids (Apple's `anyTransactionId`): a
    /// transaction id, original or not, or the customer's app transaction id, which stands for their first
    /// transaction here. Calls about one transaction refuse an app transaction id with `appTransactionIdNotSupported`.
    func requireTransaction(
        _ id: String,
        app: SimApp,
        environment: AppStoreEnvironment,
        acceptsAppTransactionId: Bool = false
    ) async throws -> SimTransaction {
        guard Self.isTransactionId(id) else { throw ServerAPIFailure(.invalidTransactionId) }
        if let tx = try await store.purchases.transaction(id: id, on: store.sql) {
            guard tx.appAppleId == app.appAppleId, tx.environment == environment else {
                throw ServerAPIFailure(.transactionIdNotFound)
            }
            return tx
        }
        for accountId in try await store.purchases.customers(
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        )
        where receipts.appTransactionId(accountId: accountId, app: app) == id {
            guard acceptsAppTransactionId else { throw ServerAPIFailure(.appTransactionIdNotSupported) }
            if let first = try await store.purchases.transactions(
                accountId: accountId,
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            ).first {
                return first
            }
        }
        throw ServerAPIFailure(.transactionIdNotFound)
    }

    /// Pages of 20; the revision is the base64url offset of the next page.
    func paginate<T>(_ items: [T], revision: String?) throws(ServerAPIFailure) -> (
        items: [T], revision: String?, hasMore: Bool
    ) {
        var offset = 0
        if let revision {
            guard let bytes = Base64.decode(revision, alphabet: .url),
                let value = Int(String(decoding: bytes, as: UTF8.self)),
                value >= 0, value <= items.count
            else { throw ServerAPIFailure(.invalidRequestRevision) }
            offset = value
        }
        let end = min(items.count, offset + 20)
        return (Array(items[offset..<end]), Base64.encode(Array(String(end).utf8), alphabet: .url), end < items.count)
    }

    /// Boolean query parameters in every form Apple's clients send: `true`/`false` (Swift, Java, Node) and
    /// `True`/`False` (Python writes `str(bool)`), in any case. `revoked` (Get Transaction History) is the only
    /// boolean query parameter of the endpoints served here; notification history's `onlyFailures` is a JSON
    /// boolean in the body. Other values are left for the query parser to refuse (`invalidRevoked`).
    static func normalizingBooleans(_ query: [(String, String)]) -> [(String, String)] {
        let booleans: Set<String> = ["revoked"]
        return query.map { name, value in
            let lowered = value.lowercased()
            guard booleans.contains(name), lowered == "true" || lowered == "false" else { return (name, value) }
            return (name, lowered)
        }
    }

    func attempts(of record: SimNotificationRecord) -> [SendAttemptItem] {
        (try? AppleJSON.makeDecoder().decode([SendAttemptItem].self, from: Data(record.sendAttempts.utf8))) ?? []
    }

    private static func historyType(_ type: ProductType) -> TransactionHistoryProductType {
        switch type {
        case .autoRenewable: .autoRenewable
        case .nonRenewing: .nonRenewable
        case .consumable: .consumable
        case .nonConsumable, .freeSubscription: .nonConsumable
        }
    }
}
