import Foundation
import SQLKit
import TillAppStore
import TillCatalogue
import TillConsole
import TillContract
import TillCore
import TillLedger
import TillStorage

/// One thing that happened to a customer, as the console's timeline shows it.
public struct TimelineEntry: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// A change of the ledger (`srv_events`): purchases, renewals, refunds, debits, grants, transfers, …
        case event
        /// A purchase the app submitted, with each attempt to confirm it and Apple's answers.
        case submission
        /// An App Store Server Notification applied to the customer.
        case notification
        /// Apple's consumption request about one of the customer's purchases, and the answer.
        case consumption
        /// An offer signed, download links made.
        case activity
    }

    public var at: Int64
    public var kind: Kind
    public var title: String
    public var lines: [String]
    /// An operator's change (shown as manual).
    public var manual: Bool
}

/// A customer's history: the account, its guest ids, and the newest entries of each kind, newest first.
public struct CustomerTimeline: Sendable {
    public var owner: String
    public var guests: [String]
    public var entries: [TimelineEntry]
}

extension Customers {
    /// A customer's timeline (the account a guest id belongs to, with its guests'): the newest `limit` events,
    /// submissions (with their attempts), notifications, consumption requests and activity, merged newest first. Each
    /// is read on its own index.
    public func timeline(bundleId: String, customerId: String, limit: Int = 50) async throws -> CustomerTimeline {
        try await database.read { db in
            let owner = try await customerStore.resolve(bundleId: bundleId, customerId: customerId, on: db)
            let guests = try await customerStore.guests(bundleId: bundleId, customerId: owner, on: db)
            let ids = [owner] + guests
            var entries: [TimelineEntry] = []
            for record in try await timelineStore.newestEvents(
                bundleId: bundleId,
                customerIds: ids,
                limit: limit,
                on: db
            ) {
                entries.append(Self.entry(record))
            }
            let submissions = try await timelineStore.newestSubmissions(
                bundleId: bundleId,
                customerIds: ids,
                limit: limit,
                on: db
            )
            let attempts = Dictionary(
                grouping: try await timelineStore.attempts(submissionIds: submissions.map(\.id), on: db),
                by: \.submissionId
            )
            for submission in submissions {
                entries.append(Self.entry(submission, attempts: attempts[submission.id] ?? []))
            }
            for notification in try await timelineStore.newestNotifications(
                bundleId: bundleId,
                customerIds: ids,
                limit: limit,
                on: db
            ) {
                entries.append(Self.entry(notification))
            }
            for request in try await timelineStore.newestConsumptionRequests(
                bundleId: bundleId,
                customerIds: ids,
                limit: limit,
                on: db
            ) {
                entries.append(Self.entry(request))
            }
            for activity in try await timelineStore.newestActivity(
                bundleId: bundleId,
                customerIds: ids,
                limit: limit,
                on: db
            ) {
                entries.append(
                    TimelineEntry(
                        at: activity.at,
                        kind: .activity,
                        title: Self.words(activity.kind.rawValue),
                        lines: [activity.detail],
                        manual: false
                    )
                )
            }
            return CustomerTimeline(
                owner: owner,
                guests: guests,
                entries: entries.sorted { $0.at > $1.at }
            )
        }
    }

    /// An event as the timeline shows it: its type and what it was about, then who told the server and what moved.
    static func entry(_ record: EventRecord) -> TimelineEntry {
        let event = try? JSONDecoder().decode(Event.self, from: Data(record.body.utf8))
        var title = record.type.rawValue
        if let product = event?.product?.id { title += " — " + product }
        var lines: [String] = []
        if let transaction = event?.transaction {
            var line = "transaction \(transaction.transactionId)"
            if transaction.originalTransactionId != transaction.transactionId {
                line += " of \(transaction.originalTransactionId)"
            }
            if let expires = transaction.expiresDate { line += ", until \(Readable.time(expires))" }
            lines.append(line)
        }
        if let source = event?.source {
            var line = "from " + Self.words(source.kind.rawValue)
            if let type = source.notificationType { line += " " + type }
            if let id = source.id { line += " " + id }
            lines.append(line)
            if let note = source.note { lines.append("note: " + note) }
        }
        if let price = event?.price { lines.append("price \(Readable.money(price.amount)) \(price.currency)") }
        if let refund = event?.refund {
            var line = "refunded \(String(format: "%.1f", Double(refund.share) / 1000))%"
            if let amount = refund.amount { line += ", \(Readable.money(amount.amount)) \(amount.currency)" }
            lines.append(line)
        }
        if let changes = event?.balanceChanges?.additionalProperties, !changes.isEmpty {
            lines.append(
                "credits "
                    + changes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value > 0 ? "+" : "")\($0.value)" }
                    .joined(separator: ", ")
            )
        }
        if let subscription = event?.subscription {
            var parts: [String] = []
            if let renew = subscription.autoRenewStatus { parts.append("auto-renew \(renew ? "on" : "off")") }
            if let previous = subscription.previousProductId { parts.append("from \(previous)") }
            if let next = subscription.autoRenewProductId { parts.append("renews as \(next)") }
            if let expires = subscription.expiresDate { parts.append("until \(Readable.time(expires))") }
            if !parts.isEmpty { lines.append(parts.joined(separator: ", ")) }
        }
        if let transfer = event?.transfer {
            lines.append(
                "\(transfer.reason.rawValue): \(transfer.fromCustomerId) → \(transfer.toCustomerId), "
                    + transfer.transactionIds.joined(separator: ", ")
            )
        }
        if let rejection = event?.rejection { lines.append("Apple: \(rejection.status), \(rejection.reason)") }
        if let consumption = event?.consumption { lines.append("answered request \(consumption.notificationUUID)") }
        lines.append("\(record.environment?.rawValue ?? "no environment") · event #\(record.sequence) \(record.id)")
        return TimelineEntry(
            at: record.createdAt,
            kind: .event,
            title: title,
            lines: lines,
            manual: record.source == ._operator
        )
    }

    /// A submission, with each attempt to confirm it.
    static func entry(_ submission: SubmissionRecord, attempts: [SubmissionAttemptRecord]) -> TimelineEntry {
        var lines = [
            "\(Self.words(submission.kind.rawValue)), \(submission.environment.rawValue): "
                + submission.transactionIds.ids.joined(separator: ", ")
        ]
        for attempt in attempts {
            var line = "attempt \(attempt.number), \(Readable.time(attempt.at)): \(attempt.outcome.rawValue)"
            if let status = attempt.status { line += ", Apple answered \(status)" }
            if let duration = attempt.duration { line += " in \(Readable.duration(milliseconds: duration))" }
            if let error = attempt.error { line += " — \(error)" }
            lines.append(line)
        }
        if attempts.isEmpty, submission.attempts > 0, let status = submission.lastStatus {
            lines.append("\(submission.attempts) attempts; Apple's last answer \(status)")
        }
        if let reason = submission.reason { lines.append(reason) }
        if let next = submission.nextAttemptAt, !submission.state.isSettled {
            lines.append("next attempt \(Readable.time(next))")
        }
        lines.append("submission \(submission.id)")
        return TimelineEntry(
            at: submission.createdAt,
            kind: .submission,
            title: "Submission — \(submission.state.rawValue)",
            lines: lines,
            manual: false
        )
    }

    static func entry(_ notification: NotificationRecord) -> TimelineEntry {
        var lines: [String] = []
        if let transaction = notification.transactionId { lines.append("transaction \(transaction)") }
        if let detail = notification.detail { lines.append(detail) }
        lines.append("\(notification.environment) · \(notification.notificationUuid)")
        return TimelineEntry(
            at: notification.receivedAt,
            kind: .notification,
            title: "Notification \(notification.type)\(notification.subtype.map { " (\($0))" } ?? "") — "
                + notification.outcome.rawValue,
            lines: lines,
            manual: false
        )
    }

    static func entry(_ request: ConsumptionRequestRecord) -> TimelineEntry {
        var lines = ["transaction \(request.transactionId), answer due by \(Readable.time(request.deadline))"]
        if let reason = request.reason { lines.append("reason: \(reason)") }
        if let status = request.appleStatus { lines.append("Apple answered HTTP \(status)") }
        if let detail = request.detail { lines.append(detail) }
        return TimelineEntry(
            at: request.requestedAt,
            kind: .consumption,
            title: "Consumption request — \(request.state.rawValue)",
            lines: lines,
            manual: false
        )
    }

    /// `promotionalOfferSigned` → `promotional offer signed`.
    static func words(_ identifier: String) -> String {
        var out = ""
        for character in identifier {
            if character.isUppercase {
                out += " " + character.lowercased()
            } else {
                out.append(character)
            }
        }
        return out
    }
}
