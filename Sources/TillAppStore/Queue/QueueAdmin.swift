import SQLKit
import TillContract
import TillCore
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage

/// The operator's side of the confirmation queue: the submissions in each state a page at a time (the dead-letter
/// queue by default), how many wait and since when, and putting dead letters back in the queue. `ConfirmationQueue`
/// confirms; this only reads its submissions and requeues them, through the same store and job queue, and wakes its
/// worker. The admin API, the console and `/metrics` hold it.
public final class QueueAdmin: AppStoreRoom, Sendable {
    let services: AppStoreServices
    let signals: QueueSignals
    /// The submissions, their payloads and their attempts.
    var submissionStore: SubmissionStore { SubmissionStore(database: database) }

    package init(services: AppStoreServices, signals: QueueSignals) {
        self.services = services
        self.signals = signals
    }

    /// A page of the submissions in a state, oldest change first (the admin API asks for the dead letters by default).
    public func submissions(state: SubmissionState, page: PageRequest = PageRequest()) async throws
        -> Page<SubmissionView>
    {
        let records = try await submissionStore.submissions(
            state: state,
            after: page.after,
            limit: page.rowsToRead,
            on: database.sql
        )
        return try await page.page(
            records,
            key: { PageKey(number: $0.updatedAt, text: $0.id) },
            item: SubmissionView.init,
            total: { try await submissionStore.count(state: state, on: database.sql) }
        )
    }

    /// The records of the submissions in a state, a page at a time (oldest change first), with how many there are:
    /// the console's queue, which shows each one's app.
    package func records(state: SubmissionState, page: PageRequest = PageRequest()) async throws
        -> (records: [SubmissionRecord], nextCursor: String?, total: Int)
    {
        let records = try await submissionStore.submissions(
            state: state,
            after: page.after,
            limit: page.rowsToRead,
            on: database.sql
        )
        let (shown, nextCursor) = page.cut(records) { PageKey(number: $0.updatedAt, text: $0.id) }
        return (shown, nextCursor, try await submissionStore.count(state: state, on: database.sql))
    }

    /// How many submissions wait in each unsettled state, and since when the oldest of them.
    public func depth() async throws -> [SubmissionState: (count: Int, oldest: Int64?)] {
        var depth: [SubmissionState: (count: Int, oldest: Int64?)] = [:]
        for row in try await submissionStore.queueDepth() { depth[row.state] = (row.n, row.oldest) }
        return depth
    }

    /// Puts a dead-lettered submission back in the queue, with its attempts counted from zero.
    public func requeue(id: String) async throws -> SubmissionView {
        let now = clock.milliseconds
        let record = try await database.transaction { db -> SubmissionRecord in
            guard let record = try await self.submissionStore.submission(id: id, locking: true, on: db) else {
                throw QueueRefusal(.submissionNotFound, "no submission \(id)")
            }
            guard record.state == .deadLettered else {
                throw QueueRefusal(.notDeadLettered, "submission \(id) is \(record.state)")
            }
            return try await self.requeue(record, at: now, on: db)
        }
        signals.workAvailable.signal()
        return SubmissionView(record)
    }

    /// Puts every dead-lettered submission back in the queue, 500 to a transaction; answers how many.
    public func requeueAll() async throws -> Int {
        var count = 0
        while true {
            let now = clock.milliseconds
            let moved = try await database.transaction { db -> Int in
                let records = try await self.submissionStore.submissions(
                    state: .deadLettered,
                    after: nil,
                    limit: 500,
                    locking: true,
                    on: db
                )
                for record in records { _ = try await self.requeue(record, at: now, on: db) }
                return records.count
            }
            count += moved
            if moved > 0 { signals.workAvailable.signal() }
            if moved < 500 { return count }
        }
    }

    private func requeue(_ record: SubmissionRecord, at now: Int64, on db: any SQLDatabase) async throws
        -> SubmissionRecord
    {
        var record = record
        record.state = .pending
        record.attempts = 0
        record.nextAttemptAt = now
        record.reason = nil
        record.updatedAt = now
        try await submissionStore.update(record, on: db)
        if try await !jobs.requeue(.confirmation, key: record.id, on: db) {
            // An operator's requeue: its attempts are a trace of their own.
            try await jobs.enqueue(.confirmation, key: record.id, dueAt: now, trace: nil, on: db)
        }
        return record
    }
}
