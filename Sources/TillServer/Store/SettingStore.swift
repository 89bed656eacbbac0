import Crypto
import Foundation
import SQLKit
import TillCatalogue
import TillCore
import TillLedger
import TillStorage

/// The deployment's stored settings (`srv_settings`): values several processes must agree on, stored by the first.
struct SettingStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: Settings

    /// A stored setting, or `make()` stored as it on first use (several processes agree on the first one stored).
    func setting(_ name: String, orStore make: () -> String) async throws -> String {
        try await sql.raw(
            "INSERT INTO srv_settings (name, value) VALUES (\(bind: name), \(bind: make())) ON CONFLICT (name) DO NOTHING"
        ).run()
        return try await sql.raw("SELECT value FROM srv_settings WHERE name = \(bind: name)").first()!
            .decode(column: "value", as: String.self)
    }

    /// The secret every process of a deployment signs download URLs with when none is configured: the first
    /// process to start stores 32 random bytes (as hex), later ones and other processes read the same value.
    func sharedServerSecret() async throws -> [UInt8] {
        let hex = try await setting("server.secret") {
            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
        return Array(hex.utf8)
    }

    /// The setting that holds the deployment's snapshot signing key.
    static let snapshotKeySetting = "snapshot.private-key"

    /// The P-256 key every process of a deployment signs entitlement snapshots with when none is configured: the
    /// first process to start stores a new one (PEM, PKCS#8) in `srv_settings`, later ones and other processes read
    /// the same key, so a snapshot verifies whichever process signed it and keeps verifying after restarts.
    func sharedSnapshotKey() async throws -> P256.Signing.PrivateKey {
        let pem = try await setting(Self.snapshotKeySetting) { P256.Signing.PrivateKey().pemRepresentation }
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw SettingsRefusal(
                .invalidSnapshotKey,
                "srv_settings holds no usable P-256 key under \(Self.snapshotKeySetting): \(error)"
            )
        }
    }
}
