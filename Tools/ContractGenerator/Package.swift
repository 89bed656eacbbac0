// swift-tools-version: 6.2
// Builds Apple's swift-openapi-generator, which turns Client/Sources/*/openapi.yaml into the Swift types and
// clients committed under each Generated/ folder. A package of its own so that building Till (and CI) never
// builds the generator: see docs/contract.md for why the output is committed and how it is kept current.
import PackageDescription

let package = Package(
    name: "ContractGenerator",
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator.git", exact: "1.14.3")
    ]
)
