import Foundation
import SQLKit
import Synchronization
import Testing
import TillJobs
import TillLedger
import TillStorage
import TillTestSupport

@testable import TillServer

/// The one durable job queue (`JobQueue`): claims with a lease, retries at the time the worker chooses, dead letters,
/// streams that run in order, and several workers sharing it on PostgreSQL without claiming a job twice.
@Suite(.sharingTheMachine)
struct JobQueueTests {
    /// A clock the test moves.
    final class TestClock: Sendable {
        private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
        var date: Date { now.withLock { $0 } }
    }

    func withQueue(
        _ engine: TestDatabase,
        _ body: (JobQueue, TillDatabase, TestClock) async throws -> Void
    ) async throws {
        let database = try await TillDatabase.open(try await engine.fresh(prefix: "till_jobs"))
        try await ServerSchema.migrate(database)
        let clock = TestClock()
        let jobs = JobQueue(
            database: database,
            store: JobStore(database: database),
            clock: ServerClock { clock.date },
            metrics: ServerMetrics()
        )
        do {
            try await body(jobs, database, clock)
        } catch {
            try await database.shutdown()
            throw error
        }
        try await database.shutdown()
    }

    func enqueue(
        _ jobs: JobQueue,
        _ database: TillDatabase,
        _ key: String,
        stream: String? = nil,
        position: Int64 = 0,
        dueIn: Int64 = 0,
        group: String = ""
    ) async throws {
        try await database.transaction { db in
            try await jobs.enqueue(
                .delivery,
                key: key,
                group: group,
                stream: stream,
                position: position,
                dueAt: jobs.clock.milliseconds + dueIn,
                trace: nil,
                on: db
            )
        }
    }

    /// A claim passes over the jobs under way (still queued, with their claim's end) in its index alone: with
    /// thousands of confirmations waiting for Apple, reading each one's row cost every claim milliseconds (migration
    /// 028). Held jobs are not claimed again; lapsed ones are, oldest due first.
    @Test(arguments: TestDatabase.all) func aClaimPassesOverJobsUnderWayInItsIndex(_ engine: TestDatabase) async throws
    {
        try await withQueue(engine) { jobs, database, clock in
            for index in 0..<30 { try await enqueue(jobs, database, "job-\(index)", dueIn: Int64(index)) }
            clock.advance(1)
            let first = try await jobs.claim(.delivery, limit: 20, lease: .seconds(60))
            #expect(first.map(\.jobKey) == (0..<20).map { "job-\($0)" })
            let second = try await jobs.claim(.delivery, limit: 20, lease: .seconds(60))
            #expect(second.map(\.jobKey) == (20..<30).map { "job-\($0)" })
            #expect(try await jobs.claim(.delivery, limit: 20, lease: .seconds(60)).isEmpty)
            clock.advance(61)
            #expect(
                try await jobs.claim(.delivery, limit: 5, lease: .seconds(60)).map(\.jobKey)
                    == (0..<5).map { "job-\($0)" }
            )
            guard database.engine == .sqlite else { return }
            let plan = try await database.sql.raw(
                """
                EXPLAIN QUERY PLAN SELECT j.job_key FROM srv_jobs j
                WHERE j.kind = 'delivery' AND j.queue_group = '' AND j.state = 'queued' AND j.due_at <= 1
                  AND (j.claimed_until IS NULL OR j.claimed_until < 1)
                  AND (j.stream IS NULL OR NOT EXISTS (
                    SELECT 1 FROM srv_jobs e WHERE e.kind = j.kind AND e.stream = j.stream AND e.state = 'queued'
                      AND e.position < j.position))
                ORDER BY j.due_at, j.position LIMIT 10
                """
            ).all().map { try $0.decode(column: "detail", as: String.self) }
            #expect(plan.contains { $0.contains("COVERING INDEX srv_jobs_due") }, "\(plan)")
        }
    }

    /// A group has one holder at a time (`JobQueue.hold`, the webhooks' dispatcher of an endpoint): its holder renews
    /// it, another worker is refused until it lapses and then takes it, a holder that stops frees it at once, and the
    /// owner of an SQLite file frees every hold. Holds of one kind leave another kind's alone.
    @Test(arguments: TestDatabase.all) func aGroupHasOneHolderAtATime(_ engine: TestDatabase) async throws {
        try await withQueue(engine) { jobs, database, clock in
            func hold(_ worker: String, _ kind: JobKind = .delivery, group: String = "ep_1", for seconds: Int64 = 60)
                async throws -> Bool
            {
                try await database.transaction { db in
                    try await jobs.hold(
                        kind,
                        group: group,
                        for: worker,
                        until: jobs.clock.milliseconds + seconds * 1000,
                        on: db
                    )
                }
            }
            func held(byAnotherThan worker: String, group: String = "ep_1") async throws -> Bool {
                try await jobs.isHeld(.delivery, group: group, byAnotherThan: worker, on: database.sql)
            }
            #expect(try await hold("wkr_a"))
            #expect(try await hold("wkr_a", for: 120), "renewed by its holder")
            #expect(try await !hold("wkr_b"), "held by another")
            #expect(try await hold("wkr_b", .confirmation), "another kind's group of the same name is free")
            #expect(try await held(byAnotherThan: "wkr_b"))
            #expect(try await !held(byAnotherThan: "wkr_a"))
            #expect(try await !held(byAnotherThan: "wkr_b", group: "ep_2"))
            #expect(try await jobs.holds(.delivery, on: database.sql)["ep_1"]?.holder == "wkr_a")

            // Lapsed: nobody holds it, and another worker takes it.
            clock.advance(121)
            #expect(try await !held(byAnotherThan: "wkr_b"))
            #expect(try await jobs.holds(.delivery, on: database.sql).isEmpty)
            #expect(try await hold("wkr_b"))
            #expect(try await !hold("wkr_a"))

            // A holder that stops frees its groups of that kind at once.
            #expect(try await hold("wkr_b", group: "ep_2"))
            try await jobs.releaseHolds(.delivery, of: "wkr_b")
            #expect(try await jobs.holds(.delivery, on: database.sql).isEmpty)
            #expect(try await hold("wkr_a"))

            // The owner of an SQLite file frees them all, and says how many of each kind.
            #expect(try await jobs.releaseAllHolds() == [.delivery: 1, .confirmation: 1])
            #expect(try await hold("wkr_c"))
        }
    }

    /// Jobs are inserted and claimed through hand-written columns (`Job.columns`, `Job(row:)`): what they write, Codable
    /// reads back the same, and what they read is what Codable wrote.
    @Test(arguments: TestDatabase.all) func handWrittenRowsMatchCodables(_ engine: TestDatabase) async throws {
        try await withQueue(engine) { jobs, database, _ in
            let store = jobs.store
            let now = jobs.clock.milliseconds
            let streamed = Job(
                kind: .delivery,
                jobKey: "streamed",
                state: .queued,
                queueGroup: "ep_1",
                stream: "ep_1:alice",
                position: 42,
                attempts: 3,
                dueAt: now - 5,
                claimedUntil: now - 1,
                lastError: "the receiver answered HTTP 500",
                createdAt: now - 100,
                updatedAt: now - 50
            )
            let bare = Job(
                kind: .delivery,
                jobKey: "bare",
                state: .queued,
                attempts: 0,
                dueAt: now,
                createdAt: now,
                updatedAt: now
            )
            try await database.transaction { db in try await store.insertJobs([streamed, bare], on: db) }
            for job in [streamed, bare] {
                let read = try await database.read { db in
                    try await db.raw("SELECT * FROM srv_jobs WHERE job_key = \(bind: job.jobKey)")
                        .first(decoding: Job.self, with: ColumnNames.decoder)
                }
                #expect(read == job)
            }
            // Codable's columns are the hand-written ones, in the same order, with the same values.
            let encoded = try ColumnNames.encoder.encode(streamed)
            #expect(encoded.map(\.0) == Job.columns)
            #expect(Job.columns.count == streamed.row.count)

            let claimed = try await jobs.claim(.delivery, group: "ep_1", limit: 5, lease: .seconds(30))
            #expect(claimed.count == 1)
            let first = try #require(claimed.first)
            var expected = streamed
            expected.attempts += 1
            (expected.claimedUntil, expected.updatedAt) = (first.claimedUntil, first.updatedAt)
            #expect(first == expected)
            #expect((first.claimedUntil ?? 0) > now && first.updatedAt == now)
        }
    }

    /// A worker's own job under way is never claimed again by it, even once the lease has passed (the webhook worker
    /// passes the deliveries it has not recorded yet); another worker may claim it then.
    @Test(arguments: TestDatabase.all) func aJobUnderWayIsNotClaimedAgainByItsOwnWorker(_ engine: TestDatabase)
        async throws
    {
        try await withQueue(engine) { jobs, database, clock in
            try await enqueue(jobs, database, "mine", group: "ep_1")
            try await enqueue(jobs, database, "other", group: "ep_1")
            let claimed = try await database.transaction(bookkeeping: true) { db in
                try await jobs.claim(.delivery, group: "ep_1", limit: 1, lease: .seconds(5), on: db)
            }
            #expect(claimed.map(\.jobKey) == ["mine"] || claimed.map(\.jobKey) == ["other"], "\(claimed)")
            let held = try #require(claimed.first?.jobKey)
            clock.advance(60)  // the lease has passed, its answer not recorded yet
            let again = try await database.transaction(bookkeeping: true) { db in
                try await jobs.claim(.delivery, group: "ep_1", limit: 5, lease: .seconds(5), excluding: [held], on: db)
            }
            #expect(!again.map(\.jobKey).contains(held) && again.count == 1)
            clock.advance(60)
            let anyone = try await database.transaction(bookkeeping: true) { db in
                try await jobs.claim(.delivery, group: "ep_1", limit: 5, lease: .seconds(5), on: db)
            }
            #expect(Set(anyone.map(\.jobKey)) == ["mine", "other"], "a lapsed claim is anyone's")
        }
    }

    @Test(arguments: TestDatabase.all) func aClaimIsLeasedRetriedWhenItsWorkerSaysAndDeadLettered(
        _ engine: TestDatabase
    ) async throws {
        try await withQueue(engine) { jobs, database, clock in
            try await enqueue(jobs, database, "a")
            try await enqueue(jobs, database, "b")
            try await enqueue(jobs, database, "later", dueIn: 3_600_000)
            let first = try await jobs.claim(.delivery, limit: 10, lease: .seconds(30))
            #expect(Set(first.map(\.jobKey)) == ["a", "b"] && first.allSatisfy { $0.attempts == 1 })
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).isEmpty, "leased")
            // The worker that claimed them died: the lease lapses and they are claimed again, their attempts counted.
            clock.advance(31)
            let again = try await jobs.claim(.delivery, limit: 10, lease: .seconds(30))
            #expect(Set(again.map(\.jobKey)) == ["a", "b"] && again.allSatisfy { $0.attempts == 2 })
            try await database.transaction { db in
                try await jobs.retry(.delivery, key: "a", at: jobs.clock.milliseconds + 10_000, error: "503", on: db)
                try await jobs.finish(.delivery, key: "b", on: db)
            }
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).isEmpty)
            #expect(try await jobs.nextDue(.delivery) == jobs.clock.milliseconds + 10_000)
            clock.advance(11)
            let retried = try await jobs.claim(.delivery, limit: 10, lease: .seconds(30))
            #expect(retried.map(\.jobKey) == ["a"] && retried.first?.lastError == "503")
            try await database.transaction { db in
                try await jobs.deadLetter(.delivery, key: "a", error: "gave up", on: db)
            }
            clock.advance(3600)
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).map(\.jobKey) == ["later"])
            let requeued = try await database.transaction { db in try await jobs.requeue(.delivery, key: "a", on: db) }
            #expect(requeued)
            let back = try await jobs.claim(.delivery, limit: 10, lease: .seconds(30))
            #expect(back.map(\.jobKey) == ["a"] && back.first?.attempts == 1)
            // A claim by key (an operator's catch-up): refused while another worker holds it.
            #expect(try await jobs.claim(.delivery, key: "a", lease: .seconds(30)) == nil)
            #expect(try await jobs.claim(.catchUp, key: "com.example", lease: .seconds(30)) != nil)
            #expect(try await jobs.claim(.catchUp, key: "com.example", lease: .seconds(30)) == nil)
        }
    }

    @Test(arguments: TestDatabase.all) func aStreamRunsOneJobAtATimeInOrder(_ engine: TestDatabase) async throws {
        try await withQueue(engine) { jobs, database, _ in
            try await enqueue(jobs, database, "s1-2", stream: "s1", position: 2)
            try await enqueue(jobs, database, "s1-1", stream: "s1", position: 1)
            try await enqueue(jobs, database, "s1-3", stream: "s1", position: 3)
            try await enqueue(jobs, database, "s2-7", stream: "s2", position: 7)
            try await enqueue(jobs, database, "free")
            let first = try await jobs.claim(.delivery, limit: 10, lease: .seconds(30))
            #expect(Set(first.map(\.jobKey)) == ["s1-1", "s2-7", "free"])
            // s1-1 fails and waits for its retry: s1-2 waits behind it, however long.
            try await database.transaction { db in
                try await jobs.retry(.delivery, key: "s1-1", at: jobs.clock.milliseconds, error: nil, on: db)
            }
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).map(\.jobKey) == ["s1-1"])
            try await database.transaction { db in try await jobs.finish(.delivery, key: "s1-1", on: db) }
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).map(\.jobKey) == ["s1-2"])
            // A dead-lettered job no longer holds its stream up.
            try await database.transaction { db in
                try await jobs.deadLetter(.delivery, key: "s1-2", error: "gave up", on: db)
            }
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).map(\.jobKey) == ["s1-3"])
            // Groups are claimed separately (one endpoint's deliveries at a time).
            try await enqueue(jobs, database, "other-endpoint", group: "ep2")
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).isEmpty)
            #expect(
                try await jobs.claim(.delivery, group: "ep2", limit: 10, lease: .seconds(30)).map(\.jobKey)
                    == ["other-endpoint"]
            )
        }
    }

    /// The jobs behind one that waits for its retry wait as long, and so does one queued behind it later: a claim
    /// does not read them again and again while their stream is held up (a receiver down with a backlog).
    @Test(arguments: TestDatabase.all) func jobsBehindARetryWaitAsLongAsIt(_ engine: TestDatabase) async throws {
        try await withQueue(engine) { jobs, database, clock in
            try await enqueue(jobs, database, "s1-1", stream: "s1", position: 1)
            try await enqueue(jobs, database, "s1-2", stream: "s1", position: 2)
            try await enqueue(jobs, database, "s2-3", stream: "s2", position: 3)
            #expect(
                Set(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).map(\.jobKey)) == ["s1-1", "s2-3"]
            )
            let later = jobs.clock.milliseconds + 60_000
            try await database.transaction { db in
                try await jobs.retry(.delivery, key: "s1-1", at: later, error: "503", on: db)
                try await jobs.finish(.delivery, key: "s2-3", on: db)
            }
            try await database.transaction { db in
                let now = jobs.clock.milliseconds
                try await jobs.store.insertJobs(
                    ["s1-4", "s2-5"].enumerated().map { index, key in
                        Job(
                            kind: .delivery,
                            jobKey: key,
                            state: .queued,
                            stream: String(key.prefix(2)),
                            position: Int64(4 + index),
                            attempts: 0,
                            dueAt: now,
                            createdAt: now,
                            updatedAt: now
                        )
                    },
                    on: db
                )
                #expect(try await jobs.dueAt(.delivery, key: "s1-2", on: db) == later)
                #expect(try await jobs.dueAt(.delivery, key: "s1-4", on: db) == later)
                #expect(try await jobs.dueAt(.delivery, key: "s2-5", on: db) == now)
            }
            #expect(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).map(\.jobKey) == ["s2-5"])
            clock.advance(61)  // s2-5's claim lapsed too
            #expect(
                Set(try await jobs.claim(.delivery, limit: 10, lease: .seconds(30)).map(\.jobKey)) == ["s1-1", "s2-5"]
            )
        }
    }

    /// Several servers share the queue on PostgreSQL (`FOR UPDATE SKIP LOCKED`): two pools claiming at once never take
    /// the same job, and a stream's jobs never run at the same time.
    @Test(.enabled(if: Prerequisite.postgres.shouldRun, Comment(rawValue: Prerequisite.postgres.skipMessage)))
    func twoWorkersOnPostgreSQLNeverClaimAJobTwice() async throws {
        let configuration = try await TestDatabase.postgres.fresh(prefix: "till_jobs")
        let first = try await TillDatabase.open(configuration)
        let second = try await TillDatabase.open(configuration)
        try await ServerSchema.migrate(first)
        let clock = ServerClock { Date() }
        let queues = [first, second].map {
            JobQueue(database: $0, store: JobStore(database: $0), clock: clock, metrics: ServerMetrics())
        }
        try await first.transaction { db in
            for index in 0..<300 {
                try await queues[0].enqueue(
                    .delivery,
                    key: "job-\(index)",
                    stream: "customer-\(index % 10)",
                    position: Int64(index),
                    trace: nil,
                    on: db
                )
            }
        }
        let claimed = Shared<[String]>([])
        let running = Shared<Set<String>>([])
        let overlapping = Shared(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                let queue = queues[worker % 2]
                group.addTask {
                    while true {
                        let jobs = try await queue.claim(.delivery, limit: 5, lease: .seconds(60))
                        if jobs.isEmpty {
                            if claimed.withLock({ $0.count }) >= 300 { return }
                            try await Task.sleep(for: .milliseconds(5))
                            continue
                        }
                        for job in jobs {
                            let stream = try #require(job.stream)
                            if !running.withLock({ $0.insert(stream).inserted }) { overlapping.withLock { $0 += 1 } }
                            claimed.withLock { $0.append(job.jobKey) }
                            // Out of the stream before the job ends: the next one may be claimed from then on.
                            running.withLock { _ = $0.remove(stream) }
                            try await queue.database.transaction { db in
                                try await queue.finish(.delivery, key: job.jobKey, on: db)
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let keys = claimed.withLock { $0 }
        #expect(keys.count == 300 && Set(keys).count == 300, "\(keys.count) claims of \(Set(keys).count) jobs")
        #expect(overlapping.withLock { $0 } == 0, "two jobs of one stream ran at once")
        try await first.shutdown()
        try await second.shutdown()
    }
}

/// A value shared by a test and the tasks it starts.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { value.withLock { body(&$0) } }
}
