import Foundation
import Testing

/// How many tests that start live services may run at once in this test process, whatever width Swift Testing
/// runs at: the package's bound on what runs out under load.
///
/// Swift Testing starts every test at once by default. A test that opens databases, servers, clients or child
/// processes holds descriptors, connections and threads while it runs: with all of them at once, this 2-core
/// machine held about 1,600 descriptors, past the point where Foundation's `Process.run()` (which lists
/// `/proc/self/fd` in the child) crashes, and deadlines of the code under test were missed because the
/// machine was hundreds of tests behind. Such suites carry ``Trait/sharingTheMachine``; each of their tests waits
/// here for a share, so the same number run together under `swift test`, under `.ci/run` and on a bigger machine,
/// and nothing a test holds grows with the width. Tests of pure values need no share and run beside them.
///
/// A share is taken once per test: a test's own child tasks and services run under it (a task-local marks the
/// holder), so nothing nested waits for a second one.
public actor MachineShare {
    /// Four tests per core, from 8 on a 2-core machine (the width that held at most 171 descriptors) to 16.
    public static let limit = min(16, max(8, 4 * ProcessInfo.processInfo.activeProcessorCount))
    public static let shared = MachineShare(limit: limit)

    /// The shares the current task holds (its test's), by instance.
    @TaskLocal static var held: Set<ObjectIdentifier> = []

    let limit: Int
    private var inUse = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(limit: Int) { self.limit = limit }

    /// Runs `body` holding one share, waiting for one first (a test already holding one runs at once).
    public nonisolated func run<T>(_ body: () async throws -> T) async rethrows -> T {
        let me = ObjectIdentifier(self)
        if Self.held.contains(me) { return try await body() }
        await acquire()
        do {
            let result = try await Self.$held.withValue(Self.held.union([me])) { try await body() }
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    /// Shares taken now (for the tests of this type).
    public var taken: Int { inUse }

    private func acquire() async {
        if inUse < limit {
            inUse += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            inUse -= 1
        } else {
            // The share passes straight to the first waiter: `inUse` stays the same.
            waiting.removeFirst().resume()
        }
    }
}

/// Takes a ``MachineShare`` for each test of the suite or test it is applied to.
public struct SharingTheMachine: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope (testCase nil) takes nothing: its tests each take their share.
        guard testCase != nil else { return try await function() }
        try await MachineShare.shared.run { try await function() }
    }
}

extension SuiteTrait where Self == SharingTheMachine {
    /// The suite's tests start live services (databases, servers, clients, child processes): each runs holding
    /// one of ``MachineShare/limit`` shares of the machine.
    public static var sharingTheMachine: Self { SharingTheMachine() }
}

extension TestTrait where Self == SharingTheMachine {
    /// A test that starts live services, in a suite that does not: it runs holding one share of the machine.
    public static var sharingTheMachine: Self { SharingTheMachine() }
}
