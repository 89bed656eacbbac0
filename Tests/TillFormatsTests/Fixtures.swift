import Foundation
import Testing
import TillFormats

/// Apple's reference vectors, read in place from the shared reference folder next to the
/// repository (`../shared/reference/apple-vectors`); they are never copied into the repository.
enum Fixtures {
    /// `…/shared/reference/apple-vectors`, found from this file's path: Tests/TillFormatsTests → repo root → `..`.
    static let root: URL = Vectors.root

    /// Apple's model JSON files (`apple-library/models`).
    static let models = root.appendingPathComponent("apple-library/models", isDirectory: true)

    /// Whether the vectors are present.
    static let available: Bool = FileManager.default.fileExists(atPath: models.path)

    /// Whether suites that read them run: they are here, or CI requires them (see `Vectors.shouldRun`).
    static let shouldRun = available || Vectors.shouldRun

    /// Why fixture suites are skipped when the vectors are absent.
    static let skipReason: Comment = "Apple's reference vectors are not at \(root.path); fixture tests skipped"

    static func data(_ relativePath: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(relativePath))
    }

    /// Decodes `apple-library/models/<name>.json` with Apple's JSON conventions.
    static func model<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        try AppleJSON.makeDecoder().decode(T.self, from: data("apple-library/models/\(name).json"))
    }

    /// Decodes the payload segment of a compact JWS file (no signature check: these tests are about the models).
    static func jwsPayload<T: Decodable>(_ type: T.Type, _ relativePath: String) throws -> T {
        let compact = try #require(String(data: data(relativePath), encoding: .utf8))
        let segments = compact.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        try #require(segments.count == 3)
        var base64 = segments[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let payload = try #require(Data(base64Encoded: base64))
        return try AppleJSON.makeDecoder().decode(T.self, from: payload)
    }
}

/// Encodes with Apple's conventions and decodes the result back.
func roundTrip<T: Codable>(_ value: T) throws -> T {
    try AppleJSON.makeDecoder().decode(T.self, from: AppleJSON.makeEncoder().encode(value))
}

/// The JSON text Apple's encoder produces for a value (sorted keys, unescaped slashes).
func json<T: Encodable>(_ value: T) throws -> String {
    String(decoding: try AppleJSON.makeEncoder().encode(value), as: UTF8.self)
}

/// A date from epoch milliseconds, for expectations.
func ms(_ value: Int64) -> Date { Date(millisecondsSince1970: value) }
