import Foundation
import TillContract
import TillSnapshot

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The app API of `till serve` (docs/api.md), called with the app's key through the client that
/// swift-openapi-generator made from the contract, over URLSession.
///
/// Every method throws ``TillClientError``: check ``TillClientError/isTemporary`` to tell "try again later"
/// (unreachable, timeout, 5xx) from "this request is wrong" (4xx, with the server's `code`).
public struct TillServerClient: Sendable {
    let calls: GeneratedCalls<Client>
    /// Without a trailing slash.
    public var baseURL: String { calls.baseURL }

    /// - Parameters:
    ///   - baseURL: the server, e.g. `https://till.example.com`.
    ///   - appKey: the app's key (`tk_…`), sent as `Authorization: Bearer`.
    ///   - timeout: how many seconds one request may take before it counts as timed out.
    ///   - session: the URL session to send through.
    public init(
        baseURL: String,
        appKey: String,
        timeout: TimeInterval = 30,
        session: URLSession = TillHTTP.shared
    ) {
        calls = GeneratedCalls(baseURL: baseURL, bearer: appKey, timeout: timeout, session: session) {
            Client(serverURL: $0, transport: $1, middlewares: $2)
        }
    }

    /// The master list. With the ETag of the list the app has, an unchanged list answers ``CatalogueFetch/notModified``.
    public func products(ifNoneMatch etag: String? = nil) async throws -> CatalogueFetch {
        let output = try await calls.call { try await $0.masterList(headers: .init(ifNoneMatch: etag)) }
        switch output {
        case .ok(let ok):
            var catalogue = try GeneratedCalls<Client>.read { try ok.body.json }
            if let header = ok.headers.eTag, !header.isEmpty { catalogue.etag = header }
            return .updated(catalogue)
        case .notModified: return .notModified
        default: throw GeneratedCalls<Client>.unexpected(output)
        }
    }

    /// Submits a purchase for `customerId`. The server verifies it locally and records it in milliseconds; with
    /// `wait` (seconds), it holds the answer until Apple confirmed the purchase or `wait` (at most 60) has passed.
    ///
    /// Sending the same `idempotencyKey` with the same evidence again answers the first submission: a resend
    /// never counts twice.
    public func submit(
        _ evidence: PurchaseEvidence,
        customerId: String,
        idempotencyKey: String? = nil,
        wait: TimeInterval? = nil
    ) async throws -> SubmissionAnswer {
        var seconds: Double? = nil
        var limit = calls.timeout
        if let wait, wait > 0 {
            seconds = min(wait, 60)
            limit = calls.timeout + wait
        }
        var body = Components.Schemas.SubmissionRequest(customerId: customerId, idempotencyKey: idempotencyKey)
        switch evidence {
        case .appReceipt(let receipt): body.receipt = receipt
        case .transactionReceipt(let receipt): body.transactionReceipt = receipt
        case .signedTransaction(let jws): body.signedTransaction = jws
        }
        let output = try await calls.call(timeout: limit) { [body, seconds] in
            try await $0.submit(query: .init(wait: seconds), body: .json(body))
        }
        switch output {
        case .ok(let ok): return try GeneratedCalls<Client>.read { try ok.body.json }
        case .accepted(let accepted): return try GeneratedCalls<Client>.read { try accepted.body.json }
        default: throw GeneratedCalls<Client>.unexpected(output)
        }
    }

    /// Where a submission stands.
    public func submission(id: String) async throws -> SubmissionStatus {
        let output = try await calls.call { try await $0.submission(path: .init(id: id)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// What the server says the customer has now (unsigned; see ``snapshot(customerId:)``).
    public func customer(_ customerId: String) async throws -> CustomerAccount {
        let output = try await calls.call { try await $0.customer(path: .init(customer: customerId)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// Restores a customer's purchases from evidence (usually the app receipt): everything they can have back.
    public func restore(customerId: String, evidence: PurchaseEvidence, idempotencyKey: String? = nil) async throws
        -> RestoreAnswer
    {
        var body = Components.Schemas.RestoreRequest(idempotencyKey: idempotencyKey)
        switch evidence {
        case .appReceipt(let receipt): body.receipt = receipt
        case .transactionReceipt(let receipt): body.transactionReceipt = receipt
        case .signedTransaction(let jws): body.signedTransaction = jws
        }
        let output = try await calls.call { [body] in
            try await $0.restore(path: .init(customer: customerId), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// Spends `amount` of a consumable credit. The same `requestId` is spent once, however often it is sent.
    /// Answers the balances after it; an overdraft is refused with `insufficientBalance`.
    public func debit(customerId: String, credit: String, amount: Int64, requestId: String) async throws
        -> [String: Int64]
    {
        let body = Components.Schemas.DebitRequest(credit: credit, amount: amount, requestId: requestId)
        let output = try await calls.call { try await $0.debit(path: .init(customer: customerId), body: .json(body)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }.balances.additionalProperties
    }

    /// Asks the server to sign a promotional offer for the customer (`jws`: the compact JWS of iOS 26's purchase
    /// option; otherwise the original signature). Pass the `appAccountToken` the purchase will carry: the original
    /// signature covers it. A signature buys once: ask again for each attempt.
    public func signPromotionalOffer(
        customerId: String,
        productId: String,
        offerIdentifier: String,
        jws: Bool = false,
        appAccountToken: String? = nil
    ) async throws -> SignedPromotionalOffer {
        let body = Components.Schemas.PromotionalOfferRequest(
            productId: productId,
            offerIdentifier: offerIdentifier,
            format: jws ? .jws : .signature,
            appAccountToken: appAccountToken
        )
        let output = try await calls.call {
            try await $0.signPromotionalOffer(path: .init(customer: customerId), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// Asks the server whether the customer may have a subscription's introductory offer, signed for StoreKit 2's
    /// `introductoryOfferEligibility(compactJWS:)`. `appTransactionId` names the customer when the server has no
    /// purchase of theirs yet.
    public func signIntroductoryEligibility(customerId: String, productId: String, appTransactionId: String? = nil)
        async throws -> SignedIntroductoryEligibility
    {
        let body = Components.Schemas.IntroductoryEligibilityRequest(
            productId: productId,
            appTransactionId: appTransactionId
        )
        let output = try await calls.call {
            try await $0.signIntroductoryOfferEligibility(path: .init(customer: customerId), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// Records whether the customer agreed that their consumption data be shared with Apple when they ask for a
    /// refund (the server answers Apple's consumption requests only for those who did).
    public func setConsumptionConsent(customerId: String, consented: Bool) async throws {
        let body = Components.Schemas.ConsumptionConsentInput(consented: consented)
        let output = try await calls.call {
            try await $0.setConsumptionConsent(path: .init(customer: customerId), body: .json(body))
        }
        guard case .ok = output else { throw GeneratedCalls<Client>.unexpected(output) }
    }

    /// Records the app's signed AppTransaction (StoreKit 2's `AppTransaction.shared`, its `jwsRepresentation`) for
    /// the customer. The server verifies it and keeps one per customer (a newer one replaces it); sending the same
    /// one again is harmless. Answers the AppTransaction the server keeps now, which is an older send's when that
    /// one is newer. A refusal is a 422 with the verifier's code (`invalidAppIdentifier`, `verificationFailure`, …).
    public func recordAppTransaction(customerId: String, signedAppTransaction: String) async throws
        -> ServerAppTransaction
    {
        let body = Components.Schemas.AppTransactionInput(signedAppTransaction: signedAppTransaction)
        let output = try await calls.call {
            try await $0.recordAppTransaction(path: .init(customer: customerId), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// The AppTransaction the server keeps for the customer; refused with `404 appTransactionNotFound` when none
    /// was recorded.
    public func appTransaction(customerId: String) async throws -> ServerAppTransaction {
        let output = try await calls.call { try await $0.customerAppTransaction(path: .init(customer: customerId)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// Makes `guestId` an alias of `customerId`: the guest's purchases and balances move to the account, once.
    public func link(guestId: String, to customerId: String) async throws -> CustomerAccount {
        let body = Components.Schemas.AliasRequest(customerId: guestId)
        let output = try await calls.call { try await $0.link(path: .init(customer: customerId), body: .json(body)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// Signed download URLs for a product's files (one file when `name` is given), if the customer may have them
    /// now; refused with `notEntitled` otherwise.
    public func downloads(customerId: String, productId: String, name: String? = nil) async throws -> [ContentLink] {
        let body = Components.Schemas.DownloadsRequest(productId: productId, name: name)
        let output = try await calls.call {
            try await $0.downloads(path: .init(customer: customerId), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }.downloads
    }

    /// The keys the server signs snapshots with (`GET /v1/keys`), the current one first.
    public func snapshotKeys() async throws -> SnapshotKeySet {
        let output = try await calls.call { try await $0.snapshotKeys() }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// The customer's signed entitlement snapshot (`GET /v1/customers/{id}/snapshot`), not yet verified.
    public func snapshot(customerId: String) async throws -> SnapshotAnswer {
        let output = try await calls.call { try await $0.snapshot(path: .init(customer: customerId)) }
        guard case .ok(let ok) = output else { throw GeneratedCalls<Client>.unexpected(output) }
        return try GeneratedCalls<Client>.read { try ok.body.json }
    }

    /// The absolute URL of a download link.
    public func url(of link: ContentLink) -> String {
        link.url.hasPrefix("http://") || link.url.hasPrefix("https://") ? link.url : baseURL + link.url
    }
}
