import Foundation

/// One parser of untrusted bytes under the fuzzer: how to run an input through it and which properties must hold,
/// where its seeds come from, and (where the bytes are nested) how to mutate them without breaking the outer layers.
///
/// The same `check` runs under libFuzzer (`Tools/fuzz`, built with AddressSanitizer) and in `swift test`, which
/// replays every input that ever failed (`Tests/TillFuzzingTests/Regressions/<name>/`). A crash is a crash in both;
/// a property that does not hold is a thrown ``PropertyViolation``, which the driver turns into an abort (and so a
/// libFuzzer artifact) and a test into a failure.
public struct FuzzTarget: Sendable {
    /// The name `Tools/fuzz` takes: lowercase words joined by hyphens.
    public var name: String
    /// What it feeds and to what, in one sentence (docs/fuzzing.md lists them).
    public var summary: String
    /// The largest input worth generating (libFuzzer's `-max_len`).
    public var maximumLength: Int
    /// The project's samples, and Apple's vectors when they are present (read in place, never copied).
    public var seeds: @Sendable () async throws -> [FuzzSeed]
    /// Runs one input; throws a ``PropertyViolation`` when a property fails.
    public var check: @Sendable ([UInt8]) async throws -> Void
    /// A structure-aware mutation of an input (nil: libFuzzer's byte mutations only). It is given libFuzzer's own
    /// byte mutator to apply inside the structure.
    public var mutate: (@Sendable (_ input: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator) -> [UInt8])?

    public init(
        name: String,
        summary: String,
        maximumLength: Int,
        seeds: @escaping @Sendable () async throws -> [FuzzSeed],
        check: @escaping @Sendable ([UInt8]) async throws -> Void,
        mutate: (@Sendable (_ input: [UInt8], _ random: inout FuzzRandom, _ bytes: ByteMutator) -> [UInt8])? = nil
    ) {
        self.name = name
        self.summary = summary
        self.maximumLength = maximumLength
        self.seeds = seeds
        self.check = check
        self.mutate = mutate
    }
}

/// A named starting input.
public struct FuzzSeed: Sendable {
    public var name: String
    public var bytes: [UInt8]

    public init(_ name: String, _ bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    public init(_ name: String, text: String) {
        self.init(name, Array(text.utf8))
    }
}

/// A property of a parser that did not hold for an input.
public struct PropertyViolation: Error, Sendable, CustomStringConvertible {
    /// Which property (`round trip`, `ignored bytes`, `no 5xx`, …).
    public var property: String
    public var detail: String

    public init(_ property: String, _ detail: String) {
        self.property = property
        self.detail = detail
    }

    public var description: String { "\(property): \(detail)" }
}

/// Fails with `property` unless `condition` holds.
func require(
    _ condition: Bool,
    _ property: String,
    _ detail: @autoclosure () -> String
) throws(PropertyViolation) {
    if !condition { throw PropertyViolation(property, detail()) }
}

/// The byte-level mutator a structure-aware mutation applies to the parts it picks: libFuzzer's
/// `LLVMFuzzerMutate` under the fuzzer, a simple random one in tests.
public struct ByteMutator: Sendable {
    private let body: @Sendable (inout [UInt8], _ maximumLength: Int) -> Void

    public init(_ body: @escaping @Sendable (inout [UInt8], _ maximumLength: Int) -> Void) {
        self.body = body
    }

    /// Mutates `bytes` in place, keeping them at most `maximumLength` long.
    public func callAsFunction(_ bytes: inout [UInt8], maximumLength: Int) {
        body(&bytes, maximumLength)
    }

    /// Flips, inserts, erases or overwrites a few bytes: what the tests use without libFuzzer.
    public static func simple(seed: UInt64) -> ByteMutator {
        let state = LockedBox(FuzzRandom(seed: seed))
        return ByteMutator { bytes, maximum in
            state.withLock { random in
                for _ in 0..<random.int(1...4) {
                    switch random.int(0...3) {
                    case 0 where !bytes.isEmpty: bytes[random.int(0...bytes.count - 1)] ^= UInt8(1 << random.int(0...7))
                    case 1 where bytes.count < maximum: bytes.insert(random.byte(), at: random.int(0...bytes.count))
                    case 2 where !bytes.isEmpty: bytes.remove(at: random.int(0...bytes.count - 1))
                    default: if !bytes.isEmpty { bytes[random.int(0...bytes.count - 1)] = random.interestingByte() }
                    }
                }
            }
        }
    }
}

/// A value behind a lock.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// SplitMix64: a small, fast, seedable generator, so that a mutation is a function of libFuzzer's seed.
public struct FuzzRandom: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `range` (which must not be empty).
    public mutating func int(_ range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound) &+ 1
        return range.lowerBound + Int(width == 0 ? next() >> 1 : next() % width)
    }

    /// True with probability `numerator / denominator`.
    public mutating func chance(_ numerator: Int, in denominator: Int) -> Bool {
        int(0...denominator - 1) < numerator
    }

    public mutating func element<T>(of items: [T]) -> T {
        items[int(0...items.count - 1)]
    }

    public mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }

    /// A byte that often sits at a boundary: 0, 0x7F, 0x80, 0xFF and their neighbours.
    public mutating func interestingByte() -> UInt8 {
        element(of: [0x00, 0x01, 0x7E, 0x7F, 0x80, 0x81, 0xFE, 0xFF])
    }
}
