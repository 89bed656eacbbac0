import Foundation
import TillFormats

/// Apple's and third parties' vectors as seeds, read in place from `../shared/reference/apple-vectors` (or
/// `TILL_APPLE_VECTORS`): third-party data, never copied into this repository, nor into a corpus kept in it.
public enum AppleVectors {
    public static let root: URL = {
        if let override = ProcessInfo.processInfo.environment["TILL_APPLE_VECTORS"] {
            return URL(fileURLWithPath: override)
        }
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/TillFuzzing/AppleVectors.swift → repository
        return url.deletingLastPathComponent().appendingPathComponent("shared/reference/apple-vectors")
    }()

    public static var available: Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent("MANIFEST.md").path)
    }

    /// What seeding says when the vectors are absent.
    public static var absence: String {
        "Apple's vectors not found at \(root.path) (set TILL_APPLE_VECTORS): seeding from the project's samples only"
    }

    /// Every file under `folder` (relative to the vectors), with its path; empty when the vectors are absent.
    public static func files(under folder: String) -> [(path: String, bytes: [UInt8])] {
        let base = root.appendingPathComponent(folder)
        guard let enumerator = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else {
            return []
        }
        var result: [(String, [UInt8])] = []
        for case let url as URL in enumerator {
            guard let data = try? Data(contentsOf: url), !url.hasDirectoryPath else { continue }
            result.append((folder + "/" + url.path.dropFirst(base.path.count + 1), Array(data)))
        }
        return result.sorted { $0.0 < $1.0 }
    }

    /// The bytes a vector file holds: as they are when binary, else its text decoded as base64 when it is.
    public static func decoded(_ bytes: [UInt8]) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let decoded = Base64.decode(Array(text.utf8), alphabet: .standard), !decoded.isEmpty { return decoded }
        return bytes
    }

    /// A seed name made of the vector's path.
    static func seedName(_ path: String) -> String {
        "apple-" + path.replacingOccurrences(of: "/", with: "-")
    }
}
