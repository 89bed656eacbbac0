/// Why signed data (a JWS, an app receipt, a transaction receipt) did not verify.
///
/// A value, not a thrown error at the call site: verifiers return ``VerificationOutcome``.
public struct VerificationFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable machine-readable reason (lowerCamel); new reasons may be added.
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Not a compact JWS / not a PKCS#7 structure / missing required header fields.
        public static let invalidFormat = Reason(rawValue: "invalidFormat")
        /// Larger than the configured limit.
        public static let tooLarge = Reason(rawValue: "tooLarge")
        /// A signature or digest algorithm Till does not accept (`alg` other than ES256, for instance).
        public static let unsupportedAlgorithm = Reason(rawValue: "unsupportedAlgorithm")
        /// A certificate could not be decoded, or has the wrong kind of key.
        public static let invalidCertificate = Reason(rawValue: "invalidCertificate")
        /// Not exactly leaf, intermediate and root.
        public static let invalidChainLength = Reason(rawValue: "invalidChainLength")
        /// No valid path to a trusted root at the validation time, or Apple's marker extensions missing.
        public static let invalidChain = Reason(rawValue: "invalidChain")
        /// The signature does not match the signed bytes.
        public static let verificationFailure = Reason(rawValue: "verificationFailure")
        /// The signed content could not be decoded.
        public static let malformedPayload = Reason(rawValue: "malformedPayload")
        /// Signed for another app (bundle id or app Apple id).
        public static let invalidAppIdentifier = Reason(rawValue: "invalidAppIdentifier")
        /// Signed for another environment.
        public static let invalidEnvironment = Reason(rawValue: "invalidEnvironment")

        public var description: String { rawValue }

        /// The closest status of Apple's official library (`VerificationStatus` of the Python library).
        public var appleStatus: String {
            switch self {
            case .invalidAppIdentifier: "INVALID_APP_IDENTIFIER"
            case .invalidEnvironment: "INVALID_ENVIRONMENT"
            case .invalidCertificate: "INVALID_CERTIFICATE"
            case .invalidChainLength: "INVALID_CHAIN_LENGTH"
            default: "VERIFICATION_FAILURE"
            }
        }
    }

    public var reason: Reason
    /// What exactly was wrong, for people.
    public var detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason): \(detail)" }
}

/// The outcome of verifying signed data: the decoded content, or why it was refused.
public enum VerificationOutcome<Value: Sendable>: Sendable {
    case valid(Value)
    case invalid(VerificationFailure)

    /// The value when valid.
    public var value: Value? {
        if case .valid(let value) = self { return value }
        return nil
    }

    /// The failure when invalid.
    public var failure: VerificationFailure? {
        if case .invalid(let failure) = self { return failure }
        return nil
    }

    public var isValid: Bool { value != nil }
}
