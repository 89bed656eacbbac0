import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
import Synchronization

/// SQLite connections lent one at a time, from a mutex rather than an event loop.
///
/// AsyncKit's pool hands out a connection through futures on an event loop: measured here, borrowing cost
/// about 80 µs of CPU, more than the statement it was borrowed for (a read by primary key costs about 35 µs
/// on a held connection; `till bench database`). Connections are opened when first needed, up to `maximum`;
/// a borrower beyond that waits for the first one returned.
final class SQLiteConnectionPool: Sendable {
    private struct State {
        var idle: [SQLiteConnection] = []
        var opened = 0
        var waiters: [CheckedContinuation<SQLiteConnection, any Error>] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let source: TunedSQLiteSource
    private let maximum: Int
    private let logger: Logger
    private let eventLoopGroup: any EventLoopGroup
    private let threads: NIOThreadPool

    init(
        source: TunedSQLiteSource,
        maximum: Int,
        logger: Logger,
        eventLoopGroup: any EventLoopGroup,
        threads: NIOThreadPool
    ) {
        self.source = source
        self.maximum = maximum
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
        self.threads = threads
    }

    private enum Lease {
        case ready(SQLiteConnection)
        case open
        case wait
        case closed
    }

    func withConnection<T>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
        let connection = try await borrow()
        defer { giveBack(connection) }
        return try await body(connection)
    }

    func borrow() async throws -> SQLiteConnection {
        let fast = state.withLock { state -> SQLiteConnection? in state.idle.popLast() }
        if let fast { return fast }
        return try await withCheckedThrowingContinuation { continuation in
            let lease = state.withLock { state -> Lease in
                if state.closed { return .closed }
                if let connection = state.idle.popLast() { return .ready(connection) }
                if state.opened < maximum {
                    state.opened += 1
                    return .open
                }
                state.waiters.append(continuation)
                return .wait
            }
            switch lease {
            case .ready(let connection): continuation.resume(returning: connection)
            case .closed: continuation.resume(throwing: DatabaseClosedError())
            case .wait: break
            case .open:
                let loop = eventLoopGroup.any()
                source.makeConnection(logger: logger, on: loop).whenComplete { result in
                    switch result {
                    case .success(let connection): continuation.resume(returning: connection)
                    case .failure(let error):
                        self.state.withLock { $0.opened -= 1 }
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
    }

    func giveBack(_ connection: SQLiteConnection) {
        enum Next {
            case waiter(CheckedContinuation<SQLiteConnection, any Error>)
            case idle
            case close
        }
        let next = state.withLock { state -> Next in
            if state.closed { return .close }
            if !state.waiters.isEmpty { return .waiter(state.waiters.removeFirst()) }
            state.idle.append(connection)
            return .idle
        }
        switch next {
        case .waiter(let waiter): waiter.resume(returning: connection)
        case .idle: break
        case .close: _ = connection.close()  // borrowed when the pool closed
        }
    }

    deinit {
        // Dropped without `close()`: close what is left in the background, then the threads.
        let idle = state.withLock { state in
            defer { state.idle = [] }
            return state.closed ? [] : state.idle
        }
        guard !idle.isEmpty else { return }
        let threads = self.threads
        EventLoopFuture.andAllComplete(idle.map { $0.close() }, on: eventLoopGroup.any()).whenComplete { _ in
            threads.shutdownGracefully { _ in }
        }
    }

    /// Closes every connection (all must have been given back) and the threads they ran on.
    func close() async throws {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            defer {
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.resume(throwing: DatabaseClosedError()) }
        for connection in idle { try? await connection.close() }
        try await threads.shutdownGracefully()
    }
}

/// A query asked of a database that was shut down.
public struct DatabaseClosedError: Error, CustomStringConvertible {
    public var description: String { "the database was shut down" }
}
