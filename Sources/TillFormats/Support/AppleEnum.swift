/// A string value Apple defines a set of, kept as its raw value so that values added by Apple later
/// decode instead of failing (`notificationType`, `type`, `transactionReason`, …).
public protocol AppleStringValue: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
where RawValue == String {
    init(rawValue: String)
}

extension AppleStringValue {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
}

/// An integer value Apple defines a set of (`offerType`, `revocationReason`, `status`, …), kept as its raw value.
public protocol AppleIntValue: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
where RawValue == Int {
    init(rawValue: Int)
}

extension AppleIntValue {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
    public var description: String { String(rawValue) }
}
