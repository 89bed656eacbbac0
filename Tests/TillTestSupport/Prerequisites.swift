import Foundation

/// Something a test needs from outside the package (PostgreSQL, Apple's Python library, the `till` executable,
/// Apple's test data), and the rule for when it is missing.
///
/// On a developer's machine a test without its prerequisite is skipped, with a message saying what to install.
/// Under CI (the `CI` environment variable is set, as `.ci/run` and every CI service set it) it runs anyway and
/// fails on the missing piece: a CI run must never go green because what it was meant to test was absent.
public struct Prerequisite: Sendable {
    public var name: String
    /// How to get it, for the message.
    public var hint: String
    public var isAvailable: Bool

    public init(_ name: String, hint: String, isAvailable: Bool) {
        self.name = name
        self.hint = hint
        self.isAvailable = isAvailable
    }

    /// Whether CI is running the tests: then nothing is skipped for want of a prerequisite.
    public static var isCI: Bool {
        guard let value = ProcessInfo.processInfo.environment["CI"] else { return false }
        return !value.isEmpty && value != "0" && value.lowercased() != "false"
    }

    /// Whether a test needing this should run: it is here, or CI requires it (and the test will fail).
    public var shouldRun: Bool { isAvailable || Self.isCI }

    /// Why a test is skipped (for `.enabled(if:_:)`).
    public var skipMessage: String { "\(name) is not available (\(hint)); under CI this fails instead" }

    /// Throws, with what to install, when it is missing.
    public func require() throws {
        guard isAvailable else {
            throw TestSupportFailure("\(name) is required\(Self.isCI ? " under CI" : "") but missing: \(hint)")
        }
    }

    /// `TILL_TEST_POSTGRES_URL`, a PostgreSQL server the tests may create databases on.
    public static let postgres = Prerequisite(
        "PostgreSQL (TILL_TEST_POSTGRES_URL)",
        hint: "start one and set TILL_TEST_POSTGRES_URL, as .ci/run does with .ci/postgres.sh",
        isAvailable: TestDatabase.postgresURL != nil
    )

    /// The `till` executable beside the tests.
    public static let tillExecutable = Prerequisite(
        "the till executable",
        hint: "swift build",
        isAvailable: TillExecutable.url != nil
    )

    /// Apple's App Store Server Library for Python, the independent judge of the simulator.
    public static let applesPythonLibrary = Prerequisite(
        "Apple's app-store-server-library for Python",
        hint: "python3 -m pip install app-store-server-library",
        isAvailable: python(canImport: "appstoreserverlibrary")
    )

    /// openapi-spec-validator, the independent judge of the OpenAPI document.
    public static let openAPIValidator = Prerequisite(
        "openapi-spec-validator for Python",
        hint: "python3 -m pip install openapi-spec-validator",
        isAvailable: python(canImport: "openapi_spec_validator")
    )

    /// Schemathesis, the independent judge of the server's answers against its OpenAPI document.
    public static let schemathesis = Prerequisite(
        "Schemathesis for Python",
        hint: "python3 -m pip install schemathesis==4.32.5",
        isAvailable: python(canImport: "schemathesis.cli")
    )

    /// The Standard Webhooks library for Python (`standardwebhooks`), the independent judge of the server's webhooks.
    public static let standardWebhooks = Prerequisite(
        "standardwebhooks for Python",
        hint: "python3 -m pip install standardwebhooks",
        isAvailable: python(canImport: "standardwebhooks")
    )

    /// OpenTelemetry's protobuf messages for Python (`opentelemetry-proto`), the independent decoder of the server's
    /// OTLP exports.
    public static let otlpDecoder = Prerequisite(
        "opentelemetry-proto for Python",
        hint: "python3 -m pip install opentelemetry-proto",
        isAvailable: python(canImport: "opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    )

    /// systemd's `systemd-analyze`, the judge of deploy/till.service.
    public static let systemdAnalyze = Prerequisite(
        "systemd-analyze",
        hint: "apt-get install systemd",
        isAvailable: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")
    )

    /// Whether `python3 -c 'import module'` succeeds.
    public static func python(canImport module: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import \(module)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? ChildProcess.launch(process)) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
