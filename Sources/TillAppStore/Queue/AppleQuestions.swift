import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import SQLKit
import ServiceLifecycle
import Synchronization
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillStorage

/// How one confirmation attempt ended.
enum ConfirmationOutcome: Sendable {
    var status: String {
        switch self {
        case .confirmed(_, _, let status), .retry(let status, _, _, _), .rejected(let status, _): status
        }
    }

    /// Apple vouches for the submission, in this environment; its answer may carry more transactions.
    case confirmed(environment: AppStoreEnvironment, transactions: [PurchaseTransaction], status: String)
    /// Try again later; `status` says what happened (`status 21005`, `HTTP 503`, `timeout`), `cause` decides when,
    /// and `retryAfter` is how long Apple asked to wait (a 429's `Retry-After`), when it did: the next attempt is not
    /// sooner.
    case retry(status: String, error: String, cause: RetryCause, retryAfter: Duration? = nil)
    /// Apple refuses the purchase for good (forged, unknown, the account gone).
    case rejected(status: String, reason: String)

    /// Apple could not be reached or said it cannot answer now.
    var meansAppleIsUnavailable: Bool {
        if case .retry(_, _, .appleUnavailable, _) = self { return true }
        return false
    }

    /// Apple answered (yes, no, or something about this submission or this server's configuration).
    var isAppleAnswer: Bool { !meansAppleIsUnavailable }

    /// To be asked again: the ledger stays as it is.
    var isRetry: Bool {
        if case .retry = self { return true }
        return false
    }
}

/// The questions a confirmation asks Apple, and Apple's answer classified once: confirmed, rejected, or retried
/// for a `RetryCause` that the queue stores and its SQL reads.
struct AppleQuestions: Sendable {
    let database: TillDatabase
    let verifier: LocalVerifier
    let metrics: any AppStoreMetrics
    /// The submissions, their payloads and their attempts.
    var submissionStore: SubmissionStore { SubmissionStore(database: database) }

    func ask(
        _ client: AppleClient,
        about submission: SubmissionRecord,
        app: ServerApp,
        pacer: ConfirmationPacer?
    ) async -> ConfirmationOutcome {
        switch submission.kind {
        case .signedTransaction:
            return await askServerAPI(client, about: submission, app: app, pacer: pacer)
        default:
            return await askVerifyReceipt(client, about: submission, app: app, pacer: pacer)
        }
    }

    /// verifyReceipt: production first, the sandbox on 21007, production on 21008; statuses classified by the table.
    private func askVerifyReceipt(
        _ client: AppleClient,
        about submission: SubmissionRecord,
        app: ServerApp,
        pacer: ConfirmationPacer?
    ) async -> ConfirmationOutcome {
        let payload: String
        do {
            guard let stored = try await submissionStore.payload(submissionId: submission.id, on: database.sql) else {
                return .rejected(status: "no receipt", reason: "the submission's receipt is not in the database")
            }
            payload = stored
        } catch {
            return .retry(
                status: "database",
                error: "the submission's receipt could not be read: \(error)",
                cause: .other
            )
        }
        let body = AppleClient.verifyReceiptBody(receiptData: payload, password: app.sharedSecrets.first)
        var environment = AppStoreEnvironment.production
        for _ in 0..<3 {
            switch await client.verifyReceipt(environment, body: body) {
            case .misconfigured(let problem):
                return .retry(status: "configuration", error: problem, cause: .configuration)
            case .transport(let cause):
                metrics.appleCall(endpoint: .verifyReceipt, environment: environment, status: cause)
                return .retry(
                    status: cause,
                    error: "no answer from verifyReceipt (\(environment))",
                    cause: .appleUnavailable
                )
            case .http(let status, let body, let retryAfter):
                guard status == 200 else {
                    metrics.appleCall(endpoint: .verifyReceipt, environment: environment, status: "HTTP \(status)")
                    return .retry(
                        status: "HTTP \(status)",
                        error: "verifyReceipt (\(environment)) answered HTTP \(status)",
                        cause: status >= 500 ? .appleUnavailable : .other,
                        retryAfter: retryAfter
                    )
                }
                await pacer?.answer()
                guard let response = try? JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(body)) else {
                    metrics.appleCall(endpoint: .verifyReceipt, environment: environment, status: "unreadable")
                    return .retry(
                        status: "unreadable",
                        error: "verifyReceipt (\(environment)) answered something that is not its JSON",
                        cause: .other
                    )
                }
                let code = response.status
                metrics.appleCall(
                    endpoint: .verifyReceipt,
                    environment: environment,
                    status: "status \(code.rawValue)"
                )
                switch code.action(isRetryable: response.isRetryable) {
                case .valid:
                    return .confirmed(
                        environment: environment,
                        transactions: transactions(from: response, bundleId: app.bundleId, environment: environment),
                        status: "status \(code.rawValue)"
                    )
                case .redirect(let other):
                    environment = other
                    continue
                case .retryLater:
                    // 21002 is about this receipt's data (malformed, or a passing problem with it), not Apple's
                    // health: it keeps its own schedule when Apple answers again.
                    return .retry(
                        status: "status \(code.rawValue)",
                        error: code.meaning,
                        cause: code == .malformedReceiptData ? .other : .appleUnavailable
                    )
                case .fixRequest:
                    // This server's request is wrong (the app's shared secret, for 21004), not the purchase:
                    // nothing is taken from the customer, and the operator's fix brings the attempt forward.
                    return .retry(
                        status: "status \(code.rawValue)",
                        error: "\(code.meaning) Fix the app's settings (sharedSecrets) in Till.",
                        cause: .configuration
                    )
                case .terminal:
                    return .rejected(status: "status \(code.rawValue)", reason: code.meaning)
                }
            }
        }
        return .retry(
            status: "redirect loop",
            error: "verifyReceipt kept redirecting between environments",
            cause: .other
        )
    }

    /// What verifyReceipt's answer says about the customer's transactions (renewals the app never sent included).
    private func transactions(from response: VerifyReceiptResponse, bundleId: String, environment: AppStoreEnvironment)
        -> [PurchaseTransaction]
    {
        var all: [PurchaseTransaction] = []
        let entries = (response.receipt?.inApp ?? []) + (response.latestReceiptInfo ?? [])
        for entry in entries {
            guard let id = entry.transactionId, let product = entry.productId, let date = entry.purchaseDate else {
                continue
            }
            all.append(
                PurchaseTransaction(
                    transactionId: id,
                    originalTransactionId: entry.originalTransactionId,
                    productId: product,
                    bundleId: bundleId,
                    quantity: entry.quantity ?? 1,
                    purchaseDate: date,
                    originalPurchaseDate: entry.originalPurchaseDate,
                    expiresDate: entry.expiresDate,
                    revocationDate: entry.cancellationDate,
                    webOrderLineItemId: entry.webOrderLineItemId,
                    isUpgraded: entry.isUpgraded ?? false,
                    environment: environment
                )
            )
        }
        if let single = response.transactionReceipt ?? response.latestTransactionReceiptInfo,
            let id = single.transactionId,
            let product = single.productId, let date = single.purchaseDate
        {
            all.append(
                PurchaseTransaction(
                    transactionId: id,
                    originalTransactionId: single.originalTransactionId,
                    productId: product,
                    bundleId: bundleId,
                    quantity: single.quantity ?? 1,
                    purchaseDate: date,
                    expiresDate: single.expiresDate,
                    environment: environment
                )
            )
        }
        var seen: Set<String> = []
        return all.filter { seen.insert($0.transactionId).inserted }
    }

    /// Signed transactions: Get Transaction Info, whose signed answer is verified like the submission was.
    private func askServerAPI(
        _ client: AppleClient,
        about submission: SubmissionRecord,
        app: ServerApp,
        pacer: ConfirmationPacer?
    ) async -> ConfirmationOutcome {
        let environment = submission.environment
        guard app.apiKeyId != nil, app.apiPrivateKey != nil, app.apiIssuerId != nil else {
            // Without a key there is no one to ask: the local check of Apple's signature stands.
            return .confirmed(
                environment: environment,
                transactions: [],
                status: "local signature (no App Store Server API key)"
            )
        }
        let ids = submission.transactionIds.ids
        guard let transactionId = ids.first else {
            return .rejected(status: "empty", reason: "no transaction to confirm")
        }
        let answer = await client.transactionInfo(environment, transactionId: transactionId, app: app)
        switch answer {
        case .misconfigured(let problem):
            return .retry(status: "configuration", error: problem, cause: .configuration)
        case .transport(let cause):
            metrics.appleCall(endpoint: .serverAPI, environment: environment, status: cause)
            return .retry(status: cause, error: "no answer from the App Store Server API", cause: .appleUnavailable)
        case .http(200, let body, _):
            metrics.appleCall(endpoint: .serverAPI, environment: environment, status: "HTTP 200")
            await pacer?.answer()
            guard let info = try? JSONDecoder().decode(TransactionInfoResponse.self, from: Data(body)),
                let jws = info.signedTransactionInfo,
                case .some(let verified) = try? await verifier.verify(.signedTransaction(jws), app: app)
            else {
                return .retry(
                    status: "HTTP 200",
                    error: "the App Store Server API answered an unverifiable transaction",
                    cause: .other
                )
            }
            return .confirmed(environment: environment, transactions: verified.transactions, status: "HTTP 200")
        case .http(let status, let body, let retryAfter):
            let error = try? JSONDecoder().decode(APIError.self, from: Data(body))
            let code = error.map { ServerAPIErrorCode(rawValue: $0.errorCode) }
            let label = code.map { "HTTP \(status) \($0.rawValue)" } ?? "HTTP \(status)"
            metrics.appleCall(endpoint: .serverAPI, environment: environment, status: label)
            if status == 404, let code, code == .transactionIdNotFound || code == .invalidTransactionId {
                return .rejected(status: label, reason: "Apple does not know transaction \(transactionId)")
            }
            if status == 401 {
                // Apple refused this server's token: the app's key is wrong or revoked, not the purchase.
                return .retry(
                    status: label,
                    error: "the App Store Server API refused the app's key: fix apiKeyId, apiIssuerId or apiPrivateKey",
                    cause: .configuration
                )
            }
            return .retry(
                status: label,
                error: error?.errorMessage ?? "the App Store Server API answered HTTP \(status)",
                cause: status >= 500 ? .appleUnavailable : .other,
                retryAfter: retryAfter
            )
        }
    }
}
