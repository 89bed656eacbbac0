// swift-tools-version: 6.1
import PackageDescription

/// Set by Tools/fuzz (docs/fuzzing.md): Till's own modules are then built for libFuzzer with AddressSanitizer, and the
/// `till-fuzz` driver is declared. Dependencies are built as usual (they are fuzzed upstream): libFuzzer's coverage is
/// Till's code, and the build reuses what `swift build` made of them.
let fuzzing = Context.environment["TILL_FUZZ"] != nil
let instrumented: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address", "-g"])] : []
/// The fuzz targets' own code (mutators, property checks) is checked by AddressSanitizer but gives libFuzzer no
/// coverage: an input is not interesting for exercising the harness.
let harness: [SwiftSetting] =
    [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]
    + (fuzzing ? [.unsafeFlags(["-sanitize=address", "-g"])] : [])

let upcoming: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ] + instrumented

/// Every module but TillLedger is compiled only once `ledger-tables` has found that its code names none of the
/// ledger's tables, so a statement writing money, credits or access from another module does not build
/// (Plugins/LedgerTables; docs/architecture.md).
let ledgerTables: [Target.PluginUsage] = [.plugin(name: "LedgerTables")]

let package = Package(
    name: "Till",
    // What the server needs: Synchronization's Mutex arrived with these releases, and Hummingbird asks for macOS 14
    // and iOS 17. The server, the simulator and the CLI run on macOS and Linux. What an app links (TillClient and the
    // modules it is made of) is the package in Client/, from StoreKit 2's floors (iOS 15, macOS 12).
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "till", targets: ["till"]),
        .library(name: "TillFormats", targets: ["TillFormats"]),
    ],
    traits: [
        .trait(
            name: "Demo",
            description: "till demo and till shop (TillClient; on Linux, FoundationNetworking and libcurl). Built "
                + "without it (--disable-default-traits), till is the server's binary of docs/deploy.md."
        ),
        .default(enabledTraits: ["Demo"]),
    ],
    dependencies: [
        // TillClient and what it is made of (TillCore, the contracts, TillSnapshot): an app's package, of its own.
        .package(path: "Client"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        // Counts a purchase's allocations, in `till-allocations` only (docs/benchmarks.md, "What CI counts").
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.6.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Hummingbird with one trait, named. Its defaults are two (ConfigurationSupport, which Till does not use: its
        // settings read swift-configuration themselves, and FullFoundation), and SwiftPM passes a package's traits as
        // -D flags in a Set's order, which differs from one process to the next: `swift test` after `swift build`
        // compiled Hummingbird again every other time (40 s of CI). And `--disable-default-traits` (the deployable
        // build of docs/deploy.md) turned the defaults off, so the server shipped was not the one tested.
        .package(
            url: "https://github.com/hummingbird-project/hummingbird.git",
            from: "2.28.1",
            traits: ["FullFoundation"]
        ),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/vapor/async-kit.git", from: "1.22.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        // CSV (RFC 4180) for the import files of existing customers (TillAppStore/Import).
        .package(url: "https://github.com/yaslab/CSV.swift.git", from: "2.5.2"),
        // Traces (docs/tracing.md): spans through swift-distributed-tracing, which Hummingbird and AsyncHTTPClient
        // already speak, exported by swift-otel over OTLP/HTTP only (its gRPC trait would bring grpc-swift).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // The ledger's tables are named only in the ledger's module (and the migrations): the check each other
        // module's build runs before it is compiled.
        .executableTarget(name: "ledger-tables", path: "Tools/LedgerTables"),
        .plugin(name: "LedgerTables", capability: .buildTool(), dependencies: ["ledger-tables"]),
        // What the server and the simulator share over HTTP: the error type and middleware, JSON bodies, wake-ups.
        .target(
            name: "TillHTTPKit",
            dependencies: [
                .product(name: "TillCore", package: "Client"),
                "TillFormats",
                "TillStorage",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        .target(
            name: "TillFormats",
            dependencies: [
                .product(name: "TillCore", package: "Client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        .target(
            name: "TillStorage",
            dependencies: [
                .product(name: "AsyncKit", package: "async-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // The ledger: the only writer of money, credits and access (its `LedgerStore` is internal to this module),
        // the event log written in each change's transaction, and the records and stores they read.
        .target(
            name: "TillLedger",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillFormats",
                "TillHTTPKit",
                "TillStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: upcoming
        ),
        // The catalogue: the apps Till serves and their products, cached for every request.
        .target(
            name: "TillCatalogue",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillFormats",
                "TillLedger",
                "TillStorage",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // The job queue: `srv_jobs`, its claims, leases, attempts, retry schedule and dead letters (its `JobStore`'s
        // claiming is internal to this module).
        .target(
            name: "TillJobs",
            dependencies: [
                .product(name: "TillCore", package: "Client"),
                "TillHTTPKit",
                "TillLedger",
                "TillStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // The webhooks room: the apps' endpoints and the deliveries of events to them, Standard Webhooks (its store's
        // statements are internal to this module).
        .target(
            name: "TillWebhooks",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillCatalogue",
                "TillFormats",
                "TillHTTPKit",
                "TillJobs",
                "TillLedger",
                "TillStorage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        .target(
            name: "TillContent",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillCatalogue",
                "TillHTTPKit",
                "TillLedger",
                "TillStorage",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // The operator's console below the HTTP layer: its sessions and audit (with their store, kept inside), its
        // Mustache templates and SVG charts, and how it writes numbers for people. The pages themselves, which read
        // every room, are the HTTP layer's (TillServer's API).
        .target(
            name: "TillConsole",
            dependencies: [
                .product(name: "TillCore", package: "Client"),
                "TillFormats",
                "TillLedger",
                "TillStorage",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "SQLKit", package: "sql-kit"),
            ],
            // The console's templates, stylesheet and script, compiled into the binary (`PackageResources`): a
            // deployment is the one executable.
            resources: [.embedInCode("Templates")],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // Apple's side: intake (a submission verified and acknowledged in milliseconds), the confirmation queue and
        // its calls to Apple, App Store Server Notifications, consumption answers, catching up and the imports of
        // existing customers. It takes its
        // settings, metrics and customers from the server through three seams (AppStoreSettings, AppStoreMetrics,
        // AppStoreCustomers); its stores' statements are internal to it.
        .target(
            name: "TillAppStore",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillCatalogue",
                "TillFormats",
                "TillHTTPKit",
                "TillJobs",
                "TillLedger",
                "TillStorage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "CSV", package: "CSV.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        .target(
            name: "TillServer",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillAppStore",
                "TillFormats",
                "TillHTTPKit",
                "TillCatalogue",
                "TillConsole",
                "TillJobs",
                "TillLedger",
                "TillContent",
                "TillWebhooks",
                .product(name: "TillSnapshot", package: "Client"),
                "TillStorage",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        .target(
            name: "TillSimulator",
            dependencies: [
                .product(name: "TillCore", package: "Client"),
                .product(name: "TillSimulatorContract", package: "Client"),
                "TillFormats",
                "TillHTTPKit",
                "TillStorage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // The development app `till serve` and `till demo` set up in the simulator and the server, and the helpers
        // that start a service on a free port; shared by the command line and the benchmarks.
        .target(
            name: "TillDevelopment",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillHTTPKit",
                "TillCatalogue",
                "TillLedger",
                "TillServer",
                "TillSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // The benchmarks and the load generator (`till bench`), kept out of the libraries that ship.
        .target(
            name: "TillBench",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillDevelopment",
                "TillFormats",
                "TillHTTPKit",
                "TillCatalogue",
                "TillJobs",
                "TillLedger",
                "TillAppStore",
                "TillServer",
                "TillSimulator",
                "TillStorage",
                "TillWebhooks",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // `till demo` and `till shop`: an app on TillClient, so on Linux they link FoundationNetworking's URLSession
        // and with it libcurl. The trait `Demo` (on by default) puts them in `till`; the binary deployed to a
        // server is built without it and needs only what Debian's base has (docs/deploy.md).
        .target(
            name: "TillDemo",
            dependencies: [
                .product(name: "TillClient", package: "Client"),
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillDevelopment",
                "TillFormats",
                "TillAppStore",
                "TillServer",
                "TillSimulator",
                .product(name: "TillSnapshot", package: "Client"),
                "TillStorage",
                "TillWebhooks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        .executableTarget(
            name: "till",
            dependencies: [
                "TillBench",
                .target(name: "TillDemo", condition: .when(traits: ["Demo"])),
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillDevelopment",
                "TillFormats",
                "TillHTTPKit",
                "TillAppStore",
                "TillServer",
                "TillSimulator",
                "TillStorage",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // What a purchase and a customer read allocate, counted in a process of its own by the malloc interposer it
        // links (the counters are the process's): PurchaseAllocationTests runs it. `till` does not link it.
        .executableTarget(
            name: "till-allocations",
            dependencies: [
                "TillBench",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ],
            swiftSettings: upcoming,
            plugins: ledgerTables
        ),
        // What every test target shares: the `till` executable as a user runs it, the simulator and a production
        // server started apart and wired by settings, the test databases, and the rule for missing prerequisites.
        .target(
            name: "TillTestSupport",
            dependencies: [
                "TillStorage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/TillTestSupport",
            swiftSettings: upcoming
        ),
        // The fuzz targets: each parser of untrusted bytes, its properties, seeds and structure-aware mutator
        // (docs/fuzzing.md). Run under libFuzzer by Tools/fuzz, and by `swift test` on every input that ever failed.
        .target(
            name: "TillFuzzing",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillDevelopment",
                "TillFormats",
                "TillCatalogue",
                "TillLedger",
                "TillAppStore",
                "TillServer",
                "TillSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/TillFuzzing",
            swiftSettings: harness
        ),
        .testTarget(
            name: "TillCoreTests",
            dependencies: [.product(name: "TillCore", package: "Client")],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillContractTests",
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillSimulatorContract", package: "Client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillSnapshotTests",
            // TillFormats only to craft hostile input (its base64).
            dependencies: [
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillFormats",
                .product(name: "TillSnapshot", package: "Client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillHTTPKitTests",
            dependencies: [
                "TillHTTPKit",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillFormatsTests",
            dependencies: [
                .product(name: "TillCore", package: "Client"),
                "TillFormats",
                "TillTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillStorageTests",
            dependencies: [
                "TillStorage",
                "TillTestSupport",
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillServerTests",
            dependencies: [
                "TillBench",
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillDevelopment",
                "TillFormats",
                "TillHTTPKit",
                "TillJobs",
                "TillCatalogue",
                "TillConsole",
                "TillContent",
                "TillLedger",
                "TillAppStore",
                "TillServer",
                "TillSimulator",
                .product(name: "TillSnapshot", package: "Client"),
                "TillStorage",
                "TillTestSupport",
                "TillWebhooks",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["judge"],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillSimulatorTests",
            dependencies: [
                .product(name: "TillCore", package: "Client"),
                .product(name: "TillSimulatorContract", package: "Client"),
                "TillFormats",
                "TillHTTPKit",
                "TillSimulator",
                "TillStorage",
                "TillTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["judge"],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillFuzzingTests",
            dependencies: ["TillFuzzing", "TillTestSupport"],
            exclude: ["Regressions"],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillClientTests",
            dependencies: [
                .product(name: "TillClient", package: "Client"),
                .product(name: "TillContract", package: "Client"),
                .product(name: "TillCore", package: "Client"),
                "TillFormats",
                "TillCatalogue",
                "TillContent",
                "TillLedger",
                "TillAppStore",
                "TillServer",
                "TillSimulator",
                .product(name: "TillSnapshot", package: "Client"),
                "TillStorage",
                "TillTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcoming
        ),
    ]
)

// The libFuzzer driver of the fuzz targets, built only by Tools/fuzz (TILL_FUZZ set), linked with libFuzzer and
// AddressSanitizer's runtime. `swift build` and `swift test` never see it; `swift test` replays the targets'
// regression inputs without the fuzzer (Tests/TillFuzzingTests).
if fuzzing {
    package.targets.append(
        .executableTarget(
            name: "till-fuzz",
            dependencies: ["TillFuzzing"],
            path: "Tools/FuzzDriver",
            exclude: ["lsan.supp"],
            swiftSettings: harness,
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
        )
    )
}
