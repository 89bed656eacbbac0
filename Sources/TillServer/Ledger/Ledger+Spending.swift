import Foundation
import SQLKit
import TillCore
import TillHTTPKit
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
        guard amount > 0 else { throw TillHTTPError.badRequest("invalidAmount", "amount must be positive") }
        guard !requestId.isEmpty, requestId.count <= 200 else {
            throw TillHTTPError.badRequest("invalidRequestId", "requestId has 1 to 200 characters")
        }
        guard !credit.isEmpty, credit.count <= 200 else {
            throw TillHTTPError.badRequest("invalidCredit", "credit has 1 to 200 characters")
        }
        let now = clock.milliseconds
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

    /// Moves a guest's purchases and balances to the account it is linked to (`Customers.link`), in `db`'s
    /// transaction.
    func transfer(bundleId: String, from guestId: String, to accountId: String, on db: any SQLDatabase) async throws {
        try await store.moveTransactions(bundleId: bundleId, from: guestId, to: accountId, on: db)
        try await store.moveBalances(bundleId: bundleId, from: guestId, to: accountId, on: db)
    }
}
