#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The three segments of a JWS in compact serialization (RFC 7515 §7.1):
///
/// ```
/// BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(signature)
/// ```
struct CompactJWS {
    /// The ASCII bytes of the header segment (still base64url): the cache key of its certificate chain.
    var headerSegment: ArraySlice<UInt8>
    var payloadSegment: ArraySlice<UInt8>
    var signatureSegment: ArraySlice<UInt8>

    /// Splits `bytes`; nil unless there are exactly three non-empty segments.
    init?(_ bytes: [UInt8]) {
        let dots: (Int, Int)? = bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            func dot(after start: Int) -> Int? {
                guard start < buffer.count,
                    let found = memchr(base + start, Int32(UInt8(ascii: ".")), buffer.count - start)
                else { return nil }
                return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            }
            guard let first = dot(after: 0), let second = dot(after: first + 1), dot(after: second + 1) == nil else {
                return nil
            }
            return (first, second)
        }
        guard let (firstDot, secondDot) = dots, firstDot > 0, secondDot > firstDot + 1, secondDot < bytes.count - 1
        else { return nil }
        headerSegment = bytes[..<firstDot]
        payloadSegment = bytes[(firstDot + 1)..<secondDot]
        signatureSegment = bytes[(secondDot + 1)...]
    }
}
