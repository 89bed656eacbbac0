import Foundation
import VaporCSQLite

/// Copies the write-ahead log back into the database file on a thread of its own, so that no commit waits for it.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that takes the log past 1,000 pages: that COMMIT copies
/// them all into the database file and syncs both files before it returns, while every other writer waits for
/// the write lock. At 1,000 submissions a second that was one commit in a few hundred, and it took a commit's p99
/// to 7 ms.
///
/// Here each connection's WAL hook reports the log's length after every commit. Past `threshold` pages it wakes
/// a thread that runs a PASSIVE checkpoint on its own connection: writers keep appending while it copies, and
/// readers are not blocked. A PASSIVE checkpoint cannot copy frames written after it started, so under steady
/// load the log would never be wholly copied, and SQLite starts the log over from its beginning only when it
/// is. Past `restartThreshold` pages, the committing writer therefore checkpoints what is left itself, before
/// this process's one writer commits again, so that no new frame can come in meanwhile and the next writer
/// starts the log from its beginning. Every write waits for that checkpoint, and its two syncs (the log's
/// remainder, then the database file) take longer the more pages are left, so the writer only finishes a short
/// remainder (`WALCheckpointPolicy`): otherwise it wakes the thread again, whose rounds each leave less behind.
final class WALCheckpointer: @unchecked Sendable {
    /// When the thread is woken and when the committing writer finishes the checkpoint itself.
    let policy: WALCheckpointPolicy
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var requested = false
    private var stopped = false
    private var finished = false
    /// The thread is copying: a checkpoint started meanwhile on another connection is refused (SQLITE_BUSY).
    private var running = false
    private var handle: SQLiteHandle?
    private var checkpoints = 0
    /// Pages of the log the last checkpoint had copied, from its start: SQLite reports the log's whole length
    /// after a commit, copied or not, and the log only starts over once a writer finds it wholly copied.
    private var copied: Int32 = 0
    /// The log's length after the last commit, and the pages all commits appended since the database was opened:
    /// what a piece of work costs the disk (each page is written again into the database file by a checkpoint).
    private var lastLength: Int32 = 0
    private var appended = 0
    private var writerCheckpoints = WALWriterCheckpoints()

    private init(handle: SQLiteHandle, policy: WALCheckpointPolicy) {
        self.handle = handle
        self.policy = policy
    }

    /// Starts the thread, with its own connection to `path` (opened by `open`).
    static func start(policy: WALCheckpointPolicy, open: () throws -> SQLiteHandle) throws -> WALCheckpointer {
        let checkpointer = WALCheckpointer(handle: try open(), policy: policy)
        let thread = Thread { checkpointer.run() }
        thread.name = "till-wal-checkpoint"
        thread.start()
        return checkpointer
    }

    /// Checkpoints the thread ran so far.
    var checkpointCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return checkpoints
    }

    /// Pages the commits of this process appended to the log since the database was opened.
    var pagesAppended: Int {
        condition.lock()
        defer { condition.unlock() }
        return appended
    }

    /// The checkpoints committing writers ran themselves so far, and what they cost them.
    var writerCheckpointsRun: WALWriterCheckpoints {
        condition.lock()
        defer { condition.unlock() }
        return writerCheckpoints
    }

    /// Makes `connection` report to this checkpointer after each of its commits, instead of checkpointing
    /// inside them. The connection keeps the checkpointer alive.
    func observe(_ connection: SQLiteHandle) {
        connection.setWALHook(self)
    }

    /// Called by SQLite on the committing thread, with the log's length in pages.
    func committed(pages: Int32, connection: OpaquePointer?, schema: UnsafePointer<CChar>?) {
        condition.lock()
        if pages < copied { copied = 0 }  // the log started over
        appended += Int(pages < lastLength ? pages : pages - lastLength)
        lastLength = pages
        let uncopied = pages - copied
        var step = policy.step(pages: pages, uncopied: uncopied)
        // While the thread copies, a checkpoint of the writer's would be refused (SQLITE_BUSY): the commit after the
        // thread's round has less left to copy.
        if step == .finish && running && pages < policy.bound { step = .none }
        if step == .wake && !requested {
            requested = true
            condition.broadcast()
        }
        // A checkpoint refused because the thread is copying does nothing, and the next commit tries again: on a
        // loaded machine, whose disk syncs slowly, the log grew to three times its restart length that way. Past
        // the policy's bound the writer waits for the thread instead, so that its own checkpoint is not refused.
        // Timed only when finishing: every commit passes here.
        let clock = ContinuousClock()
        let started = step == .finish ? clock.now : nil
        var waited = false
        if step == .finish && pages >= policy.bound {
            waited = running
            while running { condition.wait() }
        }
        let left = pages - copied
        condition.unlock()
        if step == .finish {
            // This process's one writer commits nothing until this returns: nothing is appended while it copies.
            let status = sqlite_nio_sqlite3_wal_checkpoint_v2(connection, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            guard status == SQLITE_OK, let started else { return }
            let held = clock.now - started
            condition.lock()
            writerCheckpoints.count += 1
            writerCheckpoints.waits += waited ? 1 : 0
            writerCheckpoints.pages += Int(left)
            writerCheckpoints.largest = max(writerCheckpoints.largest, Int(left))
            writerCheckpoints.held += held
            writerCheckpoints.longest = max(writerCheckpoints.longest, held)
            condition.unlock()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while !requested && !stopped { condition.wait() }
            if stopped {
                let handle = self.handle
                self.handle = nil
                condition.unlock()
                handle?.close()
                condition.lock()
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            requested = false
            running = true
            let handle = self.handle
            condition.unlock()
            let log = handle?.checkpointPassive()
            condition.lock()
            running = false
            checkpoints += 1
            if let log { copied = log }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Stops the thread, closing its connection; returns once it has.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }
}

/// When the log's length wakes the checkpointing thread, and when the committing writer copies what the thread
/// left itself so that the log starts over (`WALCheckpointer`).
///
/// The writer's checkpoint holds every write for as long as its syncs take, and a sync takes longer the more pages
/// it must write: on this project's machines 0.5 ms after 16 pages of 4 KB, 4 ms after 256, 10 ms after 1,024. So
/// past `restartThreshold` the writer finishes only a remainder of `finishPages` or fewer, and otherwise wakes the
/// thread again: each of its rounds copies what came in during the last, and leaves what comes in during its own.
/// If the rounds do not get that short (a slow disk, a thread starved of CPU), the writer takes eight times as much
/// once the log is a sixteenth past its restart length, and whatever is left once it is a quarter past (`bound`),
/// so that the log stays bounded.
struct WALCheckpointPolicy: Sendable, Equatable {
    /// Pages not yet copied that wake the thread (SQLite's own automatic checkpoint runs at 1,000).
    var threshold: Int32
    /// The log's length, in pages, past which the log should start over.
    var restartThreshold: Int32
    /// The most pages the committing writer copies itself, at first.
    var finishPages: Int32

    enum Step: Equatable {
        /// Nothing to do.
        case none
        /// Wake the thread (if it is not already asked to run).
        case wake
        /// The committing writer checkpoints what is left itself.
        case finish
    }

    /// The log's length at which the writer copies whatever the thread left, however much.
    var bound: Int32 { restartThreshold + restartThreshold / 4 }

    /// What a commit that leaves the log `pages` long, `uncopied` of them not yet in the database file, does.
    func step(pages: Int32, uncopied: Int32) -> Step {
        if pages >= restartThreshold {
            let remainder: Int32 =
                pages >= bound
                ? .max
                : pages >= restartThreshold + restartThreshold / 16 ? min(finishPages, .max / 8) * 8 : finishPages
            return uncopied <= remainder ? .finish : .wake
        }
        return uncopied >= threshold ? .wake : .none
    }
}

/// The checkpoints committing writers ran themselves so that SQLite's log could start over (`WALCheckpointer`):
/// every other write waits for each, so their length is a floor under the tail of a write's latency. (A reader
/// that still reads an older state can keep the log from starting over; the next commit then runs another.)
public struct WALWriterCheckpoints: Sendable, Equatable {
    /// How many, and how many of them first waited for the thread to end its round (the log at the policy's bound).
    public var count = 0
    public var waits = 0
    /// The log's pages the thread had left them to copy, in all, and the most one had.
    public var pages = 0
    public var largest = 0
    /// How long they held the writer, in all, and the longest (a wait for the thread included).
    public var held: Duration = .zero
    public var longest: Duration = .zero
}
