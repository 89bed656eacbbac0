import SQLKit
import Synchronization

/// SQLite write transactions committed in groups: the transactions waiting for the writer run one after
/// another inside a single BEGIN … COMMIT, each in its own savepoint.
///
/// SQLite has one writer, so this process's write transactions queue anyway. A COMMIT writes every page the
/// transaction changed to the WAL; for a submission (a row with a 6 KB receipt, and five indexes) that was
/// more than half of its SQL time. Transactions committed together share the pages they all touch (the
/// tables' last leaves, the indexes' hot pages), so each is written once per group.
///
/// Each transaction keeps its own outcome: one that throws is rolled back to its savepoint and gets its
/// error; the others commit. Every caller resumes only after the group's COMMIT, so what a caller was told
/// was committed is on disk as before. A failed COMMIT fails the whole group.
final class GroupCommit: Sendable {
    private struct Job: Sendable {
        let body: @Sendable (any SQLDatabase) async throws -> Void
        let finish: @Sendable ((any Error)?) -> Void
    }

    private struct State {
        var queue: [Job] = []
        var leading = false
    }

    private let state = Mutex(State())
    private let groups = Mutex(0)
    private let writeLock: AsyncLock
    private let database: any SQLDatabase
    /// Transactions in one group at most: a group's first caller waits for the bodies of the others.
    private let maximumGroup: Int

    init(database: any SQLDatabase, writeLock: AsyncLock, maximumGroup: Int = 32) {
        self.database = database
        self.writeLock = writeLock
        self.maximumGroup = maximumGroup
    }

    /// Groups committed (or failed) so far.
    var groupCount: Int { groups.withLock { $0 } }

    /// Runs `body` in the next group; returns its result once the group is committed.
    func run<Result: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> Result) async throws
        -> Result
    {
        let result = Mutex<Result?>(nil)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let job = Job(
                body: { db in
                    let value = try await body(db)
                    result.withLock { $0 = value }
                },
                finish: { error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                }
            )
            let lead = state.withLock { state -> Bool in
                state.queue.append(job)
                if state.leading { return false }
                state.leading = true
                return true
            }
            if lead { Task { await self.lead() } }
        }
        guard let value = result.withLock({ $0 }) else {
            throw SQLiteFailure(code: 1, message: "a committed transaction left no result")
        }
        return value
    }

    /// Commits groups until nothing waits.
    private func lead() async {
        while true {
            let group = state.withLock { state -> [Job] in
                let group = Array(state.queue.prefix(maximumGroup))
                state.queue.removeFirst(group.count)
                if group.isEmpty { state.leading = false }
                return group
            }
            if group.isEmpty { return }
            await commit(group)
        }
    }

    private func commit(_ group: [Job]) async {
        groups.withLock { $0 += 1 }
        let outcomes: [(any Error)?]
        do {
            outcomes = try await writeLock.withLock {
                try await self.database.withSession { session -> [(any Error)?] in
                    var outcomes: [(any Error)?] = []
                    try await session.raw("BEGIN IMMEDIATE").run()
                    do {
                        for job in group {
                            try await session.raw("SAVEPOINT grouped").run()
                            do {
                                try await job.body(session)
                                try await session.raw("RELEASE grouped").run()
                                outcomes.append(nil)
                            } catch {
                                try await session.raw("ROLLBACK TO grouped").run()
                                try await session.raw("RELEASE grouped").run()
                                outcomes.append(error)
                            }
                        }
                        try await session.raw("COMMIT").run()
                    } catch {
                        try? await session.raw("ROLLBACK").run()
                        throw error
                    }
                    return outcomes
                }
            }
        } catch {
            // BEGIN, a savepoint or COMMIT failed: nothing of the group is committed.
            for job in group { job.finish(error) }
            return
        }
        for (job, outcome) in zip(group, outcomes) { job.finish(outcome) }
    }
}
