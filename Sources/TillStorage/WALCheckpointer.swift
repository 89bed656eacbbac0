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
/// is. Past `restartThreshold` pages, the committing writer therefore checkpoints what is left itself, while it
/// still holds the write lock, so that no new frame can come in meanwhile and the next writer starts the log
/// from its beginning. It does so only once the thread has copied all but a sixteenth of `restartThreshold`
/// (it wakes the thread otherwise), or once the log is twice that length: every writer waits for this one,
/// and at 1,000 submissions a second a remainder of a thousand pages held them for 5 ms.
final class WALCheckpointer: @unchecked Sendable {
    /// Pages in the log that wake the thread (SQLite's own default is 1,000).
    let threshold: Int32
    /// Pages in the log after which the committing writer finishes the checkpoint itself.
    let restartThreshold: Int32

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

    private init(handle: SQLiteHandle, threshold: Int32, restartThreshold: Int32) {
        self.handle = handle
        self.threshold = threshold
        self.restartThreshold = restartThreshold
    }

    /// Starts the thread, with its own connection to `path` (opened by `open`).
    static func start(
        threshold: Int32,
        restartThreshold: Int32,
        open: () throws -> SQLiteHandle
    ) throws -> WALCheckpointer {
        let checkpointer = WALCheckpointer(
            handle: try open(),
            threshold: threshold,
            restartThreshold: restartThreshold
        )
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
        // The writer finishes only a short remainder (the frames written while the thread last ran): a long
        // one is the thread's, and the log grows a little past `restartThreshold` meanwhile. At twice that
        // length (a thread starved of CPU), the writer finishes whatever is left, so the log stays bounded.
        let finish =
            pages >= restartThreshold && (uncopied <= restartThreshold / 16 || pages >= restartThreshold * 2)
        if !finish && (uncopied >= threshold || pages >= restartThreshold) && !requested {
            requested = true
            condition.broadcast()
        }
        // A checkpoint refused because the thread is copying does nothing, and the next commit tries again: on a
        // loaded machine, whose disk syncs slowly, the log grew to three times `restartThreshold` that way. At
        // twice that length the writer waits for the thread instead, so that its own checkpoint is not refused.
        if finish && pages >= restartThreshold * 2 {
            while running { condition.wait() }
        }
        condition.unlock()
        if finish {
            // The writer still holds the write lock: nothing is appended while this copies the remainder.
            sqlite_nio_sqlite3_wal_checkpoint_v2(connection, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
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
