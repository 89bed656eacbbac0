import Foundation
import TillFuzzing

// The libFuzzer driver of Till's fuzz targets (docs/fuzzing.md). Built only by Tools/fuzz, with
// -sanitize=fuzzer,address: libFuzzer's runtime is linked in, and this main hands it the chosen target.
//
//   till-fuzz --list                      the targets, one a line
//   till-fuzz --seeds TARGET DIRECTORY    writes the target's seeds (samples, and Apple's vectors when present)
//   till-fuzz TARGET [libFuzzer flags] [corpus directories or input files]
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: TestOneInput
) -> Int32

@_silgen_name("LLVMFuzzerMutate")
func LLVMFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int) -> Int

/// The target this process fuzzes (set once, before libFuzzer starts).
nonisolated(unsafe) var selected: FuzzTarget?

/// libFuzzer's runtime (linked whole) refers to this symbol; the driver passes the same function explicitly.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let target = selected else { return 0 }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let failure = blocking({ try await target.check(bytes) }) {
        // An abort makes libFuzzer write the input out as a crash artifact, which Tools/fuzz keeps as a regression.
        FileHandle.standardError.write(Data("till-fuzz: \(target.name): \(failure)\n".utf8))
        abort()
    }
    return 0
}

/// Most mutations go through the target's structure (DER in CMS, base64 in JSON in JWS), the rest through
/// libFuzzer's byte mutations, which the structure-aware mutator also applies inside the parts it picks.
@_cdecl("LLVMFuzzerCustomMutator")
func customMutator(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int, _ seed: UInt32) -> Int {
    guard let target = selected, let mutate = target.mutate else { return LLVMFuzzerMutate(data, size, maxSize) }
    var random = FuzzRandom(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15)
    if random.chance(1, in: 4) { return LLVMFuzzerMutate(data, size, maxSize) }
    let output = mutate(Array(UnsafeBufferPointer(start: data, count: size)), &random, libFuzzerBytes)
    let count = min(output.count, maxSize)
    output.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: count) }
    return count
}

/// libFuzzer's own byte mutations, for the parts a structure-aware mutation picks.
let libFuzzerBytes = ByteMutator { bytes, maximum in
    let capacity = max(maximum, bytes.count, 1)
    var buffer = bytes + [UInt8](repeating: 0, count: capacity - bytes.count)
    let count = LLVMFuzzerMutate(&buffer, bytes.count, capacity)
    bytes = Array(buffer.prefix(count))
}

/// Runs async work to its end on this (libFuzzer's) thread; returns what it threw.
func blocking(_ work: @escaping @Sendable () async throws -> Void) -> (any Error)? {
    let done = DispatchSemaphore(value: 0)
    let failure = FailureBox()
    Task {
        do { try await work() } catch { failure.error = error }
        done.signal()
    }
    done.wait()
    return failure.error
}

final class FailureBox: @unchecked Sendable {
    var error: (any Error)?
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("till-fuzz: \(message)\n".utf8))
    exit(2)
}

var arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    fail("usage: till-fuzz --list | --seeds TARGET DIRECTORY | TARGET [libFuzzer arguments]")
}
switch arguments[1] {
case "--list":
    for target in FuzzTargets.all { print(target.name) }
    exit(0)
case "--seeds":
    guard arguments.count == 4, let target = FuzzTargets.named(arguments[2]) else {
        fail("usage: till-fuzz --seeds TARGET DIRECTORY")
    }
    let directory = URL(fileURLWithPath: arguments[3])
    let written = LockedCount()
    if let failure = blocking({
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for seed in try await target.seeds() {
            let name = "seed-" + String(seed.name.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
            try Data(seed.bytes).write(to: directory.appendingPathComponent(name))
            written.count += 1
        }
    }) {
        fail("\(target.name): seeds: \(failure)")
    }
    if !AppleVectors.available { print("till-fuzz: \(AppleVectors.absence)") }
    print("till-fuzz: \(target.name): \(written.count) seeds in \(directory.path)")
    exit(0)
default:
    guard let target = FuzzTargets.named(arguments[1]) else {
        fail("no target \(arguments[1]); `till-fuzz --list` names them")
    }
    selected = target
    arguments.remove(at: 1)
    if !arguments.contains(where: { $0.hasPrefix("-max_len=") }) {
        arguments.append("-max_len=\(target.maximumLength)")
    }
    var argc = Int32(arguments.count)
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    let status = argv.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var base = buffer.baseAddress!
        return LLVMFuzzerRunDriver(&argc, &base, testOneInput)
    }
    exit(status)
}

final class LockedCount: @unchecked Sendable {
    var count = 0
}
