import NIOCore
import SQLKit

/// An `SQLDatabase` whose work is written with async/await (`execute(sql:_:) async`). sql-kit's protocol still
/// requires the futures-based `execute` as well; here it runs the async one, once for every such database.
protocol AsyncSQLDatabase: SQLDatabase {}

extension AsyncSQLDatabase {
    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<
        Void
    > {
        let promise = eventLoop.makePromise(of: Void.self)
        promise.completeWithTask { try await self.execute(sql: query, onRow) }
        return promise.futureResult
    }
}
