import Foundation
import SQLKit
import TillCatalogue
import TillCore
import TillLedger
import TillStorage

/// Catching up with Apple (`CatchUp`): the last run's report, how far each app's Notification History was read, and
/// where each App Store customer's Transaction History stands (migration 012-catch-up).
struct CatchUpStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: Runs

    /// Keeps a finished run's report (the contract's `CatchUpRun` as JSON), the app's last.
    func saveCatchUpReport(bundleId: String, finishedAt: Int64, outcome: String, report: String, on db: any SQLDatabase)
        async throws
    {
        try await db.raw(
            """
            INSERT INTO srv_catch_up_runs (bundle_id, finished_at, outcome, report)
            VALUES (\(bind: bundleId), \(bind: finishedAt), \(bind: outcome), \(bind: report))
            ON CONFLICT (bundle_id) DO UPDATE
            SET finished_at = excluded.finished_at, outcome = excluded.outcome, report = excluded.report
            """
        ).run()
    }

    /// The last finished run's report (JSON), if the app ever had one.
    func lastCatchUpReport(bundleId: String, on db: any SQLDatabase) async throws -> String? {
        try await db.raw("SELECT report FROM srv_catch_up_runs WHERE bundle_id = \(bind: bundleId)").first()?
            .decode(column: "report", as: String?.self)
    }

    // MARK: Notification History

    /// Until when (UNIX ms) the app's Notification History in `environment` was read completely; nil before the
    /// first complete read.
    func notificationCheckpoint(bundleId: String, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> Int64?
    {
        try await db.raw(
            """
            SELECT notifications_until FROM srv_catch_up_checkpoints
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment)
            """
        ).first()?.decode(column: "notifications_until", as: Int64.self)
    }

    /// Moves the checkpoint to `until`, never back (a slower run that started earlier cannot undo a later one).
    func moveNotificationCheckpoint(
        bundleId: String,
        environment: AppStoreEnvironment,
        to until: Int64,
        at now: Int64,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            INSERT INTO srv_catch_up_checkpoints (bundle_id, environment, notifications_until, updated_at)
            VALUES (\(bind: bundleId), \(bind: environment), \(bind: until), \(bind: now))
            ON CONFLICT (bundle_id, environment) DO UPDATE
            SET notifications_until = excluded.notifications_until, updated_at = excluded.updated_at
            WHERE srv_catch_up_checkpoints.notifications_until < excluded.notifications_until
            """
        ).run()
    }

    /// Whether a notification applied to the ledger carried this transaction signed after `signedDate` (UNIX ms):
    /// Apple's later word about it is in already, and older data must not undo it.
    func hasNotificationApplied(
        environment: AppStoreEnvironment,
        transactionId: String,
        signedAfter signedDate: Int64,
        on db: any SQLDatabase
    ) async throws -> Bool {
        // The literal 'applied' matches the partial index srv_notifications_applied_transaction.
        try await db.raw(
            """
            SELECT 1 AS found FROM srv_notifications
            WHERE environment = \(bind: environment) AND transaction_id = \(bind: transactionId)
              AND outcome = 'applied' AND signed_date > \(bind: signedDate)
            LIMIT 1
            """
        ).first() != nil
    }

    // MARK: Transaction History

    /// One history per App Store customer: the purchase (original transaction) whose id the history is asked with,
    /// and the revision its last page answered.
    struct HistoryAnchor: Decodable, Sendable {
        var originalTransactionId: String
        var revision: String?
    }

    /// The histories already read for the app in `environment`, oldest first.
    func historyAnchors(bundleId: String, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> [HistoryAnchor]
    {
        try await db.raw(
            """
            SELECT original_transaction_id, revision FROM srv_catch_up_purchases
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment) AND anchor = original_transaction_id
            ORDER BY updated_at, original_transaction_id
            """
        ).all(decoding: HistoryAnchor.self, with: Self.decoding)
    }

    /// The ledger's purchases (original transactions) of the app in `environment` that no history read so far
    /// listed: each may belong to an App Store customer whose history was never asked for. An operator's grant is
    /// not one: no App Store knows its `grant-…` id (Apple answers 4000006, and the run would never be complete).
    /// The ledger's tables are the ledger's to read (Plugins/LedgerTables): its purchases come a page at a time, and
    /// each page's listed ones are looked up here.
    func purchasesOutsideHistories(
        bundleId: String,
        environment: AppStoreEnvironment,
        pageSize: Int = 1000,
        on db: any SQLDatabase
    ) async throws -> [String] {
        let purchases = PurchaseStore(database: database)
        var outside: [String] = []
        var after: String?
        while true {
            let page = try await purchases.originalTransactionIds(
                bundleId: bundleId,
                environment: environment,
                after: after,
                limit: pageSize,
                on: db
            )
            guard let last = page.last else { return outside }
            let listed = Set(
                try await db.select().column("original_transaction_id").from("srv_catch_up_purchases")
                    .where("bundle_id", .equal, bundleId).where("environment", .equal, environment.rawValue)
                    .where("original_transaction_id", .in, page)
                    .all().map { try $0.decode(column: "original_transaction_id", as: String.self) }
            )
            outside += page.filter { !listed.contains($0) }
            guard page.count == pageSize else { return outside }
            after = last
        }
    }

    /// Whether a history read so far listed this purchase.
    func historyLists(
        bundleId: String,
        environment: AppStoreEnvironment,
        originalTransactionId: String,
        on db: any SQLDatabase
    )
        async throws -> Bool
    {
        try await db.raw(
            """
            SELECT 1 AS found FROM srv_catch_up_purchases
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment)
              AND original_transaction_id = \(bind: originalTransactionId)
            """
        ).first() != nil
    }

    /// The history asked with `anchor` turned out to be the customer's whose history is asked with `other`: its
    /// purchases are read through that one from now on, and its own revision is dropped.
    func joinHistory(
        bundleId: String,
        environment: AppStoreEnvironment,
        anchor: String,
        into other: String,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            UPDATE srv_catch_up_purchases SET anchor = \(bind: other), revision = NULL
            WHERE bundle_id = \(bind: bundleId) AND environment = \(bind: environment) AND anchor = \(bind: anchor)
            """
        ).run()
    }

    /// After a page of the history asked with `anchor`: its revision, and the purchases it listed as read through
    /// that history (a purchase another history listed first stays with it).
    func saveHistoryPage(
        bundleId: String,
        environment: AppStoreEnvironment,
        anchor: String,
        revision: String?,
        listed: Set<String>,
        at now: Int64,
        on db: any SQLDatabase
    ) async throws {
        try await db.raw(
            """
            INSERT INTO srv_catch_up_purchases (bundle_id, environment, original_transaction_id, anchor, revision, updated_at)
            VALUES (\(bind: bundleId), \(bind: environment), \(bind: anchor), \(bind: anchor), \(bind: revision), \(bind: now))
            ON CONFLICT (bundle_id, environment, original_transaction_id) DO UPDATE
            SET anchor = excluded.anchor, revision = excluded.revision, updated_at = excluded.updated_at
            """
        ).run()
        for original in listed.sorted() where original != anchor {
            try await db.raw(
                """
                INSERT INTO srv_catch_up_purchases (bundle_id, environment, original_transaction_id, anchor, revision, updated_at)
                VALUES (\(bind: bundleId), \(bind: environment), \(bind: original), \(bind: anchor), NULL, \(bind: now))
                ON CONFLICT (bundle_id, environment, original_transaction_id) DO NOTHING
                """
            ).run()
        }
    }
}
