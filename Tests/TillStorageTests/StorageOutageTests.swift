import Foundation
import NIOCore
import NIOPosix
import SQLKit
import Synchronization
import Testing
import TillStorage
import TillTestSupport

/// How `TillDatabase` waits out failing storage: an outage ends only when what failed works again, a connection
/// PostgreSQL closed never leaves a statement without an answer, and a wait for a pooled connection is bounded by the
/// storage wait.
@Suite(.sharingTheMachine, .serialized)
struct StorageOutageTests {
    /// True for the first caller only.
    final class Once: Sendable {
        private let done = Atomic<Bool>(false)
        func first() -> Bool { done.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged }
    }

    /// The value `operation` returns, or nil when it has not returned within `limit` (it is left running: a statement
    /// that never ends cannot be cancelled).
    static func within<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T)
        async throws -> T?
    {
        let once = Once()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T?, any Error>) in
            Task {
                do {
                    let value = try await operation()
                    if once.first() { continuation.resume(returning: value) }
                } catch {
                    if once.first() { continuation.resume(throwing: error) }
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                if once.first() { continuation.resume(returning: nil) }
            }
        }
    }

    /// A full disk's outage goes on through commits that wrote nothing (a transaction that only read, one whose UPDATE
    /// matched no row): they prove nothing about the disk. The first commit that changed a row ends it.
    @Test func aCommitThatChangedNoRowDoesNotEndAFullDisksOutage() async throws {
        let database = try await TillDatabase.open(
            .sqlite(path: TestDatabases.temporaryFile()),
            storageWait: .milliseconds(200)
        )
        try await database.sql.raw("CREATE TABLE outage_notes (n INTEGER PRIMARY KEY)").run()
        // A transaction fails as on a full disk (SQLite's error 13, as `StorageUnavailable.classify` names it), until
        // the wait runs out.
        await #expect(throws: StorageUnavailable.self) {
            try await database.transaction { _ -> Void in
                throw StorageUnavailable(.diskFull, "database or disk is full (in: COMMIT)")
            }
        }
        #expect(!database.gate.status.available)
        #expect(database.gate.status.reason == .diskFull)

        try await database.transaction { db in _ = try await db.raw("SELECT n FROM outage_notes").all() }
        try await database.transaction { db in try await db.raw("UPDATE outage_notes SET n = n + 1 WHERE n < 0").run() }
        #expect(!database.gate.status.available, "a commit that wrote nothing ended the outage")

        try await database.transaction { db in try await db.raw("INSERT INTO outage_notes (n) VALUES (1)").run() }
        #expect(database.gate.status.available)
        #expect(database.gate.status.episodes == 1)
        try await database.shutdown()
    }

    /// PostgreSQL ends the connection a transaction holds (as when it is stopped or restarted). The statement the
    /// transaction sends next, on the closed connection, fails at once instead of waiting forever (PostgresNIO drops
    /// a statement written to a channel whose handlers are gone), and the transaction runs again on a new connection.
    @Test(.enabled(if: Prerequisite.postgres.shouldRun, Comment(rawValue: Prerequisite.postgres.skipMessage)))
    func aTransactionWhoseConnectionPostgreSQLClosedRunsAgainInsteadOfHanging() async throws {
        let database = try await TillDatabase.open(
            try await TestDatabase.postgres.fresh(prefix: "till_lost"),
            storageWait: .seconds(10)
        )
        let runs = Atomic<Int>(0)
        let answer = try await Self.within(.seconds(60)) {
            try await database.transaction { db -> Int in
                if runs.add(1, ordering: .relaxed).newValue == 1 {
                    let pid = try #require(try await db.raw("SELECT pg_backend_pid() AS pid").first())
                        .decode(column: "pid", as: Int.self)
                    try await database.sql.raw("SELECT pg_terminate_backend(CAST(\(bind: pid) AS INTEGER))").run()
                    // PostgreSQL ends the backend and closes the socket; NIO then removes the channel's handlers.
                    try await Task.sleep(for: .seconds(1))
                }
                return try #require(try await db.raw("SELECT 1 AS one").first()).decode(column: "one", as: Int.self)
            }
        }
        #expect(answer == 1, "the transaction on the closed connection never ended")
        #expect(runs.load(ordering: .relaxed) == 2)
        if answer != nil { try await database.shutdown() }
    }

    /// With the only connection busy, a request waits for one as long as the storage wait says (here 1 s), not
    /// AsyncKit's 10 s, and gets `StorageUnavailable` (a 503).
    @Test(.enabled(if: Prerequisite.postgres.shouldRun, Comment(rawValue: Prerequisite.postgres.skipMessage)))
    func aWaitForAPooledConnectionEndsWithTheStorageWait() async throws {
        let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let database = try await TillDatabase.open(
            try await TestDatabase.postgres.fresh(prefix: "till_busy"),
            maximumConnections: 1,
            eventLoopGroup: loop,
            storageWait: .seconds(1)
        )
        let (holding, held) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await database.read { db in
                held.yield()
                try await db.raw("SELECT pg_sleep(8)").run()
            }
        }
        for await _ in holding { break }
        let started = ContinuousClock.now
        let refused = await #expect(throws: StorageUnavailable.self) {
            try await database.read { db in _ = try await db.raw("SELECT 1 AS one").all() }
        }
        #expect(refused?.reason == .overloaded)
        #expect(ContinuousClock.now - started < .seconds(6), "waited \(ContinuousClock.now - started)")
        try await holder.value
        try await database.shutdown()
        try await loop.shutdownGracefully()
    }
}
