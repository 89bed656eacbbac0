import Foundation
import NIOHTTP1

extension Optional {
    func unwrapped(_ message: String) throws -> Wrapped {
        guard let self else { throw TestSupportFailure(message) }
        return self
    }
}

/// The deployment docs/configuration.md describes under "Production against a separately started simulator":
/// the files it fetches from the simulator and the `TILL_…` settings it starts `till serve` with. Read from the
/// docs, so that the tests start the two exactly as a reader would.
public struct DocumentedDeployment: Sendable {
    /// The docs' example, marked in the Markdown with this comment before its code block.
    public static let marker = "<!-- example: separate-simulator -->"
    public static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/configuration.md")

    /// (path on the simulator, file name) for each `curl -s $S/… -o FILE`.
    public var downloads: [(String, String)]
    /// `TILL_NAME=value` lines, `$S` unexpanded.
    public var assignments: [(String, String)]

    /// The settings with `$S` set to the simulator's address.
    public func settings(simulator: String) -> [String: String] {
        Dictionary(
            assignments.map { ($0.0, $0.1.replacingOccurrences(of: "$S", with: simulator)) },
            uniquingKeysWith: { $1 }
        )
    }

    /// The bash block that follows `marker` in docs/configuration.md.
    public static func block(after marker: String) throws -> String {
        let text = try String(contentsOf: document, encoding: .utf8)
        guard let marked = text.range(of: marker),
            let open = text.range(of: "```bash\n", range: marked.upperBound..<text.endIndex),
            let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex)
        else { throw TestSupportFailure("docs/configuration.md has no \(marker) followed by a bash block") }
        return String(text[open.upperBound..<close.lowerBound])
    }

    public static func read() throws -> DocumentedDeployment {
        var downloads: [(String, String)] = []
        var assignments: [(String, String)] = []
        for line in try block(after: marker).split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if words.first == "curl", let url = words.first(where: { $0.hasPrefix("$S/") }),
                let output = words.firstIndex(of: "-o"), output + 1 < words.count
            {
                downloads.append((String(url.dropFirst(2)), words[output + 1]))
            } else if let first = words.first, first.hasPrefix("TILL_"), let equals = first.firstIndex(of: "=") {
                assignments.append((String(first[..<equals]), String(first[first.index(after: equals)...])))
            }
        }
        guard !assignments.isEmpty else { throw TestSupportFailure("the docs' example sets no TILL_ variable") }
        return DocumentedDeployment(downloads: downloads, assignments: assignments)
    }
}
