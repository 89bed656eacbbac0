import Foundation
import SQLiteKit
import Testing

@testable import TillStorage

/// The values a statement binds and the columns a row gives on SQLite: the common types are converted by hand
/// (`DirectSQLiteDatabase.sqliteData`, `DirectSQLiteRow.decode`), and each must come out as sqlite-kit's own encoder
/// and decoder make it.
@Suite struct BoundValueTests {
    private enum State: String, Encodable { case pending }

    @Test func eachValueBecomesWhatSQLiteKitsEncoderMakesOfIt() throws {
        let values: [any Encodable & Sendable] = [
            "text", "", "ünïcode ✓", Int64.max, Int64.min, Int64(0), Int.max, -1, true, false,
            FixedStatement.SQLNull(), String?.some("wrapped"), String?.none, Int64?.none,
            // Through sqlite-kit's encoder: not among the types converted by hand.
            1.5, State.pending, [UInt8]([1, 2, 3]), Int32(7),
        ]
        let encoder = SQLiteDataEncoder()
        for value in values {
            #expect(try DirectSQLiteDatabase.sqliteData(value) == (try encoder.encode(value)), "\(value)")
        }
        #expect(try DirectSQLiteDatabase.sqliteData(true) == .integer(1))
        #expect(try DirectSQLiteDatabase.sqliteData(FixedStatement.SQLNull()) == .null)
    }

    @Test func eachColumnIsReadAsSQLiteKitsDecoderReadsIt() throws {
        let columns: [SQLiteData] = [
            .text("text"), .text(""), .text("42"), .integer(42), .integer(Int(Int64.min)), .integer(0), .integer(1),
            .float(1.5), .null, .blob(ByteBuffer(bytes: [1, 2])),
        ]
        let decoder = SQLiteDataDecoder()
        func same<D: Decodable & Equatable>(_ type: D.Type, _ column: SQLiteData) {
            let mine = Result { try DirectSQLiteRow.decode(D.self, from: column, decoder: decoder) }
            let theirs = Result { try decoder.decode(D.self, from: column) }
            switch (mine, theirs) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(D.self) from \(column)")
            case (.failure, .failure): break
            default: Issue.record("\(D.self) from \(column): \(mine) against sqlite-kit's \(theirs)")
            }
        }
        for column in columns {
            same(String.self, column)
            same(Int64.self, column)
            same(Int.self, column)
            same(Bool.self, column)
            same(Double.self, column)
            same(String?.self, column)
            same(Int64?.self, column)
        }
    }
}
