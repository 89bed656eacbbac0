/// The App Store environment a purchase was made in.
///
/// Decoding is forward compatible: an unknown raw value is kept as is.
public struct AppStoreEnvironment: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// Real purchases with real money.
    public static let production = AppStoreEnvironment("Production")
    /// Apple's sandbox: test accounts, no money, accelerated renewals.
    public static let sandbox = AppStoreEnvironment("Sandbox")
    /// StoreKit Testing in Xcode: signed on the developer's machine.
    public static let xcode = AppStoreEnvironment("Xcode")
    /// Local unit testing of Apple's libraries.
    public static let localTesting = AppStoreEnvironment("LocalTesting")

    /// The four environments Apple defines.
    public static let known: [AppStoreEnvironment] = [.production, .sandbox, .xcode, .localTesting]

    /// Whether Apple defines this environment.
    public var isKnown: Bool { Self.known.contains(self) }

    /// Whether money changes hands: only production purchases count as revenue.
    public var isRevenue: Bool { self == .production }

    /// Whether data from this environment is signed on the developer's machine rather than by Apple.
    public var isLocallySigned: Bool { self == .xcode || self == .localTesting }

    /// The environment verifyReceipt redirects to (21007 sends production to sandbox, 21008 the reverse).
    public var verifyReceiptCounterpart: AppStoreEnvironment? {
        switch self {
        case .production: .sandbox
        case .sandbox: .production
        default: nil
        }
    }

    /// Parses a name case-insensitively (`production`, `Sandbox`, `localtesting`, …).
    public init?(parsing name: String) {
        guard let match = Self.known.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
            return nil
        }
        self = match
    }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
