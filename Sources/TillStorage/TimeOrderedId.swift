import Foundation

/// Ids that grow with time: a prefix, the time (UNIX ms, 12 hex digits), then 80 random bits (20 hex digits). Rows keyed
/// by them go in at the end of the table's primary key: with random ids, each row written dirtied a page of that index
/// of its own, written to the log at its commit and again at the checkpoint. Webhook deliveries (`dlv_`) and imports
/// (`imp_`) are keyed so.
package enum TimeOrderedId {
    package static func make(_ prefix: String, at now: Int64) -> String {
        let random = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let time = String(UInt64(max(0, now)) & 0xFFFF_FFFF_FFFF, radix: 16)
        return prefix + String(repeating: "0", count: 12 - time.count) + time + random.prefix(20)
    }
}
