import Crypto
import Foundation
import NIOHTTP1
import TillClient
import TillContract
import TillDevelopment
import TillSimulator

/// The magazine: content delivered by the server, interrupted and resumed; and restore on a second device.
extension DemoWalkthrough {
    static let magazineId = "magazine.1"
    static let magazineFile = "till-monthly-1.txt"

    /// The issue: about 4 MB of text, so that a download can be cut in the middle.
    static let magazineIssue: [UInt8] = {
        var text = "Till Monthly, issue 1\n\n"
        for line in 1...60_000 {
            text += "Line \(line): in-app purchases, verified on your own server, delivered once.\n"
        }
        return Array(text.utf8)
    }()

    static let magazineSHA256 = sha256(magazineIssue)

    static func sha256(_ bytes: some Sequence<UInt8>) -> String {
        SHA256.hash(data: Array(bytes)).map { String(format: "%02x", $0) }.joined()
    }

    func magazine() async {
        await report.step(
            "A magazine issue delivered by the server, interrupted and resumed",
            """
            The operator uploads issue 1 of the magazine through the admin API. Alice buys it; the app downloads \
            the issue before finishing the purchase, but the download stops after 1 MB (the app is suspended). \
            Launched again, the app resumes the download with a Range request, checks the SHA-256, and only then \
            finishes the purchase.
            """
        ) {
            let issue = Self.magazineIssue
            let upload = try await world.serverAdmin.send(
                .PUT,
                "/admin/v1/apps/\(world.app.bundleId)/products/\(Self.magazineId)/content/\(Self.magazineFile)",
                body: issue,
                contentType: "text/plain; charset=utf-8"
            )
            report.expect(
                upload.status == 201,
                "the operator uploaded \(Self.magazineFile) (\(TextFormat.megabytes(Int64(issue.count)))) "
                    + "through the admin API",
                otherwise: "the upload answered \(upload.status)"
            )
            let listed = try await phone.refreshCatalogue().product(Self.magazineId)
            report.expect(
                listed?.content.map(\.sha256) == [Self.magazineSHA256],
                "the master list now offers the file with its SHA-256",
                otherwise: "the master list shows \(listed?.content.map(\.name) ?? [])"
            )

            // The download is cut after a megabyte: the purchase's task is cancelled, as when the app is suspended.
            let app = phone
            await app.observeDownloads { progress in
                if progress.received >= 1_000_000 { withUnsafeCurrentTask { $0?.cancel() } }
            }
            let interrupted = await withTaskGroup(of: PurchaseOutcome?.self) { group in
                group.addTask { try? await app.purchase(productId: Self.magazineId) }
                return await group.next() ?? nil
            }
            await app.observeDownloads(nil)
            let partial = await app.content.partialSize(sha256: Self.magazineSHA256)
            guard case .notDelivered(let failure)? = interrupted, failure.stage == .content else {
                report.fail(
                    "the interrupted purchase is not finished — \(interrupted.map(Self.describe) ?? "no outcome")"
                )
                return
            }
            let queue = try await app.storefront.unfinishedTransactions()
            report.expect(
                partial >= 1_000_000 && partial < issue.count
                    && queue.contains { $0.transaction?.transactionId == failure.transaction.transactionId },
                "the download stopped at \(TextFormat.megabytes(partial)) of "
                    + "\(TextFormat.megabytes(Int64(issue.count))): not delivered, so the transaction stays "
                    + "unfinished, and the partial file is kept",
                otherwise: "partial file \(partial) bytes, \(queue.count) unfinished"
            )

            report.note("the app is launched again")
            let relaunched = try relaunchPhone()
            let launch = await relaunched.start()
            report.expect(
                launch.appTransaction == .alreadySent,
                "the AppTransaction is not sent again: the first launch's is on record",
                otherwise: "\(launch.appTransaction)"
            )
            let delivery = launch.transactions.lazy.compactMap { outcome -> Delivery? in
                if case .delivered(let delivery) = outcome, delivery.transaction.productId == Self.magazineId {
                    return delivery
                }
                return nil
            }.first
            guard let delivery, let file = delivery.files.first else {
                report.fail("the purchase is delivered at launch — \(launch.transactions.map(Self.describe))")
                return
            }
            report.expect(
                file.resumedFrom == partial && file.transferred == Int64(issue.count) - partial,
                "the download resumed with Range from byte \(file.resumedFrom): "
                    + "\(TextFormat.megabytes(file.transferred)) more",
                otherwise: "resumed from \(file.resumedFrom), transferred \(file.transferred), partial was \(partial)"
            )
            let stored = (try? Data(contentsOf: file.url)).map { Self.sha256($0) }
            let finished = try await relaunched.storefront.unfinishedTransactions().isEmpty
            report.expect(
                stored == Self.magazineSHA256 && finished,
                "the issue is on the phone, whole and checked (\(file.url.lastPathComponent)); the purchase is "
                    + "finished only now",
                otherwise: "stored SHA-256 \(stored ?? "none"), queue empty: \(finished)"
            )
        }
    }

    func restoreOnSecondDevice() async {
        await report.step(
            "Restore on a second device",
            """
            Alice installs the app on her iPad, signed in to the same App Store account, and taps Restore \
            Purchases. The App Store brings back what it restores (non-consumables and subscriptions, never \
            consumables or non-renewing subscriptions); the app delivers each, downloading the magazine.
            """
        ) {
            let device = try await world.simulator.appStoreConnect.createDevice(
                accountId: world.app.accountId,
                DeviceInput(name: "iPad")
            )
            let tablet = try world.app(deviceId: device.id, folder: "ipad")
            self.tablet = tablet
            _ = await tablet.start()
            let outcome = await tablet.restore()
            guard case .completed(let deliveries) = outcome else {
                report.fail("the restore completes — \(outcome)")
                return
            }
            let restored = Set(deliveries.map(\.transaction.productId))
            let expected: Set = ["pro", "premium.monthly", "newsletter", Self.magazineId]
            report.expect(
                restored == expected,
                "restored \(restored.sorted().joined(separator: ", ")); not the gems or the season pass",
                otherwise: "restored \(restored.sorted()), expected \(expected.sorted())"
            )
            let file = deliveries.first { $0.transaction.productId == Self.magazineId }?.files.first
            let stored = file.flatMap { try? Data(contentsOf: $0.url) }.map { Self.sha256($0) }
            report.expect(
                stored == Self.magazineSHA256,
                "the magazine was downloaded on the iPad too (\(TextFormat.megabytes(file?.size ?? 0)), checked)",
                otherwise: "the iPad's copy: \(stored ?? "missing")"
            )
            let gems = await tablet.balance(of: "gems")
            let phoneGems = await phone.balance(of: "gems")
            var entitled: [String] = []
            for entitlement in ["pro", "premium", "newsletter", Self.magazineId] {
                if await tablet.isEntitled(to: entitlement) { entitled.append(entitlement) }
            }
            report.expect(
                entitled.count == 4 && gems == phoneGems,
                "the iPad shows what the iPhone does: \(entitled.joined(separator: ", ")) and \(gems) gems "
                    + "(credits live on the server, not in the store)",
                otherwise: "iPad: \(entitled), \(gems) gems; iPhone: \(phoneGems) gems"
            )
            let queue = try await tablet.storefront.unfinishedTransactions()
            report.expect(queue.isEmpty, "every restored transaction was finished", otherwise: "\(queue.count) left")
        }
    }
}
