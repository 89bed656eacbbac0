import ArgumentParser
import Foundation
import TillCore
import TillFormats
import X509

/// `till inspect receipt|jws`: one base64 receipt or compact JWS per line in, one JSON object per line out.
struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify and decode receipts or signed transactions read from standard input, one per line.",
        subcommands: [Receipt.self, JWS.self]
    )

    struct Options: ParsableArguments {
        @Option(
            name: .customLong("root"),
            help: ArgumentHelp(
                "A trusted root certificate, DER or PEM (repeatable; default: Apple's roots). One that is not "
                    + "self-signed is an intermediate, as for an iOS 6-style receipt, which carries only its leaf."
            )
        )
        var roots: [String] = []

        @Option(help: "The bundle id the data must be issued for.")
        var bundleId: String?

        @Option(help: "The environment the data must belong to: Production, Sandbox, Xcode or LocalTesting.")
        var environment: String?

        @Option(help: "The app's Apple ID, checked in the production environment.")
        var appAppleId: Int64?

        @Option(
            name: .customLong("at"),
            help: "Check certificates at this instant (UNIX milliseconds) instead of the signed date."
        )
        var atMilliseconds: Int64?

        @Flag(help: "Decode only, without checking signatures or certificates.")
        var noVerify = false

        func inspectorOptions(kind: JWSPayloadKind? = nil) throws -> Inspector.Options {
            var roots: [Certificate] = []
            for path in self.roots {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("cannot read root certificate file \(path)")
                }
                do {
                    roots += try TrustAnchors.certificates(fromFile: Array(data))
                } catch {
                    throw ValidationError("\(path) is not a DER or PEM certificate that Till can use: \(error)")
                }
            }
            var environment: AppStoreEnvironment?
            if let name = self.environment {
                guard let parsed = AppStoreEnvironment(parsing: name) else {
                    throw ValidationError("unknown environment \(name); use Production, Sandbox, Xcode or LocalTesting")
                }
                environment = parsed
            }
            return Inspector.Options(
                roots: roots,
                bundleId: bundleId,
                environment: environment,
                appAppleId: appAppleId,
                validationTime: atMilliseconds.map(Date.init(millisecondsSince1970:)),
                verify: !noVerify,
                jwsKind: kind
            )
        }
    }

    struct Receipt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "App receipts (PKCS#7) or iOS 6-style transaction receipts, base64, one per line."
        )

        @OptionGroup var options: Options

        func run() async throws {
            let inspector = Inspector(try options.inspectorOptions())
            try await eachLine { await inspector.inspectReceipt($0) }
        }
    }

    struct JWS: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "jws",
            abstract: "StoreKit 2 signed data (compact JWS), one per line."
        )

        @OptionGroup var options: Options

        @Option(help: "The payload kind: auto, transaction, renewalInfo, appTransaction or notification.")
        var type: String = "auto"

        func run() async throws {
            var kind: JWSPayloadKind?
            if type != "auto" {
                guard let parsed = JWSPayloadKind(rawValue: type) else {
                    throw ValidationError(
                        "unknown type \(type); use auto, transaction, renewalInfo, appTransaction or notification"
                    )
                }
                kind = parsed
            }
            let inspector = Inspector(try options.inspectorOptions(kind: kind))
            try await eachLine { await inspector.inspectJWS($0) }
        }
    }
}

/// Reads standard input line by line, skipping blank lines, and prints each report as a JSON line.
private func eachLine(_ inspect: (String) async -> Inspector.Report) async throws {
    while let line = readLine(strippingNewline: true) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { continue }
        FileHandle.standardOutput.write(Data((await inspect(trimmed).jsonLine() + "\n").utf8))
    }
}
