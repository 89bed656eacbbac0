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

/// Answers Apple's consumption requests (docs/notifications.md, "Consumption requests"): when a customer asks Apple
/// for a refund, Apple sends `CONSUMPTION_REQUEST` and gives the developer twelve hours to say what it knows of the
/// purchase. The request is kept, and its answer queued as a `consumptionAnswer` job, in the notification's own database
/// transaction (`requested`); `ConsumptionWorker` answers it with Send Consumption Information v2 (`answer`), from the
/// ledger, the customer's consent and the app's settings (`ConsumptionRules`), retrying while Apple is unavailable and
/// giving up at the deadline. What was sent and what Apple answered are kept with the request, for the admin API; an
/// answer sent is a `consumption.answerSent` event.
public struct ConsumptionAnswers: AppStoreRoom, Sendable {
    let services: AppStoreServices
    /// The customers and their aliases.
    var customerStore: CustomerStore { CustomerStore(database: database) }
    /// What the ledger holds, read.
    var purchaseStore: PurchaseStore { PurchaseStore(database: database) }
    let events: EventLog

    /// The consumption requests and the customers' consent.
    var consumptionStore: ConsumptionStore { ConsumptionStore(database: database) }

    package init(
        services: AppStoreServices,
        events: EventLog
    ) {
        self.services = services
        self.events = events
    }

    /// Apple's deadline: "Respond within 12 hours of receiving the CONSUMPTION_REQUEST notification."
    static let deadlineMilliseconds: Int64 = 12 * 3600 * 1000

    // MARK: Requests

    /// Queues the answer to a CONSUMPTION_REQUEST, in the transaction that records the notification (so a restart
    /// loses none, and a retried delivery, answered `duplicate`, adds none). The worker is woken once it commits.
    func requested(
        _ notification: VerifiedNotification,
        transaction: PurchaseTransaction,
        owner: String?,
        app: ServerApp,
        now: Int64,
        trace: String?,
        on db: any SQLDatabase
    ) async throws {
        let requestedAt = notification.payload.signedDate?.millisecondsSince1970 ?? now
        try await consumptionStore.insert(
            ConsumptionRequestRecord(
                notificationUuid: notification.uuid,
                bundleId: app.bundleId,
                environment: notification.environment,
                transactionId: transaction.transactionId,
                originalTransactionId: transaction.originalTransactionId,
                productId: transaction.productId,
                customerId: owner,
                reason: notification.payload.data?.consumptionRequestReason?.rawValue,
                state: .pending,
                requestedAt: requestedAt,
                deadline: requestedAt + Self.deadlineMilliseconds,
                attempts: 0,
                nextAttemptAt: now,
                createdAt: now,
                updatedAt: now
            ),
            on: db
        )
        try await jobs.enqueue(.consumptionAnswer, key: notification.uuid, dueAt: now, trace: trace, on: db)
    }

    /// The app's consumption requests and their answers, newest first, one page; of one state or all.
    public func requests(bundleId: String, state: ConsumptionAnswerState?, page: PageRequest = PageRequest())
        async throws -> Page<ConsumptionAnswer>
    {
        _ = try await catalogue.app(bundleId: bundleId)
        let records = try await consumptionStore.consumptionRequests(
            bundleId: bundleId,
            state: state?.rawValue,
            before: page.after,
            limit: page.rowsToRead,
            on: database.sql
        )
        return try await page.page(
            records,
            key: { PageKey(number: $0.createdAt, text: $0.notificationUuid) },
            item: ConsumptionAnswer.init,
            total: {
                try await consumptionStore.countConsumptionRequests(
                    bundleId: bundleId,
                    state: state?.rawValue,
                    on: database.sql
                )
            }
        )
    }

    // MARK: Consent

    /// Whether a customer (aliases resolved) consented to share consumption data with Apple.
    public func consent(bundleId: String, customerId: String) async throws -> ConsumptionConsent {
        let owner = try await customerStore.resolve(bundleId: bundleId, customerId: customerId, on: database.sql)
        let stored = try await consumptionStore.consumptionConsent(
            bundleId: bundleId,
            customerId: owner,
            on: database.sql
        )
        return ConsumptionConsent(
            customerId: owner,
            consented: stored?.consented ?? false,
            updatedAt: stored?.updatedAt
        )
    }

    /// Records a customer's consent (or its withdrawal) for the account the id resolves to.
    public func setConsent(bundleId: String, customerId: String, consented: Bool) async throws -> ConsumptionConsent {
        let now = clock.milliseconds
        let owner = try await database.transaction { db in
            let owner = try await self.customerStore.resolve(bundleId: bundleId, customerId: customerId, on: db)
            try await self.consumptionStore.saveConsumptionConsent(
                bundleId: bundleId,
                customerId: owner,
                consented: consented,
                at: now,
                on: db
            )
            return owner
        }
        return ConsumptionConsent(customerId: owner, consented: consented, updatedAt: now)
    }

    // MARK: Answering

    /// A request claimed for one attempt at its answer.
    struct ClaimedRequest: Sendable {
        var request: ConsumptionRequestRecord
        /// The attempt's number: its job's count of attempts started, this one included.
        var attempt: Int
        /// The trace of the notification that queued it (docs/tracing.md), which its attempts continue.
        var trace: String? = nil
    }

    /// Claims up to `limit` requests whose answer is due, oldest first (`ConsumptionAttempts` answers each). The claim
    /// outlives the slowest answer (a worker that dies loses its claims when they lapse); a job whose request is gone
    /// or answered is finished here.
    func claimDue(limit: Int) async throws -> [ClaimedRequest] {
        let lease = configuration.confirmation.requestTimeout * 4 + .seconds(30)
        let claimed = try await jobs.claim(.consumptionAnswer, limit: limit, lease: lease)
        guard !claimed.isEmpty else { return [] }
        let requests = try await consumptionStore.consumptionRequests(
            notificationUuids: claimed.map(\.jobKey),
            on: database.sql
        )
        let open = Dictionary(
            requests.filter(\.isOpen).map { ($0.notificationUuid, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        let stale = claimed.map(\.jobKey).filter { open[$0] == nil }
        if !stale.isEmpty {
            // A job whose request is gone or answered has nothing left to do.
            try await database.transaction(bookkeeping: true) { db in
                try await self.jobs.finish(.consumptionAnswer, keys: stale, on: db)
            }
        }
        return claimed.compactMap { job in
            open[job.jobKey].map { ClaimedRequest(request: $0, attempt: job.attempts, trace: job.trace) }
        }
        .sorted { $0.request.createdAt < $1.request.createdAt }
    }

    /// Answers one request: decides what to send now (the ledger, the consent and the settings as they stand), sends
    /// it, and keeps the outcome. Apple unavailable (no answer, 5xx, 429) or refusing the app's key (401) is retried
    /// with the confirmation queue's back-off until the deadline; any other refusal is final.
    ///
    /// - Parameter attempt: the attempt's number, its job's count of attempts started (this one included), which the
    ///   request keeps when it is sent. The deadline, not a count, ends a request whose attempts never end.
    func answer(_ claimed: ConsumptionRequestRecord, attempt: Int, client: AppleClient) async throws {
        var request = claimed
        let now = clock.milliseconds
        request.updatedAt = now
        guard now < request.deadline else {
            request.state = .expired
            request.detail =
                "Apple's 12-hour deadline passed before an answer was sent"
                + (request.detail.map { "; last: \($0)" } ?? "")
            return try await settle(request, attempt: attempt)
        }
        guard let app = try await catalogue.cachedApp(bundleId: request.bundleId) else {
            request.state = .notSent
            request.detail = "the app \(request.bundleId) is no longer registered"
            return try await settle(request, attempt: attempt)
        }
        guard CatchUp.hasAPIKey(app) else {
            request.state = .notSent
            request.detail = "\(app.bundleId) has no App Store Server API key to answer Apple with"
            return try await settle(request, attempt: attempt)
        }
        switch try await decide(request, app: app) {
        case .skip(let reason):
            request.state = .notSent
            request.detail = reason
            return try await settle(request, attempt: attempt)
        case .send(let information):
            let body = try AppleJSON.makeEncoder().encode(information)
            request.body = String(decoding: body, as: UTF8.self)
            request.attempts = max(request.attempts, attempt)
            let environment = request.environment
            let outcome = await client.sendConsumptionInformation(
                environment,
                transactionId: request.transactionId,
                body: Array(body),
                app: app
            )
            record(outcome, in: &request, environment: environment, now: clock.milliseconds)
            try await settle(request, attempt: attempt)
        }
    }

    /// What the ledger, the consent and the settings say to send, as they stand now.
    private func decide(_ request: ConsumptionRequestRecord, app: ServerApp) async throws -> ConsumptionRules.Decision {
        let db = database.sql
        var row = try await purchaseStore.transaction(
            environment: request.environment,
            transactionId: request.transactionId,
            on: db
        )
        if row == nil, let original = request.originalTransactionId {
            // A renewal the ledger has not recorded: the subscription's newest period stands for it.
            row = try await purchaseStore.transactions(
                environment: request.environment,
                originalTransactionId: original,
                on: db
            )
            .last { $0.bundleId == app.bundleId }
        }
        guard var row, row.bundleId == app.bundleId else {
            return ConsumptionRules.decide(
                ConsumptionRules.Facts(
                    row: nil,
                    product: nil,
                    balances: [:],
                    consented: false,
                    settings: app.consumption
                )
            )
        }
        row.customerId = try await customerStore.resolve(bundleId: app.bundleId, customerId: row.customerId, on: db)
        let consent = try await consumptionStore.consumptionConsent(
            bundleId: app.bundleId,
            customerId: row.customerId,
            on: db
        )
        return ConsumptionRules.decide(
            ConsumptionRules.Facts(
                row: row,
                product: try await catalogue.products(of: app.bundleId)[request.productId ?? row.productId],
                balances: try await purchaseStore.balances(bundleId: app.bundleId, customerId: row.customerId, on: db),
                consented: consent?.consented ?? false,
                settings: app.consumption
            )
        )
    }

    /// Keeps Apple's answer to one attempt: taken, refused for good, or to be tried again before the deadline.
    private func record(
        _ outcome: AppleClient.Answer,
        in request: inout ConsumptionRequestRecord,
        environment: AppStoreEnvironment,
        now: Int64
    ) {
        let failure: String
        var retryAfter: Duration?
        switch outcome {
        case .http(let status, _, _) where (200..<300).contains(status):
            metrics.appleCall(endpoint: .consumption, environment: environment, status: "HTTP \(status)")
            request.state = .sent
            request.sentAt = now
            request.appleStatus = status
            request.appleErrorCode = nil
            request.detail = nil
            return
        case .http(let status, let body, let wait):
            retryAfter = wait
            let error = try? JSONDecoder().decode(APIError.self, from: Data(body))
            metrics.appleCall(
                endpoint: .consumption,
                environment: environment,
                status: "HTTP \(status)" + (error.map { " \($0.errorCode)" } ?? "")
            )
            request.appleStatus = status
            request.appleErrorCode = error.map { Int64($0.errorCode) }
            let said = error.map { ": \($0.errorMessage) (\($0.errorCode))" } ?? ""
            guard status >= 500 || status == 429 || status == 401 else {
                request.state = .refused
                request.detail = "Apple refused the answer with HTTP \(status)\(said)"
                return
            }
            failure =
                status == 401
                ? "Apple refused the app's App Store Server API key (HTTP 401)"
                : "Apple answered HTTP \(status)\(said)"
        case .transport(let cause):
            metrics.appleCall(endpoint: .consumption, environment: environment, status: cause)
            request.appleStatus = nil
            failure = "no answer from Apple: \(cause)"
        case .misconfigured(let problem):
            failure = problem
        }
        let next =
            now
            + Self.milliseconds(
                configuration.confirmation.delay(afterAttempt: request.attempts, retryAfter: retryAfter)
            )
        if next >= request.deadline {
            request.state = .expired
            request.detail = "gave up: Apple's 12-hour deadline comes before another attempt; last: \(failure)"
        } else {
            request.state = .retrying
            request.nextAttemptAt = next
            request.detail = failure
        }
    }

    /// Keeps where the request stands and ends its job's attempt in one transaction: done, or again at its next
    /// attempt. An answer Apple took is an event. An `attempt` whose claim lapsed while it waited on Apple, and which
    /// ends while a later claim's attempt is under way (or after that attempt finished the job), changes nothing: that
    /// attempt decides.
    private func settle(_ request: ConsumptionRequestRecord, attempt: Int? = nil) async throws {
        let superseded = try await events.transaction(source: .consumption(request.notificationUuid)) { changes in
            let db = changes.db
            if request.isOpen, let next = request.nextAttemptAt {
                guard
                    try await self.jobs.retry(
                        .consumptionAnswer,
                        key: request.notificationUuid,
                        at: next,
                        error: request.detail,
                        attempt: attempt,
                        on: db
                    )
                else { return true }
                try await self.consumptionStore.update(request, on: db)
            } else {
                // A slow attempt's failure (Apple refused it, the deadline came) does not overwrite what a later attempt
                // did, sending the answer say: the job is then that attempt's, or gone. An answer Apple took is
                // recorded whichever attempt sent it.
                guard
                    try await self.jobs.finish(
                        .consumptionAnswer,
                        key: request.notificationUuid,
                        attempt: request.state == .sent ? nil : attempt,
                        on: db
                    )
                else { return true }
                try await self.consumptionStore.update(request, on: db)
            }
            if request.state == .sent, let sent = request.body {
                try await self.recordSent(request, body: sent, in: changes)
            }
            return false
        }
        guard !superseded else {
            logger.notice(
                "consumption request \(request.notificationUuid): a slow attempt ended after a later one started; that one decides"
            )
            return
        }
        metrics.consumptionAnswer(state: request.state.rawValue)
        let message =
            "consumption request \(request.notificationUuid) (\(request.environment) transaction \(request.transactionId)): \(request.state.rawValue)"
            + (request.detail.map { "; \($0)" } ?? "")
        switch request.state {
        case .sent, .notSent: logger.info("\(message)")
        case .pending, .retrying, .refused, .expired: logger.warning("\(message)")
        }
    }

    /// The `consumption.answerSent` event: what was sent about whose purchase.
    private func recordSent(_ request: ConsumptionRequestRecord, body: String, in changes: ChangeSet) async throws {
        var owner: String?
        if let customerId = request.customerId {
            owner = try await customerStore.resolve(bundleId: request.bundleId, customerId: customerId, on: changes.db)
        }
        var event = PendingEvent(
            .consumption_answerSent,
            bundleId: request.bundleId,
            customerId: owner,
            occurredAt: request.sentAt ?? clock.milliseconds,
            environment: request.environment
        )
        if let productId = request.productId {
            let product = try await catalogue.products(of: request.bundleId, on: changes.db)[productId]
            event.product = Components.Schemas.EventProduct(
                id: productId,
                _type: product.map { Components.Schemas.ProductType($0.type) },
                entitlements: product?.entitlements ?? []
            )
        }
        event.consumption = Components.Schemas.EventConsumption(
            notificationUUID: request.notificationUuid,
            transactionId: request.transactionId,
            reason: request.reason,
            sent: try JSONDecoder().decode(Components.Schemas.ConsumptionInformation.self, from: Data(body.utf8))
        )
        changes.record(event)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}
