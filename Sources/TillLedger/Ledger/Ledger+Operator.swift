import Foundation
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillStorage

/// An operator's changes, by hand and with a note (the admin API; the console is built on them): a product given, a
/// purchase taken back, credits added or taken. Each goes through the same rules as a purchase, a revocation or a
/// debit, and is an event whose source is `operator`, carrying the note, on the customer's timeline.
extension Ledger {
    /// Gives a customer a product without money: a ledger row `grant-…` (confirmed: no App Store knows it) whose
    /// entitlements or credits count like a purchase's, until `expiresDate` (an auto-renewable product needs one; a
    /// non-renewing product without one lasts its `durationSeconds`; others, for good without one).
    public func grant(
        bundleId: String,
        customerId: String,
        productId: String,
        expiresDate: Int64?,
        environment: AppStoreEnvironment = .production,
        note: String,
        app: ServerApp,
        catalogue: [String: CatalogProduct]
    ) async throws {
        let customerId = try CustomerIdentifier.validated(customerId)
        let note = try Self.validated(note: note)
        guard let product = catalogue[productId] else {
            throw LedgerRefusal(.productNotFound, "no product \(productId)")
        }
        let now = clock.milliseconds
        if let expiresDate, expiresDate <= now {
            throw LedgerRefusal(.invalidExpiry, "expiresDate is in the past; a grant ends in the future")
        }
        if product.type == .autoRenewable && expiresDate == nil {
            throw LedgerRefusal(.invalidExpiry, "a subscription's grant needs its expiresDate")
        }
        let id = "grant-" + UUID.random().uuidString.lowercased()
        let transaction = PurchaseTransaction(
            transactionId: id,
            productId: productId,
            bundleId: bundleId,
            productType: product.type,
            purchaseDate: Date(millisecondsSince1970: now),
            expiresDate: expiresDate.map { Date(millisecondsSince1970: $0) },
            environment: environment
        )
        try await self.transaction(source: .operator(note: note)) { changes in
            try await self.customerStore.ensureCustomer(
                bundleId: bundleId,
                customerId: customerId,
                at: now,
                on: changes.db
            )
            let owner = try await self.customerStore.owner(bundleId: bundleId, customerId: customerId, on: changes.db)
            var free = product
            free.price = nil  // a grant books no money
            try await self.post(
                transaction,
                to: owner,
                app: app,
                product: free,
                origin: .grant(id),
                confirmed: true,
                carryingRevocation: false,
                now: now,
                as: .access_granted,
                in: changes
            )
        }
    }

    /// Takes back a customer's purchase (or grant) by hand: it stops granting (`operator`, the note as its detail), a
    /// consumable's credits are taken back, no money moves. A purchase already revoked is left as it is. Throws
    /// `purchaseNotFound` when the customer has no such transaction.
    public func revoke(
        bundleId: String,
        customerId: String,
        transactionId: String,
        environment: AppStoreEnvironment?,
        note: String,
        catalogue: [String: CatalogProduct]
    ) async throws {
        let customerId = try CustomerIdentifier.validated(customerId)
        let note = try Self.validated(note: note)
        let now = clock.milliseconds
        try await self.transaction(source: .operator(note: note)) { changes in
            let owner = try await self.customerStore.owner(bundleId: bundleId, customerId: customerId, on: changes.db)
            let rows = try await self.purchaseStore.transactions(
                bundleId: bundleId,
                customerId: owner,
                transactionId: transactionId,
                on: changes.db
            ).filter { environment == nil || $0.environment == environment }
            guard !rows.isEmpty else {
                throw LedgerRefusal(
                    .purchaseNotFound,
                    "\(customerId) has no purchase \(transactionId)"
                )
            }
            for var row in rows where row.revocationDate == nil {
                row.revocationDate = now
                row.revocationReason = ._operator
                row.revocationDetail = note
                row.updatedAt = now
                try await self.writes.update(row, in: changes)
                let taken = try await self.credit(
                    row,
                    product: catalogue[row.productId],
                    sign: -1,
                    reference: Self.reference("operatorRevoke", of: row),
                    at: now,
                    in: changes
                )
                changes.record(
                    PendingEvent(
                        .access_revoked,
                        about: row,
                        product: catalogue[row.productId],
                        occurredAt: now,
                        balanceChanges: taken
                    )
                )
            }
        }
    }

    /// Adds `delta` (negative to take) of a credit by hand, once per `requestId` of the customer, never below zero.
    public func adjustBalance(
        bundleId: String,
        customerId: String,
        credit: String,
        delta: Int64,
        requestId: String,
        note: String
    ) async throws -> [String: Int64] {
        let customerId = try CustomerIdentifier.validated(customerId)
        let note = try Self.validated(note: note)
        guard delta != 0 else { throw LedgerRefusal(.invalidAmount, "delta is not zero") }
        try Self.validate(requestId: requestId, credit: credit)
        return try await move(
            delta,
            of: credit,
            bundleId: bundleId,
            customerId: customerId,
            reference: "adjust:\(customerId.utf8.count):\(customerId):\(requestId)",
            requestId: requestId,
            as: .credits_adjusted,
            source: .operator(note: note)
        )
    }

    /// An operator's note: 1 to 500 characters, spaces around it trimmed.
    package static func validated(note: String) throws -> String {
        let note = note.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !note.isEmpty, note.unicodeScalars.count <= 500 else {
            throw LedgerRefusal(.invalidNote, "note has 1 to 500 characters: say why, for the timeline")
        }
        return note
    }
}
