import Foundation
import Logging
import Synchronization
import Testing
import TillJobs
import TillStorage
import TillTestSupport

/// The one job runner (`JobRunner`): it runs each due job once, as many at once as its handler gives room for, wakes
/// for a job queued later, and on its way out lets the attempts under way end.
extension JobQueueTests {
    /// A handler that finishes each job after `gate` lets it, counting how many ran at once.
    final class RecordingHandler: JobHandler {
        struct Runs {
            var running = 0
            var most = 0
            var ended: [String] = []
            var waiting: [CheckedContinuation<Void, Never>] = []
            /// Claims with no room (`keepUp`).
            var keptUp = 0
        }
        let jobs: JobQueue
        let database: TillDatabase
        let concurrency: Int
        /// When set, each attempt waits for `release()`; otherwise it takes a few milliseconds.
        let gated: Bool
        /// When set, a runner with no room keeps up (`JobRoom.keepUp`), and waits 50 ms at most.
        let keepingUp: Bool
        let runs = Mutex(Runs())

        init(jobs: JobQueue, database: TillDatabase, concurrency: Int, gated: Bool = false, keepingUp: Bool = false) {
            self.jobs = jobs
            self.database = database
            self.concurrency = concurrency
            self.gated = gated
            self.keepingUp = keepingUp
        }

        var kind: JobKind { .delivery }
        /// Longer than any test waits: only a signal wakes the runner for a job queued later.
        var longestWait: Duration { keepingUp ? .milliseconds(50) : .seconds(120) }

        func room(running: Int) -> JobRoom {
            running >= concurrency && keepingUp ? .keepUp : .claim(max(0, concurrency - running))
        }

        func claim(limit: Int) async throws -> [Job] {
            if limit == 0 { runs.withLock { $0.keptUp += 1 } }
            return try await jobs.claim(.delivery, limit: limit, lease: .seconds(60))
        }

        func run(_ job: Job) async {
            runs.withLock {
                $0.running += 1
                $0.most = max($0.most, $0.running)
            }
            if gated {
                await withCheckedContinuation { continuation in runs.withLock { $0.waiting.append(continuation) } }
            } else {
                try? await Task.sleep(for: .milliseconds(20))
            }
            try? await database.transaction { db in try await self.jobs.finish(.delivery, key: job.jobKey, on: db) }
            runs.withLock {
                $0.running -= 1
                $0.ended.append(job.jobKey)
            }
        }

        func release() { runs.withLock { $0.waiting.removeFirst() }.resume() }
        var snapshot: Runs { runs.withLock { $0 } }
    }

    /// Polls `condition` every 10 ms for up to 20 s.
    func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test(arguments: TestDatabase.all)
    func theRunnerRunsEachDueJobOnceAsManyAtOnceAsItsRoomAndWakesForALaterOne(_ engine: TestDatabase) async throws {
        try await withQueue(engine) { jobs, database, _ in
            let keys = (1...10).map { "job-\($0)" }
            for key in keys { try await enqueue(jobs, database, key) }
            let handler = RecordingHandler(jobs: jobs, database: database, concurrency: 3)
            let runner = Task { await JobRunner(queue: jobs, handler: handler, logger: .init(label: "test")).run() }
            try await waitUntil("the ten jobs") { handler.snapshot.ended.count == 10 }
            #expect(handler.snapshot.ended.sorted() == keys.sorted(), "each job once")
            #expect(handler.snapshot.most == 3, "three at once, never more")

            // A job queued later: its signal wakes the runner (its longest wait is two minutes).
            try await enqueue(jobs, database, "later")
            jobs.wake(.delivery)
            try await waitUntil("the job queued later") { handler.snapshot.ended.count == 11 }
            runner.cancel()
            await runner.value
            #expect(handler.snapshot.ended.filter { $0 == "later" }.count == 1)
            #expect(
                try await jobs.depth().filter { $0.kind == .delivery && $0.state == .queued }.allSatisfy { $0.n == 0 }
            )
        }
    }

    @Test(arguments: TestDatabase.all)
    func aRunnerThatStopsLetsTheAttemptUnderWayEnd(_ engine: TestDatabase) async throws {
        try await withQueue(engine) { jobs, database, _ in
            try await enqueue(jobs, database, "a")
            let handler = RecordingHandler(jobs: jobs, database: database, concurrency: 1, gated: true)
            let returned = InFlightCount()
            let runner = Task {
                await JobRunner(queue: jobs, handler: handler, logger: .init(label: "test")).run()
                returned.add(1)
            }
            try await waitUntil("the attempt") { handler.snapshot.waiting.count == 1 }
            runner.cancel()
            try await Task.sleep(for: .milliseconds(100))
            #expect(returned.value == 0, "the runner waits for its attempt")
            handler.release()
            await runner.value
            #expect(handler.snapshot.ended == ["a"])
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(1)).isEmpty, "the attempt finished it")
        }
    }

    /// A handler whose claim does more than claim (the webhooks' rounds) is called with no room while every slot is
    /// taken (`JobRoom.keepUp`), and is handed no job then.
    @Test(arguments: TestDatabase.all)
    func aRunnerWithNoRoomKeepsUpWhenItsHandlerAsks(_ engine: TestDatabase) async throws {
        try await withQueue(engine) { jobs, database, _ in
            try await enqueue(jobs, database, "a")
            try await enqueue(jobs, database, "b")
            let handler = RecordingHandler(jobs: jobs, database: database, concurrency: 1, gated: true, keepingUp: true)
            let runner = Task { await JobRunner(queue: jobs, handler: handler, logger: .init(label: "test")).run() }
            try await waitUntil("the first attempt") { handler.snapshot.waiting.count == 1 }
            try await waitUntil("claims with no room") { handler.snapshot.keptUp >= 3 }
            #expect(handler.snapshot.running == 1, "no job handed out without room")
            handler.release()
            try await waitUntil("the second attempt") {
                handler.snapshot.ended.count == 1 && handler.snapshot.waiting.count == 1
            }
            runner.cancel()
            handler.release()
            await runner.value
            #expect(handler.snapshot.ended.sorted() == ["a", "b"])
        }
    }
}
