import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

/// What every store of the server shares: its database (SQLite or PostgreSQL), and how records map to columns.
package protocol ServerSQLStore: Sendable {
    var database: TillDatabase { get }
}

extension ServerSQLStore {
    package var sql: any SQLDatabase { database.sql }
    package static var encoding: SQLQueryEncoder { ColumnNames.encoder }
    package static var decoding: SQLRowDecoder { ColumnNames.decoder }

    package static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }

    package static func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }
}
