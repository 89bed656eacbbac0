import Foundation
import MallocInterposerSwift
import TillBench

// What a purchase and a customer read allocate on the server (TillBench's AllocationCount), counted by the mirrored
// malloc interposer: this program links it, so its malloc and free are the process's, and the counters see every
// allocation of every thread. `till` does not link it (the server shipped keeps the C library's allocator): a program
// of its own keeps the counters to one process with nothing else in it. `PurchaseAllocationTests` runs it.
//
//     swift run till-allocations [requests] [warm]

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let requests = arguments.first ?? 400
let warm = arguments.dropFirst().first ?? 200

let counter = AllocationCount.Counter(
    start: {
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
    },
    stop: {
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        return (statistics.mallocCount, statistics.mallocBytesCount)
    }
)

do {
    // The interposer answers only when it is the process's malloc: none counted means it is not.
    counter.start()
    let probe = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
    probe.deallocate()
    guard counter.stop().allocations > 0 else {
        FileHandle.standardError.write(
            Data("till-allocations: the malloc interposer is not this process's malloc\n".utf8)
        )
        exit(2)
    }
    for figure in try await AllocationCount.run(requests: requests, warm: warm, counter: counter) {
        print(figure)
    }
} catch {
    FileHandle.standardError.write(Data("till-allocations: \(error)\n".utf8))
    exit(1)
}
