import TillFormats

/// A position in a customer's transaction history: the `revision` of Get Transaction History.
///
/// Every transaction carries a modification sequence number (``SimTransaction/signedSequence``): one counter
/// for the whole store, taken again whenever the transaction's signed data changes (a refund, a revocation, an
/// upgrade). The counter's row is locked until the change commits, so sequence order is commit order, and
/// modification order is sequence order. A revision names sequence numbers, never offsets, so a change made
/// while a client pages moves nothing under it: the changed transaction comes again, with its new data.
///
/// ```
/// revision   = base64url( "2:" high [ ":" low ] )
/// ascending  : every transaction up to `high` was returned; the next page starts above `high`.
/// descending : every transaction from `low` to `high` was returned; the next page holds first what changed
///              since (above `high`, oldest change first), then what lies below `low` (newest first).
/// ```
///
/// The simulator used to hand out base64url decimal offsets; such a revision is read as that many
/// transactions of the current order (``Token/legacyOffset(_:)``).
struct HistoryRevision: Sendable, Hashable {
    /// The highest sequence number returned so far (0 before any).
    var high: Int64
    /// Descending order: the lowest sequence number returned so far; nil when nothing below `high` is left.
    var low: Int64?

    /// A revision as a client sends it back.
    enum Token: Sendable, Hashable {
        case position(HistoryRevision)
        /// A revision of an older simulator: the offset of the next page.
        case legacyOffset(Int)

        /// Parses a `revision` query parameter; nil for anything the simulator did not hand out.
        init?(_ text: String) {
            guard let bytes = Base64.decode(text, alphabet: .url) else { return nil }
            let decoded = String(decoding: bytes, as: UTF8.self)
            if let offset = Int(decoded), offset >= 0 {
                self = .legacyOffset(offset)
                return
            }
            let parts = decoded.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3, parts[0] == "2", let high = Int64(parts[1]), high >= 0
            else { return nil }
            var low: Int64?
            if parts.count == 3 {
                guard let value = Int64(parts[2]), value >= 0 else { return nil }
                low = value
            }
            self = .position(HistoryRevision(high: high, low: low))
        }
    }

    /// The token a response carries.
    var token: String {
        Base64.encode(
            Array((["2", String(high)] + (low.map { [String($0)] } ?? [])).joined(separator: ":").utf8),
            alphabet: .url
        )
    }

    /// A page of at most `size` transactions of a (filtered) history after `token`, the revision that follows
    /// it, and whether more transactions are left. Throws for a legacy offset beyond the history.
    static func page(
        of history: [SimTransaction],
        after token: Token?,
        descending: Bool,
        size: Int = 20
    ) throws(ServerAPIFailure) -> (items: [SimTransaction], revision: HistoryRevision, hasMore: Bool) {
        let ascending = history.sorted { $0.signedSequence < $1.signedSequence }
        var position: HistoryRevision?
        switch token {
        case nil:
            position = nil
        case .position(let revision):
            position = revision
        case .legacyOffset(let offset):
            guard offset <= ascending.count else { throw ServerAPIFailure(.invalidRequestRevision) }
            if offset > 0 {
                let ordered = descending ? ascending.reversed() : ascending
                position =
                    descending
                    ? HistoryRevision(high: ordered[0].signedSequence, low: ordered[offset - 1].signedSequence)
                    : HistoryRevision(high: ordered[offset - 1].signedSequence, low: nil)
            }
        }

        guard descending else {
            let high = position?.high ?? 0
            let next = ascending.filter { $0.signedSequence > high }
            let items = Array(next.prefix(size))
            return (items, HistoryRevision(high: items.last?.signedSequence ?? high, low: nil), next.count > size)
        }
        guard let position else {
            let items = Array(ascending.reversed().prefix(size))
            let revision = HistoryRevision(
                high: items.first?.signedSequence ?? 0,
                low: items.last?.signedSequence ?? 0
            )
            return (items, revision, ascending.count > size)
        }
        let changed = ascending.filter { $0.signedSequence > position.high }
        let newer = Array(changed.prefix(size))
        let below = position.low.map { low in ascending.reversed().filter { $0.signedSequence < low } } ?? []
        let older = Array(below.prefix(size - newer.count))
        let items = (newer + older).sorted { $0.signedSequence > $1.signedSequence }
        let revision = HistoryRevision(
            high: newer.last?.signedSequence ?? position.high,
            low: older.last?.signedSequence ?? position.low
        )
        return (items, revision, changed.count > newer.count || below.count > older.count)
    }
}
