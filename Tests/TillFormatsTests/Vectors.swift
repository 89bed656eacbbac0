import Foundation
import TillTestSupport

/// Apple's and third parties' conformance vectors, read in place from `../shared/reference/apple-vectors`
/// (third-party data: never copied into this repository).
enum Vectors {
    static let root: URL = {
        if let override = ProcessInfo.processInfo.environment["TILL_APPLE_VECTORS"] {
            return URL(fileURLWithPath: override)
        }
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/TillFormatsTests/Vectors.swift → repository
        return url.deletingLastPathComponent().appendingPathComponent("shared/reference/apple-vectors")
    }()

    /// Whether the vectors folder is present.
    static let available = FileManager.default.fileExists(atPath: root.appendingPathComponent("MANIFEST.md").path)

    /// Whether tests that need the vectors run: they are here, or `TILL_APPLE_VECTORS` names where they must be
    /// (then a missing or incomplete folder fails the run rather than skipping it).
    ///
    /// They are third-party data, read in place from `../shared` and never copied in: unlike PostgreSQL or the
    /// Python tools, no CI step can install them, so their absence from a clone's surroundings skips (with this
    /// message), and `.ci/run` says loudly which it was. Pointing `TILL_APPLE_VECTORS` at them makes them required.
    static let shouldRun = available || ProcessInfo.processInfo.environment["TILL_APPLE_VECTORS"] != nil

    static let skipMessage =
        "apple-vectors folder not found at \(root.path); set TILL_APPLE_VECTORS to run the conformance tests"

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(path)))
    }

    static func text(_ path: String) throws -> String {
        String(decoding: try bytes(path), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
