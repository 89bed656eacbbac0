import Crypto
import Foundation
import Testing
import TillContract
import TillSimulatorContract

/// The generated code of each contract (Client/Sources/TillContract: till serve's HTTP API;
/// Client/Sources/TillSimulatorContract: till simulator's device API) is current: made by Tools/generate-contract from
/// the openapi.yaml and generator config beside it, and not edited since. CI does not build the generator (see
/// docs/contract.md); these hashes are how it knows the committed output still matches the document.
struct GeneratedContractTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Client/Sources")

    static let contracts = ["TillContract", "TillSimulatorContract"]

    /// `path → sha256` from a contract's Generated/MANIFEST.
    static func manifest(_ contract: String) throws -> [String: String] {
        let text = try String(
            contentsOf: sources.appendingPathComponent(contract + "/Generated/MANIFEST"),
            encoding: .utf8
        )
        var hashes: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("generator ") {
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2 else { continue }
            hashes[parts[1].trimmingCharacters(in: .whitespaces)] = String(parts[0])
        }
        return hashes
    }

    static func sha256(_ contract: String, _ path: String) throws -> String {
        let data = try Data(contentsOf: sources.appendingPathComponent(contract + "/" + path))
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    @Test(arguments: contracts) func theGeneratedCodeWasMadeFromThisDocumentAndConfig(_ contract: String) throws {
        let hashes = try Self.manifest(contract)
        for input in ["openapi.yaml", "openapi-generator-config.yaml"] {
            #expect(
                hashes[input] == (try Self.sha256(contract, input)),
                "\(contract)/\(input) changed since the code was generated: run Tools/generate-contract"
            )
        }
        // The writers' generator, for a contract that has writers (Generated/JSONWriters.swift).
        let hasWriters = FileManager.default.fileExists(
            atPath: Self.sources.appendingPathComponent(contract + "/Generated/JSONWriters.swift").path
        )
        #expect(
            hasWriters == (hashes["Tools/generate-json-writers"] != nil),
            "\(contract)'s MANIFEST and Generated/JSONWriters.swift disagree: run Tools/generate-contract"
        )
        if let writers = hashes["Tools/generate-json-writers"] {
            let script = try Data(
                contentsOf: Self.sources.deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("Tools/generate-json-writers")
            )
            #expect(
                writers == SHA256.hash(data: script).map { String(format: "%02x", $0) }.joined(),
                "Tools/generate-json-writers changed since \(contract)'s writers were generated: run Tools/generate-contract"
            )
        }
    }

    @Test(arguments: contracts) func noGeneratedFileWasEditedAddedOrRemoved(_ contract: String) throws {
        let hashes = try Self.manifest(contract).filter { $0.key.hasPrefix("Generated/") }
        #expect(hashes.count >= 3, "the manifest lists \(hashes.keys.sorted())")
        let files = try FileManager.default.contentsOfDirectory(
            atPath: Self.sources.appendingPathComponent(contract + "/Generated").path
        ).filter { $0.hasSuffix(".swift") }
        #expect(Set(files.map { "Generated/" + $0 }) == Set(hashes.keys), "run Tools/generate-contract")
        for (path, hash) in hashes {
            #expect(
                try Self.sha256(contract, path) == hash,
                "\(contract)/\(path) was edited by hand: run Tools/generate-contract"
            )
        }
    }

    /// The served documents are the files, byte for byte.
    @Test func theEmbeddedDocumentsAreTheFiles() throws {
        for (contract, embedded) in [
            ("TillContract", ContractDocument.yaml), ("TillSimulatorContract", SimulatorContractDocument.yaml),
        ] {
            let file = try String(
                contentsOf: Self.sources.appendingPathComponent(contract + "/openapi.yaml"),
                encoding: .utf8
            )
            #expect(embedded == file, "\(contract)")
            #expect(file.hasPrefix("openapi: 3.1."))
        }
    }
}
