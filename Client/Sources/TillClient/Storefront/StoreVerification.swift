/// Whether the store's signed data checked out on the device: StoreKit 2's `VerificationResult`.
///
/// StoreKit 2 verifies each transaction's JWS on the device before handing it over; an ``unverified(_:_:)`` value
/// is reported and never delivered. StoreKit 1 signs nothing per transaction: its transactions come
/// ``verified(_:)``, their evidence is the app receipt, and the server's check of that receipt is the only one.
/// Whatever the device says, the server verifies the evidence again before it grants anything.
public enum StoreVerification<Value: Sendable>: Sendable {
    case verified(Value)
    case unverified(Value, StoreVerificationError)

    /// The value, whether or not it verified (StoreKit 2's `unsafePayloadValue`).
    public var unsafePayloadValue: Value {
        switch self {
        case .verified(let value), .unverified(let value, _): value
        }
    }

    /// The value if it verified; otherwise throws why not (StoreKit 2's `payloadValue`).
    public var payloadValue: Value {
        get throws {
            switch self {
            case .verified(let value): return value
            case .unverified(_, let error): throw error
            }
        }
    }

    public var isVerified: Bool {
        if case .verified = self { return true }
        return false
    }

    /// Why it did not verify.
    public var verificationError: StoreVerificationError? {
        if case .unverified(_, let error) = self { return error }
        return nil
    }

    public func map<Other: Sendable>(_ transform: (Value) throws -> Other) rethrows -> StoreVerification<Other> {
        switch self {
        case .verified(let value): .verified(try transform(value))
        case .unverified(let value, let error): .unverified(try transform(value), error)
        }
    }
}

extension StoreVerification: Equatable where Value: Equatable {}
extension StoreVerification: Hashable where Value: Hashable {}

/// Why signed data did not verify on the device (StoreKit 2's `VerificationResult.VerificationError`).
public struct StoreVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        case revokedCertificate
        case invalidCertificateChain
        case invalidDeviceVerification
        case invalidEncoding
        case invalidSignature
        case missingRequiredProperties
        /// A reason this version does not name.
        case unknown
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, message: String = "") {
        self.reason = reason
        self.message = message
    }

    public var description: String { message.isEmpty ? reason.rawValue : "\(reason.rawValue): \(message)" }
}
