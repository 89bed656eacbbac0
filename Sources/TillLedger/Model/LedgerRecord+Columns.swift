import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// A ledger row's columns, read and written by hand: every purchase reads its purchase's rows and its customer's, and
/// writes its own, inside the one database transaction that holds SQLite's writer; Codable's keyed decoding and
/// sql-kit's model encoding of these 29 columns were 5% of a purchase's CPU (perf at 1,000 purchases a second).
/// `LedgerRecordColumnsTests` holds both to the Codable conformance, which the other queries still use.
extension LedgerRecord {
    /// The columns of `srv_transactions`, in the order `values` gives them.
    package static let columns = [
        "environment", "transaction_id", "bundle_id", "customer_id", "original_transaction_id", "product_id",
        "product_type", "quantity", "purchase_date", "expires_date", "revocation_date", "revocation_reason",
        "revocation_detail", "is_upgraded", "introductory_offer", "ownership", "price", "currency", "storefront",
        "web_order_line_item_id", "submission_id", "source", "confirmed", "created_at", "updated_at",
        "billing_plan_type", "commitment_period", "commitment_periods", "commitment_expires_date",
    ]

    /// The row's values, in the order of `columns`; nil for NULL.
    package var values: [(any Encodable & Sendable)?] {
        [
            environment.rawValue, transactionId, bundleId, customerId, originalTransactionId, productId,
            productType?.rawValue, quantity, purchaseDate, expiresDate, revocationDate, revocationReason?.rawValue,
            revocationDetail, isUpgraded, introductoryOffer, ownership.rawValue, price, currency, storefront,
            webOrderLineItemId, submissionId, source.rawValue, confirmed, createdAt, updatedAt, billingPlanType,
            commitmentPeriod, commitmentPeriods, commitmentExpiresDate,
        ]
    }

    /// A row of `srv_transactions` (`SELECT *`).
    package init(row: any SQLRow) throws {
        self.init(
            environment: AppStoreEnvironment(rawValue: try row.decode(column: "environment", as: String.self)),
            transactionId: try row.decode(column: "transaction_id", as: String.self),
            bundleId: try row.decode(column: "bundle_id", as: String.self),
            customerId: try row.decode(column: "customer_id", as: String.self),
            originalTransactionId: try row.decode(column: "original_transaction_id", as: String.self),
            productId: try row.decode(column: "product_id", as: String.self),
            productType: try row.optionalEnumeration("product_type", as: ProductType.self),
            quantity: try row.decode(column: "quantity", as: Int.self),
            purchaseDate: try row.decode(column: "purchase_date", as: Int64.self),
            expiresDate: try row.optional("expires_date", as: Int64.self),
            revocationDate: try row.optional("revocation_date", as: Int64.self),
            revocationReason: try row.optionalEnumeration("revocation_reason", as: RevocationReason.self),
            revocationDetail: try row.optional("revocation_detail", as: String.self),
            isUpgraded: try row.decode(column: "is_upgraded", as: Bool.self),
            introductoryOffer: try row.decode(column: "introductory_offer", as: Bool.self),
            ownership: Ownership(rawValue: try row.decode(column: "ownership", as: String.self)),
            price: try row.optional("price", as: Int64.self),
            currency: try row.optional("currency", as: String.self),
            storefront: try row.optional("storefront", as: String.self),
            webOrderLineItemId: try row.optional("web_order_line_item_id", as: String.self),
            submissionId: try row.decode(column: "submission_id", as: String.self),
            source: try row.enumeration("source", as: LedgerSource.self),
            confirmed: try row.decode(column: "confirmed", as: Bool.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            billingPlanType: try row.optional("billing_plan_type", as: String.self),
            commitmentPeriod: try row.optional("commitment_period", as: Int.self),
            commitmentPeriods: try row.optional("commitment_periods", as: Int.self),
            commitmentExpiresDate: try row.optional("commitment_expires_date", as: Int64.self)
        )
    }
}

extension SQLQueryFetcher {
    /// The ledger rows the query returns, read by hand (`LedgerRecord.init(row:)`).
    package func ledgerRows() async throws -> [LedgerRecord] {
        try await all().map(LedgerRecord.init(row:))
    }
}

/// A submission's columns, written by hand: written in every purchase's transaction, where sql-kit's model encoding
/// and a JSON encoder for its transaction ids cost more CPU time than the statement (perf).
extension SubmissionRecord {
    /// The columns of `srv_submissions`, in the order `values` gives them (`nextAttemptAt` is the job's).
    package static let columns = [
        "id", "bundle_id", "customer_id", "idempotency_key", "kind", "environment", "state", "attempts",
        "last_status", "last_error", "retry_cause", "reason", "transaction_ids", "created_at", "updated_at",
        "confirmed_at",
    ]

    /// The row's values, in the order of `columns`; nil for NULL. The transaction ids are a JSON array of strings,
    /// as `TransactionIDs` encodes them.
    package var values: [(any Encodable & Sendable)?] {
        var ids = JSONWriter(capacity: 24 * transactionIds.ids.count + 2)
        ids.array(transactionIds.ids) { writer, id in writer.string(id) }
        return [
            id, bundleId, customerId, idempotencyKey, kind.rawValue, environment.rawValue, state.rawValue, attempts,
            lastStatus, lastError, retryCause?.rawValue, reason, String(decoding: ids.bytes, as: UTF8.self), createdAt,
            updatedAt, confirmedAt,
        ]
    }

    /// A row of `srv_submissions`, with `next_attempt_at` when the query joined its job's due time. Read by hand:
    /// every confirmation reads its submission twice (the claim, then the settling), and Codable's keyed decoding of
    /// these 17 columns was 2% of a confirmation's CPU (perf at 1,000 purchases a second).
    package init(row: any SQLRow) throws {
        let ids = try row.decode(column: "transaction_ids", as: String.self)
        self.init(
            id: try row.decode(column: "id", as: String.self),
            bundleId: try row.decode(column: "bundle_id", as: String.self),
            customerId: try row.decode(column: "customer_id", as: String.self),
            idempotencyKey: try row.optional("idempotency_key", as: String.self),
            kind: try row.enumeration("kind", as: SubmissionKind.self),
            environment: AppStoreEnvironment(rawValue: try row.decode(column: "environment", as: String.self)),
            state: try row.enumeration("state", as: SubmissionState.self),
            attempts: try row.decode(column: "attempts", as: Int.self),
            nextAttemptAt: row.contains(column: "next_attempt_at")
                ? try row.optional("next_attempt_at", as: Int64.self) : nil,
            lastStatus: try row.optional("last_status", as: String.self),
            lastError: try row.optional("last_error", as: String.self),
            retryCause: try row.optionalEnumeration("retry_cause", as: RetryCause.self),
            reason: try row.optional("reason", as: String.self),
            transactionIds: TransactionIDs(try JSONDecoder().decode([String].self, from: Data(ids.utf8))),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            confirmedAt: try row.optional("confirmed_at", as: Int64.self)
        )
    }
}

extension SQLQueryFetcher {
    /// The submissions the query returns, read by hand (`SubmissionRecord.init(row:)`).
    package func submissionRows() async throws -> [SubmissionRecord] {
        try await all().map(SubmissionRecord.init(row:))
    }

    /// The first submission the query returns, read by hand.
    package func firstSubmission() async throws -> SubmissionRecord? {
        try await first().map(SubmissionRecord.init(row:))
    }
}

/// An event's columns, written by hand: one row for every change, in its transaction.
extension EventRecord {
    package static let columns = [
        "sequence", "id", "bundle_id", "customer_id", "type", "source", "environment", "occurred_at", "created_at",
        "body", "trace",
    ]

    package var values: [(any Encodable & Sendable)?] {
        [
            sequence, id, bundleId, customerId, type.rawValue, source.rawValue, environment?.rawValue, occurredAt,
            createdAt, body, trace,
        ]
    }
}
