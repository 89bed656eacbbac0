/// The three segments of a JWS in compact serialization (RFC 7515 §7.1):
///
/// ```
/// BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(signature)
/// ```
struct CompactJWS {
    /// The ASCII bytes of the header segment (still base64url): the cache key of its certificate chain.
    var headerSegment: [UInt8]
    var payloadSegment: ArraySlice<UInt8>
    var signatureSegment: ArraySlice<UInt8>
    /// `header.payload`, the bytes the signature covers.
    var signingInput: ArraySlice<UInt8>

    /// Splits `bytes`; nil unless there are exactly three non-empty segments.
    init?(_ bytes: [UInt8]) {
        var firstDot = -1
        var secondDot = -1
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: ".") {
            if firstDot < 0 {
                firstDot = index
            } else if secondDot < 0 {
                secondDot = index
            } else {
                return nil
            }
        }
        guard firstDot > 0, secondDot > firstDot + 1, secondDot < bytes.count - 1 else { return nil }
        headerSegment = Array(bytes[..<firstDot])
        payloadSegment = bytes[(firstDot + 1)..<secondDot]
        signatureSegment = bytes[(secondDot + 1)...]
        signingInput = bytes[..<secondDot]
    }
}
