import Histogram

/// The latencies of one measured run, kept in an HdrHistogram (hdrhistogram-swift): percentiles to three significant
/// digits in constant memory, without keeping and sorting every sample. Every benchmark's percentiles come from here.
struct LatencyHistogram: Sendable {
    /// Nanoseconds from 1 ns to an hour; three significant digits (a 3.70 ms value is known to within 4 µs).
    private var histogram = Histogram<UInt64>(
        lowestDiscernibleValue: 1,
        highestTrackableValue: 3_600_000_000_000,
        numberOfSignificantValueDigits: .three
    )

    init() {}

    init(_ durations: some Sequence<Duration>) {
        for duration in durations { record(duration) }
    }

    /// Records one latency (below a nanosecond counts as one; above an hour as an hour).
    mutating func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = Swift.max(
            1,
            Swift.min(3_600_000_000_000, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        )
        _ = histogram.record(UInt64(nanoseconds))
    }

    /// Records one latency given in milliseconds.
    mutating func record(milliseconds: Double) {
        record(.nanoseconds(Int64((milliseconds * 1e6).rounded())))
    }

    /// Adds what another run (another connection's, say) recorded.
    mutating func add(_ other: LatencyHistogram) {
        histogram.add(other.histogram)
    }

    var count: Int { Int(histogram.totalCount) }

    /// The latency that `share` (0…1) of the recorded ones are at or below (the nearest rank, ⌈n·share⌉, to three
    /// significant digits); zero when nothing was recorded.
    func percentile(_ share: Double) -> Duration {
        count == 0 ? .zero : .nanoseconds(Int64(histogram.valueAtPercentile(share * 100)))
    }

    /// The slowest one recorded, exactly (not its bucket's top); zero when nothing was recorded.
    var max: Duration { count == 0 ? .zero : .nanoseconds(Int64(histogram.maxRecorded)) }

    /// The same latencies, in milliseconds.
    func milliseconds(_ share: Double) -> Double { Double(percentile(share).nanoseconds) / 1e6 }
    var maxMilliseconds: Double { Double(max.nanoseconds) / 1e6 }
}
