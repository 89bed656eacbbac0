import Configuration
import Crypto
import Foundation
import HTTPTypes
import Logging
import SystemPackage
import TillAppStore
import TillCatalogue
import TillContent
import TillCore
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage
import TillWebhooks
import X509

/// `till serve`'s settings, read with swift-configuration: command-line flags, then `TILL_…` environment
/// variables, then a JSON file, then these defaults. Keys (environment spelling in brackets):
///
/// | key | default | meaning |
/// |---|---|---|
/// | `mode` (`TILL_MODE`) | `development` | `development` runs the App Store simulator in-process and talks to it; `production` talks to Apple |
/// | `http.host`, `http.port` (`TILL_HTTP_HOST`, `TILL_HTTP_PORT`) | `127.0.0.1`, `8080` | where the server listens |
/// | `http.idle-timeout-seconds` (`TILL_HTTP_IDLE_TIMEOUT_SECONDS`) | `60` | a connection is closed when it sends nothing for this long while the server waits for it: a request's head not finished, a body stalled, or idle between requests (an answer being made is not cut) |
/// | `database.url` (`TILL_DATABASE_URL`) | `till.sqlite` | an SQLite file, `:memory:`, or `postgres://…` |
/// | `database.wait-seconds` (`TILL_DATABASE_WAIT_SECONDS`) | `5` | how long a request waits for storage that fails (a full disk, a database away) before `503 storageUnavailable` |
/// | `shutdown.grace-seconds` (`TILL_SHUTDOWN_GRACE_SECONDS`) | `60` | how long SIGTERM waits for requests and confirmations under way before it cancels them; the process exits within this plus 10 s, whatever the database is doing |
/// | `shutdown.drain-seconds` (`TILL_SHUTDOWN_DRAIN_SECONDS`) | `0` | after SIGTERM, how long `GET /ready` answers `503 draining` while every route still serves, before the stop begins (within the grace): a load balancer's probe interval times its failure threshold |
/// | `operator.token` (`TILL_OPERATOR_TOKEN`) | made at start and printed (development only) | the admin API's bearer token |
/// | `content.directory` (`TILL_CONTENT_DIRECTORY`) | `till-content` | where uploaded content files are kept |
/// | `content.max-upload-bytes` (`TILL_CONTENT_MAX_UPLOAD_BYTES`) | `536870912` (512 MiB) | the largest content file an operator may upload |
/// | `content.url-lifetime-seconds` (`TILL_CONTENT_URL_LIFETIME_SECONDS`) | `900` | how long a signed download URL works |
/// | `server.secret` (`TILL_SERVER_SECRET`) | made once and kept in the database | signs download URLs (16 characters or more); every process of one deployment needs the same |
/// | `snapshot.private-key-file` (`TILL_SNAPSHOT_PRIVATE_KEY_FILE`) | made once and kept in the database | a P-256 private key (PEM) that signs entitlement snapshots; every process of one deployment needs the same |
/// | `snapshot.published-key-files` (`TILL_SNAPSHOT_PUBLISHED_KEY_FILES`) | none | comma-separated PEM files (public or private P-256 keys) whose public keys `GET /v1/keys` lists after the signing key, for a rotation |
/// | `apple.verify-receipt.production`, `…sandbox` | Apple's URLs | verifyReceipt endpoints |
/// | `apple.server-api.production`, `…sandbox` | Apple's URLs | App Store Server API base URLs |
/// | `apple.sandbox-roots` (`TILL_APPLE_SANDBOX_ROOTS`) | none | comma-separated certificate files trusted for sandbox data only |
/// | `confirmation.max-attempts` | `12` | attempts before a submission is dead-lettered |
/// | `confirmation.concurrency` | `64` | confirmations in flight at once |
/// | `confirmation.timeout-seconds` | `30` | how long one call to Apple may take |
/// | `confirmation.backoff-base-seconds`, `…-cap-seconds` | `2`, `3600` | the first retry's delay, doubled each time up to the cap |
/// | `confirmation.pacing` | `true` | start attempts only as fast as the CPU left by acknowledgements allows |
/// | `confirmation.busy-cpu-share` | `0.5` | the share of the machine's cores this process may use before pacing slows confirmations |
/// | `confirmation.longest-delay-seconds` | `30` | the longest pacing holds back a due confirmation |
/// | `catch-up.interval-seconds` | `3600` | between two catch-up runs with Apple's histories (the first at start); `0` turns them off |
/// | `catch-up.first-look-back-days` | `7` | how far back an app's first catch-up reads Notification History (1–180) |
/// | `import.requests-per-second`, `import.sandbox-requests-per-second` | `40`, `4` | calls to Transaction History a second while importing existing customers, per environment (Apple allows an app 50 in production and a tenth of that in the sandbox, the catch-up included) |
/// | `webhooks.allow-http-loopback` | `true` in development, else `false` | plain HTTP endpoints on a loopback host, and connections to loopback addresses |
/// | `webhooks.allow-private-addresses` | `false` | deliveries to private, loopback and link-local addresses (checked after DNS resolution) |
/// | `webhooks.connect-timeout-seconds`, `webhooks.timeout-seconds` | `5`, `15` | how long connecting, and a whole attempt, may take |
/// | `webhooks.answer-prefix-bytes` | `1024` | how much of each answer is kept |
/// | `webhooks.retry-hours` | `72` | how long a delivery is retried before it is dead-lettered |
/// | `webhooks.retry-schedule-seconds` | `5,300,1800,7200,18000,36000` | the delays between attempts, the last repeated |
/// | `webhooks.concurrency`, `webhooks.concurrency-per-endpoint` | `256`, `8` | deliveries under way in all, requests at once to one endpoint |
/// | `webhooks.batch-per-endpoint`, `webhooks.batch-window-ms` | `32`, `50` | deliveries a round sends one endpoint, and the least time between rounds under a steady stream |
/// | `webhooks.deliver-imports` | `false` | whether the events of imports of existing customers (source `import`) go to webhook endpoints; the feed has them either way |
/// | `simulator.port`, `simulator.database` (development) | `8090`, `till-simulator.sqlite` | the in-process simulator |
/// | `log.level` (`TILL_LOG_LEVEL`) | `info` | trace, debug, info, notice, warning, error or critical |
/// | `tracing.endpoint` (`TILL_TRACING_ENDPOINT`) | none: tracing off | an OTLP/HTTP collector's traces URL (`http://collector:4318/v1/traces`; an address without a path gets `/v1/traces`) |
/// | `tracing.sample-ratio` (`TILL_TRACING_SAMPLE_RATIO`) | `1` | the share of new traces kept (0 to 1); a request with a `traceparent` follows its sampled flag |
/// | `tracing.headers` (`TILL_TRACING_HEADERS`) | none | comma-separated `name=value` headers sent with every export (a hosted collector's key) |
/// | `tracing.service-name` (`TILL_TRACING_SERVICE_NAME`) | `till` | the spans' `service.name` |
public struct ServerSettings: Sendable {
    public var development: Bool
    public var host: String
    public var port: Int
    /// How long a connection may send nothing while the server waits for it (`http.idle-timeout-seconds`).
    public var idleTimeout: Duration
    public var database: DatabaseConfiguration
    /// How long an operation waits for failing storage to come back (`StorageGate`).
    public var databaseWait: Duration
    /// How long a graceful stop may take before what is under way is cancelled.
    public var shutdownGrace: Duration
    /// How long `/ready` says draining after SIGTERM before the stop begins (part of `shutdownGrace`).
    public var shutdownDrain: Duration
    public var operatorToken: String?
    public var contentDirectory: String
    public var content: ContentSettings
    public var serverSecret: String?
    /// A PEM file holding the P-256 key that signs entitlement snapshots (read by `till serve`).
    public var snapshotPrivateKeyFile: String?
    /// PEM files of keys published beside the signing key without signing (a rotation's next or previous key).
    public var snapshotPublishedKeyFiles: [String]
    public var apple: AppleEndpoints
    public var sandboxRootFiles: [String]
    public var confirmation: ConfirmationSettings
    public var catchUp: CatchUpSettings
    public var imports: ImportSettings
    public var webhooks: WebhookSettings
    public var simulatorPort: Int
    public var simulatorDatabase: DatabaseConfiguration
    public var logLevel: Logger.Level
    /// Where spans are exported (docs/tracing.md); nil: tracing is off.
    public var tracing: TracingSettings?

    /// Reads the settings in their order of precedence: `flags`, then `TILL_…` variables of `environment`,
    /// then the JSON `file`, then the defaults.
    public static func load(
        flags: [AbsoluteConfigKey: ConfigValue],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        file: String?
    ) async throws -> ServerSettings {
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: flags),
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "till"),
        ]
        var settingsFile: SettingsFile?
        if let file {
            guard FileManager.default.fileExists(atPath: file) else {
                throw SettingsRefusal(.configFileMissing, "no settings file at \(file)")
            }
            do {
                let read = try SettingsFile(path: file)
                providers.append(read)
                settingsFile = read
            } catch {
                throw SettingsRefusal(
                    .invalidConfigFile,
                    "\(file) is not a JSON object of settings: \(error)"
                )
            }
        }
        // Before the settings are read, so that a misspelled key is what is reported (`operator.tokn`, not the
        // `operatorTokenRequired` that follows from it).
        if let settingsFile { try SettingsFileKeys.refuseUnknown(in: settingsFile, known: SettingsFileKeys.settings()) }
        return try ServerSettings(config: ConfigReader(providers: providers))
    }

    public init(config: ConfigReader) throws {
        let read = SettingReader(config: config)
        let mode = try read.text("mode", default: "development")
        guard ["development", "production"].contains(mode) else {
            throw SettingsRefusal(.invalidMode, "mode is development or production, not \(mode)")
        }
        development = mode == "development"
        host = try read.text("http.host", default: "127.0.0.1")
        port = try read.int("http.port", default: 8080, in: 0...65535, else: .invalidPort)
        idleTimeout = .seconds(try read.int("http.idle-timeout-seconds", default: 60, in: 1...3600))
        let databaseURL = try read.text("database.url", default: "till.sqlite")
        do {
            database = try DatabaseConfiguration(parsing: databaseURL)
        } catch {
            throw SettingsRefusal(.invalidDatabaseURL, "database.url: \(error.message)")
        }
        let waitSeconds = try read.double("database.wait-seconds", default: 5, else: .invalidDatabaseWait)
        guard waitSeconds >= 0, waitSeconds <= 300 else {
            throw SettingsRefusal(
                .invalidDatabaseWait,
                "database.wait-seconds is 0 to 300, not \(waitSeconds)"
            )
        }
        databaseWait = .milliseconds(Int64(waitSeconds * 1000))
        let graceSeconds = try read.double("shutdown.grace-seconds", default: 60, else: .invalidShutdownGrace)
        guard graceSeconds > 0, graceSeconds <= 3600 else {
            throw SettingsRefusal(
                .invalidShutdownGrace,
                "shutdown.grace-seconds is more than 0 and at most 3600, not \(graceSeconds)"
            )
        }
        shutdownGrace = .milliseconds(Int64(graceSeconds * 1000))
        let drainSeconds = try read.double("shutdown.drain-seconds", default: 0, else: .invalidShutdownDrain)
        guard drainSeconds >= 0, drainSeconds < graceSeconds else {
            throw SettingsRefusal(
                .invalidShutdownDrain,
                "shutdown.drain-seconds is 0 or more and less than shutdown.grace-seconds (\(graceSeconds)), "
                    + "not \(drainSeconds): the drain is part of the grace"
            )
        }
        shutdownDrain = .milliseconds(Int64(drainSeconds * 1000))
        operatorToken = config.string(forKey: "operator.token", isSecret: true)
        if let operatorToken, operatorToken.utf8.count < 16 {
            throw SettingsRefusal(.weakOperatorToken, "operator.token needs 16 characters or more")
        }
        contentDirectory = try read.text("content.directory", default: "till-content")
        content = ContentSettings(
            maxUploadBytes: Int64(
                try read.int("content.max-upload-bytes", default: 512 * 1024 * 1024, in: 1...Int.max)
            ),
            urlLifetime: .seconds(try read.int("content.url-lifetime-seconds", default: 900, in: 1...604_800))
        )
        serverSecret = config.string(forKey: "server.secret", isSecret: true)
        if let serverSecret, serverSecret.utf8.count < 16 {
            throw SettingsRefusal(.weakServerSecret, "server.secret needs 16 characters or more")
        }
        snapshotPrivateKeyFile = try read.text("snapshot.private-key-file")
        snapshotPublishedKeyFiles = Self.list(try read.text("snapshot.published-key-files", default: ""))
        let apple = AppleEndpoints.apple
        self.apple = AppleEndpoints(
            verifyReceipt: [
                .production: try read.text(
                    "apple.verify-receipt.production",
                    default: apple.verifyReceipt[.production]!
                ),
                .sandbox: try read.text("apple.verify-receipt.sandbox", default: apple.verifyReceipt[.sandbox]!),
            ],
            serverAPI: [
                .production: try read.text("apple.server-api.production", default: apple.serverAPI[.production]!),
                .sandbox: try read.text("apple.server-api.sandbox", default: apple.serverAPI[.sandbox]!),
            ]
        )
        sandboxRootFiles = Self.list(try read.text("apple.sandbox-roots", default: ""))
        confirmation = ConfirmationSettings(
            maximumAttempts: try read.int("confirmation.max-attempts", default: 12, in: 1...Int.max),
            concurrency: try read.int("confirmation.concurrency", default: 64, in: 1...Int.max),
            requestTimeout: .seconds(try read.int("confirmation.timeout-seconds", default: 30, in: 1...3600)),
            backoffBase: .milliseconds(
                Int64(try read.double("confirmation.backoff-base-seconds", default: 2, in: 0.001...86_400) * 1000)
            ),
            backoffCap: .seconds(try read.int("confirmation.backoff-cap-seconds", default: 3600, in: 1...2_592_000)),
            pacing: try read.bool("confirmation.pacing", default: true),
            busyCPUShare: try read.double("confirmation.busy-cpu-share", default: 0.5, in: 0.05...1),
            longestPacingDelay: .seconds(
                try read.int("confirmation.longest-delay-seconds", default: 30, in: 1...3600)
            )
        )
        let catchUpInterval = try read.int("catch-up.interval-seconds", default: 3600, else: .invalidCatchUpInterval)
        let lookBackDays = try read.int("catch-up.first-look-back-days", default: 7, else: .invalidCatchUpLookBack)
        guard catchUpInterval >= 0 else {
            throw SettingsRefusal(
                .invalidCatchUpInterval,
                "catch-up.interval-seconds is 0 (off) or more, not \(catchUpInterval)"
            )
        }
        guard (1...180).contains(lookBackDays) else {
            throw SettingsRefusal(
                .invalidCatchUpLookBack,
                "catch-up.first-look-back-days is 1 to 180 (Apple keeps 180 days of notifications), not \(lookBackDays)"
            )
        }
        catchUp = CatchUpSettings(
            interval: .seconds(catchUpInterval),
            firstLookBack: .seconds(lookBackDays * 86_400)
        )
        imports = try Self.imports(config)
        webhooks = try Self.webhooks(config, development: development)
        simulatorPort = try read.int("simulator.port", default: 8090, in: 0...65535, else: .invalidPort)
        let simulatorDefault = database == .sqliteInMemory ? ":memory:" : "till-simulator.sqlite"
        simulatorDatabase = try DatabaseConfiguration(
            parsing: try read.text("simulator.database", default: simulatorDefault)
        )
        let level = try read.text("log.level", default: "info")
        guard let logLevel = Logger.Level(rawValue: level) else {
            throw SettingsRefusal(
                .invalidLogLevel,
                "log.level is trace, debug, info, notice, warning, error or critical, not \(level)"
            )
        }
        self.logLevel = logLevel
        tracing = try Self.tracing(config)
        guard development || operatorToken != nil else {
            throw SettingsRefusal(
                .operatorTokenRequired,
                "production mode needs operator.token (TILL_OPERATOR_TOKEN)"
            )
        }
    }

    /// The `import.…` settings.
    static func imports(_ config: ConfigReader) throws -> ImportSettings {
        let read = SettingReader(config: config)
        var rates: [AppStoreEnvironment: Double] = [:]
        for (key, environment, standard) in [
            ("import.requests-per-second", AppStoreEnvironment.production, 40.0),
            ("import.sandbox-requests-per-second", .sandbox, 4),
        ] {
            rates[environment] = try read.double(key, default: standard, in: 0.1...10_000, else: .invalidImportRate)
        }
        return ImportSettings(requestsPerSecond: rates)
    }

    /// The `webhooks.…` settings.
    static func webhooks(_ config: ConfigReader, development: Bool) throws -> WebhookSettings {
        let read = SettingReader(config: config)
        let scheduleText = try read.text("webhooks.retry-schedule-seconds", default: "", else: .invalidRetrySchedule)
        let schedule = try list(scheduleText).map { item -> Duration in
            guard let seconds = Double(item), seconds > 0, seconds <= 7 * 86_400 else {
                throw SettingsRefusal(
                    .invalidRetrySchedule,
                    "webhooks.retry-schedule-seconds is a comma-separated list of delays in seconds, not \(scheduleText)"
                )
            }
            return .milliseconds(Int64(seconds * 1000))
        }
        let hours = try read.double("webhooks.retry-hours", default: 72, else: .invalidRetryHours)
        guard hours > 0, hours <= 30 * 24 else {
            throw SettingsRefusal(.invalidRetryHours, "webhooks.retry-hours is more than 0 and at most 720")
        }
        let window = try read.int("webhooks.batch-window-ms", default: 50, else: .invalidBatchWindow)
        guard (0...1000).contains(window) else {
            throw SettingsRefusal(.invalidBatchWindow, "webhooks.batch-window-ms is from 0 to 1000, not \(window)")
        }
        return WebhookSettings(
            allowHTTPToLoopback: try read.bool("webhooks.allow-http-loopback", default: development),
            allowPrivateAddresses: try read.bool("webhooks.allow-private-addresses", default: false),
            connectTimeout: .seconds(try read.int("webhooks.connect-timeout-seconds", default: 5, in: 1...3600)),
            timeout: .seconds(try read.int("webhooks.timeout-seconds", default: 15, in: 1...3600)),
            answerPrefixBytes: try read.int("webhooks.answer-prefix-bytes", default: 1024, in: 0...65_536),
            retryFor: .milliseconds(Int64(hours * 3_600_000)),
            schedule: schedule.isEmpty ? WebhookSettings.standardSchedule : schedule,
            concurrency: try read.int("webhooks.concurrency", default: 256, in: 1...Int.max),
            concurrencyPerEndpoint: try read.int("webhooks.concurrency-per-endpoint", default: 8, in: 1...Int.max),
            batchPerEndpoint: try read.int("webhooks.batch-per-endpoint", default: 32, in: 1...Int.max),
            batchWindow: .milliseconds(Int64(window)),
            deliverImports: try read.bool("webhooks.deliver-imports", default: false)
        )
    }

    /// The `tracing.…` settings: nil without an endpoint. Each is checked with tracing off too, so that a bad one does
    /// not wait to stop the server until the day a collector is named, far from the change that made it.
    static func tracing(_ config: ConfigReader) throws -> TracingSettings? {
        let read = SettingReader(config: config)
        let given = try read.text("tracing.endpoint", else: .invalidTracingEndpoint)
        let endpoint = given?.isEmpty == false ? given : nil
        if let endpoint, !isCollectorURL(endpoint) {
            throw SettingsRefusal(
                .invalidTracingEndpoint,
                "tracing.endpoint is an OTLP/HTTP collector's http(s) URL, such as http://collector:4318/v1/traces, "
                    + "not \(endpoint)"
            )
        }
        let ratio = try read.double("tracing.sample-ratio", default: 1, in: 0...1, else: .invalidTracingSampleRatio)
        var headers: [String: String] = [:]
        for (index, item) in list(config.string(forKey: "tracing.headers", isSecret: true) ?? "").enumerated() {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, HTTPField.Name(parts[0]) != nil else {
                // An item may hold a key: the message says which item, not what it holds.
                throw SettingsRefusal(
                    .invalidTracingHeaders,
                    "tracing.headers is a comma-separated list of name=value headers; item \(index + 1) is not one "
                        + "(its text is not repeated here: it may hold a key)"
                )
            }
            headers[parts[0]] = parts[1]
        }
        let serviceName = try read.text("tracing.service-name", default: "till")
        guard let endpoint else { return nil }
        return TracingSettings(endpoint: endpoint, sampleRatio: ratio, headers: headers, serviceName: serviceName)
    }

    /// An OTLP/HTTP collector's address: http(s), a host, no query.
    static func isCollectorURL(_ text: String) -> Bool {
        guard let url = URL(string: text) else { return false }
        return ["http", "https"].contains(url.scheme ?? "") && url.host != nil && url.query == nil
    }

    /// A comma-separated list, its items trimmed, empty ones dropped.
    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// Reads the snapshot keys that `snapshot.private-key-file` and `snapshot.published-key-files` name.
public enum SnapshotKeyFiles {
    /// The signing key: a P-256 private key in PEM (PKCS#8 or SEC 1).
    public static func signingKey(at path: String) throws -> P256.Signing.PrivateKey {
        let pem = try text(at: path)
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw SettingsRefusal(.invalidSnapshotKey, "\(path) is not a P-256 private key in PEM: \(error)")
        }
    }

    /// A key to publish: a P-256 public key in PEM (`openssl pkey -pubout`), or a private key whose public half
    /// is published (the previous signing key's file, kept as it was).
    public static func publishedKey(at path: String) throws -> P256.Signing.PublicKey {
        let pem = try text(at: path)
        if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) { return key }
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) { return key.publicKey }
        throw SettingsRefusal(.invalidSnapshotKey, "\(path) holds no P-256 public or private key in PEM")
    }

    private static func text(at path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsRefusal(.snapshotKeyUnreadable, "cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
