import AsyncHTTPClient
import Foundation
import NIOHTTP1
import TillContract
import TillSnapshot

/// The app API of `till serve` (docs/api.md), called with the app's key.
///
/// Every method throws ``TillClientError``: check ``TillClientError/isTemporary`` to tell "try again later"
/// (unreachable, timeout, 5xx) from "this request is wrong" (4xx, with the server's `code`).
public struct TillServerClient: Sendable {
    let http: HTTPService

    /// - Parameters:
    ///   - baseURL: the server, e.g. `https://till.example.com`.
    ///   - appKey: the app's key (`tk_…`), sent as `Authorization: Bearer`.
    ///   - timeout: how long one request may take before it counts as timed out.
    public init(
        baseURL: String,
        appKey: String,
        timeout: Duration = .seconds(30),
        httpClient: HTTPClient = TillHTTP.shared
    ) {
        http = HTTPService(baseURL: baseURL, bearer: appKey, timeout: timeout, client: httpClient)
    }

    /// The server's base URL, without a trailing slash.
    public var baseURL: String { http.baseURL }

    /// The master list. With the ETag of the list the app has, an unchanged list answers ``CatalogueFetch/notModified``.
    public func products(ifNoneMatch etag: String? = nil) async throws -> CatalogueFetch {
        let reply = try await http.get("/v1/products", headers: etag.map { [("If-None-Match", $0)] } ?? [])
        if reply.status == 304 { return .notModified }
        var catalogue = try reply.decode(ProductCatalogue.self)
        if let header = reply.headers.first(name: "ETag"), !header.isEmpty { catalogue.etag = header }
        return .updated(catalogue)
    }

    /// Submits a purchase for `customerId`. The server verifies it locally and records it in milliseconds; with
    /// `wait`, it holds the answer until Apple confirmed the purchase or `wait` (at most 60 s) has passed.
    ///
    /// Sending the same `idempotencyKey` with the same evidence again answers the first submission: a resend
    /// never counts twice.
    public func submit(
        _ evidence: PurchaseEvidence,
        customerId: String,
        idempotencyKey: String? = nil,
        wait: Duration? = nil
    ) async throws -> SubmissionAnswer {
        var path = "/v1/receipts"
        var timeout: Duration? = nil
        if let wait, wait > .zero {
            let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
            path += "?wait=" + String(format: "%.3f", min(seconds, 60))
            timeout = http.timeout + wait
        }
        let body = SubmissionBody(customerId: customerId, evidence: evidence, idempotencyKey: idempotencyKey)
        return try await http.send(.POST, path, json: body, timeout: timeout).decode(SubmissionAnswer.self)
    }

    /// Where a submission stands.
    public func submission(id: String) async throws -> SubmissionStatus {
        try await http.get("/v1/submissions/" + PathComponent.encode(id)).decode(SubmissionStatus.self)
    }

    /// What the server says the customer has now (unsigned; see ``snapshot(customerId:)``).
    public func customer(_ customerId: String) async throws -> CustomerAccount {
        try await http.get(customerPath(customerId)).decode(CustomerAccount.self)
    }

    /// Restores a customer's purchases from evidence (usually the app receipt): everything they can have back.
    public func restore(customerId: String, evidence: PurchaseEvidence, idempotencyKey: String? = nil) async throws
        -> RestoreAnswer
    {
        let body = SubmissionBody(customerId: nil, evidence: evidence, idempotencyKey: idempotencyKey)
        return try await http.send(.POST, customerPath(customerId) + "/restore", json: body)
            .decode(RestoreAnswer.self)
    }

    /// Spends `amount` of a consumable credit. The same `requestId` is spent once, however often it is sent.
    /// Answers the balances after it; an overdraft is refused with `insufficientBalance`.
    public func debit(customerId: String, credit: String, amount: Int64, requestId: String) async throws
        -> [String: Int64]
    {
        struct Body: Encodable {
            var credit: String
            var amount: Int64
            var requestId: String
        }
        struct Answer: Decodable { var balances: [String: Int64] }
        return try await http.post(
            customerPath(customerId) + "/debits",
            json: Body(credit: credit, amount: amount, requestId: requestId)
        ).decode(Answer.self).balances
    }

    /// Makes `guestId` an alias of `customerId`: the guest's purchases and balances move to the account, once.
    public func link(guestId: String, to customerId: String) async throws -> CustomerAccount {
        struct Body: Encodable { var customerId: String }
        return try await http.post(customerPath(customerId) + "/aliases", json: Body(customerId: guestId))
            .decode(CustomerAccount.self)
    }

    /// Signed download URLs for a product's files (one file when `name` is given), if the customer may have them
    /// now; refused with `notEntitled` otherwise.
    public func downloads(customerId: String, productId: String, name: String? = nil) async throws -> [ContentLink] {
        struct Body: Encodable {
            var productId: String
            var name: String?
        }
        struct Answer: Decodable { var downloads: [ContentLink] }
        return try await http.post(
            customerPath(customerId) + "/downloads",
            json: Body(productId: productId, name: name)
        ).decode(Answer.self).downloads
    }

    /// The keys the server signs snapshots with (`GET /v1/keys`), the current one first.
    public func snapshotKeys() async throws -> SnapshotKeySet {
        try await http.get("/v1/keys").decode(SnapshotKeySet.self)
    }

    /// The customer's signed entitlement snapshot (`GET /v1/customers/{id}/snapshot`), not yet verified.
    public func snapshot(customerId: String) async throws -> SnapshotResponse {
        try await http.get(customerPath(customerId) + "/snapshot").decode(SnapshotResponse.self)
    }

    /// The absolute URL of a download link.
    public func url(of link: ContentLink) -> String { http.url(link.url) }

    private func customerPath(_ customerId: String) -> String {
        "/v1/customers/" + PathComponent.encode(customerId)
    }
}

/// `POST /v1/receipts` and `/restore` bodies: exactly one evidence field.
struct SubmissionBody: Encodable {
    var customerId: String?
    var evidence: PurchaseEvidence
    var idempotencyKey: String?

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(customerId, forKey: Key(stringValue: "customerId"))
        try container.encode(evidence.payload, forKey: Key(stringValue: evidence.field))
        try container.encodeIfPresent(idempotencyKey, forKey: Key(stringValue: "idempotencyKey"))
    }
}
