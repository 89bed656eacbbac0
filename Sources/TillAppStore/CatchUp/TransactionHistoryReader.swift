import Foundation
import Logging
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage

/// Reads the Transaction History (v2) of every App Store customer the ledger knows, each from the revision its last
/// page answered, and gives the ledger what it did not have: renewals the app never sent, refunds and revocations
/// whose notification was lost. Each signed transaction is verified locally first.
///
/// History is per App Store customer, so one history serves all of a customer's purchases: it is asked for with the
/// id of one purchase (its anchor), and every purchase it lists with an owner in the ledger is read through it from
/// then on (`srv_catch_up_purchases`). A purchase of the ledger that no history lists yet starts a history of its
/// own; if that history turns out to list another history's anchor (the same customer), it joins that one. Each
/// page is applied and its revision stored in one database transaction, so a run cut short resumes after the last
/// page applied.
struct TransactionHistoryReader: AppStoreRoom, Sendable {
    let services: AppStoreServices
    /// Apple's notifications, the purchase lock and the renewal states.
    var notificationStore: NotificationStore { NotificationStore(database: database) }
    /// The catch-up's own tables: its reports, checkpoints and history pages.
    var catchUpStore: CatchUpStore { CatchUpStore(database: database) }

    /// How a page of history is verified and applied (shared with the imports).
    var pages: HistoryPages {
        HistoryPages(services: services)
    }

    /// Pages of one history in one run at most (Apple's hold 20 transactions): a bound on a history that never ends.
    static let maximumPages = 10_000

    func read(_ app: ServerApp, _ environment: AppStoreEnvironment, client: AppleClient) async
        -> TransactionHistoryReport
    {
        var report = TransactionHistoryReport(
            complete: true,
            histories: 0,
            pages: 0,
            fetched: 0,
            recorded: 0,
            revoked: 0,
            updated: 0,
            unchanged: 0,
            unmatched: 0,
            refused: 0
        )
        do {
            let anchors = try await catchUpStore.historyAnchors(
                bundleId: app.bundleId,
                environment: environment,
                on: database.sql
            )
            for anchor in anchors {
                let (goOn, _) = await readHistory(
                    app,
                    environment,
                    anchor: anchor.originalTransactionId,
                    from: anchor.revision,
                    client: client,
                    into: &report
                )
                guard goOn else { return report }
            }
            // Purchases no history lists: each may be a customer whose history was never read.
            let known = Set(anchors.map(\.originalTransactionId))
            for purchase in try await catchUpStore.purchasesOutsideHistories(
                bundleId: app.bundleId,
                environment: environment,
                on: database.sql
            ) {
                // A history read a moment ago may list it now.
                guard
                    try await !catchUpStore.historyLists(
                        bundleId: app.bundleId,
                        environment: environment,
                        originalTransactionId: purchase,
                        on: database.sql
                    )
                else { continue }
                let (goOn, listed) = await readHistory(
                    app,
                    environment,
                    anchor: purchase,
                    from: nil,
                    client: client,
                    into: &report
                )
                if let joined = listed.intersection(known).subtracting([purchase]).sorted().first {
                    try await database.transaction(bookkeeping: true) { db in
                        try await self.catchUpStore.joinHistory(
                            bundleId: app.bundleId,
                            environment: environment,
                            anchor: purchase,
                            into: joined,
                            on: db
                        )
                    }
                }
                guard goOn else { return report }
            }
        } catch {
            report.complete = false
            report.error = CatchUpError(
                cause: .other,
                message: "the histories' state could not be read or stored: \(error)"
            )
        }
        return report
    }

    /// Reads one customer's history from `revision` to its end, page after page. Returns whether to go on with the
    /// other histories (not when Apple is unavailable or refuses the key: the next run reads them) and the purchases
    /// it listed.
    private func readHistory(
        _ app: ServerApp,
        _ environment: AppStoreEnvironment,
        anchor: String,
        from revision: String?,
        client: AppleClient,
        into report: inout TransactionHistoryReport
    ) async -> (Bool, Set<String>) {
        report.histories += 1
        var revision = revision
        var listed: Set<String> = []
        for _ in 0..<Self.maximumPages {
            let answer = await client.transactionHistory(
                environment,
                transactionId: anchor,
                revision: revision,
                app: app
            )
            let page: HistoryResponse
            switch answer.body(of: .transactionHistory, in: environment, metrics: metrics) {
            case .failure(let error):
                report.complete = false
                report.error = error
                // Apple down or slowing us down, or the app's key refused: every other history would be too.
                return (error.cause == RetryCause.other, listed)
            case .body(let body):
                guard let decoded = try? AppleJSON.makeDecoder().decode(HistoryResponse.self, from: Data(body)),
                    decoded.revision != nil || decoded.hasMore != true
                else {
                    report.complete = false
                    report.error = CatchUpError(
                        cause: .other,
                        message: "Transaction History (\(environment.rawValue)) answered something that is not its JSON"
                    )
                    return (true, listed)
                }
                page = decoded
            }
            report.pages += 1
            let transactions = page.signedTransactions ?? []
            let signed = await pages.verified(transactions, app: app, environment: environment)
            report.fetched += transactions.count
            report.refused += transactions.count - signed.count
            do {
                let effect = try await pages.apply(
                    signed,
                    app: app,
                    environment: environment,
                    anchor: anchor,
                    revision: page.revision ?? revision,
                    source: .catchUp
                )
                report.recorded += effect.recorded
                report.revoked += effect.revoked
                report.updated += effect.updated
                report.unchanged += effect.unchanged
                report.unmatched += effect.unmatched
                listed.formUnion(effect.listed)
            } catch {
                report.complete = false
                report.error = CatchUpError(cause: .other, message: "a page of history could not be applied: \(error)")
                return (true, listed)
            }
            revision = page.revision ?? revision
            guard page.hasMore == true else { return (true, listed) }
        }
        report.complete = false
        report.error = CatchUpError(cause: .other, message: "a history has over \(Self.maximumPages) pages")
        return (true, listed)
    }
}
