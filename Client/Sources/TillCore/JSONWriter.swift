/// Writes JSON straight into bytes, for the few documents made on every purchase.
///
/// Foundation's `JSONEncoder` builds a tree of boxed values and, with sorted keys, sorts every object's keys
/// each time: encoding a submission's answer and its signed snapshot was 6% of the CPU of acknowledging a
/// purchase. A type written with this writer lists its keys itself, in the order `JSONEncoder` with
/// `.sortedKeys` and `.withoutEscapingSlashes` gives them, and leaves out nil values as its synthesised
/// `Encodable` does; tests compare the two outputs byte for byte.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Whether the innermost open object or array already holds a value (the next one needs a comma).
    private var filled: [Bool] = []
    /// A key was written: the next value is its value.
    private var pendingValue = false

    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        filled.append(false)
        body(&self)
        filled.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    public mutating func array<S: Sequence>(_ elements: S, _ body: (inout JSONWriter, S.Element) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        filled.append(false)
        for element in elements { body(&self, element) }
        filled.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// A key of the open object; its value is the next thing written.
    public mutating func key(_ key: String) {
        separate()
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
        pendingValue = true  // the value that follows takes no comma
    }

    public mutating func string(_ value: String) {
        separate()
        writeString(value)
    }

    public mutating func integer<I: BinaryInteger>(_ value: I) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        if value { bytes.append(contentsOf: "true".utf8) } else { bytes.append(contentsOf: "false".utf8) }
    }

    /// A value already written as JSON (a document stored as written), as it is: the caller vouches for it.
    public mutating func verbatim(_ json: String) {
        separate()
        bytes.append(contentsOf: json.utf8)
    }

    /// `key: value` for a string, left out when nil (as a synthesised `Encodable` does).
    public mutating func field(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    public mutating func field<I: BinaryInteger>(_ name: String, _ value: I?) {
        guard let value else { return }
        key(name)
        integer(value)
    }

    public mutating func field(_ name: String, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bool(value)
    }

    /// A dictionary of integers, its keys in ascending order.
    public mutating func field<I: BinaryInteger>(_ name: String, _ value: [String: I]) {
        key(name)
        object { writer in
            for (key, amount) in value.sorted(by: { $0.key < $1.key }) { writer.field(key, amount) }
        }
    }

    /// Marks a value written in the open container, after a comma if one came before it.
    private mutating func separate() {
        if pendingValue {
            pendingValue = false
        } else if let last = filled.last, last {
            bytes.append(UInt8(ascii: ","))
        }
        if !filled.isEmpty { filled[filled.count - 1] = true }
    }

    private mutating func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
