import Crypto
import Foundation
import Logging
import SQLKit
import ServiceLifecycle
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage

/// Imports of the customers an app already has (docs/operations.md, "Importing existing customers").
///
/// An operator sends a file of rows, each a customer id and what finds their purchases at Apple (a transaction id, an
/// app receipt or a signed transaction). The rows are kept (`srv_import_rows`), and the import is an `import` job of
/// the job queue: `ImportWorker` reads each row's whole Transaction History from Apple (`ImportReader`) and gives the
/// ledger every transaction, for that customer, as Apple's signed word: confirmed, with events of source `import`.
/// Each row's progress is written with each page it applies, so an import cut short (a stop, a crash) resumes where it
/// was; a second import of the same file changes nothing.
public struct Imports: AppStoreRoom, Sendable {
    let services: AppStoreServices
    var store: ImportStore { ImportStore(database: database) }
    let pacer: ImportPacer

    /// The largest file an import takes.
    public static let maximumFileBytes = 256 << 20
    /// Rows stored per transaction while a file is received.
    static let rowsPerTransaction = 500
    /// How long an attempt of the import's job holds it: one attempt takes rows for `attemptLength`, then the job is
    /// due again at once. A server killed mid-attempt on PostgreSQL (where nothing tells it the claim's holder died)
    /// resumes the import once the lease has lapsed; SQLite's releases it at the next start.
    static let lease: Duration = .seconds(60)
    static let attemptLength: Duration = .seconds(20)
    /// A file still being received after this long was cut short (its sender stopped): a new request replaces it.
    static let receivingTimeout: Duration = .seconds(5 * 60)

    package init(
        services: AppStoreServices
    ) {
        self.services = services
        pacer = ImportPacer(requestsPerSecond: services.configuration.imports.requestsPerSecond)
    }

    // MARK: The admin API

    /// Keeps the rows of `file` and starts reading them; answers the import and whether it is new. The same file sent
    /// while its import is under way is that import (nothing new starts). Throws `appNotFound`, `noAPIKey`,
    /// `invalidName` and `invalidImportFile`.
    public func start(bundleId: String, name: String?, file: [UInt8]) async throws -> (ImportView, created: Bool) {
        let app = try await catalogue.app(bundleId: bundleId)
        guard CatchUp.hasAPIKey(app) else {
            throw ImportRefusal(
                .noAPIKey,
                "\(bundleId) has no App Store Server API key, so there is no one to ask: set apiKeyId, apiIssuerId and apiPrivateKey"
            )
        }
        if let name {
            guard (1...200).contains(name.unicodeScalars.count),
                !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw ImportRefusal(.invalidName, "name has 1 to 200 characters and no control character")
            }
        }
        let sha256 = SHA256.hash(data: file).map { String(format: "%02x", $0) }.joined()
        if let attached = try await attach(bundleId: bundleId, sha256: sha256) { return (attached, false) }
        let rows = try ImportFile.rows(file)
        let now = clock.milliseconds
        let record = ImportRecord(
            id: Self.newId(at: now),
            bundleId: bundleId,
            name: name,
            fileSha256: sha256,
            state: .receiving,
            rowsTotal: rows.count,
            createdAt: now,
            updatedAt: now
        )
        do {
            try await database.transaction { db in try await self.store.insert(record, on: db) }
        } catch {
            // The same file, sent at the same moment by another request (its unique index): that one is the import.
            if let attached = try await attach(bundleId: bundleId, sha256: sha256) { return (attached, false) }
            throw error
        }
        do {
            for start in stride(from: 0, to: rows.count, by: Self.rowsPerTransaction) {
                let batch = rows[start..<min(rows.count, start + Self.rowsPerTransaction)].map {
                    ImportRowRecord($0, importId: record.id, now: now)
                }
                try await database.transaction { db in try await self.store.insert(batch, on: db) }
            }
            let trace = Traces.current
            try await database.transaction { db in
                try await self.store.update(
                    id: record.id,
                    state: .running,
                    lastError: nil,
                    now: self.clock.milliseconds,
                    on: db
                )
                try await self.jobs.enqueue(.import, key: record.id, trace: trace, on: db)
            }
        } catch {
            _ = try? await database.transaction { db in try await self.store.delete(id: record.id, on: db) }
            throw error
        }
        jobs.wake(.import)
        logger.notice("import \(record.id) of \(bundleId): \(rows.count) rows received")
        return (try await view(id: record.id, bundleId: bundleId), true)
    }

    /// The import of this file under way, if there is one; one left half-received by a sender that stopped is
    /// deleted, so that this request receives it whole.
    private func attach(bundleId: String, sha256: String) async throws -> ImportView? {
        guard let active = try await store.active(bundleId: bundleId, fileSha256: sha256, on: database.sql) else {
            return nil
        }
        if active.state == .receiving, clock.milliseconds - active.updatedAt > Self.receivingTimeout.milliseconds {
            try await database.transaction { db in try await self.store.delete(id: active.id, on: db) }
            return nil
        }
        return try await view(active)
    }

    /// One import of the app, or `importNotFound`.
    public func view(id: String, bundleId: String) async throws -> ImportView {
        _ = try await catalogue.app(bundleId: bundleId)
        guard let record = try await store.record(id: id, on: database.sql), record.bundleId == bundleId else {
            throw ImportRefusal(.importNotFound, "\(bundleId) has no import \(id)")
        }
        return try await view(record)
    }

    private func view(_ record: ImportRecord) async throws -> ImportView {
        ImportView(record, try await store.tally(importId: record.id, on: database.sql))
    }

    /// The app's imports, newest first.
    public func list(bundleId: String, page request: PageRequest) async throws -> Page<ImportView> {
        _ = try await catalogue.app(bundleId: bundleId)
        let records = try await store.records(bundleId: bundleId, on: database.sql)
        let page = Page.of(records, key: { PageKey(number: -$0.createdAt, text: $0.id) }, request)
        var views: [ImportView] = []
        for record in page.items { views.append(try await view(record)) }
        return Page(items: views, nextCursor: page.nextCursor, total: page.total)
    }

    /// An import's rows in the file's order, of one outcome or all.
    public func rows(bundleId: String, id: String, outcome: String?, page request: PageRequest) async throws
        -> Page<ImportRowView>
    {
        let outcome = try outcome.map { text in
            guard let outcome = ImportRowOutcome(rawValue: text) else {
                throw ImportRefusal(
                    .invalidOutcome,
                    "outcome is pending, imported, alreadyKnown, refused or failed, not \(text)"
                )
            }
            return outcome
        }
        _ = try await view(id: id, bundleId: bundleId)
        let rows = try await store.rows(
            importId: id,
            outcome: outcome,
            after: Int(request.after?.number ?? 0),
            limit: request.rowsToRead,
            on: database.sql
        )
        return try await request.page(
            rows,
            key: { PageKey(number: Int64($0.rowNumber), text: "") },
            item: { $0.view },
            total: { try await store.count(importId: id, outcome: outcome, on: database.sql) }
        )
    }

    /// Stops an import: its pending rows are not read; what was recorded stays. `importEnded` if it had ended.
    public func cancel(bundleId: String, id: String) async throws -> ImportView {
        _ = try await view(id: id, bundleId: bundleId)
        try await database.transaction { db in
            guard let record = try await self.store.record(id: id, locking: true, on: db),
                record.state == .running || record.state == .receiving
            else {
                throw ImportRefusal(.importEnded, "import \(id) has ended already")
            }
            try await self.store.update(id: id, state: .cancelled, lastError: nil, now: self.clock.milliseconds, on: db)
            try await self.jobs.finish(.import, key: id, on: db)
        }
        logger.notice("import \(id) of \(bundleId) cancelled")
        return try await view(id: id, bundleId: bundleId)
    }

    /// `imp_` and 32 hex digits, growing with time (`TimeOrderedId`).
    static func newId(at now: Int64) -> String { TimeOrderedId.make("imp_", at: now) }

    // MARK: The job

    /// One attempt of an import's job: reads its due rows for `attemptLength`, then queues the next attempt: at once
    /// while rows are due, when the next retried row is due, or not at all once every row has an outcome (the import
    /// is finished). Apple refusing the app's key pauses it for a minute, its reason kept as `lastError`.
    func run(_ job: Job) async {
        do {
            guard let record = try await store.record(id: job.jobKey, on: database.sql), record.state == .running,
                let app = try await catalogue.cachedApp(bundleId: record.bundleId)
            else {
                try await database.transaction { db in try await self.jobs.finish(.import, key: job.jobKey, on: db) }
                return
            }
            guard CatchUp.hasAPIKey(app) else {
                return try await pause(record, "\(app.bundleId) has no App Store Server API key any more", job: job)
            }
            let client = AppleClient(
                endpoints: configuration.apple,
                timeout: configuration.confirmation.requestTimeout,
                metrics: metrics,
                connectionsPerHost: configuration.imports.concurrency
            )
            let outcome = await read(record, app: app, client: client)
            await client.shutdown()
            switch outcome {
            case .paused(let reason):
                try await pause(record, reason, job: job)
            case .goOn:
                try await database.transaction { db in
                    if record.lastError != nil {
                        try await self.store.update(
                            id: record.id,
                            state: .running,
                            lastError: nil,
                            now: self.clock.milliseconds,
                            on: db
                        )
                    }
                    try await self.jobs.retry(
                        .import,
                        key: record.id,
                        at: self.clock.milliseconds,
                        error: nil,
                        attempt: job.attempts,
                        on: db
                    )
                }
            case .rowsDone:
                try await next(record, job: job)
            }
        } catch {
            logger.error("import \(job.jobKey): \(error)")
            _ = try? await database.transaction(bookkeeping: true) { db in
                try await self.jobs.retry(
                    .import,
                    key: job.jobKey,
                    at: self.clock.milliseconds + 10_000,
                    error: "\(error)",
                    attempt: job.attempts,
                    on: db
                )
            }
        }
    }

    private enum AttemptOutcome {
        /// Due rows are left: the next attempt at once.
        case goOn
        /// No row is due now.
        case rowsDone
        case paused(String)
    }

    /// Reads due rows, `concurrency` at a time, until none is due or the attempt has run its length.
    private func read(_ record: ImportRecord, app: ServerApp, client: AppleClient) async -> AttemptOutcome {
        let reader = ImportReader(imports: self, importId: record.id, app: app, client: client)
        let ends = ContinuousClock.now + Self.attemptLength
        let concurrency = max(1, configuration.imports.concurrency)
        while ContinuousClock.now < ends, !Task.isCancelled, !Task.isShuttingDownGracefully {
            let rows: [ImportRowRecord]
            do {
                rows = try await store.dueRows(
                    importId: record.id,
                    now: clock.milliseconds,
                    limit: concurrency * 4,
                    on: database.sql
                )
            } catch {
                logger.error("import \(record.id): its rows could not be read: \(error)")
                return .goOn
            }
            guard !rows.isEmpty else { return .rowsDone }
            let paused = await withTaskGroup(of: String?.self) { group -> String? in
                var next = rows.makeIterator()
                for _ in 0..<concurrency {
                    guard let row = next.next() else { break }
                    group.addTask { await reader.read(row) }
                }
                var paused: String?
                while let ended = await group.next() {
                    if let ended { paused = ended }
                    if paused == nil, let row = next.next() { group.addTask { await reader.read(row) } }
                }
                return paused
            }
            if let paused { return .paused(paused) }
        }
        return .goOn
    }

    /// Every due row has an outcome: the job is due again when the next retried row is, or the import is finished.
    private func next(_ record: ImportRecord, job: Job) async throws {
        let summary = try await database.transaction { db -> String? in
            if let due = try await self.store.nextDue(importId: record.id, on: db) {
                try await self.jobs.retry(.import, key: record.id, at: due, error: nil, attempt: job.attempts, on: db)
                return nil
            }
            try await self.store.update(
                id: record.id,
                state: .finished,
                lastError: nil,
                now: self.clock.milliseconds,
                on: db
            )
            try await self.jobs.finish(.import, key: record.id, on: db)
            let view = ImportView(record, try await self.store.tally(importId: record.id, on: db))
            return
                "\(view.rows.imported) imported, \(view.rows.alreadyKnown) already known, \(view.rows.refused) refused, \(view.rows.failed) failed; \(view.transactions.recorded) transactions recorded"
        }
        if let summary { logger.notice("import \(record.id) of \(record.bundleId) finished: \(summary)") }
    }

    /// Apple refuses the app's key (or it has none): the import waits a minute, saying why.
    private func pause(_ record: ImportRecord, _ reason: String, job: Job) async throws {
        logger.warning("import \(record.id) waits: \(reason)")
        try await database.transaction { db in
            try await self.store.update(
                id: record.id,
                state: .running,
                lastError: reason,
                now: self.clock.milliseconds,
                on: db
            )
            try await self.jobs.retry(
                .import,
                key: record.id,
                at: self.clock.milliseconds + 60_000,
                error: reason,
                attempt: job.attempts,
                on: db
            )
        }
    }

    /// How a page of history is verified and applied (shared with the catch-up).
    var pages: HistoryPages {
        HistoryPages(services: services)
    }
}
