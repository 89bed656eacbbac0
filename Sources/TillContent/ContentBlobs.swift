import Crypto
import Foundation
import HTTPTypes
import NIOCore
import NIOFileSystem
import TillCatalogue
import TillCore
import TillHTTPKit
import TillLedger

/// The content directory: each uploaded file kept once, named by its SHA-256 (`<directory>/<sha256>`), however
/// many products list it.
///
/// Uploads stream into a temporary file while being hashed, then take their content-addressed name. A blob is
/// deleted only when no product lists it any more; the order of the steps below keeps that safe when an upload of
/// the same bytes races the deletion, in one process or in several sharing the directory.
package struct ContentBlobs: Sendable {
    let directory: String

    /// An upload on disk under a temporary name, hashed.
    struct Received: Sendable {
        var temporaryPath: FilePath
        var sha256: String
        var size: Int64
    }

    /// Where the blob `sha256` lives (64 hex digits, checked by the caller).
    package func path(_ sha256: String) -> FilePath { FilePath(directory).appending(sha256) }

    /// Streams `body` into a temporary file, hashing it, and stops with 413 once it passes `limit` bytes.
    func receive<Body: AsyncSequence>(_ body: Body, limit: Int64) async throws -> Received
    where Body.Element == ByteBuffer {
        let temporary = FilePath(directory).appending(".upload-\(UUID().uuidString)")
        var hasher = SHA256()
        var size: Int64 = 0
        do {
            try await FileSystem.shared.withFileHandle(forWritingAt: temporary) { handle in
                try await handle.withBufferedWriter { writer in
                    for try await buffer in body {
                        size += Int64(buffer.readableBytes)
                        guard size <= limit else {
                            throw ContentRefusal(
                                .bodyTooLarge,
                                "a content file has at most \(limit) bytes"
                            )
                        }
                        buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                        try await writer.write(contentsOf: buffer)
                    }
                }
            }
        } catch {
            await remove(temporary)
            throw error
        }
        let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        return Received(temporaryPath: temporary, sha256: digest, size: size)
    }

    /// Gives an upload its content-addressed name. Call it only after the product listing it is committed: a
    /// concurrent ``collect(_:isReferenced:)`` then either sees the reference or has already moved the old copy
    /// aside, so it never deletes this one.
    func place(_ received: Received) async throws {
        try await move(received.temporaryPath, toBlob: received.sha256)
    }

    /// Deletes an upload that will not be kept (its product vanished, or it was refused).
    func discard(_ received: Received) async {
        await remove(received.temporaryPath)
    }

    /// Deletes the blob `sha256` unless a product still lists it.
    ///
    /// The blob is moved aside before the second look at the references: an upload of the same bytes that
    /// committed in between is seen there and the blob is put back; one committing later places its own copy
    /// after the move, which this never touches.
    func collect(_ sha256: String, isReferenced: () async throws -> Bool) async throws {
        guard try await !isReferenced() else { return }
        let aside = FilePath(directory).appending(".collect-\(UUID().uuidString)")
        do {
            try await FileSystem.shared.moveItem(at: path(sha256), to: aside)
        } catch let error as FileSystemError where error.code == .notFound {
            return
        }
        let stillNeeded: Bool
        do {
            stillNeeded = try await isReferenced()
        } catch {
            try? await move(aside, toBlob: sha256)
            throw error
        }
        if stillNeeded {
            try await move(aside, toBlob: sha256)
        } else {
            await remove(aside)
        }
    }

    /// The size of the blob on disk, or nil when it is missing.
    package func size(_ sha256: String) async throws -> Int64? {
        try await FileSystem.shared.info(forFileAt: path(sha256)).map { Int64($0.size) }
    }

    /// Moves a file to a blob's name; a blob already there has the same bytes (same hash), so it stays.
    private func move(_ source: FilePath, toBlob sha256: String) async throws {
        do {
            try await FileSystem.shared.moveItem(at: source, to: path(sha256))
        } catch let error as FileSystemError where error.code == .fileAlreadyExists {
            await remove(source)
        }
    }

    private func remove(_ path: FilePath) async {
        _ = try? await FileSystem.shared.removeItem(at: path, recursively: false)
    }
}
