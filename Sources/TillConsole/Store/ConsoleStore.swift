import Foundation
import SQLKit
import TillLedger
import TillStorage

/// What the operator's console keeps of its own (migration 020-console): its sessions and the actions taken in it.
struct ConsoleStore: ServerSQLStore {
    let database: TillDatabase

    // MARK: Sessions

    func insert(_ session: ConsoleSession, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_console_sessions", session, with: Self.encoding))
    }

    func consoleSession(tokenHash: String, on db: any SQLDatabase) async throws -> ConsoleSession? {
        try await db.select().column("*").from("srv_console_sessions").where("token_hash", .equal, tokenHash)
            .first(decoding: ConsoleSession.self, with: Self.decoding)
    }

    func touchConsoleSession(tokenHash: String, at now: Int64, expiresAt: Int64, on db: any SQLDatabase) async throws {
        try await db.update("srv_console_sessions").set("last_seen_at", to: now).set("expires_at", to: expiresAt)
            .where("token_hash", .equal, tokenHash).run()
    }

    /// Ends a session, and every session that has expired.
    func deleteConsoleSession(tokenHash: String, now: Int64, on db: any SQLDatabase) async throws {
        try await db.delete(from: "srv_console_sessions").where("token_hash", .equal, tokenHash)
            .orWhere("expires_at", .lessThan, now).run()
    }

    // MARK: Actions

    func insert(_ action: ConsoleActionRecord, on db: any SQLDatabase) async throws {
        try await db.run(RecordStatements.insert(into: "srv_console_actions", action, with: Self.encoding))
    }

    /// The actions taken in the console, newest first, before `before`, at most `limit`.
    func consoleActions(before: PageKey?, limit: Int, on db: any SQLDatabase) async throws -> [ConsoleActionRecord] {
        var query = db.select().column("*").from("srv_console_actions")
        if let before {
            query = query.where { group in
                group.where("at", .lessThan, before.number).orWhere { inner in
                    inner.where("at", .equal, before.number).where("id", .lessThan, before.text)
                }
            }
        }
        return try await query.orderBy("at", .descending).orderBy("id", .descending).limit(limit)
            .all(decoding: ConsoleActionRecord.self, with: Self.decoding)
    }
}
