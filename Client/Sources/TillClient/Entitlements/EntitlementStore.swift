import Crypto
import Foundation
import TillContract
import TillCore
import TillSnapshot

/// A snapshot whose signature checked out against a trusted key, for this app and customer. Only
/// ``EntitlementStore`` makes them.
public struct VerifiedSnapshot: Sendable, Hashable {
    public let snapshot: EntitlementSnapshot
    /// The compact JWS it was read from.
    public let signedSnapshot: String

    /// Whether `entitlement` is granted at `date`.
    public func grants(_ entitlement: String, at date: Date = Date()) -> Bool {
        snapshot.grants(entitlement, at: Outbox.milliseconds(date))
    }

    /// The credits of `name` left.
    public func balance(_ name: String) -> Int64 { snapshot.balance(name) }

    /// Whether the customer has a purchase of `productId` that was not revoked. A consumable is never owned: it counts
    /// only through its balance (and the snapshot lists only a customer's latest consumable purchases).
    public func owns(productId: String) -> Bool {
        snapshot.purchases.contains { $0.productId == productId && !$0.revoked && $0.productType != .consumable }
    }
}

/// What ``EntitlementStore/load()`` found on disk.
public enum SnapshotLoad: Sendable, Hashable {
    case verified(VerifiedSnapshot)
    /// No snapshot stored yet.
    case missing
    /// The file was edited, signed by an unknown key, or is about another app or customer: it was deleted.
    case rejected(SnapshotError)
    /// No trusted keys to check it with (no pinned keys and the server unreachable); the file is kept.
    case unverifiable(TillClientError)
}

/// Keeps the server's signed entitlement snapshot on disk and answers from it only once it is verified.
///
/// The file is the server's JWS, byte for byte. Nothing in it is believed until ``SnapshotVerifier`` has checked
/// its ES256 signature against a trusted key and its subject (bundle id and customer id). Editing the file to
/// grant content or credits breaks the signature: the store deletes it and fetches a fresh one.
///
/// Trusted keys are the ``pinnedKeys`` the app ships when it has some (then only those), otherwise the keys of
/// the server's `GET /v1/keys`, fetched over the network and kept in memory only: keys read from a file the user
/// can edit would protect nothing. An app that must answer offline at launch pins its server's keys.
public actor EntitlementStore {
    public nonisolated let bundleId: String
    public nonisolated let customerId: String
    /// Where the signed snapshot is kept.
    public nonisolated let fileURL: URL
    public nonisolated let pinnedKeys: [SnapshotPublicKey]
    private let server: TillServerClient?
    private var serverKeys: [SnapshotPublicKey]?
    private var current: VerifiedSnapshot?

    /// - Parameters:
    ///   - directory: where to keep the snapshot; one file per app and customer.
    ///   - server: where fresh snapshots (and, without pinned keys, the keys) come from; nil for offline use.
    ///   - pinnedKeys: keys shipped with the app; when given, the only ones trusted.
    public init(
        directory: URL,
        bundleId: String,
        customerId: String,
        server: TillServerClient?,
        pinnedKeys: [SnapshotPublicKey] = []
    ) throws {
        try DurableFiles.createDirectory(directory)
        DurableFiles.removeLeftovers(in: directory)
        self.bundleId = bundleId
        self.customerId = customerId
        self.server = server
        self.pinnedKeys = pinnedKeys
        let name = SHA256.hash(data: Array((bundleId + "\n" + customerId).utf8)).prefix(16)
            .map { String(format: "%02x", $0) }.joined()
        fileURL = directory.appendingPathComponent("snapshot-\(name).jws")
    }

    /// The verified snapshot in memory, if there is one: the only source of the answers below.
    public var snapshot: VerifiedSnapshot? { current }

    /// Whether the verified snapshot grants `entitlement` now; false without one.
    public func isEntitled(to entitlement: String, at date: Date = Date()) -> Bool {
        current?.grants(entitlement, at: date) ?? false
    }

    /// The credits of `name` left in the verified snapshot; 0 without one.
    public func balance(of name: String) -> Int64 { current?.balance(name) ?? 0 }

    /// Whether the verified snapshot shows a purchase of `productId`; false without one.
    public func owns(productId: String) -> Bool { current?.owns(productId: productId) ?? false }

    /// Reads the stored snapshot and verifies it. A file that fails verification is deleted.
    public func load() async -> SnapshotLoad {
        guard let bytes = DurableFiles.read(fileURL) else { return .missing }
        let jws = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        switch await verify(jws) {
        case .success(let verified):
            current = verified
            return .verified(verified)
        case .failure(.untrusted(let error)):
            current = nil
            try? DurableFiles.remove(fileURL)
            return .rejected(error)
        case .failure(.noKeys(let error)):
            return .unverifiable(error)
        }
    }

    /// Fetches the customer's snapshot from the server, verifies it and stores it. A snapshot that fails
    /// verification is neither stored nor used.
    @discardableResult
    public func refresh() async throws -> VerifiedSnapshot {
        guard let server else {
            throw TillClientError(.unreachable, message: "this entitlement store has no server to fetch from")
        }
        return try await accept(try await server.snapshot(customerId: customerId).signedSnapshot)
    }

    /// Verifies a signed snapshot the server sent with another answer (a submission's, a restore's) and keeps it,
    /// unless the one already kept was issued later.
    @discardableResult
    public func accept(_ signedSnapshot: String) async throws -> VerifiedSnapshot {
        switch await verify(signedSnapshot) {
        case .success(let verified):
            if let current, current.snapshot.issuedAt > verified.snapshot.issuedAt { return current }
            try DurableFiles.write(Array(signedSnapshot.utf8), to: fileURL)
            current = verified
            return verified
        case .failure(.untrusted(let error)):
            throw TillClientError(.untrustedSnapshot, message: "the server's snapshot was refused: \(error)")
        case .failure(.noKeys(let error)):
            throw error
        }
    }

    /// The stored snapshot when it verifies, otherwise a fresh one from the server.
    public func loadOrRefresh() async throws -> VerifiedSnapshot {
        if case .verified(let verified) = await load() { return verified }
        return try await refresh()
    }

    /// Forgets the snapshot, in memory and on disk (the customer signed out).
    public func clear() throws {
        current = nil
        try DurableFiles.remove(fileURL)
    }

    // MARK: Verification

    private enum Failure: Error {
        case untrusted(SnapshotError)
        case noKeys(TillClientError)
    }

    private func verify(_ jws: String) async -> Result<VerifiedSnapshot, Failure> {
        var keys: [SnapshotPublicKey]
        do {
            keys = try await trustedKeys(refetch: false)
        } catch {
            return .failure(.noKeys(error))
        }
        do {
            return .success(try check(jws, keys: keys))
        } catch .unknownKey where pinnedKeys.isEmpty && server != nil {
            // The server may have rotated its key since the keys were fetched.
            do {
                keys = try await trustedKeys(refetch: true)
            } catch {
                return .failure(.noKeys(error))
            }
            do {
                return .success(try check(jws, keys: keys))
            } catch {
                return .failure(.untrusted(error))
            }
        } catch {
            return .failure(.untrusted(error))
        }
    }

    private func check(_ jws: String, keys: [SnapshotPublicKey]) throws(SnapshotError) -> VerifiedSnapshot {
        let snapshot = try SnapshotVerifier(keys: keys).verify(jws, bundleId: bundleId, customerId: customerId)
        return VerifiedSnapshot(snapshot: snapshot, signedSnapshot: jws)
    }

    private func trustedKeys(refetch: Bool) async throws(TillClientError) -> [SnapshotPublicKey] {
        if !pinnedKeys.isEmpty { return pinnedKeys }
        if let serverKeys, !refetch { return serverKeys }
        guard let server else {
            throw TillClientError(.untrustedSnapshot, message: "no pinned keys and no server to fetch keys from")
        }
        do {
            let keys = try await server.snapshotKeys().keys
            serverKeys = keys
            return keys
        } catch let error as TillClientError {
            throw error
        } catch {
            throw TillClientError(.unreachable, message: "\(error)")
        }
    }
}
