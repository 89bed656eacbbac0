import Foundation
import SQLiteKit
import Testing

@testable import TillStorage

/// The values a statement binds on SQLite: the types Till binds are converted by hand (`DirectSQLiteDatabase.sqliteData`),
/// and each must become what sqlite-kit's own encoder makes of it.
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
}
