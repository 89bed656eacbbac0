import Foundation
import SQLKit
import Testing
import TillContract
import TillCore
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillAppStore
@testable import TillServer

/// The ledger rows', submissions' and events' columns are written (and ledger rows read) by hand on the purchase
/// path (`LedgerRecord+Columns.swift`, for a measured cost); the other queries still use the records' Codable
/// conformances. Both must mean the same row: each record, every optional field set, is written one way and read
/// back the other, on each database.
@Suite(.sharingTheMachine)
struct RecordColumnsTests {
    static let ledgerRow = LedgerRecord(
        environment: .sandbox,
        transactionId: "t-1",
        bundleId: "b",
        customerId: "c",
        originalTransactionId: "o-1",
        productId: "premium.monthly",
        productType: .autoRenewable,
        quantity: 2,
        purchaseDate: 1_000,
        expiresDate: 2_000,
        revocationDate: 1_500,
        revocationReason: .rejected,
        revocationDetail: "status 21010",
        isUpgraded: true,
        introductoryOffer: true,
        ownership: .familyShared,
        price: 990,
        currency: "EUR",
        storefront: "FRA",
        webOrderLineItemId: "w-1",
        submissionId: "s-1",
        source: .notification,
        confirmed: true,
        createdAt: 1_001,
        updatedAt: 1_600,
        billingPlanType: "MONTHLY",
        commitmentPeriod: 3,
        commitmentPeriods: 12,
        commitmentExpiresDate: 9_000
    )

    @Test(arguments: TestDatabase.all)
    func aLedgerRowWrittenByHandReadsBackThroughCodableAndTheOtherWayRound(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, confirming: false) { fixture in
            let db = fixture.server.database.sql
            let byHand = Self.ledgerRow
            try await db.run(
                RecordStatements.insert(into: "srv_transactions", columns: LedgerRecord.columns, rows: [byHand.values])
            )
            var byCodable = Self.ledgerRow
            byCodable.transactionId = "t-2"
            byCodable.productType = nil
            byCodable.revocationReason = nil
            byCodable.expiresDate = nil
            try await db.run(RecordStatements.insert(into: "srv_transactions", byCodable, with: ColumnNames.encoder))
            for expected in [byHand, byCodable] {
                let select: SQLQueryString =
                    "SELECT * FROM srv_transactions WHERE transaction_id = \(bind: expected.transactionId)"
                let codable = try #require(
                    try await db.raw(select).first(decoding: LedgerRecord.self, with: ColumnNames.decoder)
                )
                let hand = try #require(try await db.raw(select).ledgerRows().first)
                #expect(codable == expected && hand == expected)
            }
            // An update by hand changes what Codable reads.
            var changed = byHand
            changed.confirmed = false
            changed.revocationDate = nil
            changed.updatedAt = 7_000
            try await db.run(
                RecordStatements.update(
                    "srv_transactions",
                    columns: LedgerRecord.columns,
                    values: changed.values,
                    keys: ["environment", "transaction_id"]
                )
            )
            let read = try await PurchaseStore(database: fixture.server.database).transaction(
                environment: .sandbox,
                transactionId: "t-1",
                on: db
            )
            #expect(read == changed)
        }
    }

    @Test(arguments: TestDatabase.all)
    func aSubmissionReadsTheSameByHandAndThroughCodable(_ database: TestDatabase) async throws {
        try await ServerFixture.run(database: database, confirming: false) { fixture in
            let store = SubmissionStore(database: fixture.server.database)
            let submission = SubmissionRecord(
                id: "s-hand",
                bundleId: ServerFixture.bundleId,
                customerId: "c",
                idempotencyKey: "k",
                kind: .appReceipt,
                environment: .sandbox,
                state: .retrying,
                attempts: 3,
                nextAttemptAt: nil,
                lastStatus: "HTTP 503",
                lastError: "down",
                retryCause: .appleUnavailable,
                reason: "because",
                transactionIds: TransactionIDs(["1", "2"]),
                createdAt: 10,
                updatedAt: 20,
                confirmedAt: 30
            )
            try await store.insert(submission, on: store.sql)
            // One with every optional column NULL, written through Codable.
            let bare = SubmissionRecord(
                id: "s-bare",
                bundleId: ServerFixture.bundleId,
                customerId: "c",
                kind: .signedTransaction,
                environment: .production,
                state: .pending,
                attempts: 0,
                transactionIds: TransactionIDs([]),
                createdAt: 11,
                updatedAt: 11
            )
            try await store.sql.run(RecordStatements.insert(into: "srv_submissions", bare, with: ColumnNames.encoder))
            let read = try #require(try await store.submission(id: "s-hand", on: store.sql))
            #expect(read.transactionIds == submission.transactionIds && read.retryCause == .appleUnavailable)
            #expect(
                read.state == .retrying && read.lastError == "down" && read.confirmedAt == 30
                    && read.idempotencyKey == "k"
            )
            // The store reads by hand (`SubmissionRecord.init(row:)`): what Codable reads of the same rows, with and
            // without the job's due time joined.
            for expected in [submission, bare] {
                let joined = try #require(try await store.submission(id: expected.id, on: store.sql))
                let plain = try #require(try await store.submissions(ids: [expected.id], on: store.sql).first)
                let codable = try #require(
                    try await store.sql.raw("SELECT * FROM srv_submissions WHERE id = \(bind: expected.id)")
                        .first(decoding: SubmissionRecord.self, with: ColumnNames.decoder)
                )
                #expect("\(joined)" == "\(expected)" && "\(plain)" == "\(expected)" && "\(codable)" == "\(expected)")
            }
        }
    }
}
