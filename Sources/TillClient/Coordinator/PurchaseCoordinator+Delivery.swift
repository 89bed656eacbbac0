import Crypto
import Foundation
import TillContract
import TillCore

/// The pipeline: submit, snapshot, content, finish.
extension PurchaseCoordinator {
    func handleUnfinished(force: Bool) async -> [PurchaseOutcome] {
        guard let transactions = try? await storefront.unfinishedTransactions() else { return [] }
        return await handle(transactions, force: force)
    }

    /// Handles transactions together: submits each, refreshes the snapshot once, then stores content and
    /// finishes each. A transaction already being handled is not handled twice: its caller waits for the outcome.
    func handle(_ transactions: [StoreTransaction], force: Bool) async -> [PurchaseOutcome] {
        var outcomes: [String: PurchaseOutcome] = [:]
        var mine: [StoreTransaction] = []
        var others: [StoreTransaction] = []
        for transaction in transactions {
            if let outcome = finished[transaction.id] {
                outcomes[transaction.id] = outcome
            } else if working[transaction.id] != nil || mine.contains(where: { $0.id == transaction.id }) {
                others.append(transaction)
            } else {
                working[transaction.id] = []
                mine.append(transaction)
            }
        }
        let processed = await process(mine, force: force)
        for transaction in mine {
            let outcome = processed[transaction.id] ?? .pending(transaction)
            outcomes[transaction.id] = outcome
            for waiter in working.removeValue(forKey: transaction.id) ?? [] { waiter.resume(returning: outcome) }
        }
        for transaction in others where outcomes[transaction.id] == nil {
            if let outcome = finished[transaction.id] {
                outcomes[transaction.id] = outcome
            } else if working[transaction.id] != nil {
                outcomes[transaction.id] = await withCheckedContinuation { continuation in
                    working[transaction.id, default: []].append(continuation)
                }
            }
        }
        return transactions.map { outcomes[$0.id] ?? .pending($0) }
    }

    private func process(_ transactions: [StoreTransaction], force: Bool) async -> [String: PurchaseOutcome] {
        var outcomes: [String: PurchaseOutcome] = [:]
        var accepted: [(StoreTransaction, SubmissionStatus?)] = []
        // The snapshot of the last answer received now: issued after every submission of the batch.
        var latestSnapshot: String?
        for transaction in transactions {
            switch transaction.transactionState {
            case .purchased?, .restored?:
                switch await submit(transaction, force: force) {
                case .success(let answer):
                    accepted.append((transaction, answer.submission))
                    if answer.fresh { latestSnapshot = answer.signedSnapshot }
                case .failure(let failure): outcomes[transaction.id] = .notDelivered(failure)
                }
            case .failed?:
                let error = transaction.error ?? StoreError(code: .unknown, message: "the payment failed")
                let outcome: PurchaseOutcome =
                    error.isCancellation ? .cancelled(transaction) : .failed(transaction, error)
                // A failed transaction is finished like any other, or it stays in the queue; nothing was charged.
                if (try? await storefront.finish(transaction)) != nil { finished[transaction.id] = outcome }
                outcomes[transaction.id] = outcome
            case .deferred?, .purchasing?, nil:
                outcomes[transaction.id] = .pending(transaction)
            }
        }
        guard !accepted.isEmpty else { return outcomes }

        let snapshot: VerifiedSnapshot
        do {
            if let latestSnapshot, let verified = try? await entitlements.accept(latestSnapshot) {
                snapshot = verified
            } else {
                snapshot = try await entitlements.refresh()
            }
        } catch {
            for (transaction, _) in accepted {
                outcomes[transaction.id] = .notDelivered(
                    DeliveryFailure(
                        transaction: transaction,
                        stage: .snapshot,
                        error: Self.clientError(error),
                        queuedInOutbox: false
                    )
                )
            }
            return outcomes
        }

        for (transaction, status) in accepted {
            var files: [StoredFile] = []
            do {
                let product = try await catalogueProduct(transaction.productId)
                if product?.isServerDelivered == true {
                    files = try await content.download(
                        productId: transaction.productId,
                        customerId: customerId,
                        progress: downloadProgress
                    )
                }
            } catch let error as TillClientError where error.code == "notEntitled" {
                // The server recorded the purchase but grants nothing from it now (an expired period brought back
                // by restore, a refund): there is nothing to download, and the transaction is done with.
            } catch {
                outcomes[transaction.id] = .notDelivered(
                    DeliveryFailure(
                        transaction: transaction,
                        stage: .content,
                        error: Self.clientError(error),
                        queuedInOutbox: false
                    )
                )
                continue
            }
            do {
                try await storefront.finish(transaction)
            } catch {
                outcomes[transaction.id] = .notDelivered(
                    DeliveryFailure(
                        transaction: transaction,
                        stage: .finish,
                        error: Self.clientError(error),
                        queuedInOutbox: false
                    )
                )
                continue
            }
            let outcome = PurchaseOutcome.delivered(
                Delivery(transaction: transaction, submission: status, snapshot: snapshot, files: files)
            )
            finished[transaction.id] = outcome
            outcomes[transaction.id] = outcome
        }
        return outcomes
    }

    /// Step 1: the server records the transaction. Reuses a submission of it already waiting in the outbox (its
    /// key and bytes), and skips one the server acknowledged earlier in this run.
    private func submit(_ transaction: StoreTransaction, force: Bool) async -> Result<Submitted, DeliveryFailure> {
        func failure(_ error: TillClientError, queued: Bool) -> Result<Submitted, DeliveryFailure> {
            .failure(
                DeliveryFailure(transaction: transaction, stage: .submission, error: error, queuedInOutbox: queued)
            )
        }
        guard let transactionId = transaction.transactionId else {
            return failure(
                TillClientError(.invalidResponse, message: "the store gave no transaction id"),
                queued: false
            )
        }
        if let answer = acknowledged[transactionId] {
            return .success(Submitted(submission: answer.submission, signedSnapshot: nil, fresh: false))
        }
        if let rejection = await outbox.rejection(transactionId: transactionId),
            rejection.entry.customerId == customerId
        {
            return failure(
                TillClientError(.refused, status: rejection.status, code: rejection.code, message: rejection.message),
                queued: false
            )
        }
        var entry = await outbox.entry(transactionId: transactionId)
        if let waiting = entry, !force, waiting.nextAttemptAt > Outbox.milliseconds(Date()) {
            return failure(
                TillClientError(.unreachable, message: waiting.lastError ?? "waiting in the outbox"),
                queued: true
            )
        }
        if entry == nil {
            let evidence: PurchaseEvidence
            do {
                evidence = try await self.evidence(for: transaction)
            } catch {
                return failure(Self.clientError(error), queued: false)
            }
            do {
                entry = try await outbox.enqueue(
                    OutboxEntry(
                        idempotencyKey: Self.idempotencyKey(transactionId: transactionId, evidence: evidence),
                        customerId: customerId,
                        evidence: evidence,
                        createdAt: Outbox.milliseconds(Date()),
                        transactionId: transactionId,
                        productId: transaction.productId
                    )
                )
            } catch {
                return failure(Self.clientError(error), queued: false)
            }
        }
        guard let entry else { return failure(TillClientError(.fileSystem, message: "no outbox entry"), queued: false) }
        switch await outbox.send(idempotencyKey: entry.idempotencyKey) {
        case .acknowledged(let answer):
            // For a restored transaction the evidence carries the original purchase's id.
            let ids = [transactionId, transaction.originalTransactionId].compactMap { $0 }
            if let refused = answer.refused.first(where: { ids.contains($0.transactionId) }) {
                return failure(
                    TillClientError(
                        .refused,
                        status: 409,
                        code: refused.reason,
                        message: "the server did not credit \(transactionId) to \(customerId)"
                    ),
                    queued: false
                )
            }
            acknowledged[transactionId] = answer
            return .success(
                Submitted(submission: answer.submission, signedSnapshot: answer.signedSnapshot, fresh: true)
            )
        case .queued(let error):
            return failure(error, queued: true)
        case .rejected(let error):
            return failure(error, queued: false)
        }
    }

    private func evidence(for transaction: StoreTransaction) async throws -> PurchaseEvidence {
        let jws = transaction.signedTransaction.map(PurchaseEvidence.signedTransaction)
        let legacy = transaction.transactionReceipt.map(PurchaseEvidence.transactionReceipt)
        switch evidence {
        case .signedTransaction:
            if let found = jws ?? legacy { return found }
        case .transactionReceipt:
            if let found = legacy ?? jws { return found }
        case .appReceipt:
            break
        }
        guard let receipt = try await storefront.appReceipt() else {
            throw TillClientError(.invalidResponse, message: "the store gave no evidence for \(transaction.productId)")
        }
        return .appReceipt(receipt)
    }

    /// The master-list entry of a product; the list is fetched again when the product is not in it.
    private func catalogueProduct(_ productId: String) async throws -> CatalogueProduct? {
        if let product = catalogue?.product(productId) { return product }
        return try await refreshCatalogue().product(productId)
    }

    /// The key of a store transaction's submission: its id, and a digest of the exact evidence. A resend of the
    /// same bytes is answered with the same submission; the store signing the same transaction again (a new JWS)
    /// makes a new submission, which the server's ledger still records once per transaction id.
    static func idempotencyKey(transactionId: String, evidence: PurchaseEvidence) -> String {
        let digest = SHA256.hash(data: Array((evidence.field + ":" + evidence.payload).utf8)).prefix(12)
        return "tx-" + transactionId + "-" + digest.map { String(format: "%02x", $0) }.joined()
    }

    func note(_ delivery: OutboxDelivery, of entry: OutboxEntry) {
        // With a refusal in the answer, the transaction goes through `submit` again, which looks at it closely.
        if case .acknowledged(let answer) = delivery, answer.refused.isEmpty, let transactionId = entry.transactionId {
            acknowledged[transactionId] = answer
        }
    }

    func report(_ outcome: PurchaseOutcome) {
        let id = outcome.transaction.id
        let summary: String
        switch outcome {
        case .delivered: summary = "delivered"
        case .cancelled: summary = "cancelled"
        case .pending(let transaction): summary = "pending " + transaction.state
        case .failed: summary = "failed"
        case .notDelivered(let failure): summary = "notDelivered \(failure.stage) \(failure.error.kind)"
        }
        guard reported[id] != summary else { return }
        reported[id] = summary
        eventSink.yield(PurchaseEvent(outcome: outcome))
    }

    static func clientError(_ error: any Error) -> TillClientError {
        if let error = error as? TillClientError { return error }
        return TillClientError(.unreachable, message: "\(error)")
    }

    /// What step 1 gives the next steps.
    struct Submitted {
        var submission: SubmissionStatus?
        var signedSnapshot: String?
        /// Received now, rather than remembered from earlier in the run.
        var fresh: Bool
    }
}
