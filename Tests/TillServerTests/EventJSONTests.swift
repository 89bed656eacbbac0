import Foundation
import Testing
import TillContract
import TillCore
import TillLedger
import TillStorage

@testable import TillServer

/// The events' bodies are written by `JSONWriter` (for a measured cost), through the `writeJSON(to:)` functions
/// `Tools/generate-json-writers` makes from the contract: each stored body must be what the contract's generated
/// encoder writes for the same event, byte for byte, or a receiver would see two shapes.
enum EventJSONCheck {
    /// Every event the server stored: its body decodes as the contract's `Event`, and the generated encoder (with the
    /// server's `.sortedKeys` and `.withoutEscapingSlashes`) writes exactly those bytes again.
    static func expectBodiesAreTheContractsEncoding(_ server: PurchaseServer) async throws {
        let records = try await EventStore(database: server.database).events(
            after: 0,
            limit: 10_000,
            bundleId: nil,
            customerIds: nil,
            type: nil,
            on: server.database.sql
        )
        #expect(!records.isEmpty)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for record in records {
            let event = try JSONDecoder().decode(Components.Schemas.Event.self, from: Data(record.body.utf8))
            let expected = String(decoding: try encoder.encode(event), as: UTF8.self)
            #expect(record.body == expected, "\(record.type.rawValue): \(record.body)\n  generated: \(expected)")
        }
    }
}
