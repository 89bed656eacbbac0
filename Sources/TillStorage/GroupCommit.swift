import SQLKit
import Synchronization

/// SQLite write transactions committed in groups: the transactions waiting for the writer run one after
/// another inside a single BEGIN … COMMIT, each in its own savepoint (a group of one needs none).
///
/// SQLite has one writer, so this process's write transactions queue anyway. A COMMIT writes every page the
/// transaction changed to the WAL; for a submission (a row with a 6 KB receipt, and five indexes) that was
/// more than half of its SQL time. Transactions committed together share the pages they all touch (the
/// tables' last leaves, the indexes' hot pages), so each is written once per group.
///
/// Each transaction keeps its own outcome: one that throws is rolled back to its savepoint and gets its
/// error; the others commit. Every caller resumes only after the group's COMMIT, so what a caller was told
/// was committed is on disk as before. A failed COMMIT fails the whole group.
///
/// A group also tells whether its COMMIT wrote anything: whether the transactions that kept their changes changed a
/// row (`sqlite3_total_changes64`, read around each). A commit that changed nothing writes nothing to disk, so only
/// one that wrote proves that a full disk has room again (`StorageGate`).
final class GroupCommit: Sendable {
    /// A transaction's result, once its group is committed.
    struct Committed<Result: Sendable>: Sendable {
        var value: Result
        /// Whether the group's COMMIT wrote: some transaction of the group kept a changed row.
        var wrote: Bool
    }

    /// How a waiting caller is woken: its transaction was committed (or failed), or it leads the next group.
    private enum Wake: Sendable {
        case finished(wrote: Bool)
        case lead
    }

    private final class Job: Sendable {
        let body: @Sendable (any SQLDatabase) async throws -> Void
        let wake: CheckedContinuation<Wake, any Error>

        init(
            body: @escaping @Sendable (any SQLDatabase) async throws -> Void,
            wake: CheckedContinuation<Wake, any Error>
        ) {
            self.body = body
            self.wake = wake
        }
    }

    private struct State {
        var queue: [Job] = []
        var leading = false
    }

    private let state = Mutex(State())
    private let groups = Mutex(0)
    private let writeLock: AsyncLock
    private let database: DirectSQLiteDatabase
    /// Transactions in one group at most: a group's first caller waits for the bodies of the others.
    private let maximumGroup: Int

    init(database: DirectSQLiteDatabase, writeLock: AsyncLock, maximumGroup: Int = 32) {
        self.database = database
        self.writeLock = writeLock
        self.maximumGroup = maximumGroup
    }

    /// Groups committed (or failed) so far.
    var groupCount: Int { groups.withLock { $0 } }

    /// Runs `body` in the next group; returns its result once the group is committed, and whether the group wrote.
    ///
    /// The caller that finds no group under way leads one on its own task: it commits the group that starts
    /// with its own transaction, then wakes the first caller still waiting to lead the next, and returns. A
    /// leader therefore never waits for a task to be scheduled, and nobody runs groups for long on behalf of
    /// others (the first version started a task to lead, and every group waited for it to be scheduled: under
    /// load, behind every other ready task).
    func run<Result: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> Result) async throws
        -> Committed<Result>
    {
        let result = Mutex<Result?>(nil)
        let work: @Sendable (any SQLDatabase) async throws -> Void = { db in
            let value = try await body(db)
            result.withLock { $0 = value }
        }
        let wake = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Wake, any Error>) in
            let job = Job(body: work, wake: continuation)
            let lead = state.withLock { state -> Bool in
                state.queue.append(job)
                if state.leading { return false }
                state.leading = true
                return true
            }
            // Resumed before the caller suspends: it goes on at once, without being scheduled again.
            if lead { continuation.resume(returning: .lead) }
        }
        let wrote: Bool
        switch wake {
        case .lead: wrote = try await lead()
        case .finished(let groupWrote): wrote = groupWrote
        }
        guard let value = result.withLock({ $0 }) else {
            throw SQLiteFailure(code: 1, message: "a committed transaction left no result")
        }
        return Committed(value: value, wrote: wrote)
    }

    /// Commits the next group (led by this caller, whose job is its first), wakes its other callers, and
    /// passes the lead to the first caller left waiting. Throws this caller's own error; returns whether the group
    /// wrote.
    private func lead() async throws -> Bool {
        let group = state.withLock { state -> [Job] in
            let group = Array(state.queue.prefix(maximumGroup))
            state.queue.removeFirst(group.count)
            return group
        }
        let (outcomes, wrote) = await commit(group)
        let next = state.withLock { state -> Job? in
            if let next = state.queue.first { return next }
            state.leading = false
            return nil
        }
        next?.wake.resume(returning: .lead)
        for (job, outcome) in zip(group, outcomes).dropFirst() {
            if let outcome {
                job.wake.resume(throwing: outcome)
            } else {
                job.wake.resume(returning: .finished(wrote: wrote))
            }
        }
        if let mine = outcomes.first, let error = mine { throw error }
        return wrote
    }

    /// The statements that open, mark and close a group's transaction.
    private enum Control {
        static let begin = FixedStatement("BEGIN IMMEDIATE")
        static let savepoint = FixedStatement("SAVEPOINT grouped")
        static let release = FixedStatement("RELEASE grouped")
        static let commit = FixedStatement("COMMIT")
    }

    /// Runs `group` in one transaction, each job in its own savepoint; returns each job's error, if any, and whether
    /// the COMMIT wrote (a job that kept its changes changed a row).
    private func commit(_ group: [Job]) async -> (outcomes: [(any Error)?], wrote: Bool) {
        groups.withLock { $0 += 1 }
        do {
            return try await writeLock.withLock {
                try await self.database.withSession { session -> ([(any Error)?], Bool) in
                    let changes = { (session as? DirectSQLiteDatabase)?.totalChanges ?? 0 }
                    var outcomes: [(any Error)?] = []
                    var changed: Int64 = 0
                    try await session.run(Control.begin())
                    // A group of one needs no savepoint: its failure rolls back the whole transaction, which is all
                    // it holds. Under load most groups are of one (each purchase's writes finish before the next
                    // arrives), and a savepoint copies every page the transaction changes into SQLite's statement
                    // journal in memory: 144 of a purchase's 1,046 allocations and about 120 KB, and two statements.
                    if group.count == 1, let job = group.first {
                        let before = changes()
                        do {
                            try await job.body(session)
                        } catch {
                            try? await session.raw("ROLLBACK").run()
                            return ([error], false)
                        }
                        let changed = changes() - before
                        do {
                            try await session.run(Control.commit())
                        } catch {
                            try? await session.raw("ROLLBACK").run()
                            throw error
                        }
                        return ([nil], changed > 0)
                    }
                    do {
                        for job in group {
                            try await session.run(Control.savepoint())
                            let before = changes()
                            do {
                                try await job.body(session)
                                changed += changes() - before
                                try await session.run(Control.release())
                                outcomes.append(nil)
                            } catch {
                                try await session.raw("ROLLBACK TO grouped").run()
                                try await session.run(Control.release())
                                outcomes.append(error)
                            }
                        }
                        try await session.run(Control.commit())
                    } catch {
                        try? await session.raw("ROLLBACK").run()
                        throw error
                    }
                    return (outcomes, changed > 0)
                }
            }
        } catch {
            // BEGIN, a savepoint or COMMIT failed: nothing of the group is committed.
            return (group.map { _ in error }, false)
        }
    }
}
