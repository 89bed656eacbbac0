import Foundation
import SQLKit
import TillCore
import TillStorage

/// The simulator's database, on SQLite or PostgreSQL: its migrations, signing keys, counters and settings, the writes
/// of whole records (`SimulatorRow`), the lookups every room shares (`SimulatorStore+Lookups`), and each room's store
/// of its own tables (`purchases`, `subscriptions`, …), which read and write nothing else.
///
/// Methods take the `SQLDatabase` to run on, so that a service can group them in one transaction
/// (`database.transaction { db in … }`) or run them alone (`store.sql`).
struct SimulatorStore: Sendable {
    let database: TillDatabase
    var sql: any SQLDatabase { database.sql }

    static let encoding = ColumnNames.encoder
    static let decoding = ColumnNames.decoder

    func migrate() async throws {
        try await database.migrate(SimulatorSchema.migrations, schema: SimulatorSchema.name)
    }

    // MARK: Signing keys

    /// The signing key (PEM) and its certificate chain stored under `name`, if any.
    func signingKey(named name: String) async throws -> (keyPEM: String, chainPEM: String)? {
        guard
            let row = try await sql.raw("SELECT private_key_pem, chain_pem FROM sim_keys WHERE name = \(bind: name)")
                .first()
        else { return nil }
        return (
            try row.decode(column: "private_key_pem", as: String.self),
            try row.decode(column: "chain_pem", as: String.self)
        )
    }

    /// Stores a signing key under `name` unless one is stored already (another process may have been first).
    func storeSigningKey(named name: String, keyPEM: String, chainPEM: String, at: Int64) async throws {
        try await sql.raw(
            """
            INSERT INTO sim_keys (name, private_key_pem, chain_pem, created_at)
            VALUES (\(bind: name), \(bind: keyPEM), \(bind: chainPEM), \(bind: at))
            ON CONFLICT (name) DO NOTHING
            """
        ).run()
    }

    // MARK: Counters and settings

    /// The next value of a named counter (1, 2, 3, …), safe under concurrency.
    func next(_ name: String, startingAt start: Int64 = 1, on db: any SQLDatabase) async throws -> Int64 {
        let row = try await db.raw(
            """
            INSERT INTO sim_counters (name, value) VALUES (\(bind: name), \(bind: start))
            ON CONFLICT (name) DO UPDATE SET value = sim_counters.value + 1
            RETURNING value
            """
        ).first()
        return try row!.decode(column: "value", as: Int64.self)
    }

    func setting(_ name: String, on db: any SQLDatabase) async throws -> String? {
        try await db.raw("SELECT value FROM sim_settings WHERE name = \(bind: name)").first()?
            .decode(column: "value", as: String.self)
    }

    func setSetting(_ name: String, _ value: String, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO sim_settings (name, value) VALUES (\(bind: name), \(bind: value))
            ON CONFLICT (name) DO UPDATE SET value = \(bind: value)
            """
        ).run()
    }

    // MARK: Each room's tables

    var appStoreConnect: SimAppStoreConnectStore { SimAppStoreConnectStore() }
    var purchases: SimPurchaseStore { SimPurchaseStore() }
    var subscriptions: SimSubscriptionStore { SimSubscriptionStore() }
    var notifications: SimNotificationStore { SimNotificationStore() }
    var serverAPI: SimServerAPIStore { SimServerAPIStore() }
    var offers: SimOfferStore { SimOfferStore() }
    var retention: SimRetentionStore { SimRetentionStore() }
}
