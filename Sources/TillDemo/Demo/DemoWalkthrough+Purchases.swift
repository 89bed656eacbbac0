import Foundation
import TillClient
import TillContract
import TillCore
import TillSnapshot

/// The catalogue, one purchase of each type, and the server unreachable (the outbox).
extension DemoWalkthrough {
    func catalogue() async {
        await report.step(
            "The catalogue from the server",
            """
            The app launches on alice's iPhone. It asks the server for its master list of products and the App \
            Store for each one's localized price, as a shop screen does.
            """
        ) {
            let launch = await phone.start()
            report.note("launch: no snapshot stored yet (\(launch.storedSnapshot == .missing ? "missing" : "found"))")
            if case .sent(let kept) = launch.appTransaction {
                report.expect(
                    kept.customerId == "alice" && kept.appTransactionId != nil,
                    "the AppTransaction sent at the first launch, verified and kept by the server: app transaction "
                        + "\(kept.appTransactionId ?? "?"), first version \(kept.originalApplicationVersion ?? "?")",
                    otherwise: "kept for \(kept.customerId) without an app transaction id"
                )
            } else {
                report.fail("the AppTransaction sent at the first launch — \(launch.appTransaction)")
            }
            let offered = try await phone.offeredProducts()
            for product in offered.products {
                let catalogue = product.catalogue
                var grants = catalogue.credits.additionalProperties.map { "+\($0.value) \($0.key)" }.sorted()
                grants += catalogue.entitlements.map { "→ \($0)" }
                if catalogue.isServerDelivered { grants.append("+ \(catalogue.content.count) file(s)") }
                report.note(
                    TextFormat.column(product.productId, 17) + TextFormat.column(catalogue._type.rawValue, 18)
                        + TextFormat.column(product.store.displayName, 24)
                        + TextFormat.column(product.store.displayPrice, 8)
                        + grants.joined(separator: " ")
                )
            }
            let types = Set(offered.products.compactMap(\.catalogue.productType))
            report.expect(
                offered.products.count == 7 && offered.invalidProductIds.isEmpty,
                "\(offered.products.count) products offered, each with the App Store's localized price",
                otherwise: "expected 7, none unknown to the store; unknown: \(offered.invalidProductIds)"
            )
            report.expect(
                types == Set(ProductType.allCases),
                "all five product types are on sale",
                otherwise: "missing \(Set(ProductType.allCases).subtracting(types).map(\.rawValue))"
            )
        }
    }

    func oneOfEachType() async {
        await report.step(
            "A purchase of each product type",
            """
            Alice buys one of each type. For each, the app sends the signed transaction to the server, which \
            verifies it locally and records it; the app then keeps the server's signed snapshot, and only then \
            finishes the transaction in the App Store.
            """
        ) {
            for (productId, kind, grants) in Self.productTypes {
                let (outcome, elapsed) = try await timed { try await phone.purchase(productId: productId) }
                guard case .delivered(let delivery) = outcome else {
                    report.fail("\(productId) (\(kind)) — \(Self.describe(outcome))")
                    continue
                }
                bought[productId] = delivery.transaction
                let snapshot = delivery.snapshot
                let what: String
                let granted: Bool
                if productId == "gems.100" {
                    granted = snapshot.balance(grants) == 100
                    what = "balance \(snapshot.balance(grants)) \(grants)"
                } else {
                    let grant = snapshot.snapshot.entitlements.first { $0.id == grants }
                    granted = snapshot.snapshot.grants(grants, at: storeNow)
                    if let end = grant?.expiresDate {
                        what = "grants \(grants) for \(TextFormat.span(milliseconds: end - storeNow)) of App Store time"
                    } else {
                        what = "grants \(grants)"
                    }
                }
                report.expect(
                    granted,
                    "\(productId) (\(kind)) delivered and finished in \(TextFormat.duration(elapsed)): \(what)",
                    otherwise: "the snapshot does not show it: \(snapshot.snapshot.entitlements.map(\.id))"
                )
            }
            let queue = try await phone.storefront.unfinishedTransactions()
            report.expect(
                queue.isEmpty,
                "the App Store's queue is empty: each transaction was finished after the server recorded it",
                otherwise: "\(queue.count) transactions are still unfinished"
            )
        }
    }

    func serverDown() async {
        await report.step(
            "The Till server unreachable: the outbox",
            """
            The operator stops till serve. Alice buys 100 gems anyway: the App Store charges her, the app cannot \
            reach the server, so the submission waits in the outbox on disk and the transaction stays unfinished. \
            The server comes back on the same port and the app is launched again.
            """
        ) {
            await world.listener.stop()
            report.note("till serve stopped")
            let outcome = try await phone.purchase(productId: "gems.100")
            guard case .notDelivered(let failure) = outcome, failure.stage == .submission, failure.queuedInOutbox else {
                report.fail("the purchase waits in the outbox — \(Self.describe(outcome))")
                try await world.listener.start()
                return
            }
            let transactionId = failure.transaction.transactionId
            let pending = await phone.outbox.pending
            report.expect(
                pending.contains { $0.transactionId == transactionId },
                "charged, not delivered (\(failure.error.kind)): the submission waits in the outbox, written to disk "
                    + "before the first attempt",
                otherwise: "the outbox holds \(pending.count) submissions, not this one"
            )
            let queue = try await phone.storefront.unfinishedTransactions()
            report.expect(
                queue.contains { $0.transaction?.transactionId == transactionId },
                "the App Store keeps the transaction unfinished",
                otherwise: "it was finished"
            )

            try await world.listener.start()
            report.note("till serve is back on the same port; the app is launched again")
            let app = try relaunchPhone()
            let launch = await app.start()
            let resent = launch.resent.contains {
                if case .acknowledged = $0 { return true }
                return false
            }
            let delivered = launch.transactions.contains {
                if case .delivered(let delivery) = $0 { return delivery.transaction.transactionId == transactionId }
                return false
            }
            report.expect(
                resent && delivered,
                "at launch the outbox sent it again, and the purchase was delivered and finished",
                otherwise: "resent: \(resent), outcomes: \(launch.transactions.map(Self.describe))"
            )
            let account = try await world.client.customer(DemoWorld.customer)
            let recorded = account.purchases.filter { $0.transactionId == transactionId }.count
            let waiting = await app.outbox.pending.count
            report.expect(
                recorded == 1 && waiting == 0,
                "the server recorded it once, and the outbox is empty; alice has \(account.balances["gems"] ?? 0) gems",
                otherwise: "recorded \(recorded) times, \(waiting) submissions still waiting"
            )
        }
    }
}
