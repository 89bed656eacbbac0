import Foundation
import Hummingbird
import Testing
import TillAppStore
import TillContract
import TillHTTPKit
import TillLedger
import TillSimulator
import TillTestSupport

@testable import TillServer

/// The server against its own contract, judged by Schemathesis: requests generated from the `/openapi.yaml` the
/// server serves (valid ones and ones the document rules out), sent to a live server on a loopback port, and every
/// answer checked by the judge's own rules — no 5xx, only the statuses, headers and content types the document lists
/// for the operation, bodies that match its schemas, and a 4xx for what the document does not allow.
///
/// `positive_data_acceptance` wants an acceptance for every request the schemas admit, so each rule the server checks
/// that a schema can state is stated in the document. It is off for the operations that refuse some such requests for
/// reasons no schema can state (a receipt whose base64 is not a receipt, a cursor no list gave, a guest linked to
/// itself), each with its stable code (docs/api.md); `Tools/schemathesis.toml` lists them with their reasons, and
/// holds the rest of the judge's settings.
///
/// Schemathesis's phases run: the coverage phase (aimed at each schema's constraints: boundary values, strings that
/// keep or break a pattern, each enum value), random fuzzing and stateful sequences; the examples phase finds no
/// request examples in the document. The seed is fixed, so that a run is repeatable; a wider search is
/// `schemathesis run … -n 500` without `--seed` (docs/contract.md).
///
/// Nothing leaves the machine: Apple is the simulator on loopback, and no webhook worker runs, so the endpoints the
/// generated requests register (any public HTTPS address) are never called.
@Suite(
    .sharingTheMachine,
    .enabled(if: Prerequisite.schemathesis.shouldRun, Comment(rawValue: Prerequisite.schemathesis.skipMessage))
)
struct ContractJudgeTests {
    /// The two halves of the API, each with its credential: the app's key for everything but the admin API, the
    /// operator token for the admin API.
    static func scopes(appKey: String) -> [(name: String, token: String, paths: [String])] {
        [
            ("the app API and the server's own routes", appKey, ["--exclude-path-regex", "^/admin/"]),
            ("the admin API", "operator", ["--include-path-regex", "^/admin/"]),
        ]
    }

    @Test(.timeLimit(.minutes(10))) func everyAnswerToGeneratedRequestsKeepsTheContract() async throws {
        try Prerequisite.schemathesis.require()
        // Schemathesis and Hypothesis keep caches and failing examples in the folder they run in: a new folder each
        // run, so that nothing is written into the package and no run replays another's examples.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("till-schemathesis-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The settings fix the path's `{bundle}` to the fixture's app, so that generated requests reach its
        // catalogue, customers and endpoints rather than stopping at a 404 for an unknown app.
        let settings = try String(contentsOf: Schemathesis.settings, encoding: .utf8)
        #expect(settings.contains(#""path.bundle" = "\#(ServerFixture.bundleId)""#))
        try await ServerFixture.run { fixture in
            // A customer with a confirmed purchase, so that reads of customers and submissions find something.
            let purchase = try await fixture.buy("pro")
            let submitted = try await fixture.server.intake.submit(
                SubmissionRequest(customerId: "ann", signedTransaction: purchase.signedTransaction),
                app: fixture.app
            )
            #expect(try await fixture.settled(submitted).state == .confirmed)
            try await withServices({ ready in
                Application(
                    router: buildServerRouter(fixture.server),
                    server: .tillHTTP1(),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "till"),
                    onServerRunning: { await ready($0.localAddress?.port ?? 0) }
                )
            }) { port in
                for scope in Self.scopes(appKey: fixture.app.appKey) {
                    let (status, output) = try await ChildProcess.run(
                        "/usr/bin/env",
                        Schemathesis.arguments(
                            settings: Schemathesis.settings.path,
                            document: "http://127.0.0.1:\(port)/openapi.yaml",
                            token: scope.token,
                            paths: scope.paths
                        ),
                        in: folder
                    )
                    #expect(status == 0, "Schemathesis on \(scope.name):\n\(output)")
                }
            }
        }
    }
}

/// How the tests run Schemathesis's command line (`schemathesis run`), through `python3` so that it needs no script
/// on the `PATH`.
enum Schemathesis {
    /// The judge's settings, which the wider search of docs/contract.md uses too.
    static let settings = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/schemathesis.toml")

    static func arguments(settings: String, document: String, token: String, paths: [String]) -> [String] {
        [
            "python3", "-c", "import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())",
            "--config-file", settings,
            "run", document,
            "--header", "Authorization: Bearer \(token)",
            "--phases", "examples,coverage,fuzzing,stateful",
            "--max-examples", "20",
            "--seed", "1",
            "--workers", "1",
            "--request-timeout", "30",
            "--no-color",
        ] + paths
    }
}
