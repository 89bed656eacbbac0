import Foundation
import SQLKit
import TillContract
import TillCore
import TillStorage

extension Ledger {
    /// Spends credits: never below zero, and once per request id of a customer.
    ///
    /// A request id belongs to the customer id it was sent for (two customers who both number their orders from 1
    /// each spend their own "order-1"). Sending the same debit again answers the balances without spending twice;
    /// the same request id with another credit or amount is refused (`409 requestIdReused`), never answered as if
    /// it had been spent.
    public func debit(bundleId: String, customerId: String, credit: String, amount: Int64, requestId: String)
        async throws -> [String: Int64]
    {
        guard amount > 0 else { throw LedgerRefusal(.invalidAmount, "amount must be positive") }
        try Self.validate(requestId: requestId, credit: credit)
        // The customer id as the app sent it, not its owner: a resend after the guest was linked to an account
        // still finds the debit it repeats. Its length first, so that no two (customer, request) pairs meet.
        let reference = "debit:\(customerId.utf8.count):\(customerId):\(requestId)"
        return try await move(
            -amount,
            of: credit,
            bundleId: bundleId,
            customerId: customerId,
            reference: reference,
            requestId: requestId,
            as: .credits_debited,
            source: .app(requestId)
        )
    }

    /// The largest balance of one credit a customer may hold (10^15), and so the largest amount one debit or
    /// adjustment may move: far beyond any game's, and far enough from `Int64.max` that no sum of balances, entries or
    /// a consumable's credits times its quantity (each at most `Ledger.largestCreditAmount` × Apple's 10) can wrap.
    public static let largestBalance: Int64 = 1_000_000_000_000_000

    /// The most of one credit a unit of a consumable may give (10^12); the catalogue refuses more.
    public static let largestCreditAmount: Int64 = 1_000_000_000_000

    /// Moves `delta` of a credit for the customer once per `reference`, never below zero, and records the event;
    /// answers the balances. A resend (the same reference) moves nothing and answers them again; the same reference
    /// with another change is `409 requestIdReused`.
    package func move(
        _ delta: Int64,
        of credit: String,
        bundleId: String,
        customerId: String,
        reference: String,
        requestId: String,
        as type: EventType,
        source: EventSource
    ) async throws -> [String: Int64] {
        guard delta.magnitude <= Ledger.largestBalance.magnitude else {
            throw LedgerRefusal(.invalidAmount, "a change of credits is at most \(Ledger.largestBalance) either way")
        }
        let now = clock.milliseconds
        return try await transaction(source: source) { changes in
            let db = changes.db
            if delta > 0 {
                // Credits given (an operator's adjustment) make a customer of an id never seen, as a grant does: its
                // answer's `firstSeen` is now. A debit of an unknown id is refused below, and records nothing.
                try await self.customerStore.ensureCustomer(bundleId: bundleId, customerId: customerId, at: now, on: db)
            }
            let owner = try await self.customerStore.owner(bundleId: bundleId, customerId: customerId, on: db)
            if let done = try await self.purchaseStore.balanceEntries(bundleId: bundleId, reference: reference, on: db)
                .first
            {
                guard done.credit == credit, done.delta == delta else {
                    throw LedgerRefusal(
                        .requestIdReused,
                        "request \(requestId) of \(customerId) moved \(done.delta) \(done.credit); a resend must be the same change"
                    )
                }
                return try await self.purchaseStore.balances(bundleId: bundleId, customerId: owner, on: db)
            }
            let balance =
                try await self.purchaseStore.balances(bundleId: bundleId, customerId: owner, on: db)[credit] ?? 0
            let (after, overflow) = balance.addingReportingOverflow(delta)
            guard delta >= 0 || (!overflow && after >= 0) else {
                throw LedgerRefusal(
                    .insufficientBalance,
                    "\(customerId) has \(balance) \(credit), \(delta.magnitude) requested"
                )
            }
            guard !overflow, after <= Ledger.largestBalance else {
                throw LedgerRefusal(
                    .invalidAmount,
                    "\(customerId) has \(balance) \(credit); a balance is at most \(Ledger.largestBalance)"
                )
            }
            try await self.writes.addBalanceEntry(
                bundleId: bundleId,
                customerId: owner,
                credit: credit,
                delta: delta,
                reference: reference,
                at: now,
                on: db
            )
            var event = PendingEvent(type, bundleId: bundleId, customerId: owner, occurredAt: now)
            event.balanceChanges = [credit: delta]
            changes.record(event)
            return try await self.purchaseStore.balances(bundleId: bundleId, customerId: owner, on: db)
        }
    }

    package static func validate(requestId: String, credit: String) throws {
        guard !requestId.isEmpty, requestId.unicodeScalars.count <= 200 else {
            throw LedgerRefusal(.invalidRequestId, "requestId has 1 to 200 characters")
        }
        guard !credit.isEmpty, credit.unicodeScalars.count <= 200 else {
            throw LedgerRefusal(.invalidCredit, "credit has 1 to 200 characters")
        }
    }

    /// Links a guest id to an account (`Customers.link`, which checks that it may be): the guest's purchases and
    /// balances move to the account, and what is submitted under the guest id counts for the account from now on.
    package func link(bundleId: String, guest guestId: String, to accountId: String, in changes: ChangeSet) async throws
    {
        let db = changes.db
        let moved = try await writes.moveTransactions(bundleId: bundleId, from: guestId, to: accountId, on: db)
        try await writes.moveBalances(bundleId: bundleId, from: guestId, to: accountId, on: db)
        try await writes.setAlias(bundleId: bundleId, customerId: guestId, aliasOf: accountId, on: db)
        var event = PendingEvent(
            .customer_transferred,
            bundleId: bundleId,
            customerId: accountId,
            occurredAt: clock.milliseconds
        )
        event.transfer = Components.Schemas.EventTransfer(
            fromCustomerId: guestId,
            toCustomerId: accountId,
            reason: .alias,
            transactionIds: moved
        )
        changes.record(event)
    }
}
