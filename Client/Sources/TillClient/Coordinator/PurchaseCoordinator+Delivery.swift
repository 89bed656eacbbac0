import Crypto
import Foundation
import TillContract
import TillCore

/// The pipeline: submit, snapshot, content, finish.
extension PurchaseCoordinator {
    func handleUnfinished(force: Bool) async -> [PurchaseOutcome] {
        guard let updates = try? await storefront.unfinishedTransactions() else { return [] }
        var transactions: [StoreVerification<StoreTransaction>] = []
        for case .transaction(let transaction) in updates { transactions.append(transaction) }
        var handled = await handle(transactions, force: force).makeIterator()
        return updates.compactMap { update in
            switch update {
            case .transaction: handled.next()
            case .failed(let productId, let error): PurchaseOutcome.refusal(productId: productId, error)
            }
        }
    }

    /// One thing the store reported by itself.
    func handle(_ update: StoreUpdate) async -> PurchaseOutcome {
        switch update {
        case .transaction(let transaction): await handle([transaction], force: false)[0]
        case .failed(let productId, let error): PurchaseOutcome.refusal(productId: productId, error)
        }
    }

    /// Handles transactions together: submits each, refreshes the snapshot once, then stores content and
    /// finishes each. A transaction already being handled is not handled twice: its caller waits for the outcome.
    /// A transaction whose signature did not verify on the device is reported and goes no further.
    func handle(_ transactions: [StoreVerification<StoreTransaction>], force: Bool) async -> [PurchaseOutcome] {
        var outcomes: [String: PurchaseOutcome] = [:]
        var mine: [StoreTransaction] = []
        var others: [StoreTransaction] = []
        for verification in transactions {
            let transaction = verification.unsafePayloadValue
            if let error = verification.verificationError {
                outcomes[transaction.deliveryKey] = .unverified(transaction, error)
            } else if let outcome = finished[transaction.deliveryKey] {
                outcomes[transaction.deliveryKey] = outcome
            } else if working[transaction.deliveryKey] != nil
                || mine.contains(where: { $0.deliveryKey == transaction.deliveryKey })
            {
                others.append(transaction)
            } else {
                working[transaction.deliveryKey] = []
                mine.append(transaction)
            }
        }
        let processed = await process(mine, force: force)
        for transaction in mine {
            let outcome = processed[transaction.deliveryKey] ?? Self.lost(transaction)
            outcomes[transaction.deliveryKey] = outcome
            for waiter in working.removeValue(forKey: transaction.deliveryKey) ?? [] {
                waiter.resume(returning: outcome)
            }
        }
        for transaction in others where outcomes[transaction.deliveryKey] == nil {
            if let outcome = finished[transaction.deliveryKey] {
                outcomes[transaction.deliveryKey] = outcome
            } else if working[transaction.deliveryKey] != nil {
                outcomes[transaction.deliveryKey] = await withCheckedContinuation { continuation in
                    working[transaction.deliveryKey, default: []].append(continuation)
                }
            }
        }
        return transactions.map { outcomes[$0.unsafePayloadValue.deliveryKey] ?? Self.lost($0.unsafePayloadValue) }
    }

    /// A transaction the pipeline gave no outcome for (it cannot happen; reported rather than dropped).
    static func lost(_ transaction: StoreTransaction) -> PurchaseOutcome {
        .notDelivered(
            DeliveryFailure(
                transaction: transaction,
                stage: .submission,
                error: TillClientError(.invalidResponse, message: "the transaction was not handled"),
                queuedInOutbox: false
            )
        )
    }

    private func process(_ transactions: [StoreTransaction], force: Bool) async -> [String: PurchaseOutcome] {
        var outcomes: [String: PurchaseOutcome] = [:]
        var accepted: [(StoreTransaction, SubmissionStatus?)] = []
        // The snapshot of the last answer received now: issued after every submission of the batch.
        var latestSnapshot: String?
        for transaction in transactions {
            switch await submit(transaction, force: force) {
            case .success(let answer):
                accepted.append((transaction, answer.submission))
                if answer.fresh { latestSnapshot = answer.signedSnapshot }
            case .failure(let failure): outcomes[transaction.deliveryKey] = .notDelivered(failure)
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
                outcomes[transaction.deliveryKey] = .notDelivered(
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
                if product?.isServerDelivered == true && !transaction.isRevoked {
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
                outcomes[transaction.deliveryKey] = .notDelivered(
                    DeliveryFailure(
                        transaction: transaction,
                        stage: .content,
                        error: Self.clientError(error),
                        queuedInOutbox: false
                    )
                )
                continue
            }
            let finishes = finishing == .byTill && transaction.requiresFinish
            if finishes {
                do {
                    try await storefront.finish(transaction)
                } catch {
                    outcomes[transaction.deliveryKey] = .notDelivered(
                        DeliveryFailure(
                            transaction: transaction,
                            stage: .finish,
                            error: Self.clientError(error),
                            queuedInOutbox: false
                        )
                    )
                    continue
                }
            }
            let outcome = PurchaseOutcome.delivered(
                Delivery(
                    transaction: transaction,
                    submission: status,
                    snapshot: snapshot,
                    files: files,
                    finished: finishes
                )
            )
            finished[transaction.deliveryKey] = outcome
            outcomes[transaction.deliveryKey] = outcome
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
        let transactionId = transaction.transactionId
        if let answer = acknowledged[transaction.deliveryKey]
            ?? (transaction.isRevoked ? nil : acknowledgedInOutbox[transactionId])
        {
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
            let ids = [transactionId, transaction.originalTransactionId]
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
            acknowledged[transaction.deliveryKey] = answer
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
            acknowledgedInOutbox[transactionId] = answer
        }
    }

    /// Tells ``events`` about something that happened in the background. A transaction's outcome is told once
    /// until it changes (a retry that fails the same way says nothing new); a payment's failure or decision is told
    /// each time.
    func report(_ outcome: PurchaseOutcome) {
        if let transaction = outcome.transaction {
            let summary: String
            switch outcome {
            case .notDelivered(let failure): summary = "notDelivered \(failure.stage) \(failure.error.kind)"
            default: summary = "\(outcome.kind)"
            }
            guard reported[transaction.deliveryKey] != summary else { return }
            reported[transaction.deliveryKey] = summary
        }
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
