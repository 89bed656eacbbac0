// swift-tools-version: 6.0
// An iOS app package: open this folder in Xcode 16 or later (File ▸ Open…) and run the "Till Shop" scheme. It is not
// built on Linux; CI type-checks App/*.swift against the StoreKit and SwiftUI stand-in (Tests/AppleStandIns).
import AppleProductTypes
import PackageDescription

let package = Package(
    name: "TillShop",
    platforms: [.iOS("17.0")],
    products: [
        .iOSApplication(
            name: "Till Shop",
            targets: ["TillShop"],
            bundleIdentifier: "com.example.till",
            teamIdentifier: "",
            displayVersion: "1.0",
            bundleVersion: "1",
            appIcon: .placeholder(icon: .box),
            accentColor: .presetColor(.orange),
            supportedDeviceFamilies: [.pad, .phone],
            supportedInterfaceOrientations: [
                .portrait,
                .landscapeRight,
                .landscapeLeft,
                .portraitUpsideDown(.when(deviceFamilies: [.pad])),
            ]
        )
    ],
    dependencies: [
        // TillClient's own package, in this repository. An app adds the repository by URL and version (docs/client.md,
        // "Adding the package"); this example takes the folder itself, so it builds with the client as it is.
        .package(path: "../../Client")
    ],
    targets: [
        .executableTarget(
            name: "TillShop",
            dependencies: [.product(name: "TillClient", package: "Client")],
            path: "App"
        )
    ]
)
