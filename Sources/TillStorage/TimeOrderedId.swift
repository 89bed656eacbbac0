/// Ids that grow with time: a prefix, the time (UNIX ms, 12 hex digits), then 80 random bits (20 hex digits). Rows keyed
/// by them go in at the end of the table's primary key: with random ids, each row written dirtied a page of that index
/// of its own, written to the log at its commit and again at the checkpoint. Webhook deliveries (`dlv_`) and imports
/// (`imp_`) are keyed so.
package enum TimeOrderedId {
    package static func make(_ prefix: String, at now: Int64) -> String {
        // The system's generator (getrandom), not Foundation's UUID(), which on Linux opens /dev/urandom for each one
        // (1% of a submission's CPU, measured for UUID.random in TillCore): a delivery's id is made per purchase.
        var generator = SystemRandomNumberGenerator()
        let time = UInt64(max(0, now)) & 0xFFFF_FFFF_FFFF
        let high = generator.next() as UInt64
        let low = (generator.next() as UInt64) & 0xFFFF
        return prefix + hex(time, digits: 12) + hex(high, digits: 16) + hex(low, digits: 4)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: digits - text.count) + text
    }
}
