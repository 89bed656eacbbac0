// swift-tools-version: 6.1
import PackageDescription

let upcoming: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let crypto: [Target.Dependency] = [
    .product(name: "Crypto", package: "swift-crypto"),
    .product(name: "_CryptoExtras", package: "swift-crypto"),
    .product(name: "SwiftASN1", package: "swift-asn1"),
    .product(name: "X509", package: "swift-certificates"),
]

let server: [Target.Dependency] = [
    .product(name: "Hummingbird", package: "hummingbird"),
    // Hummingbird's configuration support exposes swift-system's C module to its importers.
    .product(name: "SystemPackage", package: "swift-system"),
    .product(name: "AsyncHTTPClient", package: "async-http-client"),
    .product(name: "JWTKit", package: "jwt-kit"),
    .product(name: "Logging", package: "swift-log"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    .product(name: "UnixSignals", package: "swift-service-lifecycle"),
    .product(name: "SQLKit", package: "sql-kit"),
    .product(name: "HTTPTypes", package: "swift-http-types"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOHTTP1", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    // Streams content files to and from disk off the event loops (Hummingbird's FileIO uses it too).
    .product(name: "_NIOFileSystem", package: "swift-nio"),
    .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
    .product(name: "Configuration", package: "swift-configuration"),
    .product(name: "Metrics", package: "swift-metrics"),
    .product(name: "Prometheus", package: "swift-prometheus"),
]

let package = Package(
    name: "Till",
    // What the code needs: Synchronization's Mutex (TillClient, the server) arrived with these releases. The server,
    // the simulator and the CLI run on macOS and Linux; TillClient, TillSnapshot and TillContract on every platform.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "till", targets: ["till"]),
        .library(name: "TillCore", targets: ["TillCore"]),
        .library(name: "TillFormats", targets: ["TillFormats"]),
        .library(name: "TillClient", targets: ["TillClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/vapor/async-kit.git", from: "1.22.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
    ],
    targets: [
        .target(name: "TillCore", swiftSettings: upcoming),
        // The HTTP contract: openapi.yaml, and the Swift types and client generated from it (committed; see
        // docs/contract.md and Tools/generate-contract).
        .target(
            name: "TillContract",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml", "Generated/MANIFEST"]
        ),
        // What the server and the simulator share over HTTP: the error type and middleware, JSON bodies, wake-ups.
        .target(
            name: "TillHTTPKit",
            dependencies: [
                "TillCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: upcoming
        ),
        .target(name: "TillFormats", dependencies: ["TillCore"] + crypto, swiftSettings: upcoming),
        // Signed entitlement snapshots: what the server signs and the app SDK checks, without the receipt machinery.
        .target(
            name: "TillSnapshot",
            dependencies: ["TillCore", "TillContract", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: upcoming
        ),
        .target(
            name: "TillStorage",
            dependencies: [
                "TillCore",
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "AsyncKit", package: "async-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: upcoming
        ),
        .target(
            name: "TillServer",
            dependencies: ["TillCore", "TillFormats", "TillStorage", "TillHTTPKit", "TillContract", "TillSnapshot"]
                + crypto + server,
            swiftSettings: upcoming
        ),
        .target(
            name: "TillSimulator",
            dependencies: ["TillCore", "TillFormats", "TillStorage", "TillHTTPKit"] + crypto + server,
            swiftSettings: upcoming
        ),
        .target(
            name: "TillClient",
            // The contract, the snapshot check and URLSession: nothing of the server's receipt machinery, no SwiftNIO.
            dependencies: [
                "TillCore", "TillSnapshot", "TillContract",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: upcoming
        ),
        .executableTarget(
            name: "till",
            dependencies: [
                "TillCore", "TillFormats", "TillStorage", "TillServer", "TillSimulator", "TillClient", "TillHTTPKit",
                "TillContract", "TillSnapshot", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ] + crypto + server,
            swiftSettings: upcoming
        ),
        // What every test target shares: the `till` executable as a user runs it, the simulator and a production
        // server started apart and wired by settings, the test databases, and the rule for missing prerequisites.
        .target(
            name: "TillTestSupport",
            dependencies: [
                "TillStorage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TillTestSupport",
            swiftSettings: upcoming
        ),
        .testTarget(name: "TillCoreTests", dependencies: ["TillCore"], swiftSettings: upcoming),
        .testTarget(
            name: "TillContractTests",
            dependencies: ["TillContract", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillSnapshotTests",
            // TillFormats only to craft hostile input (its base64).
            dependencies: [
                "TillSnapshot", "TillContract", "TillFormats", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillHTTPKitTests",
            dependencies: ["TillHTTPKit", .product(name: "HummingbirdTesting", package: "hummingbird")],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillFormatsTests",
            dependencies: ["TillFormats", "TillTestSupport"] + crypto,
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillStorageTests",
            dependencies: ["TillStorage", "TillTestSupport", .product(name: "SQLKit", package: "sql-kit")],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillServerTests",
            dependencies: [
                "TillServer", "TillSimulator", "TillTestSupport", "TillHTTPKit", "TillContract", "TillSnapshot",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
                + crypto + server,
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillSimulatorTests",
            dependencies: [
                "TillSimulator", "TillStorage", "TillTestSupport", "TillHTTPKit",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
                + crypto + server,
            exclude: ["judge"],
            swiftSettings: upcoming
        ),
        .testTarget(
            name: "TillClientTests",
            dependencies: [
                "TillClient", "TillServer", "TillSimulator", "TillStorage", "TillTestSupport", "TillContract",
                "TillSnapshot",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ] + crypto + server,
            swiftSettings: upcoming
        ),
    ]
)
