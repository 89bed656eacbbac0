import Crypto
import Foundation

/// What ContentStore checks of files and of the server's answers about them.
extension ContentStore {
    static func size(of url: URL) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { return nil }
        return (attributes[.size] as? NSNumber)?.int64Value
    }

    static func sha256(of url: URL) throws -> String {
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw TillClientError(.fileSystem, message: "cannot read \(url.path)")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while true {
            let chunk: Data?
            do {
                chunk = try handle.read(upToCount: 1 << 20)
            } catch {
                throw TillClientError(.fileSystem, message: "cannot read \(url.path): \(error)")
            }
            guard let chunk, !chunk.isEmpty else { break }
            hasher.update(data: chunk)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The first byte of `bytes a-b/size`.
    static func rangeStart(_ contentRange: String) -> Int64? {
        let parts = contentRange.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0] == "bytes", let dash = parts[1].firstIndex(of: "-") else { return nil }
        return Int64(parts[1][..<dash])
    }

    static func isSHA256(_ value: String) -> Bool {
        value.count == 64 && value.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    /// A name the server gives is the file's name on disk: nothing that could leave the product's folder.
    static func validate(name: String) throws {
        guard !name.isEmpty, name.count <= 200, !name.contains("/"), !name.contains("\\"), !name.hasPrefix("."),
            !name.contains("\0")
        else {
            throw TillClientError(.invalidResponse, message: "the server gave an unsafe file name: \(name)")
        }
    }
}
