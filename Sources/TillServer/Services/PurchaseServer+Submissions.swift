import Foundation
import HTTPTypes
import Logging
import SQLKit
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

extension PurchaseServer {
    /// Accepts a submission: verifies it locally, records its transactions once, grants entitlements and
    /// credits, and queues the confirmation with Apple. Answers in milliseconds.
    public func submit(_ request: SubmissionRequest, app: ServerApp) async throws -> SubmissionResult {
        let clock = ContinuousClock()
        let start = clock.now
        let kind: SubmissionKind =
            request.signedTransaction != nil
            ? .signedTransaction : request.transactionReceipt != nil ? .transactionReceipt : .appReceipt
        do {
            let result = try await accept(request, app: app)
            metrics.submission(kind: kind.rawValue, outcome: "accepted", duration: clock.now - start)
            return result
        } catch {
            metrics.submission(kind: kind.rawValue, outcome: "refused", duration: clock.now - start)
            throw error
        }
    }

    private func accept(_ request: SubmissionRequest, app: ServerApp) async throws -> SubmissionResult {
        let customerId = try CustomerIdentifier.validated(request.customerId)
        let inputs: [SubmissionInput] = [
            request.receipt.map(SubmissionInput.appReceipt),
            request.transactionReceipt.map(SubmissionInput.transactionReceipt),
            request.signedTransaction.map(SubmissionInput.signedTransaction),
        ].compactMap { $0 }
        guard inputs.count == 1, let input = inputs.first, !input.payload.isEmpty else {
            throw TillHTTPError.badRequest(
                "oneFormatExpected",
                "send exactly one of receipt, transactionReceipt or signedTransaction"
            )
        }
        if let key = request.idempotencyKey {
            guard !key.isEmpty, key.count <= 200 else {
                throw TillHTTPError.badRequest("invalidIdempotencyKey", "an idempotency key has 1 to 200 characters")
            }
            if let existing = try await store.submission(bundleId: app.bundleId, idempotencyKey: key, on: store.sql) {
                return try await replay(existing, payload: input.payload, app: app)
            }
        }

        let verified = try await verifier.verify(input, app: app)
        let now = nowMilliseconds
        let catalogue = try await catalogue(bundleId: app.bundleId)
        let outcome = try await database.transaction {
            db -> (SubmissionRecord, [RefusedTransaction], CustomerSnapshot)? in
            if let key = request.idempotencyKey,
                try await self.store.submission(bundleId: app.bundleId, idempotencyKey: key, on: db) != nil
            {
                return nil  // a concurrent resend won the race; answer with its submission below
            }
            try await self.store.ensureCustomer(bundleId: app.bundleId, customerId: customerId, at: now, on: db)
            let owner = try await self.store.resolve(bundleId: app.bundleId, customerId: customerId, on: db)
            var submission = SubmissionRecord(
                id: UUID.random().uuidString.lowercased(),
                bundleId: app.bundleId,
                customerId: owner,
                idempotencyKey: request.idempotencyKey,
                kind: input.kind,
                environment: verified.environment.rawValue,
                state: .pending,
                attempts: 0,
                nextAttemptAt: now,
                lastStatus: nil,
                lastError: nil,
                retryCause: nil,
                reason: nil,
                transactionIds: TransactionIDs(verified.transactions.map(\.transactionId)),
                claimedUntil: nil,
                createdAt: now,
                updatedAt: now,
                confirmedAt: nil
            )
            try await self.store.insert(submission, on: db)
            try await self.store.insertPayload(submissionId: submission.id, payload: input.payload, on: db)
            let refused = try await self.record(
                verified.transactions,
                submission: submission,
                app: app,
                catalogue: catalogue,
                on: db
            )
            if !verified.transactions.isEmpty && refused.count == verified.transactions.count {
                // Nothing of it is this customer's: there is nothing to ask Apple (a replay of someone else's
                // purchase must not cost a call to Apple, nor a place in the queue).
                submission.state = .rejected
                submission.reason = "every transaction belongs to another customer (ownedByAnotherCustomer)"
                submission.nextAttemptAt = nil
                try await self.store.update(submission, on: db)
            }
            // The customer as this transaction leaves them, read while it holds the connection (a read after
            // the commit would borrow another and start a read of its own: a fifth of a submission's SQL).
            let customer = try await self.snapshot(bundleId: app.bundleId, owner: owner, on: db)
            return (submission, refused, customer)
        }
        guard let (submission, refused, customer) = outcome else {
            // A resend with the same idempotency key committed first: answer with its submission.
            guard let key = request.idempotencyKey,
                let existing = try await store.submission(bundleId: app.bundleId, idempotencyKey: key, on: store.sql)
            else { throw TillHTTPError(.internalServerError, "submissionLost", "the submission could not be recorded") }
            return try await replay(existing, payload: input.payload, app: app)
        }
        if !verified.transactions.isEmpty && refused.count == verified.transactions.count {
            throw TillHTTPError.conflict(
                "ownedByAnotherCustomer",
                "every transaction of this submission belongs to another customer (\(refused.count) refused)"
            )
        }
        workAvailable.signal()
        return SubmissionResult(
            submission: view(submission),
            customer: try await view(of: customer, bundleId: app.bundleId),
            refused: refused
        )
    }

    /// The earlier answer to a resent submission (same idempotency key); a different payload under that key is a conflict.
    private func replay(_ existing: SubmissionRecord, payload: String, app: ServerApp) async throws -> SubmissionResult
    {
        guard try await store.payload(submissionId: existing.id, on: store.sql) == payload else {
            throw TillHTTPError.conflict("idempotencyKeyReused", "the idempotency key was used for another submission")
        }
        // The first answer again: transactions another customer owns are still refused (a resend of a refused
        // replay must not look accepted).
        let ids = existing.transactionIds.ids
        var refused: [RefusedTransaction] = []
        for id in ids {
            if let row = try await store.transaction(
                environment: existing.environment,
                transactionId: id,
                on: store.sql
            ),
                row.customerId != existing.customerId
            {
                refused.append(RefusedTransaction(transactionId: id, reason: "ownedByAnotherCustomer"))
            }
        }
        if !ids.isEmpty && refused.count == ids.count {
            throw TillHTTPError.conflict(
                "ownedByAnotherCustomer",
                "every transaction of this submission belongs to another customer (\(refused.count) refused)"
            )
        }
        return SubmissionResult(
            submission: view(existing),
            customer: try await customer(bundleId: app.bundleId, customerId: existing.customerId),
            refused: refused
        )
    }

    /// Records transactions in the ledger once each, credits consumables, books revenue, and applies revocations
    /// the signed data carries. Returns the transactions refused because another customer owns them.
    func record(
        _ transactions: [PurchaseTransaction],
        submission: SubmissionRecord,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        on db: any SQLDatabase
    ) async throws -> [RefusedTransaction] {
        var refused: [RefusedTransaction] = []
        let now = nowMilliseconds
        // Purchases recorded for the first time, whose notifications may have come first.
        var firstRecorded: [(environment: String, originalTransactionId: String)] = []
        for transaction in transactions {
            let environment = transaction.environment.rawValue
            let product = catalogue[transaction.productId]
            if var existing = try await store.transaction(
                environment: environment,
                transactionId: transaction.transactionId,
                on: db
            ) {
                if existing.customerId != submission.customerId {
                    guard app.restorePolicy == .transferToLatest,
                        !(product?.type ?? transaction.productType ?? .consumable).isCreditedPerPurchase
                    else {
                        refused.append(
                            RefusedTransaction(
                                transactionId: transaction.transactionId,
                                reason: "ownedByAnotherCustomer"
                            )
                        )
                        try await store.recordEvent(
                            bundleId: app.bundleId,
                            kind: "replayRefused",
                            detail:
                                "\(environment) transaction \(transaction.transactionId) of \(existing.customerId) submitted by \(submission.customerId)",
                            at: now,
                            on: db
                        )
                        continue
                    }
                    try await store.recordEvent(
                        bundleId: app.bundleId,
                        kind: "transferred",
                        detail:
                            "\(environment) transaction \(transaction.transactionId) moved from \(existing.customerId) to \(submission.customerId)",
                        at: now,
                        on: db
                    )
                    existing.customerId = submission.customerId
                }
                if let revoked = transaction.revocationDate, existing.revocationDate == nil {
                    existing.revocationDate = revoked.millisecondsSince1970
                    existing.revocationReason = transaction.isUpgraded ? "upgraded" : "refund"
                }
                existing.isUpgraded = existing.isUpgraded || transaction.isUpgraded
                existing.expiresDate = transaction.expiresDate?.millisecondsSince1970 ?? existing.expiresDate
                existing.updatedAt = now
                try await store.update(existing, on: db)
                continue
            }
            try await store.lockPurchase(
                environment: environment,
                originalTransactionId: transaction.originalTransactionId,
                on: db
            )
            if !firstRecorded.contains(where: {
                $0.environment == environment && $0.originalTransactionId == transaction.originalTransactionId
            }) {
                firstRecorded.append((environment, transaction.originalTransactionId))
            }
            let record = LedgerRecord(
                environment: environment,
                transactionId: transaction.transactionId,
                bundleId: app.bundleId,
                customerId: submission.customerId,
                originalTransactionId: transaction.originalTransactionId,
                productId: transaction.productId,
                productType: (product?.type ?? transaction.productType)?.rawValue,
                quantity: transaction.quantity,
                purchaseDate: transaction.purchaseDate.millisecondsSince1970,
                expiresDate: transaction.expiresDate?.millisecondsSince1970,
                revocationDate: transaction.revocationDate?.millisecondsSince1970,
                revocationReason: transaction.revocationDate == nil
                    ? nil : (transaction.isUpgraded ? "upgraded" : "refund"),
                isUpgraded: transaction.isUpgraded,
                ownership: transaction.ownership.rawValue,
                price: transaction.price ?? product?.price,
                currency: transaction.currency ?? product?.currency,
                storefront: transaction.storefront,
                webOrderLineItemId: transaction.webOrderLineItemId,
                submissionId: submission.id,
                confirmed: false,
                createdAt: now,
                updatedAt: now
            )
            try await store.insert(record, on: db)
            if record.revocationDate == nil, let product, product.type == .consumable {
                for (credit, amount) in product.credits {
                    try await store.addBalanceEntry(
                        bundleId: app.bundleId,
                        customerId: submission.customerId,
                        credit: credit,
                        delta: amount * Int64(transaction.quantity),
                        reference: "purchase:\(environment):\(transaction.transactionId)",
                        at: now,
                        on: db
                    )
                }
            }
            if let price = record.price, let currency = record.currency, transaction.ownership == .purchased, price > 0
            {
                try await store.recordFinance(
                    environment: environment,
                    transactionId: transaction.transactionId,
                    bundleId: app.bundleId,
                    productId: transaction.productId,
                    amount: price,
                    currency: currency,
                    at: record.purchaseDate,
                    kind: "purchase",
                    on: db
                )
            }
        }
        for purchase in firstRecorded {
            try await applyWaitingNotifications(
                environment: purchase.environment,
                originalTransactionId: purchase.originalTransactionId,
                app: app,
                catalogue: catalogue,
                now: now,
                on: db
            )
        }
        return refused
    }

    // MARK: Views

    func view(_ record: SubmissionRecord) -> SubmissionView {
        SubmissionView(
            id: record.id,
            state: record.state,
            kind: record.kind,
            environment: record.environment,
            customerId: record.customerId,
            transactionIds: record.transactionIds.ids,
            attempts: record.attempts,
            nextAttemptAt: record.state == .retrying ? record.nextAttemptAt : nil,
            lastStatus: record.lastStatus,
            lastError: record.lastError,
            retryCause: record.state == .retrying ? record.retryCause : nil,
            reason: record.reason,
            createdAt: record.createdAt,
            confirmedAt: record.confirmedAt
        )
    }

    /// A customer's entitlements, balances and purchases now.
    ///
    /// What the database holds is cached until this process writes anything (or for a second, for changes
    /// made by other processes); entitlements are worked out from it at each read, so expiry is exact.
    public func customer(bundleId: String, customerId: String) async throws -> CustomerView {
        let snapshot = try await customerSnapshots.value(
            for: CustomerKey(bundleId: bundleId, customerId: customerId),
            generation: database.writeGeneration
        ) {
            try await self.database.read { db in
                try await self.snapshot(bundleId: bundleId, customerId: customerId, on: db)
            }
        }
        return try await view(of: snapshot, bundleId: bundleId)
    }

    /// The customer view of what the database held, with entitlements worked out now.
    func view(of snapshot: CustomerSnapshot, bundleId: String) async throws -> CustomerView {
        let ledger = snapshot.ledger
        let states = snapshot.states
        let catalogue = try await catalogue(bundleId: bundleId)
        return CustomerView(
            customerId: snapshot.owner,
            entitlements: EntitlementRules.entitlements(
                ledger,
                catalogue: catalogue,
                now: nowMilliseconds,
                gracePeriods: Self.gracePeriods(states)
            ),
            balances: Components.Schemas.Credits(snapshot.balances),
            purchases: ledger.map {
                PurchaseView(
                    transactionId: $0.transactionId,
                    originalTransactionId: $0.originalTransactionId,
                    productId: $0.productId,
                    productType: $0.productType.flatMap(Components.Schemas.ProductType.init(rawValue:)),
                    environment: $0.environment,
                    quantity: $0.quantity,
                    purchaseDate: $0.purchaseDate,
                    expiresDate: $0.expiresDate,
                    revocationDate: $0.revocationDate,
                    revocationReason: $0.revocationReason,
                    confirmed: $0.confirmed
                )
            },
            subscriptions: Self.subscriptionViews(states, ledger: ledger)
        )
    }

    /// `customer(bundleId:customerId:)` as `GET /v1/customers/{id}` answers it (written as the submission's
    /// answer writes its customer: `CustomerView.writeJSON`).
    ///
    /// Encoding is most of what a read costs once the data is cached, so the bytes are kept too: until this
    /// process writes (the database's generation), the catalogue changes, a second passes (other processes),
    /// or the first of the customer's entitlements ends, after which the view is worked out again.
    func customerBody(bundleId: String, customerId: String) async throws -> [UInt8] {
        try await customerBodies.value(
            for: CustomerKey(bundleId: bundleId, customerId: customerId),
            generation: database.writeGeneration,
            isStale: { encoded in encoded.validUntil.map { $0 <= self.nowMilliseconds } ?? false }
        ) {
            let now = nowMilliseconds
            let view = try await customer(bundleId: bundleId, customerId: customerId)
            let ends = view.entitlements.compactMap(\.expiresDate).filter { $0 > now }
            var writer = JSONWriter()
            view.writeJSON(to: &writer)
            return EncodedCustomer(body: writer.bytes, validUntil: ends.min())
        }.body
    }

    /// What the database holds about a customer, read on one connection.
    private func snapshot(bundleId: String, customerId: String, on db: any SQLDatabase) async throws
        -> CustomerSnapshot
    {
        try await snapshot(
            bundleId: bundleId,
            owner: try await store.resolve(bundleId: bundleId, customerId: customerId, on: db),
            on: db
        )
    }

    /// What the database holds about the customer `owner` (an id with no alias), read on `db`.
    private func snapshot(bundleId: String, owner: String, on db: any SQLDatabase) async throws -> CustomerSnapshot {
        let ledger = try await store.transactions(bundleId: bundleId, customerId: owner, on: db)
        return CustomerSnapshot(
            owner: owner,
            ledger: ledger,
            balances: try await store.balances(bundleId: bundleId, customerId: owner, on: db),
            states: try await subscriptionStates(of: ledger, bundleId: bundleId, on: db)
        )
    }

    /// A submission, as the app polls it.
    public func submission(id: String, bundleId: String) async throws -> SubmissionView {
        guard let record = try await store.submission(id: id, on: store.sql), record.bundleId == bundleId else {
            throw TillHTTPError.notFound("submission", id)
        }
        return view(record)
    }

    /// Waits up to `timeout` for a submission to be confirmed, rejected or dead-lettered.
    public func waitForSettlement(id: String, bundleId: String, timeout: Duration) async throws -> SubmissionView {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            let since = submissionSettled.current
            let current = try await submission(id: id, bundleId: bundleId)
            if current.state.isSettled { return current }
            guard clock.now < deadline else { return current }
            await submissionSettled.wait(since: since, timeout: deadline - clock.now)
        }
    }
}

extension SubmissionResult {
    /// The answer as `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes` writes it (the server's
    /// response encoder), without its cost: this is written once per purchase.
    func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 4096)
        writer.object { w in
            w.key("customer")
            customer.writeJSON(to: &w)
            w.key("refused")
            w.array(refused) { w, refused in
                w.object { w in
                    w.field("reason", refused.reason)
                    w.field("transactionId", refused.transactionId)
                }
            }
            w.field("signedSnapshot", signedSnapshot)
            w.key("submission")
            w.object { w in
                w.field("attempts", submission.attempts)
                w.field("confirmedAt", submission.confirmedAt)
                w.field("createdAt", submission.createdAt)
                w.field("customerId", submission.customerId)
                w.field("environment", submission.environment)
                w.field("id", submission.id)
                w.field("kind", submission.kind.rawValue)
                w.field("lastError", submission.lastError)
                w.field("lastStatus", submission.lastStatus)
                w.field("nextAttemptAt", submission.nextAttemptAt)
                w.field("reason", submission.reason)
                w.field("retryCause", submission.retryCause?.rawValue)
                w.field("state", submission.state.rawValue)
                w.key("transactionIds")
                w.array(submission.transactionIds) { w, id in w.string(id) }
            }
        }
        return writer.bytes
    }
}

extension CustomerView {
    func writeJSON(to writer: inout JSONWriter) {
        writer.object { w in
            w.field("balances", balances.additionalProperties)
            w.field("customerId", customerId)
            w.key("entitlements")
            w.array(entitlements) { w, entitlement in
                w.object { w in
                    w.field("environment", entitlement.environment)
                    w.field("expiresDate", entitlement.expiresDate)
                    w.field("id", entitlement.id)
                    w.field("productId", entitlement.productId)
                    w.field("provisional", entitlement.provisional)
                    w.field("transactionId", entitlement.transactionId)
                }
            }
            w.key("purchases")
            w.array(purchases) { w, purchase in
                w.object { w in
                    w.field("confirmed", purchase.confirmed)
                    w.field("environment", purchase.environment)
                    w.field("expiresDate", purchase.expiresDate)
                    w.field("originalTransactionId", purchase.originalTransactionId)
                    w.field("productId", purchase.productId)
                    w.field("productType", purchase.productType?.rawValue)
                    w.field("purchaseDate", purchase.purchaseDate)
                    w.field("quantity", purchase.quantity)
                    w.field("revocationDate", purchase.revocationDate)
                    w.field("revocationReason", purchase.revocationReason)
                    w.field("transactionId", purchase.transactionId)
                }
            }
            w.key("subscriptions")
            w.array(subscriptions) { w, state in
                w.object { w in
                    w.field("autoRenewProductId", state.autoRenewProductId)
                    w.field("autoRenewStatus", state.autoRenewStatus)
                    w.field("environment", state.environment)
                    w.field("expirationIntent", state.expirationIntent)
                    w.field("expiresDate", state.expiresDate)
                    w.field("gracePeriodExpiresDate", state.gracePeriodExpiresDate)
                    w.field("isInBillingRetryPeriod", state.isInBillingRetryPeriod)
                    w.field("lastNotificationType", state.lastNotificationType)
                    w.field("originalTransactionId", state.originalTransactionId)
                    w.field("priceIncreaseStatus", state.priceIncreaseStatus)
                    w.field("productId", state.productId)
                    w.field("renewalDate", state.renewalDate)
                    w.field("status", state.status)
                    w.field("updatedAt", state.updatedAt)
                }
            }
        }
    }
}
