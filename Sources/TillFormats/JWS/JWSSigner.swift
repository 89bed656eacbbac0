import Crypto
import Foundation
import SwiftASN1
import X509

/// Signs payloads as the App Store does: compact JWS, ES256, header `{"alg":"ES256","x5c":[leaf, intermediate, root]}`.
public struct JWSSigner: Sendable {
    private let key: P256.Signing.PrivateKey
    private let encodedHeader: String

    /// - Parameters:
    ///   - key: the leaf certificate's private key.
    ///   - chain: leaf first; written into `x5c` as standard base64 DER.
    ///   - keyId, type: optional `kid` and `typ` header fields (Xcode writes both; the App Store neither).
    public init(key: P256.Signing.PrivateKey, chain: [Certificate], keyId: String? = nil, type: String? = nil) throws {
        self.key = key
        var header = #"{"alg":"ES256""#
        if let type { header += #","typ":"\#(type)""# }
        if let keyId { header += #","kid":"\#(keyId)""# }
        let certificates = try chain.map { certificate -> String in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return "\"" + Base64.encode(serializer.serializedBytes) + "\""
        }
        header += #","x5c":[\#(certificates.joined(separator: ","))]}"#
        self.encodedHeader = Base64.encode(Array(header.utf8), alphabet: .url)
    }

    /// Signs `payload`, encoded with Apple's conventions (dates as integer milliseconds).
    public func sign(_ payload: some Encodable) throws -> String {
        try sign(payloadJSON: Array(JWSEncoding.encoder.encode(payload)))
    }

    /// Signs payload bytes as they are.
    public func sign(payloadJSON: [UInt8]) throws -> String {
        let signingInput = encodedHeader + "." + Base64.encode(payloadJSON, alphabet: .url)
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64.encode(signature.rawRepresentation, alphabet: .url)
    }
}

enum JWSEncoding {
    static let encoder = AppleJSON.makeEncoder()
}
