import Configuration
import Foundation
import Logging
import Testing
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage
import TillTestSupport
import TillWebhooks

@testable import TillServer
@testable import TillSimulator

/// `till serve`'s settings: flags over `TILL_…` variables over the JSON file over the defaults.
@Suite(.sharingTheMachine)
struct ServerSettingsTests {
    func file(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-settings-\(UUID()).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func theDefaultsMakeADevelopmentServerOnSQLite() async throws {
        let settings = try await ServerSettings.load(flags: [:], environment: [:], file: nil)
        #expect(settings.development && settings.host == "127.0.0.1" && settings.port == 8080)
        #expect(settings.idleTimeout == .seconds(60))
        #expect(settings.database == .sqlite(path: "till.sqlite"))
        #expect(settings.confirmation.maximumAttempts == 12 && settings.confirmation.concurrency == 64)
        #expect(settings.confirmation.pacing && settings.confirmation.busyCPUShare == 0.5)
        #expect(settings.logLevel == .info && settings.operatorToken == nil)
        #expect(settings.snapshotPrivateKeyFile == nil)  // the key is made once and kept in the database
        #expect(settings.snapshotPublishedKeyFiles.isEmpty)
        #expect(settings.catchUp == CatchUpSettings(interval: .seconds(3600), firstLookBack: .seconds(7 * 86_400)))
    }

    @Test func webhooksAreHTTPSOnlyInProductionAndTheirRetriesCanBeTuned() async throws {
        let development = try await ServerSettings.load(flags: [:], environment: [:], file: nil).webhooks
        #expect(development.allowHTTPToLoopback && !development.allowPrivateAddresses)
        #expect(development.schedule == WebhookSettings.standardSchedule && development.retryFor == .seconds(259_200))
        #expect(development.batchWindow == .milliseconds(50) && development.batchPerEndpoint == 32)
        #expect(development.concurrencyPerEndpoint == 8 && development.concurrency == 256)
        let production = try await ServerSettings.load(
            flags: [:],
            environment: [
                "TILL_MODE": "production", "TILL_OPERATOR_TOKEN": "op-0123456789abcdef",
                "TILL_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES": "true", "TILL_WEBHOOKS_RETRY_SCHEDULE_SECONDS": "0.5, 60,3600",
                "TILL_WEBHOOKS_RETRY_HOURS": "24", "TILL_WEBHOOKS_ANSWER_PREFIX_BYTES": "256",
                "TILL_WEBHOOKS_BATCH_WINDOW_MS": "0", "TILL_WEBHOOKS_BATCH_PER_ENDPOINT": "4",
            ],
            file: nil
        ).webhooks
        #expect(!production.allowHTTPToLoopback && production.allowPrivateAddresses)
        #expect(production.schedule == [.milliseconds(500), .seconds(60), .seconds(3600)])
        #expect(production.retryFor == .seconds(86_400) && production.answerPrefixBytes == 256)
        #expect(production.batchWindow == .zero && production.batchPerEndpoint == 4)
        #expect(production.longestBatch == production.timeout, "four deliveries, eight at a time: one turn")
        #expect(production.retrySchedule.delay(afterAttempt: 1, factor: 1) == .milliseconds(500))
        #expect(production.retrySchedule.delay(afterAttempt: 9, factor: 1) == .seconds(3600), "the last delay repeats")
        for (key, value) in [
            ("TILL_WEBHOOKS_RETRY_SCHEDULE_SECONDS", "5,soon"), ("TILL_WEBHOOKS_RETRY_HOURS", "0"),
            ("TILL_WEBHOOKS_BATCH_WINDOW_MS", "5000"),
        ] {
            await #expect(throws: SettingsRefusal.self, "\(key)=\(value)") {
                try await ServerSettings.load(flags: [:], environment: [key: value], file: nil)
            }
        }
    }

    @Test func catchingUpCanBeSlowedOrTurnedOff() async throws {
        let settings = try await ServerSettings.load(
            flags: [:],
            environment: ["TILL_CATCH_UP_INTERVAL_SECONDS": "0"],
            file: try file(#"{"catch-up":{"interval-seconds":600,"first-look-back-days":180}}"#)
        )
        #expect(settings.catchUp.interval == .zero)  // the environment beats the file
        #expect(settings.catchUp.firstLookBack == .seconds(180 * 86_400))
    }

    @Test func flagsBeatTheEnvironmentWhichBeatsTheFile() async throws {
        let path = try file(
            #"{"http":{"port":9000,"host":"0.0.0.0"},"confirmation":{"max-attempts":5,"concurrency":8},"log":{"level":"debug"}}"#
        )
        let settings = try await ServerSettings.load(
            flags: ["http.port": .init(.int(9100), isSecret: false)],
            environment: [
                "TILL_HTTP_PORT": "9200", "TILL_CONFIRMATION_MAX_ATTEMPTS": "7", "PATH": "/bin",
                "TILL_SNAPSHOT_PRIVATE_KEY_FILE": "/etc/till/snapshot.pem", "TILL_CONFIRMATION_BUSY_CPU_SHARE": "0.85",
                "TILL_SNAPSHOT_PUBLISHED_KEY_FILES": "/etc/till/previous.pem, ,/etc/till/next.pub.pem",
            ],
            file: path
        )
        #expect(settings.port == 9100)  // flag
        #expect(settings.confirmation.maximumAttempts == 7)  // environment
        #expect(settings.confirmation.busyCPUShare == 0.85)
        #expect(settings.snapshotPrivateKeyFile == "/etc/till/snapshot.pem")
        #expect(settings.snapshotPublishedKeyFiles == ["/etc/till/previous.pem", "/etc/till/next.pub.pem"])
        #expect(settings.host == "0.0.0.0" && settings.confirmation.concurrency == 8)  // file
        #expect(settings.logLevel == .debug)
        #expect(settings.database == .sqlite(path: "till.sqlite"))  // default
    }

    @Test func productionNeedsAnOperatorTokenAndTalksToApple() async throws {
        await #expect(throws: SettingsRefusal.self) {
            try await ServerSettings.load(flags: [:], environment: ["TILL_MODE": "production"], file: nil)
        }
        let settings = try await ServerSettings.load(
            flags: [:],
            environment: [
                "TILL_MODE": "production", "TILL_OPERATOR_TOKEN": "op-0123456789abcdef",
                "TILL_DATABASE_URL": "postgres://till@db:5432/till",
            ],
            file: nil
        )
        #expect(!settings.development && settings.operatorToken == "op-0123456789abcdef")
        #expect(settings.apple == .apple)
        #expect(settings.database == .postgres(url: "postgres://till@db:5432/till"))
    }

    @Test func tracingIsOffUntilACollectorIsNamed() async throws {
        #expect(try await ServerSettings.load(flags: [:], environment: [:], file: nil).tracing == nil)
        let named = try await ServerSettings.load(
            flags: [:],
            environment: [
                "TILL_TRACING_ENDPOINT": "http://collector:4318",
                "TILL_TRACING_SAMPLE_RATIO": "0.25",
                "TILL_TRACING_HEADERS": "x-honeycomb-team=abc=def, x-tenant = shop",
            ],
            file: nil
        )
        let tracing = try #require(named.tracing)
        #expect(tracing.sampleRatio == 0.25 && tracing.serviceName == "till")
        #expect(tracing.headers == ["x-honeycomb-team": "abc=def", "x-tenant": "shop"])
        // An address without a path is given OTLP's traces path; a URL with one is used as it is.
        #expect(tracing.tracesURL == "http://collector:4318/v1/traces")
        #expect(
            TracingSettings(endpoint: "https://otel.example/custom/traces").tracesURL
                == "https://otel.example/custom/traces"
        )
        #expect(TracingSettings(endpoint: "http://collector:4318/").tracesURL == "http://collector:4318/v1/traces")
        for (environment, code) in [
            (["TILL_TRACING_ENDPOINT": "collector:4318"], "invalidTracingEndpoint"),
            (["TILL_TRACING_ENDPOINT": "grpc://collector:4317"], "invalidTracingEndpoint"),
            (
                ["TILL_TRACING_ENDPOINT": "http://c:4318", "TILL_TRACING_SAMPLE_RATIO": "1.5"],
                "invalidTracingSampleRatio"
            ),
            (
                ["TILL_TRACING_ENDPOINT": "http://c:4318", "TILL_TRACING_SAMPLE_RATIO": "abc"],
                "invalidTracingSampleRatio"
            ),
            (["TILL_TRACING_ENDPOINT": "http://c:4318", "TILL_TRACING_HEADERS": "x-key"], "invalidTracingHeaders"),
            // With tracing off too: a bad value does not wait for the day a collector is named.
            (["TILL_TRACING_SAMPLE_RATIO": "2"], "invalidTracingSampleRatio"),
            (["TILL_TRACING_HEADERS": "x-key"], "invalidTracingHeaders"),
        ] {
            do {
                _ = try await ServerSettings.load(flags: [:], environment: environment, file: nil)
                Issue.record("\(environment) was accepted")
            } catch let error as SettingsRefusal {
                #expect(error.code == code)
                // An item may hold a key: it is never repeated.
                #expect(!error.message.contains("x-key"))
            }
        }
    }

    /// A `traceparent` is passed on only when W3C Trace Context would read it.
    @Test func onlyAWellFormedTraceparentIsContinued() {
        typealias Scope = TracingScopeMiddleware<ServerRequestContext>
        #expect(Scope.isWellFormed("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
        #expect(Scope.isWellFormed("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"))
        for malformed in [
            "", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
            "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
        ] {
            #expect(!Scope.isWellFormed(malformed), "\(malformed)")
        }
    }

    /// Every key `till serve` reads is a row of docs/configuration.md's table, with its environment variable, and every
    /// row is a key it reads: a setting added or renamed in one place only fails here.
    @Test func everySettingIsInTheConfigurationTable() throws {
        let source = try String(
            contentsOf: LayoutTests.root.appendingPathComponent(
                "Sources/TillServer/Configuration/ServerSettings.swift"
            ),
            encoding: .utf8
        )
        // `forKey: "key"`, `read.int("key", …)` (and `double`, `bool`, `text`) and the `("key", …)` tuples a setting's
        // list is read from.
        let named = try Regex(#"(?:forKey: |read\.[a-z]+\(\s*)"([a-z][a-z0-9.-]*)""#, as: (Substring, Substring).self)
        let listed = try Regex(#"\(\s*"([a-z][a-z0-9-]*\.[a-z0-9.-]+)""#, as: (Substring, Substring).self)
        let keys = Set(source.matches(of: named).map { String($0.output.1) })
            .union(source.matches(of: listed).map { String($0.output.1) })
        #expect(keys.count >= 45, "\(keys.sorted())")
        let guide = try String(
            contentsOf: LayoutTests.root.appendingPathComponent("docs/configuration.md"),
            encoding: .utf8
        )
        let row = try Regex(
            #"(?m)^\| `([a-z][a-z0-9.-]+)` \|[^|]*\| `?([A-Z_]*)`? \|"#,
            as: (Substring, Substring, Substring).self
        )
        var documented: [String: String] = [:]
        for match in guide.matches(of: row) { documented[String(match.output.1)] = String(match.output.2) }
        let undocumented = keys.subtracting(documented.keys).sorted()
        let unread = Set(documented.keys).subtracting(keys).sorted()
        #expect(undocumented.isEmpty, "not in docs/configuration.md: \(undocumented)")
        #expect(unread.isEmpty, "documented, never read: \(unread)")
        // What a settings file may name is what the settings ask their reader for (`SettingsFileKeys`), at defaults
        // as much as at any other values: every row of the table.
        let asked = try SettingsFileKeys.settings()
        #expect(asked == Set(documented.keys), "\(asked.symmetricDifference(documented.keys).sorted())")
        for (key, variable) in documented {
            let expected = "TILL_" + key.uppercased().map { $0 == "." || $0 == "-" ? "_" : String($0) }.joined()
            #expect(variable == expected, "\(key)'s variable is \(expected), not \(variable)")
        }
    }

    /// A PostgreSQL URL that PostgresKit cannot use is refused in a sentence that says what is missing, without its
    /// password: it was Foundation's `Error Domain=NSURLErrorDomain Code=-1000 "(null)"`, when the server opened.
    @Test func aPostgresURLWithoutWhatItNeedsIsRefusedInWords() async throws {
        for (url, missing) in [
            ("postgres://x", "names no user"),
            ("postgres://db.example/till", "names no user"),
            ("postgres://till:s3cret@/till", "names no host"),
            ("postgresql://till:s3cret@db.example:port/till", "is not a URL"),
            (
                "postgres://till:s3cret@db.example/till?sslmode=maybe",
                "sslmode is disable, prefer or require, not maybe"
            ),
        ] {
            do {
                _ = try await ServerSettings.load(flags: [:], environment: ["TILL_DATABASE_URL": url], file: nil)
                Issue.record("\(url) was accepted")
            } catch let error as SettingsRefusal {
                #expect(error.code == "invalidDatabaseURL" && error.message.contains(missing), "\(url): \(error)")
                #expect(error.message.hasPrefix("database.url: "), "\(error.message)")
                #expect(!error.message.contains("s3cret") && !error.message.contains("NSURLError"), "\(error)")
                #expect(
                    missing.hasPrefix("sslmode")
                        || error.message.hasSuffix(
                            "write postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]"
                        )
                )
            }
        }
        let fine = "postgres://till:s3cret@db.example:5433/till?sslmode=require"
        let settings = try await ServerSettings.load(flags: [:], environment: ["TILL_DATABASE_URL": fine], file: nil)
        #expect(settings.database == .postgres(url: fine))
    }

    @Test func badSettingsAreRefusedWithTheirReason() async throws {
        for (environment, code) in [
            (["TILL_MODE": "staging"], "invalidMode"),
            (["TILL_HTTP_PORT": "70000"], "invalidPort"),
            (["TILL_LOG_LEVEL": "loud"], "invalidLogLevel"),
            (["TILL_OPERATOR_TOKEN": "op"], "weakOperatorToken"),
            (["TILL_CATCH_UP_INTERVAL_SECONDS": "-1"], "invalidCatchUpInterval"),
            (["TILL_CATCH_UP_FIRST_LOOK_BACK_DAYS": "181"], "invalidCatchUpLookBack"),
            (["TILL_CATCH_UP_FIRST_LOOK_BACK_DAYS": "0"], "invalidCatchUpLookBack"),
        ] {
            do {
                _ = try await ServerSettings.load(flags: [:], environment: environment, file: nil)
                Issue.record("\(environment) was accepted")
            } catch let error as SettingsRefusal {
                #expect(error.code == code)
            }
        }
        // A value that is not of its type was once taken for the default (the server listened on 8080), and one
        // outside its range was moved into it. Each is refused, its message naming the key and what it was given.
        for (key, value, code) in [
            ("http.port", "abc", "invalidPort"),
            ("simulator.port", "-1", "invalidPort"),
            ("http.idle-timeout-seconds", "0", "invalidSetting"),
            ("http.idle-timeout-seconds", "never", "invalidSetting"),
            ("database.wait-seconds", "soon", "invalidDatabaseWait"),
            ("catch-up.interval-seconds", "hourly", "invalidCatchUpInterval"),
            ("confirmation.max-attempts", "abc", "invalidSetting"),
            ("confirmation.max-attempts", "0", "invalidSetting"),
            ("confirmation.pacing", "maybe", "invalidSetting"),
            ("confirmation.busy-cpu-share", "2", "invalidSetting"),
            ("confirmation.backoff-base-seconds", "0", "invalidSetting"),
            ("content.max-upload-bytes", "0", "invalidSetting"),
            ("webhooks.answer-prefix-bytes", "70000", "invalidSetting"),
            ("webhooks.concurrency", "0", "invalidSetting"),
            ("webhooks.allow-private-addresses", "yes please", "invalidSetting"),
            ("webhooks.retry-hours", "forever", "invalidRetryHours"),
        ] {
            let variable = "TILL_" + key.uppercased().map { $0 == "." || $0 == "-" ? "_" : String($0) }.joined()
            do {
                _ = try await ServerSettings.load(flags: [:], environment: [variable: value], file: nil)
                Issue.record("\(variable)=\(value) was accepted")
            } catch let error as SettingsRefusal {
                #expect(error.code == code, "\(variable)=\(value): \(error.message)")
                #expect(error.message.hasPrefix(key) && error.message.hasSuffix("not \(value)"), "\(error.message)")
            }
        }
        let typed = try await ServerSettings.load(
            flags: [:],
            environment: ["TILL_CONFIRMATION_PACING": "false", "TILL_WEBHOOKS_ANSWER_PREFIX_BYTES": "65536"],
            file: nil
        )
        #expect(!typed.confirmation.pacing && typed.webhooks.answerPrefixBytes == 65_536)
        // A switch also takes yes/no and 1/0 from the environment, and 1/0 from a file (docs/configuration.md).
        for (environment, json, pacing) in [
            (["TILL_CONFIRMATION_PACING": "no"], nil, false), (["TILL_CONFIRMATION_PACING": "YES"], nil, true),
            (["TILL_CONFIRMATION_PACING": "0"], nil, false), ([:], #"{"confirmation":{"pacing":0}}"#, false),
        ] {
            let loaded = try await ServerSettings.load(flags: [:], environment: environment, file: try json.map(file))
            #expect(loaded.confirmation.pacing == pacing, "\(environment) \(json ?? "")")
        }
        // From a JSON file, a number is a number whether whole or not where fractions are allowed; a fraction where
        // a whole number is needed, a number in quotes, or a list, is refused; an empty variable is no value.
        let fromFile = try await ServerSettings.load(
            flags: [:],
            environment: ["TILL_HTTP_PORT": "", "TILL_CONFIRMATION_PACING": ""],
            file: try file(
                #"{"database":{"wait-seconds":7},"confirmation":{"busy-cpu-share":1},"import":{"requests-per-second":25}}"#
            )
        )
        #expect(fromFile.databaseWait == .seconds(7) && fromFile.confirmation.busyCPUShare == 1)
        #expect(fromFile.imports.requestsPerSecond[.production] == 25 && fromFile.port == 8080)
        #expect(fromFile.confirmation.pacing)
        for (json, message) in [
            (
                #"{"webhooks":{"timeout-seconds":1.5}}"#,
                "webhooks.timeout-seconds is a whole number from 1 to 3600, not 1.5"
            ),
            (
                #"{"http":{"port":"9000"}}"#,
                #"http.port is a whole number from 0 to 65535, not the text "9000" (in a JSON file, write it without quotes)"#
            ),
            (
                #"{"confirmation":{"busy-cpu-share":[0.5]}}"#,
                "confirmation.busy-cpu-share is a number from 0.05 to 1, not a list"
            ),
            (#"{"log":{"level":3}}"#, "log.level is text, not 3"),
            // A switch's number other than 1 or 0 (swift-configuration takes any number for on).
            (#"{"confirmation":{"pacing":2}}"#, "confirmation.pacing is true or false, not 2"),
        ] {
            do {
                _ = try await ServerSettings.load(flags: [:], environment: [:], file: try file(json))
                Issue.record("\(json) was accepted")
            } catch let error as SettingsRefusal {
                #expect(error.message == message)
            }
        }
        do {
            _ = try await ServerSettings.load(flags: [:], environment: [:], file: try file(#"{"http":{"port":"abc"}}"#))
            Issue.record("a port that is not a number was accepted from the file")
        } catch let error as SettingsRefusal {
            #expect(error.code == "invalidPort")
            #expect(error.message == "http.port is a whole number from 0 to 65535, not abc")
        }
        do {
            _ = try await ServerSettings.load(flags: [:], environment: [:], file: "/nonexistent/till.json")
            Issue.record("a missing file was accepted")
        } catch let error as SettingsRefusal {
            #expect(error.code == "configFileMissing")
        }
        do {
            _ = try await ServerSettings.load(flags: [:], environment: [:], file: try file("{not json"))
            Issue.record("a broken file was accepted")
        } catch let error as SettingsRefusal {
            #expect(error.code == "invalidConfigFile")
        }
    }

    /// A key of the settings file that is no setting stops the server, with the nearest setting's name: a misspelled
    /// key left its setting at the default without a word. A key is a setting whether written nested or dotted.
    @Test func aSettingsFileNamesOnlySettings() async throws {
        do {
            _ = try await ServerSettings.load(
                flags: [:],
                environment: [:],
                file: try file(#"{"htp":{"port":9000},"confirmation":{"max-atempts":5}}"#)
            )
            Issue.record("a misspelled key was accepted")
        } catch let error as SettingsRefusal {
            #expect(error.code == "unknownSetting")
            #expect(
                error.message.hasSuffix(
                    " names settings till serve does not have: confirmation.max-atempts, htp.port (did you mean "
                        + "confirmation.max-attempts?); docs/configuration.md lists them"
                ),
                "\(error.message)"
            )
        }
        do {
            // Reported before what follows from it: without `operator.token`, production refuses to start.
            _ = try await ServerSettings.load(
                flags: [:],
                environment: [:],
                file: try file(#"{"mode":"production","operator":{"tokn":"0123456789abcdef0123"}}"#)
            )
            Issue.record("a misspelled token was accepted")
        } catch let error as SettingsRefusal {
            #expect(
                error.code == "unknownSetting" && error.message.contains("operator.tokn (did you mean operator.token?)")
            )
        }
        do {
            _ = try await ServerSettings.load(flags: [:], environment: [:], file: try file(#"{"verbose":true}"#))
            Issue.record("an unknown key was accepted")
        } catch let error as SettingsRefusal {
            #expect(
                error.message.hasSuffix(
                    " names a setting till serve does not have: verbose; docs/configuration.md lists them"
                )
            )
        }
        let settings = try await ServerSettings.load(
            flags: [:],
            environment: [:],
            file: try file(#"{"http":{"port":9000},"confirmation.max-attempts":5,"tracing":{}}"#)
        )
        #expect(settings.port == 9000 && settings.confirmation.maximumAttempts == 5)
        // The file is read once: a pipe (`--config <(envsubst < till.json)`) has nothing left for a second read.
        let pipe = FileManager.default.temporaryDirectory.appendingPathComponent("till-settings-\(UUID()).fifo").path
        #expect(mkfifo(pipe, 0o600) == 0)
        defer { try? FileManager.default.removeItem(atPath: pipe) }
        let writer = Task.detached {
            let handle = FileHandle(forWritingAtPath: pipe)
            try handle?.write(contentsOf: Data(#"{"http":{"port":9001}}"#.utf8))
            try handle?.close()
        }
        let piped = try await ServerSettings.load(flags: [:], environment: [:], file: pipe)
        try await writer.value
        #expect(piped.port == 9001)
    }

    /// One back-off for every kind of work: confirmations double from their base to their cap (±20%), webhook
    /// deliveries take their steps, the last one repeated (±10%).
    @Test func everyKindOfWorkBacksOffOnTheOneRetrySchedule() {
        let confirmation = ConfirmationSettings(backoffBase: .seconds(2), backoffCap: .seconds(3600)).retrySchedule
        #expect((1...4).map { confirmation.plainDelay(afterAttempt: $0) } == [2, 4, 8, 16].map { .seconds($0) })
        #expect(confirmation.plainDelay(afterAttempt: 12) == .seconds(3600), "2 × 2^11 s is past the cap")
        #expect(confirmation.delay(afterAttempt: 3, factor: 1.2) == .milliseconds(9600))
        #expect(
            ConfirmationSettings(backoffBase: .milliseconds(250), backoffCap: .milliseconds(1500)).retrySchedule
                .plainDelay(afterAttempt: 4) == .milliseconds(1500),
            "a cap in milliseconds is kept whole"
        )
        for attempt in 1...8 {
            let delay = confirmation.delay(afterAttempt: attempt)
            let plain = confirmation.plainDelay(afterAttempt: attempt)
            #expect(delay >= plain * 0.8 && delay <= plain * 1.2, "attempt \(attempt): \(delay)")
        }
        let webhooks = WebhookSettings().retrySchedule
        #expect(webhooks.plainDelay(afterAttempt: 1) == .seconds(5))
        #expect(webhooks.plainDelay(afterAttempt: 40) == .seconds(36_000))
        var emptied = WebhookSettings()
        emptied.schedule = []
        #expect(emptied.retrySchedule.plainDelay(afterAttempt: 1) == .seconds(5), "no steps: the standard schedule")
        for attempt in 1...8 {
            let delay = webhooks.delay(afterAttempt: attempt)
            let plain = webhooks.plainDelay(afterAttempt: attempt)
            #expect(delay >= plain * 0.9 && delay <= plain * 1.1, "attempt \(attempt): \(delay)")
        }
    }
}

/// The caches in front of the database: never older than this process's last write.
@Suite(.sharingTheMachine)
struct SnapshotCacheTests {
    actor Loads {
        var count = 0
        func next() -> Int {
            count += 1
            return count
        }
    }

    @Test func anEntryLivesWhileItsGenerationDoes() async throws {
        let cache = SnapshotCache<String, Int>(lifetime: .seconds(60))
        let loads = Loads()
        #expect(try await cache.value(for: "a", generation: 1) { await loads.next() } == 1)
        #expect(try await cache.value(for: "a", generation: 1) { await loads.next() } == 1)
        #expect(try await cache.value(for: "a", generation: 2) { await loads.next() } == 2)
        cache.invalidateAll()
        #expect(try await cache.value(for: "a", generation: 2) { await loads.next() } == 3)
    }

    @Test func aLoadOverlappingAnInvalidationIsNotKept() async throws {
        let cache = SnapshotCache<String, Int>(lifetime: .seconds(60))
        let first = try await cache.value(for: "a") {
            cache.invalidateAll()  // a writer changed it while this reader was loading
            return 1
        }
        #expect(first == 1)
        #expect(try await cache.value(for: "a") { 2 } == 2)
    }

    @Test func entriesExpire() async throws {
        let cache = SnapshotCache<String, Int>(lifetime: .milliseconds(1))
        _ = try await cache.value(for: "a") { 1 }
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await cache.value(for: "a") { 2 } == 2)
    }

    @Test func aCustomerReadAfterAWriteSeesTheWrite() async throws {
        try await ServerFixture.run { fixture in
            let server = fixture.server
            let purchase = try await fixture.buy("gems.100")
            let result = try await server.intake.submit(
                SubmissionRequest(customerId: "carol", signedTransaction: purchase.signedTransaction),
                app: fixture.app
            )
            _ = try await fixture.settled(result)
            #expect(
                try await server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "carol").balances[
                    "gems"
                ] == 100
            )
            // A write the cache is told of only through the database's generation: a debit.
            _ = try await server.ledger.debit(
                bundleId: ServerFixture.bundleId,
                customerId: "carol",
                credit: "gems",
                amount: 40,
                requestId: "test"
            )
            #expect(
                try await server.customers.customer(bundleId: ServerFixture.bundleId, customerId: "carol").balances[
                    "gems"
                ] == 60
            )
        }
    }
}
