import Foundation
import TillContract
import TillCore

/// What the figures count (`srv_figure_changes.measure`, `srv_figures_daily.measure`): the books' kinds of money, the
/// renewals of auto-renewable subscriptions, and — in the journal only — a subscription whose summary must be read
/// again from its ledger rows.
package enum FigureMeasure: String, Codable, Sendable, CaseIterable {
    case purchase, refund, refundReversed, revocation, restoration
    /// A period of an auto-renewable subscription after its first (`transaction_id <> original_transaction_id`).
    case renewal
    /// A subscription's ledger rows changed: its summary (`srv_figures_subscriptions`) is computed again.
    case subscription

    package init(_ kind: FinanceKind) {
        switch kind {
        case .purchase: self = .purchase
        case .refund: self = .refund
        case .refundReversed: self = .refundReversed
        case .revocation: self = .revocation
        case .restoration: self = .restoration
        }
    }

    /// The measures that are money, in the books' milliunits.
    package static let money: [FigureMeasure] = [.purchase, .refund, .refundReversed, .revocation, .restoration]
}

/// One line of the figures' journal (`srv_figure_changes`): what a change of the ledger did to the figures, written by
/// `LedgerStore` in the change's own transaction and folded into the daily figures by `Figures.refresh` (exactly once:
/// a line is deleted in the transaction that adds it).
package struct FigureChange: Codable, Sendable, Equatable {
    package var bundleId: String
    package var environment: AppStoreEnvironment
    package var measure: FigureMeasure
    /// The UTC day (days since 1970) the money or the period is dated; nil for `subscription`.
    package var day: Int64?
    package var productId: String?
    package var currency: String?
    package var amount: Int64
    package var entries: Int64
    /// For `subscription`: which one.
    package var originalTransactionId: String?

    package static let dayLength: Int64 = 86_400_000

    /// The UTC day of a time in milliseconds.
    package static func day(of milliseconds: Int64) -> Int64 {
        milliseconds >= 0 ? milliseconds / dayLength : (milliseconds - dayLength + 1) / dayLength
    }

    /// Money booked (`amount` negative to take it back).
    package static func money(
        bundleId: String,
        environment: AppStoreEnvironment,
        kind: FinanceKind,
        productId: String,
        currency: String,
        amount: Int64,
        at: Int64,
        entries: Int64 = 1
    ) -> FigureChange {
        FigureChange(
            bundleId: bundleId,
            environment: environment,
            measure: FigureMeasure(kind),
            day: day(of: at),
            productId: productId,
            currency: currency,
            amount: amount,
            entries: entries
        )
    }

    /// What a ledger row counts for in the subscription figures, added (`sign` 1) or taken away (-1): nothing unless it
    /// is a period of an auto-renewable subscription bought in the App Store (an operator's grant is not); else the
    /// subscription to read again, and a renewal when it is not the first period.
    package static func periods(of row: LedgerRecord, sign: Int64) -> [FigureChange] {
        guard row.isSubscriptionPeriod else { return [] }
        var changes = [
            FigureChange(
                bundleId: row.bundleId,
                environment: row.environment,
                measure: .subscription,
                amount: 0,
                entries: 0,
                originalTransactionId: row.originalTransactionId
            )
        ]
        if row.transactionId != row.originalTransactionId {
            changes.append(
                FigureChange(
                    bundleId: row.bundleId,
                    environment: row.environment,
                    measure: .renewal,
                    day: day(of: row.purchaseDate),
                    productId: row.productId,
                    currency: "",
                    amount: sign,
                    entries: sign
                )
            )
        }
        return changes
    }
}

extension LedgerRecord {
    /// A period of an auto-renewable subscription bought in the App Store: what the subscription figures count.
    package var isSubscriptionPeriod: Bool { productType == .autoRenewable && source != .operator }
}

/// One auto-renewable subscription (an original transaction in an environment) as the figures see it, computed from
/// its ledger rows (`SubscriptionFigure.summary(of:)`) and kept in `srv_figures_subscriptions`.
package struct SubscriptionFigure: Codable, Sendable, Equatable {
    package var environment: AppStoreEnvironment
    package var originalTransactionId: String
    package var bundleId: String
    /// The product of its latest period.
    package var productId: String
    /// The first period's purchase.
    package var startedAt: Int64
    /// When access ends (or ended): the latest end of a period, a refunded or revoked period ending when it was taken.
    package var endsAt: Int64
    /// The first period was a free trial (an introductory offer at no price).
    package var trial: Bool
    package var trialEndsAt: Int64?
    /// The first paid period after a free trial.
    package var convertedAt: Int64?
    /// The latest period's price as a month's worth (milliunits), for the MRR; 0 when it was not paid.
    package var monthlyAmount: Int64
    package var currency: String?
    package var periods: Int
    package var updatedAt: Int64

    /// The summary of one subscription's ledger rows (any order); nil when no row counts (an operator's grant, or
    /// periods Apple rejected, which were never sold).
    package static func summary(of rows: [LedgerRecord], now: Int64) -> SubscriptionFigure? {
        let periods = rows.filter { $0.isSubscriptionPeriod && $0.revocationReason != .rejected }
            .sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
        guard let first = periods.first, let latest = periods.last else { return nil }
        let trial = first.introductoryOffer && (first.price ?? 0) == 0
        let ends = periods.map { $0.revocationDate ?? $0.expiresDate ?? $0.purchaseDate }.max() ?? first.purchaseDate
        let paid = latest.revocationDate == nil && latest.ownership == .purchased ? latest.price ?? 0 : 0
        return SubscriptionFigure(
            environment: first.environment,
            originalTransactionId: first.originalTransactionId,
            bundleId: first.bundleId,
            productId: latest.productId,
            startedAt: first.purchaseDate,
            endsAt: ends,
            trial: trial,
            trialEndsAt: trial ? first.expiresDate : nil,
            convertedAt: trial
                ? periods.dropFirst().first { ($0.price ?? 0) > 0 && $0.revocationReason != .refund }?.purchaseDate
                : nil,
            monthlyAmount: paid > 0
                ? monthly(
                    paid,
                    length: (latest.expiresDate ?? latest.purchaseDate) - latest.purchaseDate,
                    environment: latest.environment
                ) : 0,
            currency: latest.currency,
            periods: periods.count,
            updatedAt: now
        )
    }

    /// A period's price as a month's worth: a period within a fifth of a week, a month, two, three or six months or a
    /// year counts as that many months (so February's month is a month). Outside production, a period of Apple's
    /// accelerated sandbox (3 minutes a week, 5 a month, 10, 15, 30, an hour a year) counts as the period it stands
    /// for; any other length in proportion to 30.44 days.
    package static func monthly(
        _ price: Int64,
        length milliseconds: Int64,
        environment: AppStoreEnvironment = .production
    )
        -> Int64
    {
        let days = Double(max(milliseconds, 1)) / 86_400_000
        let month = 30.436_875
        let months = [7 / month, 1, 2, 3, 6, 12]
        func match(_ lengths: [Double]) -> Double? {
            zip(lengths, months).first { abs(days - $0.0) <= $0.0 / 5 }?.1
        }
        let calendar = months.map { $0 * month }
        let sandbox = [3.0, 5, 10, 15, 30, 60].map { $0 / 1440 }
        let chosen = match(calendar) ?? (environment == .production ? nil : match(sandbox)) ?? days / month
        return Int64((Double(price) / chosen).rounded())
    }
}
