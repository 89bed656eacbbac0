import Foundation
import TillCore
import TillFormats

/// `till inspect`'s input: lines of base64 receipts or compact JWS, each made one JSON report line.
enum InspectTarget {
    static let target = FuzzTarget(
        name: "inspect",
        summary:
            "`till inspect`'s standard input (lines as the command splits and trims them) through Inspector as "
            + "receipts and as JWS, verifying (fuzz roots) and decoding only (--no-verify)",
        maximumLength: 64 * 1024,
        seeds: seeds,
        check: check,
        mutate: mutate
    )

    static let verifying = Inspector(.init(roots: [FuzzPKI.jws.root, FuzzPKI.receipt.root]))
    static let decodingOnly = Inspector(.init(verify: false))

    static func check(_ bytes: [UInt8]) async throws {
        for line in lines(bytes).prefix(3) {
            for inspector in [verifying, decodingOnly] {
                try checkLine(await inspector.inspectReceipt(line), line)
                try checkLine(await inspector.inspectJWS(line), line)
            }
            // Base64 skips whitespace: a receipt line with a space inside gets the same report.
            if line.utf8.count > 2 {
                let receipt = await verifying.inspectReceipt(line)
                var spaced = line
                spaced.insert(" ", at: spaced.index(spaced.startIndex, offsetBy: line.count / 2))
                let other = await verifying.inspectReceipt(spaced)
                try require(
                    other.valid == receipt.valid && other.reason == receipt.reason && other.payload == receipt.payload,
                    "ignored bytes",
                    "\(receipt.reason) as written, \(other.reason) with a space inside"
                )
            }
        }
    }

    /// The lines `till inspect` reads: split at line feeds (a CR before one dropped), blanks skipped, trimmed.
    static func lines(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true).compactMap {
            var line = String($0)
            if line.hasSuffix("\r") { line.removeLast() }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? nil : trimmed
        }
    }

    /// Every report is one JSON object with a boolean `valid` and a string `reason`.
    static func checkLine(_ report: Inspector.Report, _ line: String) throws {
        let text = report.jsonLine()
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            object["valid"] is Bool, object["reason"] is String, !text.contains("\n")
        else {
            throw PropertyViolation("report", "not one JSON object line: \(text.prefix(300))")
        }
    }

    /// A line decoded (base64 or JWS), mutated as the structure it holds, and encoded back; or the text's bytes.
    static func mutate(_ input: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator) -> [UInt8] {
        var lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
        guard !lines.isEmpty, random.chance(3, in: 4) else {
            var copy = input
            bytes(&copy, maximumLength: input.count + 64)
            return copy
        }
        let at = random.int(0...lines.count - 1)
        let line = lines[at]
        if FuzzJWS.parts(line) != nil {
            lines[at] = FuzzJWS.mutate(line, &random, bytes)
        } else if let decoded = Base64.decode(line, alphabet: .standard), let first = decoded.first {
            let mutated =
                first == UInt8(ascii: "{")
                ? TransactionReceiptTarget.mutate(decoded, &random, bytes)
                : ReceiptTargets.mutateContainer(decoded, &random, bytes)
            lines[at] = Array(Base64.encode(mutated).utf8)
        } else {
            bytes(&lines[at], maximumLength: line.count + 64)
        }
        if random.chance(1, in: 8) { lines.append(lines[random.int(0...lines.count - 1)]) }
        return Array(lines.joined(separator: [UInt8(ascii: "\n")]))
    }

    /// Receipts (base64, as `till inspect` reads them) and JWS: the first samples of each, and Apple's vectors among
    /// them, read in place.
    static func seeds() async throws -> [FuzzSeed] {
        func firstAndApple(_ all: [FuzzSeed], _ count: Int) -> [FuzzSeed] {
            Array(all.prefix(count)) + all.dropFirst(count).filter { $0.name.hasPrefix("apple-") }.prefix(count)
        }
        let receipts = try await firstAndApple(ReceiptTargets.containerSeeds(), 4)
            + firstAndApple(TransactionReceiptTarget.seeds(), 2)
        let jws = try await firstAndApple(JWSTarget.seeds(), 6)
        var seeds = receipts.map { FuzzSeed($0.name, text: Base64.encode($0.bytes) + "\n") }
        seeds += jws.map { FuzzSeed($0.name, $0.bytes + [UInt8(ascii: "\n")]) }
        if let receipt = seeds.first, let token = jws.first {
            seeds.append(FuzzSeed("sample-mixed", receipt.bytes + Array("\r\n  \n".utf8) + token.bytes))
        }
        return seeds
    }
}
