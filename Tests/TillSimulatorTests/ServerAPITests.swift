import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

/// Signs App Store Server API bearer tokens as Apple's libraries do.
struct BearerToken: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim?
    var exp: ExpirationClaim
    var aud: AudienceClaim
    var bid: String

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    static func make(
        _ credentials: APIKeyCredentials,
        issuer: String? = nil,
        audience: String = "appstoreconnect-v1",
        bundleId: String? = nil,
        issuedAt: Date = Date(),
        lifetime: TimeInterval = 300,
        includeIssuedAt: Bool = true,
        keyId: String? = nil
    ) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(
            ecdsa: try ES256PrivateKey(pem: credentials.privateKey),
            kid: JWKIdentifier(string: keyId ?? credentials.keyId)
        )
        let payload = BearerToken(
            iss: .init(value: issuer ?? credentials.issuerId),
            iat: includeIssuedAt ? .init(value: issuedAt) : nil,
            exp: .init(value: issuedAt.addingTimeInterval(lifetime)),
            aud: .init(value: [audience]),
            bid: bundleId ?? credentials.bundleId
        )
        return try await keys.sign(payload, kid: JWKIdentifier(string: keyId ?? credentials.keyId))
    }
}

@Suite(.sharingTheMachine)
struct ServerAPITests {
    func get(
        _ client: some TestClientProtocol,
        _ path: String,
        token: String?,
        method: HTTPRequest.Method = .get,
        body: String? = nil
    )
        async throws -> (Int, [String: Any]?)
    {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(
            uri: path,
            method: method,
            headers: headers,
            body: body.map { ByteBuffer(string: $0) }
        ) { response in
            let json = try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
            return (Int(response.status.code), json)
        }
    }

    @Test(arguments: TestDatabase.all) func tokensAreCheckedExactlyLikeApple(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        let purchase = try await fixture.buy("pro")
        let credentials = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        let path = "/sandbox/inApps/v1/transactions/\(try #require(purchase.transactionId))"
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            let good = try await BearerToken.make(credentials)
            let (status, json) = try await get(client, path, token: good)
            #expect(status == 200)
            let signed = try #require(json?["signedTransactionInfo"] as? String)
            #expect(
                await fixture.jwsVerifier.verify(signed, as: JWSTransactionDecodedPayload.self).value?.payload.productId
                    == "pro"
            )
            // Python's client leaves iat out; Apple accepts that.
            #expect(
                try await get(client, path, token: try await BearerToken.make(credentials, includeIssuedAt: false)).0
                    == 200
            )

            for bad in [
                try await BearerToken.make(credentials, issuer: UUID().uuidString),
                try await BearerToken.make(credentials, audience: "appstoreconnect-v2"),
                try await BearerToken.make(credentials, bundleId: "com.other"),
                try await BearerToken.make(credentials, lifetime: 3700),
                try await BearerToken.make(credentials, issuedAt: Date().addingTimeInterval(-400)),
                try await BearerToken.make(credentials, keyId: "UNKNOWNKEY"),
            ] {
                let (status, body) = try await get(client, path, token: bad)
                #expect(status == 401 && body == nil)
            }
            #expect(try await get(client, path, token: nil).0 == 401)
        }
    }

    @Test(arguments: TestDatabase.all) func endpointsAnswerWithApplesShapesAndErrors(_ database: TestDatabase)
        async throws
    {
        let fixture = try await SimulatorFixture.make(database: database)
        let pro = try await fixture.buy("pro")
        let subscription = try await fixture.buy("premium.monthly")
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 301)
        let proId = try #require(pro.transactionId)
        _ = try await fixture.simulator.subscriptions.refund(transactionId: proId, reason: 1)
        let credentials = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        let original = try #require(subscription.transactionId)
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            let token = try await BearerToken.make(credentials)
            let (invalid, invalidBody) = try await get(client, "/sandbox/inApps/v1/transactions/abc", token: token)
            #expect(invalid == 400 && invalidBody?["errorCode"] as? Int == 4000006)
            let (missing, missingBody) = try await get(client, "/sandbox/inApps/v1/transactions/999", token: token)
            #expect(
                missing == 404 && missingBody?["errorCode"] as? Int == 4040010
                    && missingBody?["errorMessage"] as? String == "Transaction id not found."
            )
            // The sandbox transaction does not exist in production.
            #expect(try await get(client, "/production/inApps/v1/transactions/\(original)", token: token).0 == 404)

            let history = try #require(try await get(client, "/sandbox/inApps/v2/history/\(original)", token: token).1)
            #expect((history["signedTransactions"] as? [String])?.count == 3)
            #expect(history["hasMore"] as? Bool == false && history["bundleId"] as? String == SimulatorFixture.bundleId)
            let filtered = try #require(
                try await get(client, "/sandbox/inApps/v2/history/\(original)?productType=NON_CONSUMABLE", token: token)
                    .1
            )
            #expect((filtered["signedTransactions"] as? [String])?.count == 1)
            #expect(
                try await get(client, "/sandbox/inApps/v2/history/\(original)?sort=SIDEWAYS", token: token).1?[
                    "errorCode"
                ] as? Int == 4000021
            )
            // Booleans as Apple's clients send them: Swift and Node `true`, Python `True`.
            for (value, count) in [("true", 1), ("True", 1), ("TRUE", 1), ("false", 2), ("False", 2)] {
                let (status, body) = try await get(
                    client,
                    "/sandbox/inApps/v2/history/\(original)?revoked=\(value)",
                    token: token
                )
                #expect(status == 200 && (body?["signedTransactions"] as? [String])?.count == count, "\(value)")
            }
            #expect(
                try await get(client, "/sandbox/inApps/v2/history/\(original)?revoked=yes", token: token).1?[
                    "errorCode"
                ] as? Int == 4000030
            )

            let statuses = try #require(
                try await get(client, "/sandbox/inApps/v1/subscriptions/\(original)", token: token).1
            )
            let group = try #require((statuses["data"] as? [[String: Any]])?.first)
            #expect(group["subscriptionGroupIdentifier"] as? String == "premium")
            let last = try #require((group["lastTransactions"] as? [[String: Any]])?.first)
            #expect(
                last["status"] as? Int == 1 && last["originalTransactionId"] as? String == original
                    && last["signedRenewalInfo"] is String
            )
            #expect(
                ((try await get(client, "/sandbox/inApps/v1/subscriptions/\(original)?status=2", token: token).1?[
                    "data"
                ]) as? [Any])?.isEmpty == true
            )

            let refunds = try #require(
                try await get(client, "/sandbox/inApps/v2/refund/lookup/\(original)", token: token).1
            )
            #expect((refunds["signedTransactions"] as? [String])?.count == 1)

            let tx = try #require(
                try await fixture.simulator.store.purchases.transaction(id: proId, on: fixture.simulator.store.sql)
            )
            #expect(
                try await get(client, "/sandbox/inApps/v1/lookup/\(tx.orderId)", token: token).1?["status"] as? Int == 0
            )
            #expect(
                try await get(client, "/sandbox/inApps/v1/lookup/NOSUCHORDER", token: token).1?["status"] as? Int == 1
            )

            let test = try #require(
                try await get(client, "/sandbox/inApps/v1/notifications/test", token: token, method: .post).1
            )
            let testToken = try #require(test["testNotificationToken"] as? String)
            let status = try #require(
                try await get(client, "/sandbox/inApps/v1/notifications/test/\(testToken)", token: token).1
            )
            let signedPayload = try #require(status["signedPayload"] as? String)
            let payload = try #require(
                await fixture.jwsVerifier.verify(signedPayload, as: ResponseBodyV2DecodedPayload.self).value
            )
            #expect(payload.payload.notificationType == .test)

            let now = fixture.simulator.clock.nowMilliseconds
            let body = #"{"startDate":\#(now - 86_400_000),"endDate":\#(now + 1000),"notificationType":"DID_RENEW"}"#
            let history2 = try #require(
                try await get(
                    client,
                    "/sandbox/inApps/v1/notifications/history",
                    token: token,
                    method: .post,
                    body: body
                ).1
            )
            #expect(history2["hasMore"] as? Bool == false)
            let tooOld = #"{"startDate":\#(now - 200 * 86_400_000),"endDate":\#(now)}"#
            #expect(
                try await get(
                    client,
                    "/sandbox/inApps/v1/notifications/history",
                    token: token,
                    method: .post,
                    body: tooOld
                ).1?["errorCode"] as? Int == 4000012
            )

            // Apple's 429 says when to ask again: Retry-After, a UNIX time in milliseconds; a second from now without
            // an end to the rule, the rule's end with one.
            for (rule, expected) in [
                ("sandbox:serverAPI:rate-limit,times=1", { (now: Int64) in now + 1000 }),
                ("sandbox:serverAPI:rate-limit,for=30", { (now: Int64) in now + 30_000 }),
            ] {
                let fault = try FaultRule(parsing: rule)
                fixture.simulator.faults.add(fault)
                let now = Date().millisecondsSince1970
                var headers = HTTPFields()
                headers[.authorization] = "Bearer \(token)"
                try await client.execute(
                    uri: "/sandbox/inApps/v1/transactions/\(original)",
                    method: .get,
                    headers: headers
                ) { response in
                    let body = try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))
                    #expect(response.status.code == 429 && (body as? [String: Any])?["errorCode"] as? Int == 4290000)
                    let retryAt = try #require(response.headers[.retryAfter].flatMap { Int64($0) }, "\(rule)")
                    #expect(abs(retryAt - expected(now)) < 2000, "\(rule): Retry-After \(retryAt), now \(now)")
                }
                _ = fixture.simulator.faults.remove(id: fault.id)
            }
        }
    }

    /// Dates are epoch milliseconds, and one far enough away (Int64.max) is a `Date` whose milliseconds no longer fit
    /// in an Int64 when converted back: it trapped in the filter and stopped the whole process. Refused with 400.
    @Test func datesMillionsOfYearsAwayAreRefusedNotTrappedOn() async throws {
        let fixture = try await SimulatorFixture.make()
        let original = try #require(try await fixture.buy("gems.100").transactionId)
        let credentials = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            let token = try await BearerToken.make(credentials)
            for (query, code) in [
                ("startDate=\(Int64.max)", 4_000_015), ("endDate=\(Int64.max)", 4_000_016),
                ("startDate=\(Int64.min)", 4_000_015), ("endDate=-9223372036854775000", 4_000_016),
            ] {
                let (status, body) = try await get(
                    client,
                    "/sandbox/inApps/v2/history/\(original)?\(query)",
                    token: token
                )
                #expect(status == 400 && body?["errorCode"] as? Int == code, "\(query): \(status) \(body ?? [:])")
            }
            let now = fixture.simulator.clock.nowMilliseconds
            for window in [
                #"{"startDate":\#(now - 1000),"endDate":\#(Int64.max)}"#,
                #"{"startDate":\#(Int64.max - 1000),"endDate":\#(Int64.max)}"#,
            ] {
                let (status, _) = try await get(
                    client,
                    "/sandbox/inApps/v1/notifications/history",
                    token: token,
                    method: .post,
                    body: window
                )
                #expect(status == 400, "\(window)")
            }
        }
    }

    @Test(arguments: TestDatabase.all) func historyRevisionsAreStablePositionsInModificationOrder(
        _ database: TestDatabase
    ) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        var bought: [String] = []
        for _ in 0..<25 { bought.append(try #require(try await fixture.buy("gems.100").transactionId)) }
        let ids = bought
        let credentials = try await fixture.simulator.appStoreConnect.createAPIKey(appAppleId: fixture.app.appAppleId)
        let app = Application(router: buildSimulatorRouter(fixture.simulator))
        try await app.test(.router) { client in
            let token = try await BearerToken.make(credentials)
            func page(_ query: String) async throws -> (ids: [String], revoked: [Bool], revision: String, more: Bool) {
                let (status, body) = try await get(
                    client,
                    "/sandbox/inApps/v2/history/\(ids[0])?\(query)",
                    token: token
                )
                #expect(status == 200, "\(query): \(body ?? [:])")
                var pageIds: [String] = []
                var revoked: [Bool] = []
                for jws in body?["signedTransactions"] as? [String] ?? [] {
                    let payload = try #require(
                        await fixture.jwsVerifier.verify(jws, as: JWSTransactionDecodedPayload.self).value?.payload
                    )
                    pageIds.append(payload.transactionId ?? "")
                    revoked.append(payload.revocationDate != nil)
                }
                return (pageIds, revoked, body?["revision"] as? String ?? "", body?["hasMore"] as? Bool ?? false)
            }

            let first = try await page("sort=ASCENDING")
            #expect(first.ids == Array(ids[0..<20]) && first.more)
            // A revision handed out before revisions were sequence numbers (a base64url offset) goes on from the
            // same place.
            let legacy = Base64.encode(Array("20".utf8), alphabet: .url)
            #expect(try await page("sort=ASCENDING&revision=\(legacy)").ids == Array(ids[20...]))

            // One transaction already seen and one not reached yet are refunded while the client pages.
            _ = try await fixture.simulator.subscriptions.refund(transactionId: ids[3], reason: 0)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: ids[22], reason: 0)
            let second = try await page("sort=ASCENDING&revision=\(first.revision)")
            #expect(second.ids == [ids[20], ids[21], ids[23], ids[24], ids[3], ids[22]] && !second.more)
            #expect(second.revoked == [false, false, false, false, true, true])
            // The last revision, kept for later, brings what changed since and nothing else.
            #expect(try await page("sort=ASCENDING&revision=\(second.revision)").ids.isEmpty)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: ids[10], reason: 0)
            let later = try await page("sort=ASCENDING&revision=\(second.revision)")
            #expect(later.ids == [ids[10]] && later.revoked == [true] && !later.more)

            // Descending: newest changes first; what changes while paging comes on the next page.
            let top = try await page("sort=DESCENDING")
            #expect(top.ids.prefix(3) == [ids[10], ids[22], ids[3]] && top.ids.count == 20 && top.more)
            _ = try await fixture.simulator.subscriptions.refund(transactionId: ids[1], reason: 0)
            let rest = try await page("sort=DESCENDING&revision=\(top.revision)")
            #expect(rest.ids.first == ids[1] && rest.revoked.first == true && !rest.more)
            #expect(Set(top.ids + rest.ids) == Set(ids) && top.ids.count + rest.ids.count == ids.count)

            // Filters apply to every page; revisions stay positions in the unfiltered order.
            let revoked = try await page("revoked=true&sort=DESCENDING")
            #expect(revoked.ids == [ids[1], ids[10], ids[22], ids[3]] && !revoked.more)

            #expect(
                try await get(client, "/sandbox/inApps/v2/history/\(ids[0])?revision=nonsense", token: token).1?[
                    "errorCode"
                ] as? Int == 4000005
            )
        }
    }
}
