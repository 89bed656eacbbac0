import Foundation
import NIOHTTP1
import TillClient
import TillContract
import TillCore
import TillDevelopment
import TillSimulator

/// Apple slow, Apple down, and a sandbox receipt sent to production.
extension DemoWalkthrough {
    func appleSlow() async {
        await report.step(
            "Apple is slow",
            """
            The simulator now takes 3 to 6 seconds to answer Apple's Server API. The server verifies a purchase on \
            its own, in milliseconds, so the app gets it at once, provisionally; Apple's confirmation follows in \
            the background.
            """
        ) {
            let rule = try FaultRule(parsing: "sandbox:serverAPI:latency=3-6")
            world.simulator.faults.add(rule)
            defer { _ = world.simulator.faults.remove(id: rule.id) }
            let (outcome, elapsed) = try await timed { try await phone.purchase(productId: "gems.100") }
            guard case .delivered(let delivery) = outcome, let submission = delivery.submission else {
                report.fail("gems.100 delivered at once — \(Self.describe(outcome))")
                return
            }
            let transactionId = delivery.transaction.transactionId
            // Apple's ONE_TIME_CHARGE notification may reach the server first and confirm the purchase; the
            // submission still waits for the Server API.
            let purchase = delivery.snapshot.snapshot.purchases.first { $0.transactionId == transactionId }
            let standing =
                purchase.map { $0.confirmed ? "already confirmed by Apple's notification" : "provisional" }
                ?? "missing"
            report.expect(
                elapsed < .seconds(2) && submission.state == .pending && purchase != nil,
                "gems.100 delivered in \(TextFormat.duration(elapsed)), before Apple's Server API answered "
                    + "(submission \(submission.state), the purchase \(standing))",
                otherwise: "took \(TextFormat.duration(elapsed))"
            )
            guard let (status, after) = try await settled(submission.id) else {
                report.fail("Apple's confirmation follows — not settled after 15 s")
                return
            }
            report.expect(
                status.state == .confirmed,
                "confirmed by Apple \(TextFormat.duration(after)) later (\(status.lastStatus ?? "?"))",
                otherwise: "\(status.state): \(status.lastError ?? status.reason ?? "")"
            )
            let snapshot = try await phone.entitlements.refresh()
            report.expect(
                snapshot.snapshot.purchases.contains { $0.transactionId == transactionId && $0.confirmed },
                "the app's fresh snapshot shows the purchase confirmed",
                otherwise: "it is still provisional"
            )
        }
    }

    func appleDown() async {
        await report.step(
            "Apple is down",
            """
            Apple's Server API now answers 503 to everything. Alice buys gems twice: the app still gets each \
            purchase at once, and the server keeps retrying the confirmations (probing Apple about once a second). \
            Then the fault is removed.
            """
        ) {
            let rule = try FaultRule(parsing: "sandbox:serverAPI:outage=503")
            world.simulator.faults.add(rule)
            var removed = false
            defer { if !removed { _ = world.simulator.faults.remove(id: rule.id) } }
            var submissions: [String] = []
            for quantity in [1, 2] {
                let (outcome, elapsed) = try await timed {
                    try await phone.purchase(productId: "gems.100", quantity: quantity)
                }
                guard case .delivered(let delivery) = outcome, let submission = delivery.submission else {
                    report.fail("gems.100 ×\(quantity) delivered while Apple is down — \(Self.describe(outcome))")
                    continue
                }
                submissions.append(submission.id)
                report.expect(
                    elapsed < .seconds(2),
                    "gems.100 ×\(quantity) delivered in \(TextFormat.duration(elapsed)) although Apple is down; "
                        + "balance \(delivery.snapshot.balance("gems")) gems",
                    otherwise: "took \(TextFormat.duration(elapsed))"
                )
            }
            let client = world.client
            let retrying = try await wait(timeout: .seconds(10)) { () -> [SubmissionStatus]? in
                var statuses: [SubmissionStatus] = []
                for id in submissions { statuses.append(try await client.submission(id: id)) }
                let attempts = statuses.map(\.attempts).reduce(0, +)
                return statuses.allSatisfy({ $0.state == .retrying }) && attempts >= 3 ? statuses : nil
            }
            if let statuses = retrying?.value {
                let attempts = statuses.map(\.attempts).reduce(0, +)
                report.pass(
                    "the server keeps retrying: \(attempts) attempts so far, Apple answered "
                        + "\(statuses.first?.lastStatus ?? "?")"
                )
            } else {
                report.fail("the server keeps retrying — the submissions did not show retries within 10 s")
            }

            removed = world.simulator.faults.remove(id: rule.id)
            report.note("Apple is back")
            let confirmed = try await wait(timeout: .seconds(15)) { () -> [SubmissionStatus]? in
                var statuses: [SubmissionStatus] = []
                for id in submissions { statuses.append(try await client.submission(id: id)) }
                return statuses.allSatisfy({ $0.state == .confirmed }) ? statuses : nil
            }
            report.expect(
                confirmed != nil && submissions.count == 2,
                "both confirmed \(confirmed.map { TextFormat.duration($0.after) } ?? "") after Apple came back",
                otherwise: "not all confirmed within 15 s"
            )
        }
    }

    func sandboxReceiptInProduction() async {
        await report.step(
            "A sandbox receipt sent to production (21007)",
            """
            An older, StoreKit 1 build of the app sends the whole app receipt instead of the signed transaction. \
            The server confirms receipts with verifyReceipt the way Apple asks: production first, and on 21007 \
            ("this receipt is from the sandbox") the sandbox.
            """
        ) {
            let classic = try world.app(
                deviceId: world.app.deviceId,
                folder: "iphone-storekit1",
                evidence: .appReceipt
            )
            _ = await classic.start()
            let (outcome, elapsed) = try await timed { try await classic.purchase(productId: "gems.100") }
            guard case .delivered(let delivery) = outcome, let submission = delivery.submission else {
                report.fail("gems.100 delivered from the app receipt — \(Self.describe(outcome))")
                return
            }
            report.expect(
                submission.kind == .appReceipt,
                "gems.100 delivered in \(TextFormat.duration(elapsed)) from the app receipt",
                otherwise: "the server recorded a \(submission.kind.rawValue)"
            )
            struct VerifyReceipt: Encodable {
                var receiptData: String
                var password: String
                enum CodingKeys: String, CodingKey {
                    case receiptData = "receipt-data"
                    case password
                }
            }
            struct Status: Decodable { var status: Int }
            guard let receipt = try await classic.storefront.appReceipt() else {
                report.fail("the device has an app receipt — it has none")
                return
            }
            let secret = try await world.simulator.appStoreConnect.app(appAppleId: world.app.appAppleId).sharedSecret
            let production = try await AdminHTTP(baseURL: world.simulatorURL).json(
                .POST,
                "/production/verifyReceipt",
                VerifyReceipt(receiptData: receipt, password: secret),
                as: Status.self
            )
            report.expect(
                production.status == 21007,
                "Apple's production verifyReceipt answers this receipt with 21007",
                otherwise: "it answered \(production.status)"
            )
            guard let (status, after) = try await settled(submission.id) else {
                report.fail("the server confirms it — not settled after 15 s")
                return
            }
            report.expect(
                status.state == .confirmed && status.environment == "Sandbox" && status.lastStatus == "status 0",
                "the server followed the 21007 to the sandbox: confirmed there \(TextFormat.duration(after)) later "
                    + "(\(status.lastStatus ?? "?"), \(status.environment))",
                otherwise:
                    "\(status.state) in \(status.environment): \(status.lastStatus ?? "") \(status.lastError ?? "")"
            )
        }
    }
}
