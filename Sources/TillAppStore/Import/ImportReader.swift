import Foundation
import Logging
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillJobs
import TillLedger
import TillStorage

/// Reads one row of an import: finds where its customer's purchases are at Apple, reads their whole Transaction
/// History page after page, and gives each page to the ledger for the row's customer (`HistoryPages.apply` with the
/// customer as claimant), the row's progress written in the page's transaction.
///
/// Where to ask: a receipt or a signed transaction is verified here first (for this app, under the app's sandbox
/// policy), and its environment and first purchase say. A bare transaction id is asked of production first, then of
/// the sandbox when production does not know it (`404`, error 4040010) and the app accepts sandbox data: Apple's own
/// order for an id whose environment is unknown.
struct ImportReader: Sendable {
    let imports: Imports
    let importId: String
    let app: ServerApp
    let client: AppleClient

    /// Apple's error code for a transaction id it does not know (TransactionIdNotFoundError).
    static let transactionIdNotFound = 4_040_010
    /// Apple's error code for a transaction id that is not one (InvalidTransactionIdError).
    static let invalidTransactionId = 4_000_006

    /// Reads the row as far as Apple answers; answers why the whole import must wait (Apple refused the app's key),
    /// nil otherwise. Every outcome is written before it returns.
    func read(_ row: ImportRowRecord) async -> String? {
        var row = row
        do {
            return try await read(&row)
        } catch is CancellationError {
            return nil  // a stop: the row stays pending, resumed after its last page
        } catch {
            imports.logger.error("import \(importId), row \(row.rowNumber): \(error)")
            try? await retry(&row, "\(error)")
            return nil
        }
    }

    private func read(_ row: inout ImportRowRecord) async throws -> String? {
        guard let customer = row.customerId, let kind = row.kind else {
            try await end(&row, .refused, .invalidRow, "the row has no customer or no input")
            return nil
        }
        let anchor: String
        var environments: [AppStoreEnvironment]
        if let resumed = row.environment,
            let id = row.originalTransactionId
        {
            anchor = id
            environments = [resumed]
        } else {
            switch kind {
            case .transactionId:
                anchor = row.input
                environments = app.acceptSandbox ? [.production, .sandbox] : [.production]
            case .appReceipt, .signedTransaction:
                let verified: LocallyVerified
                do {
                    verified = try await imports.verifier.verify(
                        kind == .appReceipt ? .appReceipt(row.input) : .signedTransaction(row.input),
                        app: app
                    )
                } catch let refusal as IntakeRefusal where refusal.reason == .sandboxNotAccepted {
                    try await end(&row, .refused, .sandboxNotAccepted, refusal.message)
                    return nil
                } catch let refusal as IntakeRefusal {
                    try await end(&row, .refused, .unverifiable, "\(refusal.code): \(refusal.message)")
                    return nil
                }
                guard verified.environment == .production || verified.environment == .sandbox else {
                    try await end(
                        &row,
                        .refused,
                        .unverifiable,
                        "\(verified.environment.rawValue) data has no history at Apple"
                    )
                    return nil
                }
                guard let first = verified.transactions.first else {
                    try await end(&row, .refused, .noTransactions, "the receipt holds no in-app purchase")
                    return nil
                }
                anchor = first.originalTransactionId
                environments = [verified.environment]
            }
        }
        for (index, environment) in environments.enumerated() {
            var revision = row.environment == environment ? row.revision : nil
            while true {
                try await imports.pacer.turn(environment)
                let answer = await client.transactionHistory(
                    environment,
                    transactionId: anchor,
                    revision: revision,
                    app: app
                )
                switch answer {
                case .http(200, let body, _):
                    report(environment, "HTTP 200")
                    guard let page = try? AppleJSON.makeDecoder().decode(HistoryResponse.self, from: Data(body)),
                        page.revision != nil || page.hasMore != true
                    else {
                        try await retry(
                            &row,
                            "Transaction History (\(environment.rawValue)) answered something that is not its JSON"
                        )
                        return nil
                    }
                    let next = page.revision ?? revision
                    try await apply(
                        page,
                        to: &row,
                        customer: customer,
                        environment: environment,
                        anchor: anchor,
                        revision: next
                    )
                    revision = next
                    if page.hasMore != true {
                        try await finish(&row)
                        return nil
                    }
                    continue
                case .http(let status, let body, let retryAfter):
                    let error = try? JSONDecoder().decode(APIError.self, from: Data(body))
                    report(environment, "HTTP \(status)" + (error.map { " \($0.errorCode)" } ?? ""))
                    let detail =
                        "Transaction History (\(environment.rawValue)) answered HTTP \(status)"
                        + (error.map { ": \($0.errorMessage) (\($0.errorCode))" } ?? "")
                    switch (status, error?.errorCode) {
                    case (404, Self.transactionIdNotFound) where revision == nil:
                        if index == environments.count - 1 {
                            let asked =
                                environments.count == 1
                                ? "\(environment.rawValue) does not know"
                                : "neither " + environments.map(\.rawValue).joined(separator: " nor ") + " knows"
                            try await end(&row, .refused, .notFound, "\(asked) transaction \(anchor)")
                            return nil
                        }
                    case (400, Self.invalidTransactionId):
                        try await end(&row, .refused, .invalidTransactionId, detail)
                        return nil
                    case (429, _):
                        // Apple asks the key to slow down: every import call waits, and this page is asked again.
                        imports.pacer.hold(environment, for: retryAfter ?? .seconds(1))
                        continue
                    case (401, _):
                        return "\(detail): Apple refused the app's key; fix apiKeyId, apiIssuerId or apiPrivateKey"
                    case (500..., _):
                        try await retry(&row, detail)
                        return nil
                    default:
                        try await end(&row, .refused, .appleRefused, detail)
                        return nil
                    }
                case .transport(let cause):
                    report(environment, cause)
                    try await retry(&row, "no answer from Transaction History (\(environment.rawValue)): \(cause)")
                    return nil
                case .misconfigured(let problem):
                    return "Transaction History (\(environment.rawValue)): \(problem)"
                }
                break  // not found in this environment: the next one
            }
        }
        try await finish(&row)
        return nil
    }

    /// Verifies a page and applies it for the row's customer, the row's progress in the same transaction.
    private func apply(
        _ page: HistoryResponse,
        to row: inout ImportRowRecord,
        customer: String,
        environment: AppStoreEnvironment,
        anchor: String,
        revision: String?
    ) async throws {
        let transactions = page.signedTransactions ?? []
        let signed = await imports.pages.verified(transactions, app: app, environment: environment)
        var progressed = row
        progressed.environment = environment
        progressed.originalTransactionId = anchor
        progressed.revision = revision
        progressed.unverifiable += transactions.count - signed.count
        progressed.updatedAt = imports.clock.milliseconds
        let before = progressed
        let store = imports.store
        let effect = try await imports.pages.apply(
            signed,
            app: app,
            environment: environment,
            anchor: anchor,
            revision: revision,
            claimant: customer,
            source: .imported(importId)
        ) { effect, changes in
            try await store.update(before.adding(effect), on: changes.db)
        }
        row = before.adding(effect)
    }

    /// The row's outcome once its history is read: imported when it changed anything, already known when it held
    /// nothing new, refused when every transaction was another customer's or there was none.
    private func finish(_ row: inout ImportRowRecord) async throws {
        if row.recorded + row.updated + row.revoked > 0 {
            try await end(&row, .imported, nil, nil)
        } else if row.unchanged > 0 {
            try await end(&row, .alreadyKnown, nil, nil)
        } else if row.conflicts > 0 {
            try await end(
                &row,
                .refused,
                .ownedByAnotherCustomer,
                "the \(row.conflicts) transactions of this history belong to other customers; an import never moves a purchase"
            )
        } else if row.unverifiable > 0 {
            try await end(&row, .refused, .unverifiable, "no transaction of the history verified")
        } else {
            try await end(&row, .refused, .noTransactions, "the history holds no transaction")
        }
    }

    /// The row ends with `outcome`: what the file gave is dropped.
    private func end(
        _ row: inout ImportRowRecord,
        _ outcome: ImportRowOutcome,
        _ reason: ImportRowReason?,
        _ detail: String?
    ) async throws {
        row.outcome = outcome
        row.reason = reason
        row.detail = detail
        row.input = ""
        row.updatedAt = imports.clock.milliseconds
        let ended = row
        try await imports.database.transaction { db in try await imports.store.update(ended, on: db) }
    }

    /// Apple did not answer (or not usably): the row is tried again after its back-off, or fails after the last
    /// attempt. (A 429 is not an attempt: the pacer waits.)
    private func retry(_ row: inout ImportRowRecord, _ detail: String) async throws {
        let settings = imports.configuration.imports
        row.attempts += 1
        guard row.attempts < settings.maximumAttempts else {
            try await end(&row, .failed, .appleUnavailable, "\(detail) (after \(row.attempts) attempts)")
            return
        }
        row.detail = detail
        row.nextAttemptAt =
            imports.clock.milliseconds + settings.retrySchedule.delay(afterAttempt: row.attempts).milliseconds
        row.updatedAt = imports.clock.milliseconds
        let retried = row
        try await imports.database.transaction { db in try await imports.store.update(retried, on: db) }
    }

    private func report(_ environment: AppStoreEnvironment, _ status: String) {
        imports.metrics.appleCall(endpoint: .transactionHistory, environment: environment, status: status)
    }
}

extension ImportRowRecord {
    /// The row with a page's effect counted.
    fileprivate func adding(_ effect: HistoryPages.Effect) -> ImportRowRecord {
        var row = self
        row.recorded += effect.recorded
        row.updated += effect.updated
        row.revoked += effect.revoked
        row.unchanged += effect.unchanged + effect.unmatched
        row.conflicts += effect.conflicts
        return row
    }
}
