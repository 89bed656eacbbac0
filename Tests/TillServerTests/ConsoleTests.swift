import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import TillConsole
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

/// The console over HTTP, as a browser speaks to it (the browser itself: `ConsoleBrowserTests`): the session and its
/// cookie, the CSRF token, actions through the ledger shown as manual, and the overview's figures against the
/// revenue report's.
@Suite(.sharingTheMachine)
struct ConsoleTests {
    @Test func nothingAnswersWithoutASessionAndAFormWithoutTheTokenIsRefused() async throws {
        try await ServerFixture.run { fixture in
            let server = fixture.server
            try await Application(router: buildServerRouter(server)).test(.router) { client in
                let browser = ConsoleClient(client)
                // No session: pages lead to the sign-in page, actions are refused.
                let page = try await browser.get("/console/customers?app=\(ServerFixture.bundleId)")
                #expect(page.status == 303 && page.location?.hasPrefix("/console/sign-in") == true)
                let blind = try await browser.post(
                    "/console/customers/ann/grant",
                    [("app", ServerFixture.bundleId), ("product", "pro"), ("note", "x")],
                    csrf: false
                )
                #expect(blind.status == 401)
                // A wrong token is refused; the right one opens a session whose cookie a script cannot read.
                let wrong = try await browser.signIn("not-the-token")
                #expect(wrong.status == 401 && wrong.body.contains("invalidToken"))
                #expect(browser.cookies[ConsoleCookie.session] == nil)
                let signedIn = try await browser.signIn()
                #expect(signedIn.status == 303)
                let cookie = try #require(
                    signedIn.headers[values: .setCookie].first { $0.hasPrefix(ConsoleCookie.session + "=") }
                )
                #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && !cookie.contains("Secure"))

                // A form without the session's token is refused, and changes nothing.
                try await browser.get("/console/customers/ann?app=\(ServerFixture.bundleId)")
                let forged = try await browser.post(
                    "/console/customers/ann/grant",
                    [("app", ServerFixture.bundleId), ("product", "pro"), ("note", "forged")],
                    csrf: false
                )
                #expect(forged.status == 403 && forged.body.contains("csrfTokenMissing"))
                let wrongToken = try await browser.post(
                    "/console/customers/ann/grant",
                    [("app", ServerFixture.bundleId), ("product", "pro"), ("note", "forged"), ("csrf", "0000")],
                    csrf: false
                )
                #expect(wrongToken.status == 403)
                // A form that gives a field twice is refused: which value was meant is not guessed.
                let twice = try await browser.post(
                    "/console/customers/ann/grant",
                    [("app", ServerFixture.bundleId), ("product", "pro"), ("product", "gems.100"), ("note", "twice")]
                )
                #expect(twice.status == 400 && twice.body.contains("invalidForm"), "\(twice.body)")
                // So is one that is not URL-encoding, and one too large: each as a page, as the console's refusals
                // are (they were the API's JSON).
                for (body, status, code) in [
                    ("app=%ZZ&note=x", 400, "invalidForm"),
                    ("note=" + String(repeating: "x", count: ConsoleGate.formLimit + 1), 413, "formTooLarge"),
                ] {
                    let refused = try await browser.send(
                        .post,
                        "/console/customers/ann/grant",
                        headers: [.contentType: "application/x-www-form-urlencoded"],
                        body: ByteBuffer(string: body)
                    )
                    #expect(refused.status == status && refused.body.contains(code), "\(refused.status)")
                    #expect(refused.headers[.contentType]?.hasPrefix("text/html") == true, "\(refused.headers)")
                }
                // An action names its app: one posted for an app that does not exist, or with none, changes nothing
                // (it went to the first app, as a page does, until a probe found it on 2026-12-04).
                for fields in [[("app", "com.example.nope")], []] {
                    try await browser.get("/console/customers/ann?app=\(ServerFixture.bundleId)")
                    let elsewhere = try await browser.post(
                        "/console/customers/ann/grant",
                        fields + [("product", "pro"), ("note", "which app?")]
                    )
                    #expect(
                        elsewhere.status == 404 && elsewhere.body.contains("appNotFound"),
                        "\(elsewhere.status) \(elsewhere.body)"
                    )
                }
                var ann = try await server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "ann")
                #expect(ann.entitlements.isEmpty)
                // An id the server never recorded has no date.
                let unknown = try await browser.get("/console/customers/ann?app=\(ServerFixture.bundleId)")
                #expect(unknown.status == 200 && !unknown.body.contains("First seen"))

                // With it, the grant goes through the ledger as the operator's: manual on the page, in the ledger,
                // in the events, and in the activity with the note.
                try await browser.get("/console/customers/ann?app=\(ServerFixture.bundleId)")
                let granted = try await browser.post(
                    "/console/customers/ann/grant",
                    [("app", ServerFixture.bundleId), ("product", "pro"), ("note", "goodwill after ticket 42")]
                )
                #expect(granted.status == 303)
                ann = try await server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "ann")
                #expect(ann.entitlements.map(\.id) == ["pro"])
                let after = try await browser.get(try #require(granted.location))
                #expect(after.body.contains("Granted pro to ann.") && after.body.contains("badge manual"))
                // The grant recorded ann: the page says since when, as the customer answer's `firstSeen` does.
                let firstSeen = try #require(ann.firstSeen)
                #expect(after.body.contains("First seen \(Readable.time(firstSeen))."), "\(after.body)")
                let feed = try await client.call(
                    .get,
                    "/admin/v1/events?bundleId=\(ServerFixture.bundleId)&customerId=ann",
                    token: "operator"
                )
                let events = feed.object["items"] as? [[String: Any]] ?? []
                let sources = events.compactMap { ($0["source"] as? [String: Any])?["kind"] as? String }
                #expect(sources.contains("operator"), "\(feed.object)")
                let activity = try await browser.get("/console/activity")
                #expect(activity.body.contains("goodwill after ticket 42"))

                // Behind TLS the cookie is Secure; signing out ends the session.
                let secure = ConsoleClient(client)
                try await secure.get("/console/sign-in")
                let tls = try await secure.send(
                    .post,
                    "/console/sign-in",
                    headers: [.contentType: "application/x-www-form-urlencoded", .xForwardedProto: "https"],
                    body: .init(string: "token=operator&csrf=" + (secure.csrf ?? ""))
                )
                #expect(
                    tls.headers[values: .setCookie].contains {
                        $0.hasPrefix(ConsoleCookie.session) && $0.contains("Secure")
                    }
                )
                let out = try await browser.post("/console/sign-out", [])
                #expect(out.status == 303)
                #expect(try await browser.get("/console/overview").location?.hasPrefix("/console/sign-in") == true)

                // Sign-in attempts are limited: after five wrong tokens from one address, even the right one waits.
                let guesser = ConsoleClient(client)
                for _ in 0..<5 { #expect(try await guesser.signIn("guess").status == 401) }
                let limited = try await guesser.signIn("operator")
                #expect(
                    limited.status == 429 && limited.headers[.retryAfter] != nil
                        && limited.body.contains("tooManySignIns")
                )
            }
        }
    }

    /// "Add a product" leads to the new product's page; without an id it leads back to the catalogue with the
    /// reason, never to a product page whose save would create a product named by a placeholder.
    @Test func addingAProductWithoutAnIdLeadsBackToTheCatalogue() async throws {
        try await ServerFixture.run { fixture in
            try await Application(router: buildServerRouter(fixture.server)).test(.router) { client in
                let browser = ConsoleClient(client)
                #expect(try await browser.signIn().status == 303)
                let app = ServerFixture.bundleId
                let named = try await browser.get("/console/catalogue/new?app=\(app)&product=gems.500")
                #expect(named.status == 303 && named.location == "/console/catalogue/gems.500?app=\(app)")
                for blank in ["&product=", "&product=%20%20", ""] {
                    let refused = try await browser.get("/console/catalogue/new?app=\(app)" + blank)
                    let location = try #require(refused.location)
                    #expect(refused.status == 303 && location.hasPrefix("/console/catalogue?app=\(app)&error="))
                    let catalogue = try await browser.get(location)
                    #expect(catalogue.status == 200 && catalogue.body.contains("Give the new product an id."))
                }
            }
        }
    }

    /// After traffic like `till demo`'s (gems and a subscription bought in the simulator's sandbox and confirmed) and
    /// production money (a purchase, its renewal and a prorated refund by Apple's notifications, which a test can
    /// verify only past the signature: Apple's production roots cannot be had), the overview shows for a range the revenue report's
    /// figures for the same range, per currency and per day, and the sandbox's money only apart.
    @Test(arguments: TestDatabase.all) func theOverviewShowsTheRevenueReportsFigures(_ database: TestDatabase)
        async throws
    {
        try await ServerFixture.run(database: database) { fixture in
            let server = fixture.server
            // The sandbox: gems and a subscription through the simulator, confirmed.
            for product in ["gems.100", "premium.monthly", "gems.100"] {
                let purchase = try await fixture.buy(product)
                let submitted = try await server.intake.submit(
                    SubmissionRequest(customerId: "ann", signedTransaction: purchase.signedTransaction),
                    app: fixture.app
                )
                #expect(try await fixture.settled(submitted).state == .confirmed)
            }
            // Production: a purchase in the books, its renewal and a prorated refund from Apple's notifications.
            let start = server.nowMilliseconds
            try await server.events.transaction(source: EventSource(kind: ._operator)) { changes in
                try await CustomerStore(database: server.database).ensureCustomer(
                    bundleId: ServerFixture.bundleId,
                    customerId: "paula",
                    at: start,
                    on: changes.db
                )
                // A production purchase, as the ledger posts one after verification (Apple's roots cannot be had in a
                // test).
                try await server.ledger.post(
                    PurchaseTransaction(
                        transactionId: "900",
                        productId: "premium.monthly",
                        bundleId: ServerFixture.bundleId,
                        productType: .autoRenewable,
                        purchaseDate: Date(millisecondsSince1970: start - 2000),
                        expiresDate: Date(millisecondsSince1970: start + 30_000),
                        environment: .production,
                        price: 990,
                        currency: "USD"
                    ),
                    to: "paula",
                    app: fixture.app,
                    product: nil,
                    origin: .submission("s"),
                    confirmed: true,
                    carryingRevocation: false,
                    now: start,
                    in: changes
                )
            }
            var renewal = JWSTransactionDecodedPayload(
                transactionId: "901",
                originalTransactionId: "900",
                bundleId: ServerFixture.bundleId,
                productId: "premium.monthly",
                purchaseDate: Date(millisecondsSince1970: start - 1000),
                expiresDate: Date(millisecondsSince1970: start + 60_000),
                quantity: 1,
                type: .autoRenewableSubscription,
                inAppOwnershipType: .purchased,
                environment: .production,
                currency: "USD",
                price: 1290
            )
            func verified(_ type: NotificationType) -> VerifiedNotification {
                VerifiedNotification(
                    signedPayload: "",
                    payload: ResponseBodyV2DecodedPayload(notificationType: type, signedDate: Date()),
                    uuid: UUID().uuidString,
                    type: type,
                    environment: .production,
                    bundleId: ServerFixture.bundleId,
                    transaction: renewal
                )
            }
            #expect(try await server.notifications.receive(verified(.didRenew), app: fixture.app).status == .applied)
            renewal.revocationDate = Date(millisecondsSince1970: start)
            renewal.revocationReason = .other
            renewal.revocationType = .refundProrated
            renewal.revocationPercentage = 25_000
            #expect(try await server.notifications.receive(verified(.refund), app: fixture.app).status == .applied)

            let day = FigureChange.dayLength
            let today = FigureChange.day(of: start) * day
            let from = Figures.dateText(ofDay: today / day - 1)
            let to = Figures.dateText(ofDay: today / day)
            let after = Figures.dateText(ofDay: today / day + 1)
            try await Application(router: buildServerRouter(server)).test(.router) { client in
                let report = try await client.call(
                    .get,
                    "/admin/v1/reports/revenue?bundleId=\(ServerFixture.bundleId)&from=\(from)&to=\(after)&groupBy=day",
                    token: "operator"
                )
                #expect(report.status == 200)
                let totals = (report.object["totals"] as? [String: Any] ?? [:]).compactMapValues {
                    ($0 as? NSNumber)?.int64Value
                }
                // 9.90 + 12.90 − a quarter of 12.90; the sandbox's purchases are not money.
                let refund = try #require(totals["USD"]) - 990 - 1290
                #expect(totals.keys.sorted() == ["USD"] && (-323 ... -322).contains(refund), "\(totals)")
                let rows = report.object["rows"] as? [[String: Any]] ?? []

                let browser = ConsoleClient(client)
                #expect(try await browser.signIn().status == 303)
                let overview = try await browser.get(
                    "/console/overview?app=\(ServerFixture.bundleId)&from=\(from)&to=\(to)&bucket=day"
                )
                #expect(overview.status == 200)
                for (currency, amount) in totals {
                    #expect(overview.figure("revenue-\(currency)") == Readable.money(amount))
                }
                #expect(overview.figure("refunds-USD") == Readable.money(refund))
                // The sandbox apart: its purchases shown, never in the revenue.
                #expect(overview.body.contains("data-figure=\"sandbox-"))
                #expect(overview.figure("revenue-none") == nil)

                // Day by day, the export holds the report's rows: amount and count.
                let csv = try await browser.get(
                    "/console/overview.csv?app=\(ServerFixture.bundleId)&from=\(from)&to=\(to)&bucket=day"
                )
                #expect(csv.status == 200 && csv.headers[.contentType]?.hasPrefix("text/csv") == true)
                var exported: [String: (amount: Int64, count: Int64)] = [:]
                for line in csv.body.split(separator: "\n").dropFirst() {
                    let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                    guard cells.count == 5, cells[1] == "Production", !cells[3].isEmpty else { continue }
                    let key = cells[0] + "|" + cells[3]
                    if cells[2] == "revenue" {
                        let milliunits = Int64((Double(cells[4])! * 1000).rounded())
                        exported[key, default: (0, 0)].amount = milliunits
                    } else if cells[2] == "entries" {
                        exported[key, default: (0, 0)].count = Int64(cells[4])!
                    }
                }
                var reported: [String: (amount: Int64, count: Int64)] = [:]
                for row in rows {
                    let key = "\(row["key"] ?? "")|\(row["currency"] ?? "")"
                    reported[key] = (
                        (row["amount"] as? NSNumber)?.int64Value ?? 0,
                        (row["count"] as? NSNumber)?.int64Value ?? 0
                    )
                }
                #expect(!reported.isEmpty)
                #expect(
                    exported.filter { $0.value.amount != 0 || $0.value.count != 0 }.mapValues {
                        "\($0.amount)/\($0.count)"
                    }
                        == reported.mapValues { "\($0.amount)/\($0.count)" }
                )
            }
        }
    }
}
