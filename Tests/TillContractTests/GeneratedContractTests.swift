import Crypto
import Foundation
import Testing
import TillContract

/// The generated code in Sources/TillContract/Generated is current: made by Tools/generate-contract from the
/// openapi.yaml and generator config beside it, and not edited since. CI does not build the generator (see
/// docs/contract.md); these hashes are how it knows the committed output still matches the document.
struct GeneratedContractTests {
    static let contract = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/TillContract")

    /// `path → sha256` from Generated/MANIFEST.
    static func manifest() throws -> [String: String] {
        let text = try String(contentsOf: contract.appendingPathComponent("Generated/MANIFEST"), encoding: .utf8)
        var hashes: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("generator ") {
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2 else { continue }
            hashes[parts[1].trimmingCharacters(in: .whitespaces)] = String(parts[0])
        }
        return hashes
    }

    static func sha256(_ path: String) throws -> String {
        let data = try Data(contentsOf: contract.appendingPathComponent(path))
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    @Test func theGeneratedCodeWasMadeFromThisDocumentAndConfig() throws {
        let hashes = try Self.manifest()
        for input in ["openapi.yaml", "openapi-generator-config.yaml"] {
            #expect(
                hashes[input] == (try Self.sha256(input)),
                "\(input) changed since the code was generated: run Tools/generate-contract"
            )
        }
    }

    @Test func noGeneratedFileWasEditedAddedOrRemoved() throws {
        let hashes = try Self.manifest().filter { $0.key.hasPrefix("Generated/") }
        #expect(hashes.count >= 3, "the manifest lists \(hashes.keys.sorted())")
        let files = try FileManager.default.contentsOfDirectory(
            atPath: Self.contract.appendingPathComponent("Generated").path
        ).filter { $0.hasSuffix(".swift") }
        #expect(Set(files.map { "Generated/" + $0 }) == Set(hashes.keys), "run Tools/generate-contract")
        for (path, hash) in hashes {
            #expect(try Self.sha256(path) == hash, "\(path) was edited by hand: run Tools/generate-contract")
        }
    }

    /// The served document is the file, byte for byte.
    @Test func theEmbeddedDocumentIsTheFile() throws {
        let file = try String(contentsOf: Self.contract.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        #expect(ContractDocument.yaml == file)
        #expect(file.hasPrefix("openapi: 3.1."))
    }
}
