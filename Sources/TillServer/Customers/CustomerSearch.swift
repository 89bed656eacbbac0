import Foundation
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillLedger
import TillStorage

/// A customer an operator's search found, and how.
public struct CustomerMatch: Sendable, Equatable {
    public enum MatchedBy: String, Sendable {
        /// The customer id itself, or an id that starts with what was typed.
        case customerId, customerIdPrefix
        /// A guest id linked to the account.
        case guestId
        /// One of the account's transactions, or the original transaction of one of its purchases.
        case transactionId, originalTransactionId
    }

    /// The account (after aliases).
    public var customerId: String
    public var matchedBy: MatchedBy
    /// What matched: the guest id, the transaction and its product.
    public var detail: String
}

extension Customers {
    /// The customers of an app a text names: a customer id (or ids starting with it), a guest id (its account), a
    /// transaction id or an original transaction id (the purchase's owner). Each lookup is one index range; at most
    /// `limit` matches.
    public func search(bundleId: String, text: String, limit: Int = 50) async throws -> [CustomerMatch] {
        let query = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !query.isEmpty, query.utf8.count <= 200 else { return [] }
        return try await database.read { db in
            var matches: [CustomerMatch] = []
            var seen: Set<String> = []
            func add(_ match: CustomerMatch) {
                guard matches.count < limit,
                    seen.insert("\(match.customerId)|\(match.matchedBy)|\(match.detail)").inserted
                else { return }
                matches.append(match)
            }
            for row in try await purchaseStore.transactions(
                bundleId: bundleId,
                transactionOrOriginalId: query,
                limit: limit,
                on: db
            ) {
                add(
                    CustomerMatch(
                        customerId: row.customerId,
                        matchedBy: row.transactionId == query ? .transactionId : .originalTransactionId,
                        detail: "\(row.transactionId) · \(row.productId) · \(row.environment.rawValue)"
                    )
                )
            }
            for (customerId, aliasOf) in try await customerStore.customers(
                bundleId: bundleId,
                prefix: query,
                limit: limit,
                on: db
            ) {
                if aliasOf != nil {
                    let account = try await customerStore.resolve(bundleId: bundleId, customerId: customerId, on: db)
                    add(CustomerMatch(customerId: account, matchedBy: .guestId, detail: customerId))
                } else {
                    add(
                        CustomerMatch(
                            customerId: customerId,
                            matchedBy: customerId == query ? .customerId : .customerIdPrefix,
                            detail: customerId
                        )
                    )
                }
            }
            return matches.sorted {
                ($0.matchedBy == .customerIdPrefix ? 1 : 0) < ($1.matchedBy == .customerIdPrefix ? 1 : 0)
            }
        }
    }
}
