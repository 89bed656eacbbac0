import AsyncKit
import NIOCore
import NIOPosix
import PostgresNIO

/// Storage that cannot be used now, and may be again soon: the disk is full or read-only, an I/O error, the
/// database server unreachable, restarting or gone mid-request. Not a defect of the request or of the server: the
/// same request succeeds once storage is back, so both servers answer it `503 storageUnavailable` with
/// `Retry-After`, never `500`.
///
/// `TillDatabase` throws it, and only it, for such failures: every caller sees one type whatever the engine. A
/// statement that failed this way changed nothing, except when `reason` is `outcomeUnknown` (the connection was lost
/// while a write or a COMMIT was under way): a resend with the same idempotency key then tells.
public struct StorageUnavailable: Error, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        /// SQLite's disk (or PostgreSQL's) is full, or a file is at the process's size limit.
        case diskFull
        /// The database file or server is read-only.
        case readOnly
        /// The disk failed a read or write.
        case ioError
        /// The database server cannot be reached, refuses connections, or is starting or stopping.
        case unreachable
        /// The connection was lost while a write was under way: it may or may not have been committed.
        case outcomeUnknown
        /// The database server has no connection left for this process in time.
        case overloaded
    }

    public var reason: Reason
    /// What the driver said.
    public var detail: String
    /// How long a client should wait before trying again (`Retry-After`).
    public var retryAfterSeconds: Int

    public init(_ reason: Reason, _ detail: String, retryAfterSeconds: Int = 5) {
        self.reason = reason
        self.detail = detail
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "storage unavailable (\(reason.rawValue)): \(detail)" }

    /// Whether a failure of this kind may leave reads working: the disk refuses writes (full, read-only, or failing
    /// them), while the database is still there to read.
    var isWriteSide: Bool { reason == .diskFull || reason == .readOnly || reason == .ioError }

    /// What `error`, thrown by SQLite, PostgreSQL, the connection pool or the network, means for storage: a
    /// `StorageUnavailable`, or nil for any other failure (a constraint, a syntax error, a decoding error: a defect
    /// or a conflict, not an outage).
    public static func classify(_ error: any Error) -> StorageUnavailable? {
        switch error {
        case let error as StorageUnavailable:
            return error
        case let error as SQLiteFailure:
            // The primary result code is the low byte of the extended one.
            switch error.code & 0xFF {
            case 13: return StorageUnavailable(.diskFull, error.description)  // SQLITE_FULL
            case 8: return StorageUnavailable(.readOnly, error.description)  // SQLITE_READONLY
            case 10, 14: return StorageUnavailable(.ioError, error.description)  // SQLITE_IOERR, SQLITE_CANTOPEN
            default: return nil
            }
        case let error as PSQLError:
            switch error.code {
            case .connectionError, .poolClosed:
                return StorageUnavailable(.unreachable, String(reflecting: error))
            case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
                return StorageUnavailable(.outcomeUnknown, String(reflecting: error))
            case .server:
                return classify(sqlState: error.serverInfo?[.sqlState], String(reflecting: error))
            default:
                return nil
            }
        case is ConnectionPoolTimeoutError:
            return StorageUnavailable(.overloaded, "no database connection became free in time")
        case let error as IOError:
            return StorageUnavailable(.unreachable, "\(error)")
        case let error as NIOConnectionError:
            return StorageUnavailable(.unreachable, "\(error)")
        case let error as ChannelError:
            switch error {
            case .connectTimeout, .connectPending: return StorageUnavailable(.unreachable, "\(error)")
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed:
                return StorageUnavailable(.outcomeUnknown, "\(error)")
            default: return nil
            }
        default:
            return nil
        }
    }

    /// PostgreSQL's SQLSTATE classes for an outage: connection exceptions (08), the server shutting down or starting
    /// (57P01–57P03), insufficient resources (53), a read-only standby (25006).
    static func classify(sqlState: String?, _ detail: String) -> StorageUnavailable? {
        guard let sqlState else { return nil }
        switch sqlState {
        case "53100": return StorageUnavailable(.diskFull, detail)
        case "53300": return StorageUnavailable(.overloaded, detail)
        case "25006": return StorageUnavailable(.readOnly, detail)
        case "57P01", "57P02", "57P03": return StorageUnavailable(.unreachable, detail)
        default:
            if sqlState.hasPrefix("08") { return StorageUnavailable(.unreachable, detail) }
            if sqlState.hasPrefix("53") { return StorageUnavailable(.overloaded, detail) }
            return nil
        }
    }
}
