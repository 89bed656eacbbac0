// swift-tools-version: 6.1
import PackageDescription

let upcoming: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Till",
    platforms: [.macOS(.v15)],
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
    ],
    targets: [
        .target(name: "TillCore", swiftSettings: upcoming),
        .target(
            name: "TillFormats",
            dependencies: [
                "TillCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: upcoming
        ),
        .target(name: "TillStorage", dependencies: ["TillCore"], swiftSettings: upcoming),
        .target(name: "TillServer", dependencies: ["TillCore", "TillFormats", "TillStorage"], swiftSettings: upcoming),
        .target(
            name: "TillSimulator",
            dependencies: ["TillCore", "TillFormats", "TillStorage"],
            swiftSettings: upcoming
        ),
        .target(name: "TillClient", dependencies: ["TillCore", "TillFormats"], swiftSettings: upcoming),
        .executableTarget(
            name: "till",
            dependencies: [
                "TillCore", "TillFormats", "TillServer", "TillSimulator", "TillClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(name: "TillCoreTests", dependencies: ["TillCore"], swiftSettings: upcoming),
        .testTarget(
            name: "TillFormatsTests",
            dependencies: [
                "TillFormats",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: upcoming
        ),
        .testTarget(name: "TillStorageTests", dependencies: ["TillStorage"], swiftSettings: upcoming),
        .testTarget(name: "TillServerTests", dependencies: ["TillServer"], swiftSettings: upcoming),
        .testTarget(name: "TillSimulatorTests", dependencies: ["TillSimulator"], swiftSettings: upcoming),
        .testTarget(name: "TillClientTests", dependencies: ["TillClient"], swiftSettings: upcoming),
    ]
)
