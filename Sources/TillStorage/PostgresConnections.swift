import AsyncKit
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresKit
import SQLKit

// PostgreSQL's connections as TillDatabase uses them: the pool AsyncKit keeps, and every statement sent through a
// session that first checks, on the connection's own event loop, that the connection is still open.


/// AsyncKit's pool synchronises itself (each event loop's pool is confined to its loop) but is not
/// declared `Sendable`; this box says so once.
///
/// The box also owns the pool's lifetime: `close()` shuts it down, and a box dropped without being closed
/// shuts it down in the background instead of tripping AsyncKit's assertion.
final class ConnectionPoolBox<Source: ConnectionPoolSource>: @unchecked Sendable {
    let pool: EventLoopGroupConnectionPool<Source>
    private let closed = NIOLockedValueBox(false)

    init(_ pool: EventLoopGroupConnectionPool<Source>) {
        self.pool = pool
    }

    func close() async throws {
        guard
            closed.withLockedValue({
                let was = $0; $0 = true; return !was
            })
        else { return }
        try await pool.shutdownAsync()
    }

    deinit {
        guard !closed.withLockedValue({ $0 }) else { return }
        pool.shutdownGracefully { _ in }
    }
}

/// A PostgreSQL `SQLDatabase` whose sessions hold one pooled connection (a `PostgresSession`). A statement outside
/// a session runs in a session of its own, so that every statement goes through `PostgresSession`.
struct PooledPostgresDatabase: AsyncSQLDatabase {
    let box: ConnectionPoolBox<PostgresConnectionSource>
    let logger: Logger
    var pool: EventLoopGroupConnectionPool<PostgresConnectionSource> { box.pool }

    var eventLoop: any EventLoop { pool.eventLoopGroup.any() }
    var dialect: any SQLDialect { PostgresDialect() }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await withSession { try await $0.execute(sql: query, onRow) }
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        let connection = try await pool.requestConnection(logger: logger).get()
        defer { pool.releaseConnection(connection, logger: logger) }
        return try await closure(PostgresSession(connection))
    }
}

/// One leased PostgreSQL connection as sql-kit sees it, on which every statement ends, even once the connection has
/// closed.
///
/// PostgresNIO (1.33) hands a statement to its channel handler with `channel.write(task, promise: nil)`. When the
/// connection closes (PostgreSQL stopped or restarted, the socket reset), the handler fails every statement it holds,
/// and NIO then removes the channel's handlers. A statement written after that reaches the channel's head, which drops
/// it and fails the write's promise, nil: nobody is told, and the statement's future never completes. That is what
/// the ROLLBACK after a transaction's failed statement met when PostgreSQL was stopped under load: the request never
/// got an answer, its connection was never given back (the pool ran out of connections for good, and later requests
/// waited for one until they gave up), and SIGTERM waited for the request until the watchdog.
///
/// So a statement is written from the connection's event loop, after checking there that the channel is active. On
/// its loop, an active channel still has its handlers (NIO removes them only after the channel has gone inactive), and
/// the handler answers the statement, failing it if the connection closes later. A statement on a closed connection
/// fails at once with `StorageUnavailable(.unreachable)`: nothing was sent.
struct PostgresSession: SQLDatabase {
    private let connection: PostgresConnection
    private let statements: any SQLDatabase

    init(_ connection: PostgresConnection) {
        self.connection = connection
        self.statements = connection.sql(queryLogLevel: nil)
    }

    var eventLoop: any EventLoop { connection.eventLoop }
    var logger: Logger { connection.logger }
    var dialect: any SQLDialect { statements.dialect }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<
        Void
    > {
        let connection = connection
        let statements = statements
        return connection.eventLoop.flatSubmit {
            guard !connection.isClosed else {
                return connection.eventLoop.makeFailedFuture(
                    StorageUnavailable(.unreachable, "the connection to PostgreSQL had closed; the statement was not sent")
                )
            }
            // On the loop, postgres-kit writes the statement to the channel before returning.
            return statements.execute(sql: query, onRow)
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await execute(sql: query, onRow).get()
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await closure(self)
    }
}
