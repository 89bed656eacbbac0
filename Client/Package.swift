// swift-tools-version: 6.0
// TillClient, the package an app adds: the SDK and what it is made of (the domain values, the HTTP contract, the
// snapshot check, the simulator's device API), from StoreKit 2's floors. A package of its own inside the repository
// because the server's dependencies (Hummingbird: macOS 14, iOS 17; Synchronization's Mutex: macOS 15, iOS 18)
// force the root package's platforms up. The root package depends on it by path. Its dependency graph has no
// SwiftNIO: swift-crypto, swift-asn1, the OpenAPI runtime and its URLSession transport, HTTP types, collections.
// Tools 6.0, so that Xcode 16.0 and later open it (Swift 6 language mode); StoreKit calls that only newer SDKs have
// are compiled only with the Xcode that has them (docs/client.md, "Which Xcode"). A release tag of the repository
// holds this folder at its root: an app adds it by URL and version (docs/releasing.md).
import PackageDescription

let upcoming: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "TillClient",
    // StoreKit 2's floors. Nothing in these targets needs more: what a newer OS adds (win-back offers, the
    // AppTransaction's id, Observation) is used behind `#available`, and Tests/AppleStandIns checks it.
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .library(name: "TillClient", targets: ["TillClient"]),
        .library(name: "TillCore", targets: ["TillCore"]),
        .library(name: "TillContract", targets: ["TillContract"]),
        .library(name: "TillSimulatorContract", targets: ["TillSimulatorContract"]),
        .library(name: "TillSnapshot", targets: ["TillSnapshot"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
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
                "TillCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml", "Generated/MANIFEST"]
        ),
        // till simulator's device API (`/storekit/…`): its document, and the types and client generated from it.
        .target(
            name: "TillSimulatorContract",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml", "Generated/MANIFEST"]
        ),
        // Signed entitlement snapshots: what the server signs and the app SDK checks, without the receipt machinery.
        .target(
            name: "TillSnapshot",
            dependencies: [
                "TillContract",
                "TillCore",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: upcoming
        ),
        .target(
            name: "TillClient",
            // The contracts, the snapshot check and URLSession: nothing of the server's receipt machinery, no
            // SwiftNIO. StoreKit, SwiftUI, Combine and Network come from Apple's SDK.
            dependencies: [
                "TillContract",
                "TillCore",
                "TillSimulatorContract",
                "TillSnapshot",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ],
            swiftSettings: upcoming
        ),
    ]
)
