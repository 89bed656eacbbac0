import Foundation
import Logging
import SQLKit
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillJobs
import TillLedger
import TillStorage
import Tracing

/// Intake: what happens in the milliseconds of `POST /v1/submissions` (and restore). A submission is verified
/// locally, recorded once (its idempotency key), posted to the ledger, and queued for Apple's confirmation; the
/// app gets its customer back at once, and may wait (`?wait=`) for the queue to settle it.
public struct Intake: AppStoreRoom, Sendable {
    let services: AppStoreServices
    /// The customers and their aliases.
    var customerStore: CustomerStore { CustomerStore(database: database) }
    /// What the ledger holds, read.
    var purchaseStore: PurchaseStore { PurchaseStore(database: database) }
    let customers: any AppStoreCustomers
    let notifications: NotificationIntake
    let signals: QueueSignals
    /// The submissions, their payloads and their attempts.
    var submissionStore: SubmissionStore { SubmissionStore(database: database) }

    package init(
        services: AppStoreServices,
        customers: any AppStoreCustomers,
        notifications: NotificationIntake,
        signals: QueueSignals
    ) {
        self.services = services
        self.customers = customers
        self.notifications = notifications
        self.signals = signals
    }

    /// Accepts a submission: verifies it locally, records its transactions once, grants entitlements and
    /// credits, and queues the confirmation with Apple. Answers in milliseconds.
    public func submit(_ request: SubmissionRequest, app: ServerApp) async throws -> SubmissionResult {
        let clock = ContinuousClock()
        let start = clock.now
        let kind: SubmissionKind =
            request.signedTransaction != nil
            ? .signedTransaction : request.transactionReceipt != nil ? .transactionReceipt : .appReceipt
        do {
            let result = try await Traces.withSpan("submission", continuing: nil) { span in
                try await accept(request, app: app, span: span)
            }
            metrics.submission(kind: kind.rawValue, outcome: "accepted", duration: clock.now - start)
            return result
        } catch {
            metrics.submission(kind: kind.rawValue, outcome: "refused", duration: clock.now - start)
            throw error
        }
    }

    /// - Parameter span: the submission's span (docs/tracing.md), told the customer, the transactions and the
    ///   submission once they are known.
    private func accept(_ request: SubmissionRequest, app: ServerApp, span: any Span) async throws -> SubmissionResult {
        let customerId = try CustomerIdentifier.validated(request.customerId)
        if span.isRecording {
            span.attributes["till.bundle_id"] = app.bundleId
            span.attributes["till.customer_id"] = customerId
        }
        let inputs: [SubmissionInput] = [
            request.receipt.map(SubmissionInput.appReceipt),
            request.transactionReceipt.map(SubmissionInput.transactionReceipt),
            request.signedTransaction.map(SubmissionInput.signedTransaction),
        ].compactMap { $0 }
        guard inputs.count == 1, let input = inputs.first else {
            throw IntakeRefusal(
                .oneFormatExpected,
                "send exactly one of receipt, transactionReceipt or signedTransaction"
            )
        }
        guard !input.payload.isEmpty else {
            // Said apart from a missing field: an empty one is what a shell's failed `$(base64 file)` sends.
            throw IntakeRefusal(.oneFormatExpected, "\(input.field) is empty: send the purchase's evidence in it")
        }
        if let key = request.idempotencyKey {
            guard !key.isEmpty, key.unicodeScalars.count <= 200 else {
                throw IntakeRefusal(.invalidIdempotencyKey, "an idempotency key has 1 to 200 characters")
            }
            if let existing = try await submissionStore.submission(
                bundleId: app.bundleId,
                idempotencyKey: key,
                on: database.sql
            ) {
                return try await replay(existing, payload: input.payload, customerId: customerId, app: app)
            }
        }

        let id = UUID.random().uuidString.lowercased()
        let verified = try await Traces.withSpan("verification", continuing: nil) { verification in
            let verified = try await verifier.verify(input, app: app)
            if verification.isRecording { verification.attributes["till.environment"] = verified.environment.rawValue }
            return verified
        }
        if span.isRecording {
            span.attributes["till.submission_id"] = id
            span.attributes["till.transaction_ids"] = verified.transactions.map(\.transactionId)
        }
        // StoreKit Testing in Xcode signs on the developer's machine: no App Store knows the purchase, so there is no
        // one to confirm it with. The certificate the operator registered vouches for it; it is settled at once.
        let settlesLocally = verified.environment.isLocallySigned
        let now = clock.milliseconds
        let catalogue = try await self.catalogue.products(of: app.bundleId)
        let outcome = try await ledger.transaction(source: .submission(id)) {
            changes -> (SubmissionRecord, [RefusedTransaction], CustomerSnapshot)? in
            let db = changes.db
            if let key = request.idempotencyKey,
                try await self.submissionStore.submission(bundleId: app.bundleId, idempotencyKey: key, on: db) != nil
            {
                return nil  // a concurrent resend won the race; answer with its submission below
            }
            let admission = try await self.customerStore.admit(
                bundleId: app.bundleId,
                customerId: customerId,
                at: now,
                on: db
            )
            let owner = admission.owner
            var submission = SubmissionRecord(
                id: id,
                bundleId: app.bundleId,
                customerId: owner,
                idempotencyKey: request.idempotencyKey,
                kind: input.kind,
                environment: verified.environment,
                state: settlesLocally ? .confirmed : .pending,
                attempts: 0,
                nextAttemptAt: settlesLocally ? nil : now,
                lastStatus: nil,
                lastError: nil,
                retryCause: nil,
                reason: settlesLocally ? Self.storeKitTestingReason(verified.environment) : nil,
                transactionIds: TransactionIDs(verified.transactions.map(\.transactionId)),
                createdAt: now,
                updatedAt: now,
                confirmedAt: settlesLocally ? now : nil
            )
            try await self.submissionStore.insert(submission, on: db)
            try await self.submissionStore.insertPayload(submissionId: submission.id, payload: input.payload, on: db)
            let refused = try await self.record(
                verified.transactions,
                submission: submission,
                app: app,
                catalogue: catalogue,
                confirmed: settlesLocally,
                in: changes
            )
            if !verified.transactions.isEmpty && refused.count == verified.transactions.count {
                // Nothing of it is this customer's: there is nothing to ask Apple (a replay of someone else's
                // purchase must not cost a call to Apple, nor a place in the queue).
                submission.state = .rejected
                submission.reason = "every transaction belongs to another customer (ownedByAnotherCustomer)"
                submission.nextAttemptAt = nil
                submission.confirmedAt = nil
                try await self.submissionStore.update(submission, on: db)
            }
            if !submission.state.isSettled {
                try await self.jobs.enqueue(
                    .confirmation,
                    key: submission.id,
                    dueAt: now,
                    trace: changes.trace,
                    on: db
                )
            }
            // The customer as this transaction leaves them, read while it holds the connection (a read after
            // the commit would borrow another and start a read of its own: a fifth of a submission's SQL).
            let customer = try await self.customers.snapshot(
                bundleId: app.bundleId,
                owner: owner,
                firstSeen: admission.firstSeen,
                on: db
            )
            // The last read of the transaction: its events carry this customer rather than reading them again.
            changes.remember(customer, bundleId: app.bundleId, guests: admission.isNew ? [] : nil)
            return (submission, refused, customer)
        }
        guard let (submission, refused, customer) = outcome else {
            // A resend with the same idempotency key committed first: answer with its submission.
            guard let key = request.idempotencyKey,
                let existing = try await submissionStore.submission(
                    bundleId: app.bundleId,
                    idempotencyKey: key,
                    on: database.sql
                )
            else { throw IntakeRefusal(.submissionLost, "the submission could not be recorded") }
            return try await replay(existing, payload: input.payload, customerId: customerId, app: app)
        }
        if !verified.transactions.isEmpty && refused.count == verified.transactions.count {
            throw IntakeRefusal(
                .ownedByAnotherCustomer,
                "every transaction of this submission belongs to another customer (\(refused.count) refused)"
            )
        }
        if !submission.state.isSettled { signals.workAvailable.signal() }
        return SubmissionResult(
            submission: SubmissionView(submission),
            customer: try await customers.view(of: customer, bundleId: app.bundleId),
            refused: refused
        )
    }

    /// Why a StoreKit Testing submission is confirmed without Apple.
    static func storeKitTestingReason(_ environment: AppStoreEnvironment) -> String {
        "\(environment) purchase signed by StoreKit Testing in Xcode under a certificate the app trusts; no App Store "
            + "knows of it, so it is confirmed without asking Apple"
    }

    /// The earlier answer to a resent submission (same idempotency key); a different payload or another customer under
    /// that key is a conflict. (The customer is the one the key was first sent for, or a guest linked since to the
    /// same account: an answer carries the customer, and must never be another customer's.)
    private func replay(_ existing: SubmissionRecord, payload: String, customerId: String, app: ServerApp) async throws
        -> SubmissionResult
    {
        guard try await submissionStore.payload(submissionId: existing.id, on: database.sql) == payload else {
            throw IntakeRefusal(.idempotencyKeyReused, "the idempotency key was used for another submission")
        }
        if customerId != existing.customerId {
            let db = database.sql
            let owner = try await customerStore.resolve(bundleId: app.bundleId, customerId: customerId, on: db)
            let first = try await customerStore.resolve(bundleId: app.bundleId, customerId: existing.customerId, on: db)
            guard owner == first else {
                throw IntakeRefusal(
                    .idempotencyKeyReused,
                    "the idempotency key was used for another customer's submission"
                )
            }
        }
        // The first answer again: transactions another customer owns are still refused (a resend of a refused
        // replay must not look accepted).
        let ids = existing.transactionIds.ids
        var refused: [RefusedTransaction] = []
        for id in ids {
            if let row = try await purchaseStore.transaction(
                environment: existing.environment,
                transactionId: id,
                on: database.sql
            ),
                row.customerId != existing.customerId
            {
                refused.append(RefusedTransaction(transactionId: id, reason: "ownedByAnotherCustomer"))
            }
        }
        if !ids.isEmpty && refused.count == ids.count {
            throw IntakeRefusal(
                .ownedByAnotherCustomer,
                "every transaction of this submission belongs to another customer (\(refused.count) refused)"
            )
        }
        return SubmissionResult(
            submission: SubmissionView(existing),
            customer: try await customers.customer(bundleId: app.bundleId, customerId: existing.customerId),
            refused: refused
        )
    }

    /// Records a submission's transactions in the ledger, then applies the notifications that were waiting for
    /// a purchase recorded for the first time. Returns the transactions refused because another customer owns
    /// them. Apple's answer to a submission is recorded the same way (`ConfirmationQueue.settle`).
    ///
    /// - Parameters:
    ///   - confirmed: whether new ledger rows are confirmed already (StoreKit Testing's, which no one else will
    ///     confirm).
    ///   - transfers: whether a purchase another customer owns may move to this submission's customer (the
    ///     restore policy `transferToLatest`): when the customer submits, not when Apple answers later.
    func record(
        _ transactions: [PurchaseTransaction],
        submission: SubmissionRecord,
        app: ServerApp,
        catalogue: [String: CatalogProduct],
        confirmed: Bool = false,
        transfers: Bool = true,
        in changes: ChangeSet
    ) async throws -> [RefusedTransaction] {
        let recording = try await ledger.record(
            transactions,
            submission: submission,
            app: app,
            catalogue: catalogue,
            confirmed: confirmed,
            transfers: transfers,
            in: changes
        )
        for purchase in recording.firstRecorded {
            try await notifications.applyWaitingNotifications(
                environment: purchase.environment,
                originalTransactionId: purchase.originalTransactionId,
                app: app,
                catalogue: catalogue,
                now: clock.milliseconds,
                in: changes
            )
        }
        return recording.refused
    }

    /// A submission, as the app polls it.
    public func submission(id: String, bundleId: String) async throws -> SubmissionView {
        guard let record = try await submissionStore.submission(id: id, on: database.sql), record.bundleId == bundleId
        else {
            throw IntakeRefusal(.submissionNotFound, "no submission \(id)")
        }
        return SubmissionView(record)
    }

    /// Waits up to `timeout` for a submission to be confirmed, rejected or dead-lettered.
    public func waitForSettlement(id: String, bundleId: String, timeout: Duration) async throws -> SubmissionView {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            let since = signals.submissionSettled.current
            let current = try await submission(id: id, bundleId: bundleId)
            if current.state.isSettled { return current }
            guard clock.now < deadline else { return current }
            await signals.submissionSettled.wait(since: since, timeout: deadline - clock.now)
        }
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
                customer = try await customers.customer(bundleId: app.bundleId, customerId: settled.customerId)
            }
        }
        let restored = customer.purchases.filter {
            $0.revocationDate == nil && $0.productType != .consumable
        }
        return RestoreResult(submission: submission, restored: restored, customer: customer)
    }
}
