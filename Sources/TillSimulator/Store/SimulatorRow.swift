import Foundation
import SQLKit
import TillStorage

/// A record the simulator keeps as one row of one table, written whole: inserted as it is, updated or replaced where
/// its primary key matches. `SimulatorStore`'s three writes serve every such record; each table's statements were a
/// function of the same lines for each record before.
protocol SimulatorRow: Codable, Sendable {
    static var table: String { get }
    /// The columns of the table's primary key, each with this row's value.
    var key: [(column: String, value: any Encodable & Sendable)] { get }
}

extension SimulatorStore {
    func insert<Row: SimulatorRow>(_ row: Row, on db: any SQLDatabase) async throws {
        try await db.insert(into: Row.table).model(row, with: Self.encoding).run()
    }

    /// Writes every column of the row whose key is the record's.
    func update<Row: SimulatorRow>(_ row: Row, on db: any SQLDatabase) async throws {
        var update = try db.update(Row.table).set(model: row, with: Self.encoding)
        for (column, value) in row.key { update = update.where(SQLIdentifier(column), .equal, SQLBind(value)) }
        try await update.run()
    }

    /// Deletes the row with the record's key, if any, and inserts the record.
    func upsert<Row: SimulatorRow>(_ row: Row, on db: any SQLDatabase) async throws {
        var delete = db.delete(from: Row.table)
        for (column, value) in row.key { delete = delete.where(SQLIdentifier(column), .equal, SQLBind(value)) }
        try await delete.run()
        try await insert(row, on: db)
    }
}

extension SimApp: SimulatorRow {
    static let table = "sim_apps"
    var key: [(column: String, value: any Encodable & Sendable)] { [("app_apple_id", appAppleId)] }
}

extension SimAPIKey: SimulatorRow {
    static let table = "sim_api_keys"
    var key: [(column: String, value: any Encodable & Sendable)] { [("key_id", keyId)] }
}

extension SimAccount: SimulatorRow {
    static let table = "sim_accounts"
    var key: [(column: String, value: any Encodable & Sendable)] { [("id", id)] }
}

extension SimDevice: SimulatorRow {
    static let table = "sim_devices"
    var key: [(column: String, value: any Encodable & Sendable)] { [("id", id)] }
}

extension SimPayment: SimulatorRow {
    static let table = "sim_payments"
    var key: [(column: String, value: any Encodable & Sendable)] { [("id", id)] }
}

extension SimTransaction: SimulatorRow {
    static let table = "sim_transactions"
    var key: [(column: String, value: any Encodable & Sendable)] { [("transaction_id", transactionId)] }
}

extension SimQueueEntry: SimulatorRow {
    static let table = "sim_queue"
    var key: [(column: String, value: any Encodable & Sendable)] { [("id", id)] }
}

extension SimSubscription: SimulatorRow {
    static let table = "sim_subscriptions"
    var key: [(column: String, value: any Encodable & Sendable)] {
        [("original_transaction_id", originalTransactionId)]
    }
}

extension SimNotificationRecord: SimulatorRow {
    static let table = "sim_notifications"
    var key: [(column: String, value: any Encodable & Sendable)] { [("uuid", uuid)] }
}

extension SimConsumptionInfo: SimulatorRow {
    static let table = "sim_consumption"
    var key: [(column: String, value: any Encodable & Sendable)] { [("id", id)] }
}

extension SimRenewalExtension: SimulatorRow {
    static let table = "sim_extensions"
    var key: [(column: String, value: any Encodable & Sendable)] {
        [
            ("app_apple_id", appAppleId), ("environment", environment), ("request_identifier", requestIdentifier),
            ("original_transaction_id", originalTransactionId),
        ]
    }
}

extension SimMassExtension: SimulatorRow {
    static let table = "sim_mass_extensions"
    var key: [(column: String, value: any Encodable & Sendable)] {
        [("app_apple_id", appAppleId), ("environment", environment), ("request_identifier", requestIdentifier)]
    }
}

extension RetentionAsset {
    var key: [(column: String, value: any Encodable & Sendable)] {
        [("app_apple_id", appAppleId), ("environment", environment), (Self.identifierColumn, identifier)]
    }
}

extension SimRetentionDefault: SimulatorRow {
    static let table = "sim_retention_defaults"
    var key: [(column: String, value: any Encodable & Sendable)] {
        [("app_apple_id", appAppleId), ("environment", environment), ("product_id", productId), ("locale", locale)]
    }
}

extension SimRetentionRequest: SimulatorRow {
    static let table = "sim_retention_requests"
    var key: [(column: String, value: any Encodable & Sendable)] { [("request_identifier", requestIdentifier)] }
}

extension SimPerformanceTest: SimulatorRow {
    static let table = "sim_performance_tests"
    var key: [(column: String, value: any Encodable & Sendable)] { [("request_id", requestId)] }
}

extension SimOfferCode: SimulatorRow {
    static let table = "sim_offer_codes"
    var key: [(column: String, value: any Encodable & Sendable)] { [("code", code)] }
}

extension SimOfferRedemption: SimulatorRow {
    static let table = "sim_offer_redemptions"
    var key: [(column: String, value: any Encodable & Sendable)] { [("id", id)] }
}
