import Testing

@testable import TillStorage

/// Ids keyed by time: the prefix, 12 hex digits of milliseconds, 20 random hex digits; later ids sort after earlier.
struct TimeOrderedIdTests {
    @Test func anIdIsItsPrefixTheTimeAndEightyRandomBitsAndSortsByTime() {
        let first = TimeOrderedId.make("dlv_", at: 1_764_500_000_000)
        let second = TimeOrderedId.make("dlv_", at: 1_764_500_000_001)
        #expect(first.hasPrefix("dlv_019ad4654d00") && first.count == 36, "\(first)")
        #expect(first.dropFirst(4).allSatisfy { "0123456789abcdef".contains($0) }, "\(first)")
        #expect(first < second)
        #expect(TimeOrderedId.make("imp_", at: 0).hasPrefix("imp_000000000000"))
        let many = Set((0..<1000).map { _ in TimeOrderedId.make("x", at: 5) })
        #expect(many.count == 1000)
    }
}
