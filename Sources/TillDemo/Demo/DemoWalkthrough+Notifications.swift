import Foundation
import TillClient
import TillContract
import TillCore
import TillDevelopment
import TillSimulator
import TillSnapshot

/// What Apple tells the server on its own: renewals in accelerated time, and a refund.
extension DemoWalkthrough {
    func renewals() async {
        await report.step(
            "Subscription renewals in accelerated time",
            """
            In the sandbox a month of subscription lasts a few minutes. The App Store's clock moves forward two \
            months: Apple renews premium twice and tells the server each time (DID_RENEW notifications). The app's \
            next snapshot carries the new end of the subscription.
            """
        ) {
            guard let original = bought["premium.monthly"]?.transactionId else {
                report.fail("premium.monthly was bought — it was not, in step 2")
                return
            }
            let before = try await phone.entitlements.refresh()
            guard let firstEnd = before.snapshot.entitlements.first(where: { $0.id == "premium" })?.expiresDate else {
                report.fail("premium is granted with an end — the snapshot has no such entitlement")
                return
            }
            let month = world.simulator.clock.rate.monthSeconds ?? 300
            _ = try await world.simulator.subscriptions.advanceClock(seconds: 2 * month + 5)
            report.note(
                "the App Store's clock moved \(TextFormat.span(milliseconds: Int64((2 * month + 5) * 1000))) "
                    + "(two sandbox months)"
            )
            let simulator = world.simulator
            let appAppleId = world.app.appAppleId
            let renewed = try await wait(timeout: .seconds(10)) { () -> [NotificationLogEntry]? in
                let log = try await simulator.notifications.notificationLog(
                    appAppleId: appAppleId,
                    environment: .sandbox
                )
                let renewals = log.filter {
                    $0.notificationType == "DID_RENEW" && $0.originalTransactionId == original
                        && $0.state == .delivered
                }
                return renewals.count >= 2 ? renewals : nil
            }
            report.expect(
                renewed != nil,
                "Apple renewed the subscription twice and the server took both DID_RENEW notifications "
                    + "(\(renewed.map { TextFormat.duration($0.after) } ?? "?"))",
                otherwise: "fewer than 2 renewals were delivered within 10 s"
            )
            let expectedEnd = firstEnd + Int64(2 * month * 1000)
            let after = try await wait(timeout: .seconds(5)) { () -> VerifiedSnapshot? in
                let snapshot = try await phone.entitlements.refresh()
                let end = snapshot.snapshot.entitlements.first { $0.id == "premium" }?.expiresDate ?? 0
                return end >= expectedEnd - 1000 ? snapshot : nil
            }
            let newEnd = after?.value.snapshot.entitlements.first { $0.id == "premium" }?.expiresDate ?? 0
            report.expect(
                after?.value.snapshot.grants("premium", at: storeNow) == true,
                "the app's snapshot grants premium until \(TextFormat.span(milliseconds: newEnd - storeNow)) from "
                    + "now, App Store time; without the renewals it would have ended "
                    + "\(TextFormat.span(milliseconds: storeNow - firstEnd)) ago",
                otherwise: "premium ends \(TextFormat.span(milliseconds: newEnd - storeNow)) from now"
            )
        }
    }

    func refund() async {
        await report.step(
            "A refund revokes access",
            """
            Alice asks Apple for her money back for pro, and Apple refunds it. Apple sends the server a REFUND \
            notification; the server revokes pro, and the apps' next snapshots no longer grant it.
            """
        ) {
            guard let transactionId = bought["pro"]?.transactionId else {
                report.fail("pro was bought — it was not, in step 2")
                return
            }
            _ = try await world.simulator.subscriptions.refund(transactionId: transactionId, reason: 1)
            report.note("Apple refunded transaction \(transactionId)")
            let app = phone
            let revoked = try await wait(timeout: .seconds(10)) { () -> VerifiedSnapshot? in
                let snapshot = try await app.entitlements.refresh()
                return snapshot.grants("pro") ? nil : snapshot
            }
            report.expect(
                revoked != nil,
                "the server revoked pro on Apple's notification; "
                    + "\(revoked.map { TextFormat.duration($0.after) } ?? "?") later the iPhone's snapshot no longer "
                    + "grants it",
                otherwise: "the iPhone still has pro after 10 s"
            )
            if let tablet {
                _ = try await tablet.entitlements.refresh()
                report.expect(
                    await !tablet.isEntitled(to: "pro"),
                    "nor does the iPad's",
                    otherwise: "the iPad still has pro"
                )
            }
            let account = try await world.client.customer(DemoWorld.customer)
            let purchase = account.purchases.first { $0.transactionId == transactionId }
            report.expect(
                purchase?.revocationDate != nil,
                "the server's ledger keeps the purchase, marked refunded",
                otherwise: "the ledger shows \(purchase.map { "\($0)" } ?? "no purchase")"
            )
        }
    }
}
