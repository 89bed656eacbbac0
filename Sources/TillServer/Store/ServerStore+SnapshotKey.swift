import Crypto
import Foundation
import HTTPTypes
import SQLKit
import TillCore
import TillHTTPKit

extension ServerStore {
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
