import Foundation
import SQLKit
import TillContract
import TillCore
import TillJobs
import TillLedger
import TillStorage

/// The rows `LedgerGenerator` writes, gathered by table and written in multi-row INSERTs (a bulk load; the server's
/// own writes go through its ledger). The ledger's tables (transactions, the books, credits, renewal states,
/// customers) and its outbox of events go through the ledger module's bulk path, `LedgerBulkLoad`, and the jobs
/// through the job queue's `JobStore.insertJobs`; the rest (submissions and notifications) are written here. Counters (event sequences,
/// totals) outlive each flush.
struct Batch {
    typealias Value = any Encodable & Sendable

    struct Table {
        var columns: [String]
        var rows: [[Value]] = []
    }

    private(set) var tables: [String: Table] = [:]
    private var ledger = LedgerBulkLoad()
    private var jobs: [Job] = []
    private var others = 0
    var rows: Int { others + ledger.rows + jobs.count }
    var sequence: Int64 = 0
    var events = 0
    var submissions = 0
    var notifications = 0

    mutating func add(_ table: String, _ columns: [String], _ values: [Value]) {
        if tables[table] == nil { tables[table] = Table(columns: columns) }
        tables[table]!.rows.append(values)
        others += 1
    }

    /// Forgets the rows written; the counters go on.
    mutating func clear() {
        tables = [:]
        others = 0
        jobs = []
        ledger.clear()
    }

    /// Writes what was gathered, on one transaction's connection.
    func write(to database: TillDatabase, on db: any SQLDatabase) async throws {
        // The ledger's first: nothing refers to anything else by a foreign key, but it reads in the order of a purchase.
        try await ledger.write(on: db)
        let jobStore = JobStore(database: database)
        for start in stride(from: 0, to: jobs.count, by: 1000) {
            try await jobStore.insertJobs(Array(jobs[start..<min(start + 1000, jobs.count)]), on: db)
        }
        for name in tables.keys.sorted() {
            guard let table = tables[name] else { continue }
            let perStatement = max(1, 30_000 / table.columns.count)
            var start = 0
            while start < table.rows.count {
                let end = min(start + perStatement, table.rows.count)
                try await db.execute(
                    sql: RecordStatements.insert(
                        into: name,
                        columns: table.columns,
                        rows: Array(table.rows[start..<end])
                    )
                ) { _ in }
                start = end
            }
        }
    }

    static let submissionColumns = [
        "id", "bundle_id", "customer_id", "kind", "environment", "state", "attempts", "last_status", "last_error",
        "reason", "transaction_ids", "created_at", "updated_at", "confirmed_at", "retry_cause",
    ]
    static let attemptColumns = [
        "submission_id", "number", "at", "environment", "outcome", "status", "error", "retry_cause", "duration",
    ]

    // MARK: What a customer's purchases leave

    mutating func customer(bundleId: String, customerId: String, at: Int64) {
        ledger.customer(bundleId: bundleId, customerId: customerId, at: at)
    }

    mutating func guest(bundleId: String, guestId: String, of account: String, at: Int64) {
        ledger.customer(bundleId: bundleId, customerId: guestId, aliasOf: account, at: at)
    }

    mutating func purchase(
        _ purchase: Purchase,
        customerId: String,
        environment: AppStoreEnvironment,
        currency: String,
        refund: (date: Int64, share: Int64)?,
        random: inout SplitMix64
    ) {
        let bundleId = LedgerGenerator.bundleId
        let id = String(purchase.id)
        let original = String(purchase.original)
        let isRenewal = purchase.original != purchase.id
        let submissionId = random.uuid()
        let notificationId = random.uuid()
        // A renewal reaches the server in Apple's notification; everything else in the app's submission.
        let source: LedgerSource = isRenewal ? .notification : .submission
        let origin = isRenewal ? "notification:\(notificationId)" : submissionId
        let row = LedgerRecord(
            environment: environment,
            transactionId: id,
            bundleId: bundleId,
            customerId: customerId,
            originalTransactionId: original,
            productId: purchase.product,
            productType: ProductType(rawValue: purchase.type),
            quantity: 1,
            purchaseDate: purchase.date,
            expiresDate: purchase.expires,
            revocationDate: refund?.date,
            revocationReason: refund == nil ? nil : .refund,
            isUpgraded: false,
            introductoryOffer: purchase.introductory,
            ownership: .purchased,
            price: purchase.price,
            currency: currency,
            storefront: "USA",
            submissionId: origin,
            source: source,
            confirmed: true,
            createdAt: purchase.date + 1500,
            updatedAt: refund?.date ?? purchase.date + 1500
        )
        ledger.transaction(row)
        if purchase.price > 0 {
            ledger.book(row, amount: purchase.price, currency: currency, at: purchase.date, kind: .purchase)
        }
        if let refund, purchase.price > 0 {
            ledger.book(
                row,
                amount: -purchase.price * refund.share / 100_000,
                currency: currency,
                at: refund.date,
                kind: .refund
            )
        }
        if purchase.type == "consumable" {
            ledger.creditEntry(
                bundleId: bundleId,
                customerId: customerId,
                credit: "gems",
                delta: 100,
                reference: "purchase:\(environment.rawValue):\(id)",
                at: purchase.date
            )
            if random.chance(1, in: 2) {
                ledger.creditEntry(
                    bundleId: bundleId,
                    customerId: customerId,
                    credit: "gems",
                    delta: -30,
                    reference: "debit:\(id)",
                    at: purchase.date + 3_600_000
                )
            }
        }
        let eventType: String
        if isRenewal {
            eventType = "subscription.renewed"
            notification(
                uuid: notificationId,
                type: "DID_RENEW",
                subtype: nil,
                purchase: purchase,
                customerId: customerId,
                environment: environment,
                currency: currency,
                at: purchase.date + 2000
            )
        } else {
            eventType =
                purchase.type == "consumable"
                ? "credits.purchased"
                : purchase.type == "autoRenewable"
                    ? "purchase.initial"
                    : "purchase.initial"
            submission(
                id: submissionId,
                transactionId: id,
                customerId: customerId,
                environment: environment,
                at: purchase.date + 1000
            )
        }
        event(
            eventType,
            purchase: purchase,
            customerId: customerId,
            environment: environment,
            currency: currency,
            source: isRenewal ? ("notification", notificationId) : ("submission", submissionId),
            at: purchase.date + 1500,
            random: &random
        )
        if !isRenewal {
            event(
                "purchase.confirmed",
                purchase: purchase,
                customerId: customerId,
                environment: environment,
                currency: nil,
                source: ("confirmation", submissionId),
                at: purchase.date + 4000,
                random: &random
            )
        }
        if let refund {
            let uuid = random.uuid()
            notification(
                uuid: uuid,
                type: "REFUND",
                subtype: nil,
                purchase: purchase,
                customerId: customerId,
                environment: environment,
                currency: currency,
                at: refund.date
            )
            event(
                "purchase.refunded",
                purchase: purchase,
                customerId: customerId,
                environment: environment,
                currency: nil,
                source: ("notification", uuid),
                at: refund.date,
                random: &random
            )
        }
    }

    mutating func submission(
        id: String,
        transactionId: String,
        customerId: String,
        environment: AppStoreEnvironment,
        at: Int64
    ) {
        add(
            "srv_submissions",
            Self.submissionColumns,
            [
                id, LedgerGenerator.bundleId, customerId, "signedTransaction", environment.rawValue, "confirmed", 1,
                "HTTP 200", String?.none, String?.none, "[\"\(transactionId)\"]", at, at + 3000, at + 3000,
                String?.none,
            ]
        )
        add(
            "srv_submission_attempts",
            Self.attemptColumns,
            [id, 1, at + 3000, environment.rawValue, "confirmed", "HTTP 200", String?.none, String?.none, Int64(180)]
        )
        submissions += 1
    }

    mutating func notification(
        uuid: String,
        type: String,
        subtype: String?,
        purchase: Purchase,
        customerId: String,
        environment: AppStoreEnvironment,
        currency: String,
        at: Int64
    ) {
        let decoded = """
            {"notification":{"data":{"bundleId":"\(LedgerGenerator.bundleId)","environment":"\(environment.rawValue)",\
            "status":1},"notificationType":"\(type)","notificationUUID":"\(uuid)","signedDate":\(at),"version":"2.0"},\
            "transaction":{"bundleId":"\(LedgerGenerator.bundleId)","currency":"\(currency)","environment":\
            "\(environment.rawValue)","expiresDate":\(purchase.expires ?? 0),"inAppOwnershipType":"PURCHASED",\
            "originalTransactionId":"\(purchase.original)","price":\(purchase.price),"productId":"\(purchase.product)",\
            "purchaseDate":\(purchase.date),"quantity":1,"transactionId":"\(purchase.id)","type":"Auto-Renewable \
            Subscription"}}
            """
        add(
            "srv_notifications",
            [
                "notification_uuid", "bundle_id", "environment", "type", "subtype", "signed_date", "received_at",
                "outcome", "transaction_id", "original_transaction_id", "customer_id", "detail", "decoded",
            ],
            [
                uuid, LedgerGenerator.bundleId, environment.rawValue, type, subtype, at, at + 800, "applied",
                String(purchase.id), String(purchase.original), customerId, String?.none, decoded,
            ]
        )
        notifications += 1
    }

    mutating func event(
        _ type: String,
        purchase: Purchase,
        customerId: String,
        environment: AppStoreEnvironment,
        currency: String?,
        source: (kind: String, id: String),
        at: Int64,
        random: inout SplitMix64
    ) {
        sequence += 1
        let id = "evt_" + random.uuid().replacingOccurrences(of: "-", with: "")
        let entitlement = purchase.product.hasPrefix("premium") ? "premium" : purchase.product == "pro" ? "pro" : nil
        var event = PendingEvent(
            Components.Schemas.EventType(rawValue: type) ?? .purchase_initial,
            bundleId: LedgerGenerator.bundleId,
            customerId: customerId,
            occurredAt: at,
            environment: environment
        )
        event.source = Components.Schemas.EventSource(
            kind: Components.Schemas.EventSourceKind(rawValue: source.kind) ?? .submission,
            id: source.id
        )
        event.product = Components.Schemas.EventProduct(
            id: purchase.product,
            _type: Components.Schemas.ProductType(rawValue: purchase.type),
            entitlements: entitlement.map { [$0] } ?? []
        )
        event.transaction = Components.Schemas.EventTransaction(
            transactionId: String(purchase.id),
            originalTransactionId: String(purchase.original),
            purchaseDate: purchase.date,
            expiresDate: purchase.expires,
            quantity: 1,
            ownership: .purchased,
            storefront: "USA",
            confirmed: type != "purchase.initial" && type != "credits.purchased"
        )
        event.price = currency.flatMap {
            environment == .production && purchase.price > 0
                ? Components.Schemas.Money(amount: purchase.price, currency: $0) : nil
        }
        let customer = Components.Schemas.EventCustomer(
            id: customerId,
            aliases: [],
            entitlements: entitlement.map {
                [
                    Components.Schemas.Entitlement(
                        id: $0,
                        productId: purchase.product,
                        transactionId: String(purchase.id),
                        environment: environment.rawValue,
                        expiresDate: purchase.expires,
                        provisional: false
                    )
                ]
            } ?? [],
            balances: Components.Schemas.Credits(additionalProperties: [:])
        )
        // As the ledger's event log writes it: the same record, its body by the contract's encoder.
        if let record = try? EventRecord(event, sequence: sequence, id: id, createdAt: at, customer: customer) {
            ledger.event(record)
        }
        events += 1
    }

    mutating func subscriptionState(_ purchase: Purchase, environment: AppStoreEnvironment, now: Int64, renewing: Bool)
    {
        ledger.renewalState(
            SubscriptionStateRecord(
                environment: environment,
                originalTransactionId: String(purchase.original),
                bundleId: LedgerGenerator.bundleId,
                productId: purchase.product,
                autoRenewProductId: purchase.product,
                autoRenewStatus: renewing,
                status: renewing ? 1 : 2,
                isInBillingRetry: false,
                renewalDate: purchase.expires,
                signedDate: purchase.date,
                updatedAt: now
            )
        )
    }

    /// A submission Apple has not confirmed: retrying, or dead-lettered after its attempts.
    mutating func waitingSubmission(index: Int, customerId: String, deadLettered: Bool, now: Int64) {
        let id = String(format: "waiting-%05d", index)
        let at = now - Int64(index + 1) * 600_000
        let state = deadLettered ? "deadLettered" : "retrying"
        add(
            "srv_submissions",
            Self.submissionColumns,
            [
                id, LedgerGenerator.bundleId, customerId, "appReceipt", "Production", state, deadLettered ? 12 : 3,
                "HTTP 503", "verifyReceipt (Production) answered HTTP 503",
                deadLettered ? "gave up after 12 attempts; last: HTTP 503" : String?.none, "[]", at, at + 1000,
                Int64?.none, deadLettered ? String?.none : "appleUnavailable",
            ]
        )
        add("srv_submission_payloads", ["id", "payload"], [id, "MIIT" + String(repeating: "A", count: 64)])
        for number in 1...(deadLettered ? 12 : 3) {
            add(
                "srv_submission_attempts",
                Self.attemptColumns,
                [
                    id, number, at + Int64(number) * 2000, "Production", number == 12 ? "deadLettered" : "retrying",
                    "HTTP 503", "verifyReceipt (Production) answered HTTP 503", "appleUnavailable", Int64(30),
                ]
            )
        }
        jobs.append(
            Job(
                kind: .confirmation,
                jobKey: id,
                state: deadLettered ? .deadLettered : .queued,
                attempts: deadLettered ? 12 : 3,
                dueAt: now + 3_600_000,
                lastError: "verifyReceipt (Production) answered HTTP 503",
                createdAt: at,
                updatedAt: at + 1000
            )
        )
        submissions += 1
    }
}
