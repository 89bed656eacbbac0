import Foundation
import Testing

/// Rules of the server's layout that the compiler does not check (docs/architecture.md).
struct LayoutTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/TillServer")

    /// Every SQL statement of the server is in the store layer (Sources/TillServer/Store), behind a name: services
    /// call `store.…`, and a query's shape can be read, changed and indexed in one place.
    @Test func allSQLLivesInTheStoreLayer() throws {
        let patterns = [
            ".raw(", ".select()", ".update(\"", ".insert(into", ".delete(from", "SELECT ", "UPDATE srv_",
            "INSERT INTO", "DELETE FROM",
        ]
        let files = try #require(FileManager.default.enumerator(atPath: Self.sources.path)).compactMap {
            $0 as? String
        }.filter { $0.hasSuffix(".swift") && !$0.hasPrefix("Store/") }
        #expect(files.count >= 20, "found only \(files)")
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                if let pattern = patterns.first(where: { line.contains($0) }) {
                    offenders.append("\(file):\(number + 1) (\(pattern))")
                }
            }
        }
        #expect(offenders.isEmpty, "SQL outside Sources/TillServer/Store: \(offenders)")
    }
}
