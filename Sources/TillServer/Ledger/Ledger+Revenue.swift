import Foundation
import TillContract
import TillCore
import TillFormats
import TillStorage

extension Ledger {
    /// The money of production purchases between `from` and `to`, grouped; sandbox is excluded.
    public func revenue(bundleId: String?, from: Int64, to: Int64, groupBy: RevenueReport.GroupByPayload)
        async throws -> RevenueReport
    {
        let rows = try await store.productionFinance(bundleId: bundleId, from: from, to: to)
        var grouped: [String: Components.Schemas.RevenueRow] = [:]
        var totals: [String: Int64] = [:]
        for row in rows {
            let key: String =
                switch groupBy {
                case .product: row.productId
                case .currency: row.currency
                case .day: String(ReceiptDate.formatRFC3339(Date(millisecondsSince1970: row.occurredAt)).prefix(10))
                }
            let id = key + "|" + row.currency
            var entry =
                grouped[id] ?? Components.Schemas.RevenueRow(key: key, currency: row.currency, amount: 0, count: 0)
            entry.amount += row.amount
            entry.count += 1
            grouped[id] = entry
            totals[row.currency, default: 0] += row.amount
        }
        return RevenueReport(
            from: from,
            to: to,
            groupBy: groupBy,
            rows: grouped.values.sorted { ($0.key, $0.currency) < ($1.key, $1.currency) },
            totals: .init(additionalProperties: totals)
        )
    }
}
