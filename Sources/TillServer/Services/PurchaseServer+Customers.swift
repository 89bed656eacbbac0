import Crypto
import Foundation
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

extension PurchaseServer {
    /// The catalogue as apps see it, with an ETag for `If-None-Match`.
    public func masterList(bundleId: String) async throws -> MasterList {
        let products = try await store.products(bundleId: bundleId, on: store.sql).map {
            MasterListProduct(
                productId: $0.productId,
                _type: Components.Schemas.ProductType($0.type),
                title: $0.title,
                entitlements: $0.entitlements,
                credits: Components.Schemas.Credits($0.credits),
                content: $0.content,
                subscriptionGroup: $0.subscriptionGroup
            )
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let digest = SHA256.hash(data: try encoder.encode(products))
        return MasterList(
            products: products,
            etag: "\"" + digest.prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
        )
    }

    /// Restore: the same pipeline as a submission (idempotent: nothing is recorded twice), answering with
    /// everything the customer can have back. Consumables are never restored.
    ///
    /// With `wait`, it waits up to that long for Apple's answer, as `?wait=` does for a submission, and answers with
    /// the customer as Apple's answer left them: a receipt Apple refuses restores nothing.
    public func restore(_ request: SubmissionRequest, app: ServerApp, wait: Duration? = nil) async throws
        -> RestoreResult
    {
        let result = try await submit(request, app: app)
        var submission = result.submission
        var customer = result.customer
        if let wait {
            let settled = try await waitForSettlement(id: submission.id, bundleId: app.bundleId, timeout: wait)
            if settled.state != submission.state {
                submission = settled
                customer = try await self.customer(bundleId: app.bundleId, customerId: settled.customerId)
            }
        }
        let restored = customer.purchases.filter {
            $0.revocationDate == nil && $0.productType != .consumable
        }
        return RestoreResult(submission: submission, restored: restored, customer: customer)
    }

    /// Spends credits: never below zero, and once per request id of a customer.
    ///
    /// A request id belongs to the customer id it was sent for (two customers who both number their orders from 1
    /// each spend their own "order-1"). Sending the same debit again answers the balances without spending twice;
    /// the same request id with another credit or amount is refused (`409 requestIdReused`), never answered as if
    /// it had been spent.
    public func debit(bundleId: String, customerId: String, credit: String, amount: Int64, requestId: String)
        async throws -> [String: Int64]
    {
        guard amount > 0 else { throw TillHTTPError.badRequest("invalidAmount", "amount must be positive") }
        guard !requestId.isEmpty, requestId.count <= 200 else {
            throw TillHTTPError.badRequest("invalidRequestId", "requestId has 1 to 200 characters")
        }
        guard !credit.isEmpty, credit.count <= 200 else {
            throw TillHTTPError.badRequest("invalidCredit", "credit has 1 to 200 characters")
        }
        let now = nowMilliseconds
        // The customer id as the app sent it, not its owner: a resend after the guest was linked to an account
        // still finds the debit it repeats. Its length first, so that no two (customer, request) pairs meet.
        let reference = "debit:\(customerId.utf8.count):\(customerId):\(requestId)"
        return try await database.transaction { db in
            let owner = try await self.store.resolve(bundleId: bundleId, customerId: customerId, on: db)
            if let spent = try await self.store.balanceEntries(bundleId: bundleId, reference: reference, on: db).first {
                guard spent.credit == credit, spent.delta == -amount else {
                    throw TillHTTPError.conflict(
                        "requestIdReused",
                        "request \(requestId) of \(customerId) spent \(-spent.delta) \(spent.credit); a resend must be the same debit"
                    )
                }
                return try await self.store.balances(bundleId: bundleId, customerId: owner, on: db)
            }
            let balance = try await self.store.balances(bundleId: bundleId, customerId: owner, on: db)[credit] ?? 0
            guard balance >= amount else {
                throw TillHTTPError.conflict(
                    "insufficientBalance",
                    "\(customerId) has \(balance) \(credit), \(amount) requested"
                )
            }
            try await self.store.addBalanceEntry(
                bundleId: bundleId,
                customerId: owner,
                credit: credit,
                delta: -amount,
                reference: reference,
                at: now,
                on: db
            )
            return try await self.store.balances(bundleId: bundleId, customerId: owner, on: db)
        }
    }

    /// Links a guest (an anonymous device id that bought before signing in) to an account: the guest's own
    /// purchases and balances move to the account, once, and later submissions under the guest id count for the
    /// account.
    ///
    /// A guest id belongs to one account. Linking it to another is refused (`409 guestLinkedElsewhere`): on a
    /// shared device a second sign-in must not take the first account's purchases. Accounts are never merged: an
    /// id that other guests are linked to is an account and cannot become a guest (`409 guestIsAnAccount`), and
    /// a guest id cannot be linked to as if it were an account (`409 accountIsAGuest`).
    public func link(bundleId: String, guestId: String, to accountId: String) async throws -> CustomerView {
        let guestId = try CustomerIdentifier.validated(guestId, field: "customerId (the guest id)")
        let accountId = try CustomerIdentifier.validated(accountId, field: "the account id")
        guard guestId != accountId else {
            throw TillHTTPError.badRequest("invalidAlias", "a guest id cannot be linked to itself")
        }
        let now = nowMilliseconds
        try await database.transaction { db in
            try await self.store.ensureCustomer(bundleId: bundleId, customerId: accountId, at: now, on: db)
            try await self.store.ensureCustomer(bundleId: bundleId, customerId: guestId, at: now, on: db)
            if let owner = try await self.store.aliasOf(bundleId: bundleId, customerId: accountId, on: db) {
                throw TillHTTPError.conflict(
                    "accountIsAGuest",
                    "\(accountId) is a guest id linked to \(owner): link guests to \(owner)"
                )
            }
            if let owner = try await self.store.aliasOf(bundleId: bundleId, customerId: guestId, on: db) {
                guard owner == accountId else {
                    throw TillHTTPError.conflict(
                        "guestLinkedElsewhere",
                        "\(guestId) is already linked to another account; a guest id belongs to one account"
                    )
                }
                return  // linked already: nothing changes
            }
            guard try await !self.store.hasGuests(bundleId: bundleId, customerId: guestId, on: db) else {
                throw TillHTTPError.conflict(
                    "guestIsAnAccount",
                    "\(guestId) has guests linked to it: accounts are never merged"
                )
            }
            try await self.store.moveTransactions(bundleId: bundleId, from: guestId, to: accountId, on: db)
            try await self.store.moveBalances(bundleId: bundleId, from: guestId, to: accountId, on: db)
            try await self.store.setAlias(bundleId: bundleId, customerId: guestId, aliasOf: accountId, on: db)
            try await self.store.recordEvent(
                bundleId: bundleId,
                kind: "linked",
                detail: "\(guestId) → \(accountId)",
                at: now,
                on: db
            )
        }
        return try await customer(bundleId: bundleId, customerId: accountId)
    }

    /// A page of the submissions in a state, oldest change first (the dead-letter queue by default).
    public func submissions(state: String, page: PageRequest = PageRequest()) async throws -> Page<SubmissionView> {
        let records = try await store.submissions(state: state, after: page.after, limit: page.limit + 1, on: store.sql)
        let shown = records.prefix(page.limit)
        return Page(
            items: shown.map(view),
            nextCursor: records.count > page.limit
                ? shown.last.map { PageKey(number: $0.updatedAt, text: $0.id).cursor } : nil,
            total: try await store.count(state: state, on: store.sql)
        )
    }

    /// Puts a dead-lettered submission back in the queue, with its attempts counted from zero.
    public func requeue(id: String) async throws -> SubmissionView {
        let record = try await database.transaction { db -> SubmissionRecord in
            guard var record = try await self.store.submission(id: id, on: db) else {
                throw TillHTTPError.notFound("submission", id)
            }
            guard record.state == .deadLettered else {
                throw TillHTTPError.conflict("notDeadLettered", "submission \(id) is \(record.state)")
            }
            record.state = .pending
            record.attempts = 0
            record.nextAttemptAt = self.nowMilliseconds
            record.reason = nil
            record.updatedAt = self.nowMilliseconds
            try await self.store.update(record, on: db)
            return record
        }
        workAvailable.signal()
        return view(record)
    }

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
