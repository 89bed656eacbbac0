import Foundation

/// How fast subscription time runs, as in Apple's sandbox and StoreKit Testing.
///
/// The default, "monthly renews every 5 minutes", is Apple's sandbox table: 1 week → 3 min, 1 month →
/// 5 min, 2 months → 10 min, 3 months → 15 min, 6 months → 30 min, 1 year → 1 hour. Other rates scale the
/// same table; `realTime` uses calendar months. Durations that are not periods (grace periods, billing
/// retry) are scaled by the same factor: 30 days of real time become one accelerated month.
public struct RenewalRate: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Seconds an accelerated month lasts; nil for real time.
    public var monthSeconds: Double?

    public init(monthSeconds: Double?) {
        self.monthSeconds = monthSeconds
    }

    /// The month lengths `PUT /admin/v1/clock/rate` accepts: a second to a year. A longer one is slower than real time
    /// and no test's need; a huge one (1e300) made dates past what Int64 milliseconds hold, and trapped.
    public static let acceptedMonthSeconds: ClosedRange<Double> = 1...(365 * 86_400)

    public static let realTime = RenewalRate(monthSeconds: nil)
    public static let monthlyEveryHour = RenewalRate(monthSeconds: 3600)
    public static let monthlyEvery30Minutes = RenewalRate(monthSeconds: 1800)
    public static let monthlyEvery5Minutes = RenewalRate(monthSeconds: 300)
    public static let monthlyEveryMinute = RenewalRate(monthSeconds: 60)
    public static let monthlyEvery30Seconds = RenewalRate(monthSeconds: 30)
    public static let monthlyEvery10Seconds = RenewalRate(monthSeconds: 10)
    /// StoreKit Testing's "1 second is 1 day".
    public static let oneSecondIsOneDay = RenewalRate(monthSeconds: 30)

    /// The named presets, as `--renewal-rate` accepts them.
    public static let presets: [String: RenewalRate] = [
        "real-time": .realTime, "monthly-every-hour": .monthlyEveryHour,
        "monthly-every-30-minutes": .monthlyEvery30Minutes, "monthly-every-5-minutes": .monthlyEvery5Minutes,
        "monthly-every-minute": .monthlyEveryMinute, "monthly-every-30-seconds": .monthlyEvery30Seconds,
        "monthly-every-10-seconds": .monthlyEvery10Seconds, "one-second-is-one-day": .oneSecondIsOneDay,
    ]

    public init?(name: String) {
        guard let preset = Self.presets[name] else { return nil }
        self = preset
    }

    /// When a period that starts at `start` ends.
    public func end(of period: SubscriptionPeriod, from start: Date) -> Date {
        if let monthSeconds { return start + monthSeconds * period.monthsForAcceleration }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components: DateComponents =
            switch period {
            case .oneWeek: DateComponents(day: 7)
            case .oneMonth: DateComponents(month: 1)
            case .twoMonths: DateComponents(month: 2)
            case .threeMonths: DateComponents(month: 3)
            case .sixMonths: DateComponents(month: 6)
            case .oneYear: DateComponents(year: 1)
            }
        return calendar.date(byAdding: components, to: start) ?? start
    }

    /// A real-world span (a grace period of 16 days, say) at this rate.
    public func scale(days: Double) -> TimeInterval {
        guard let monthSeconds else { return days * 86_400 }
        return days / 30 * monthSeconds
    }

    public var description: String {
        if let name = Self.presets.first(where: { $0.value == self && $0.key != "one-second-is-one-day" })?.key {
            return name
        }
        return monthSeconds.map { "monthly-every-\(Int($0))-seconds" } ?? "real-time"
    }
}
