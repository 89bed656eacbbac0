#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A byte-string dictionary key hashed in bulk: `[UInt8]` and `ArraySlice<UInt8>` hash one element at a
/// time, which costs more than the signature check when the key holds a whole certificate chain.
struct BytesKey: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ bytes: some Sequence<UInt8>) {
        self.bytes = Array(bytes)
    }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Whether the key holds exactly `other`.
    func equals(_ other: ArraySlice<UInt8>) -> Bool {
        bytes.count == other.count
            && bytes.withUnsafeBytes { l in
                other.withUnsafeBytes { r in l.count == 0 || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0 }
            }
    }

    static func == (lhs: BytesKey, rhs: BytesKey) -> Bool {
        lhs.bytes.count == rhs.bytes.count
            && lhs.bytes.withUnsafeBytes { l in
                rhs.bytes.withUnsafeBytes { r in l.count == 0 || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0 }
            }
    }
}
