import Foundation
import Testing

/// Rules of the server's layout that the compiler does not check (docs/architecture.md).
struct LayoutTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift files of `Sources/<target>`, as paths relative to it.
    static func files(of target: String) throws -> [String] {
        try #require(FileManager.default.enumerator(atPath: root.appendingPathComponent("Sources/" + target).path))
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
    }

    /// Every SQL statement of the server and of the simulator is in its store layer (`Store/`), behind a name:
    /// services call `store.…`, and a query's shape can be read, changed and indexed in one place.
    @Test(arguments: ["TillServer", "TillSimulator"]) func allSQLLivesInTheStoreLayer(_ target: String) throws {
        let sources = Self.root.appendingPathComponent("Sources/" + target)
        let patterns = [
            ".raw(", ".select()", ".update(\"", ".insert(into", ".delete(from", "SELECT ", "UPDATE srv_",
            "INSERT INTO", "DELETE FROM",
        ]
        let files = try Self.files(of: target).filter { !$0.hasPrefix("Store/") }
        #expect(files.count >= 10, "found only \(files)")
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                if let pattern = patterns.first(where: { line.contains($0) }) {
                    offenders.append("\(file):\(number + 1) (\(pattern))")
                }
            }
        }
        #expect(offenders.isEmpty, "SQL outside Sources/\(target)/Store: \(offenders)")
    }

    /// The app SDK imports the contract, the snapshot check and Foundation's networking: not the server's receipt
    /// machinery (TillFormats), and not SwiftNIO or AsyncHTTPClient, which iOS apps do not use.
    @Test func theAppSDKImportsNeitherSwiftNIONorTheReceiptMachinery() throws {
        let forbidden = ["TillFormats", "TillStorage", "TillServer", "NIO", "AsyncHTTPClient", "Hummingbird"]
        var offenders: [String] = []
        for file in try Self.files(of: "TillClient") {
            let text = try String(
                contentsOf: Self.root.appendingPathComponent("Sources/TillClient/" + file),
                encoding: .utf8
            )
            for line in text.split(separator: "\n") {
                let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count else { continue }
                let module = String(words[index + 1])
                if forbidden.contains(where: { module.hasPrefix($0) }) { offenders.append("\(file): \(line)") }
            }
        }
        #expect(offenders.isEmpty, "TillClient imports \(offenders)")
    }
}
