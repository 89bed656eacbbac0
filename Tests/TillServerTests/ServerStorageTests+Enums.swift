import Foundation
import SQLKit
import Testing
import TillConsole
import TillContract
import TillCore
import TillJobs
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer

/// States, kinds and reasons are enums in Swift and in the schema: each enum column's CHECK lists exactly its Swift
/// cases, and the database refuses anything else.
extension ServerStorageTests {
    /// The values a CHECK list names.
    static func values(_ list: String) -> Set<String> {
        Set(
            list.split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: ["'"])
            }
        )
    }

    @Test func everyEnumColumnChecksItsSwiftCases() {
        let cases: [(String, String, [String])] = [
            ("environments", ServerSchema.environments, AppStoreEnvironment.known.map(\.rawValue)),
            ("productTypes", ServerSchema.productTypes, ProductType.allCases.map(\.rawValue)),
            ("ownerships", ServerSchema.ownerships, [Ownership.purchased, .familyShared].map(\.rawValue)),
            ("revocationReasons", ServerSchema.revocationReasons, RevocationReason.allCases.map(\.rawValue)),
            ("ledgerSources", ServerSchema.ledgerSources, LedgerSource.allCases.map(\.rawValue)),
            ("financeKinds", ServerSchema.financeKinds, FinanceKind.allCases.map(\.rawValue)),
            ("submissionStates", ServerSchema.submissionStates, SubmissionState.allCases.map(\.rawValue)),
            ("submissionKinds", ServerSchema.submissionKinds, SubmissionKind.allCases.map(\.rawValue)),
            ("retryCauses", ServerSchema.retryCauses, RetryCause.allCases.map(\.rawValue)),
            ("jobKinds", ServerSchema.jobKinds, JobKind.allCases.map(\.rawValue)),
            ("jobStates", ServerSchema.jobStates, [JobState.queued, .deadLettered].map(\.rawValue)),
            ("eventTypes", ServerSchema.eventTypes, EventType.allCases.map(\.rawValue)),
            ("eventSources", ServerSchema.eventSources, Components.Schemas.EventSourceKind.allCases.map(\.rawValue)),
            ("deliveryStates", ServerSchema.deliveryStates, WebhookDeliveryState.allCases.map(\.rawValue)),
            ("consoleActions", ServerSchema.consoleActions, ConsoleAction.allCases.map(\.rawValue)),
        ]
        for (name, list, swift) in cases {
            #expect(Self.values(list) == Set(swift), "\(name): add a migration that checks the new cases")
        }
    }

    @Test(arguments: TestDatabase.all) func theSchemaRefusesAValueNoEnumHas(_ engine: TestDatabase) async throws {
        let database = try await TillDatabase.open(try await engine.fresh(prefix: "till_srv"))
        try await ServerSchema.migrate(database)
        let db = database.sql
        for statement in [
            """
            INSERT INTO srv_transactions (environment, transaction_id, bundle_id, customer_id, original_transaction_id,
                product_id, quantity, purchase_date, revocation_reason, is_upgraded, ownership, submission_id, source,
                confirmed, created_at, updated_at)
            VALUES ('Sandbox', 't1', 'b', 'c', 't1', 'gems', 1, 1, 'apple: status 21003', FALSE, 'PURCHASED', 's1',
                'submission', FALSE, 1, 1)
            """,
            """
            INSERT INTO srv_transactions (environment, transaction_id, bundle_id, customer_id, original_transaction_id,
                product_id, quantity, purchase_date, is_upgraded, ownership, submission_id, source, confirmed, created_at,
                updated_at)
            VALUES ('Staging', 't2', 'b', 'c', 't2', 'gems', 1, 1, FALSE, 'PURCHASED', 's1', 'submission', FALSE, 1, 1)
            """,
            "INSERT INTO srv_finance VALUES ('Sandbox', 't1', 'b', 'gems', 99, 'USD', 1, 'gift')",
            """
            INSERT INTO srv_submissions (id, bundle_id, customer_id, kind, environment, state, attempts, transaction_ids,
                created_at, updated_at)
            VALUES ('s1', 'b', 'c', 'appReceipt', 'Sandbox', 'lost', 0, '[]', 1, 1)
            """,
            """
            INSERT INTO srv_jobs (kind, job_key, state, queue_group, position, attempts, due_at, created_at, updated_at)
            VALUES ('email', 'k', 'queued', '', 0, 0, 1, 1, 1)
            """,
            "INSERT INTO srv_job_holds (kind, queue_group, holder, held_until) VALUES ('email', 'ep_1', 'wkr_a', 1)",
        ] {
            await #expect(throws: (any Error).self, "\(statement.prefix(60))") {
                try await db.raw(SQLQueryString(statement)).run()
            }
        }
        try await database.shutdown()
    }
}
