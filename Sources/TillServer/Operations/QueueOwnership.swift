import Foundation
import HTTPTypes
import Synchronization
import TillAppStore
import TillCatalogue
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One process owns an SQLite database's work queue: an exclusive lock on `<file>.lock`, held while the server
/// is open and dropped by the kernel if the process dies (kill -9 included).
///
/// SQLite gives the queue no `SKIP LOCKED`, so two servers on one file would confirm the same submissions
/// twice; the second is refused at start instead. Holding the lock also proves that no claim in the file
/// belongs to a live worker, so the claims a killed process left behind are released at once rather than
/// when their lease runs out.
final class SQLiteQueueLock: Sendable {
    private let descriptor: Mutex<Int32>
    let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = Mutex(descriptor)
        self.path = path
    }

    /// Takes the lock for `configuration`, or nil when the database is not an SQLite file.
    static func acquire(for configuration: DatabaseConfiguration) throws -> SQLiteQueueLock? {
        guard case .sqlite(let file) = configuration else { return nil }
        let path = file + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw QueueRefusal(
                .databaseLockUnavailable,
                "cannot open \(path): \(String(cString: strerror(errno)))"
            )
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw QueueRefusal(
                .databaseInUse,
                "another till serve is using \(file) (it holds \(path)); an SQLite database has one server, "
                    + "use PostgreSQL for several"
            )
        }
        return SQLiteQueueLock(descriptor: descriptor, path: path)
    }

    func release() {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            flock(descriptor, LOCK_UN)
            close(descriptor)
            descriptor = -1
        }
    }

    deinit { release() }
}
