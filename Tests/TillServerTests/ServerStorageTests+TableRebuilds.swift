import Foundation
import Logging
import SQLKit
import ServiceLifecycle
import Testing
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer
@testable import TillSimulator

extension ServerStorageTests {
    /// 006 and 007: rows written before them are all there after, keys stay unique, and on SQLite the tables
    /// are stored by their key and a keyed resend is still found through an index.
    @Test(arguments: TestDatabase.all)
    func tablesRebuiltByKeyKeepTheirRowsAndConstraints(_ engine: TestDatabase) async throws {
        let database = try await TillDatabase.open(try await engine.fresh(prefix: "till_srv"))
        let before = ServerSchema.migrations.prefix { $0.id != "006-partial-idempotency-index" }
        #expect(ServerSchema.migrations[before.count + 1].id == "007-tables-stored-by-key")
        try await database.migrate(Array(before), schema: ServerSchema.name)
        let db = database.sql
        for statement in [
            "INSERT INTO srv_customers VALUES ('b', 'c', NULL, 1)",
            """
            INSERT INTO srv_submissions (id, bundle_id, customer_id, idempotency_key, kind, environment, state,
                attempts, next_attempt_at, transaction_ids, created_at, updated_at)
            VALUES ('s1', 'b', 'c', 'key-1', 'appReceipt', 'Sandbox', 'retrying', 2, 5, '["t1"]', 1, 2)
            """,
            """
            INSERT INTO srv_transactions (environment, transaction_id, bundle_id, customer_id, original_transaction_id,
                product_id, quantity, purchase_date, is_upgraded, ownership, submission_id, confirmed, created_at, updated_at)
            VALUES ('Sandbox', 't1', 'b', 'c', 't1', 'gems', 1, 1, FALSE, 'PURCHASED', 's1', FALSE, 1, 1)
            """,
            // A rejection as it was kept before migration 017, in a row only a notification carried.
            """
            INSERT INTO srv_transactions (environment, transaction_id, bundle_id, customer_id, original_transaction_id,
                product_id, quantity, purchase_date, revocation_date, revocation_reason, is_upgraded, ownership,
                submission_id, confirmed, created_at, updated_at)
            VALUES ('Sandbox', 't2', 'b', 'c', 't2', 'gems', 1, 1, 5, 'apple: status 21003', FALSE, 'PURCHASED',
                'notification:n1', FALSE, 1, 1)
            """,
            "INSERT INTO srv_balance_entries VALUES ('b', 'c', 'gems', 100, 'purchase:Sandbox:t1', 1)",
            "INSERT INTO srv_finance VALUES ('Sandbox', 't1', 'b', 'gems', 99, 'USD', 1, 'purchase')",
        ] {
            try await db.raw(SQLQueryString(statement)).run()
        }
        try await ServerSchema.migrate(database)
        let store = PurchaseStore(database: database)

        let moved = try #require(
            try await SubmissionStore(database: store.database).submission(
                bundleId: "b",
                idempotencyKey: "key-1",
                on: db
            )
        )
        #expect(moved.id == "s1" && moved.attempts == 2 && moved.nextAttemptAt == 5)
        #expect(try await store.transaction(environment: .sandbox, transactionId: "t1", on: db)?.customerId == "c")
        // 017: the rejection is an enum with its answer beside it, and the row knows a notification brought it.
        let rejected = try #require(try await store.transaction(environment: .sandbox, transactionId: "t2", on: db))
        #expect(rejected.revocationReason == .rejected && rejected.revocationDetail == "status 21003")
        #expect(rejected.isRevokedByRejection && rejected.source == .notification)
        // 018: the retrying submission's schedule is its job's.
        let job = try #require(try await JobStore(database: store.database).job(kind: .confirmation, key: "s1", on: db))
        #expect(job.state == .queued && job.dueAt == 5 && job.attempts == 2)
        #expect(try await store.balances(bundleId: "b", customerId: "c", on: db) == ["gems": 100])
        #expect(try await CustomerStore(database: database).resolve(bundleId: "b", customerId: "c", on: db) == "c")
        let finance = try await db.raw("SELECT amount FROM srv_finance WHERE transaction_id = 't1'").first()
        #expect(try finance?.decode(column: "amount", as: Int64.self) == 99)

        // Keys stay unique; submissions without an idempotency key are as many as they come.
        await #expect(throws: (any Error).self) {
            try await db.raw("INSERT INTO srv_customers VALUES ('b', 'c', NULL, 2)").run()
        }
        for (id, key) in [("s2", "NULL"), ("s3", "NULL")] {
            try await db.raw(
                SQLQueryString(
                    """
                    INSERT INTO srv_submissions (id, bundle_id, customer_id, idempotency_key, kind, environment, state,
                        attempts, transaction_ids, created_at, updated_at)
                    VALUES ('\(id)', 'b', 'c', \(key), 'appReceipt', 'Sandbox', 'pending', 0, '[]', 1, 1)
                    """
                )
            ).run()
        }
        await #expect(throws: (any Error).self) {
            try await db.raw(
                """
                INSERT INTO srv_submissions (id, bundle_id, customer_id, idempotency_key, kind, environment, state,
                    attempts, transaction_ids, created_at, updated_at)
                VALUES ('s4', 'b', 'c', 'key-1', 'appReceipt', 'Sandbox', 'pending', 0, '[]', 1, 1)
                """
            ).run()
        }

        if database.engine == .sqlite {
            for table in ["srv_customers", "srv_submissions", "srv_transactions", "srv_balance_entries", "srv_finance"]
            {
                let row = try await db.raw("SELECT sql FROM sqlite_master WHERE name = \(bind: table)").first()
                let sql = try #require(try row?.decode(column: "sql", as: String.self))
                #expect(sql.hasSuffix("WITHOUT ROWID"), "\(table): \(sql)")
            }
            // The partial index serves the lookup of a resend (a scan would read every submission).
            let plan = try await db.raw(
                "EXPLAIN QUERY PLAN SELECT * FROM srv_submissions WHERE bundle_id = 'b' AND idempotency_key = 'k'"
            ).all().map { try $0.decode(column: "detail", as: String.self) }
            #expect(plan.contains { $0.contains("srv_submissions_idempotency") }, "\(plan)")
        }
        try await database.shutdown()
    }
}
