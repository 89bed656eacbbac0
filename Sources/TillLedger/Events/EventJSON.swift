import TillContract
import TillCore

/// An event's body, the contract's `Event`, as `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes` writes
/// it (the feed and the webhooks send the stored bytes as they are), without its cost.
///
/// The writer is generated from openapi.yaml with the type (`Generated/JSONWriters.swift`, Tools/generate-json-writers),
/// for a measurement: every change writes an event in its own transaction, and Foundation's encoder was 3 to 5% of a
/// purchase's CPU time at 1,000 purchases a second (perf, docs/benchmarks.md). `EventJSONTests` decodes every event
/// type it wrote with the generated type and holds its bytes to the generated encoder's.
extension Components.Schemas.Event {
    package func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 1024)
        writeJSON(to: &writer)
        return writer.bytes
    }
}
