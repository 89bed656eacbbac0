import Foundation
import Hummingbird
import TillAppStore
import TillCatalogue
import TillConsole
import TillContract
import TillCore
import TillHTTPKit
import TillJobs
import TillLedger

/// Apple's queue (submissions waiting for Apple, retried one by one or all at once), the server's health with Apple
/// (answers and latency per endpoint, work queued, catching up, consumption answers due) and the notifications log.
extension ConsolePages {
    static let queueStates: [(state: SubmissionState, label: String)] = [
        (.deadLettered, "Dead-lettered"), (.retrying, "Retrying"), (.pending, "Pending"),
    ]

    func queue(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/queue", request, context)
        let query = request.uri.queryParameters
        let state = query.get("state").flatMap { SubmissionState(rawValue: String($0)) } ?? .deadLettered
        guard Self.queueStates.contains(where: { $0.state == state }) else {
            return section.failure(
                .badRequest("invalidState", "the queue shows pending, retrying and deadLettered submissions")
            )
        }
        let page: PageRequest
        do {
            page = try PageRequest(limit: "50", cursor: query.get("cursor").map { String($0) })
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            return section.failure(error)
        }
        let depth = try await server.queueAdmin.depth()
        let (records, next, total) = try await server.queueAdmin.records(state: state, page: page)
        let now = server.nowMilliseconds
        var context = section.common
        context["states"] = Self.queueStates.map { item -> [String: Any] in
            [
                "value": item.state.rawValue, "label": item.label, "count": depth[item.state]?.count ?? 0,
                "current": item.state == state,
            ]
        }
        context["isDeadLettered"] = state == .deadLettered
        context["stateLabel"] = Self.queueStates.first { $0.state == state }?.label ?? state.rawValue
        context["total"] = Readable.grouped(total)
        context["submissions"] = records.map { record -> [String: Any] in
            var row: [String: Any] = [
                "id": record.id,
                "kind": record.kind.rawValue,
                "environment": record.environment.rawValue,
                "bundleId": record.bundleId,
                "customerId": record.customerId,
                "customerHref": customerHref(record.customerId, app: record.bundleId),
                "age": Readable.duration(milliseconds: now - record.createdAt),
                "attempts": record.attempts,
                "cause": record.retryCause?.rawValue ?? (state == .deadLettered ? "gave up" : "—"),
                "lastStatus": record.lastStatus ?? "no answer yet",
                "nextAttempt": record.nextAttemptAt.map {
                    $0 <= now ? "due now" : "in " + Readable.duration(milliseconds: $0 - now)
                }
                    ?? "—",
            ]
            if let error = record.lastError ?? record.reason { row["lastErrorText"] = error }
            return row
        }
        if let next {
            context["nextPage"] = "/console/queue?" + Readable.query([("state", state.rawValue), ("cursor", next)])
        }
        return ConsolePage.html("queue", context)
    }

    func retry(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let id = try context.pathParameter("id")
        return try await act(
            .retrySubmission,
            context,
            bundleId: nil,
            target: id,
            back: "/console/queue?state=deadLettered",
            done: "Submission \(id) is back in the queue."
        ) {
            _ = try await server.queueAdmin.requeue(id: id)
        }
    }

    func retryAll(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        var count = 0
        let response = try await act(
            .retryAllSubmissions,
            context,
            bundleId: nil,
            target: "every dead-lettered submission",
            back: "/console/queue?state=pending",
            done: "Every dead-lettered submission is back in the queue."
        ) {
            count = try await server.queueAdmin.requeueAll()
        }
        _ = count
        return response
    }

    func health(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/health", request, context)
        let app = section.app
        var page = section.common
        let now = server.nowMilliseconds
        let (counts, recent) = server.metrics.appleCallsSeen()
        struct Key: Hashable {
            var endpoint: String
            var environment: String
        }
        var answers: [Key: [(String, Int)]] = [:]
        for (key, count) in counts {
            answers[Key(endpoint: key.endpoint, environment: key.environment), default: []].append((key.status, count))
        }
        var latencies: [Key: [Double]] = [:]
        for call in recent {
            latencies[Key(endpoint: call.endpoint, environment: call.environment), default: []].append(
                call.milliseconds
            )
        }
        let keys = Set(answers.keys).union(latencies.keys).sorted {
            ($0.endpoint, $0.environment) < ($1.endpoint, $1.environment)
        }
        var medians: [Int64] = []
        page["endpoints"] = keys.map { key -> [String: Any] in
            let times = (latencies[key] ?? []).sorted()
            func percentile(_ share: Double) -> String {
                times.isEmpty
                    ? "—" : Readable.latency(times[min(times.count - 1, Int(Double(times.count - 1) * share))])
            }
            medians.append(times.isEmpty ? 0 : Int64(times[(times.count - 1) / 2].rounded()))
            let answered = answers[key] ?? []
            return [
                "endpoint": key.endpoint,
                "environment": key.environment,
                "answers": answered.map { "\($0.0) × \($0.1)" }.joined(separator: ", "),
                "calls": Readable.grouped(answered.reduce(0) { $0 + $1.1 }),
                "median": percentile(0.5),
                "p95": percentile(0.95),
                "slowest": times.last.map(Readable.latency) ?? "—",
            ]
        }
        if !keys.isEmpty {
            let chart = SVGChart(
                id: "apple-latency",
                title: "Median latency of Apple's answers (ms)",
                labels: keys.map { "\($0.endpoint) \($0.environment == "Production" ? "prod" : "sbx")" },
                series: [SVGChart.Series(name: "Median (ms)", values: medians, color: SVGChart.palette[0])],
                additive: false,
                format: { "\($0) ms" }
            )
            page["charts"] = [["svg": chart.svg, "caption": "Median latency per endpoint and environment."]]
        }
        page["since"] = Readable.time(server.startedAt)
        page["recentCount"] = recent.count
        page["recent"] = recent.suffix(20).reversed().map { call -> [String: Any] in
            [
                "when": Readable.time(Int64(call.at.timeIntervalSince1970 * 1000)),
                "endpoint": call.endpoint,
                "environment": call.environment,
                "answer": call.answer,
                "took": Readable.latency(call.milliseconds),
            ]
        }
        let depth = try await server.jobs.depth()
        page["jobs"] = JobKind.allCases.map { kind -> [String: Any] in
            let queued = depth.first { $0.kind == kind && $0.state == .queued }
            let dead = depth.first { $0.kind == kind && $0.state == .deadLettered }
            return [
                "kind": kind.rawValue,
                "queued": Readable.grouped(queued?.n ?? 0),
                "deadLettered": Readable.grouped(dead?.n ?? 0),
                "oldest": queued?.oldestDue.map {
                    $0 <= now
                        ? "due " + Readable.duration(milliseconds: now - $0) + " ago"
                        : "in " + Readable.duration(milliseconds: $0 - now)
                } ?? "—",
            ]
        }
        if let app {
            page["canCatchUp"] = CatchUp.hasAPIKey(app)
            do {
                let run = try await server.catchUp.lastRun(bundleId: app.bundleId)
                page["catchUp"] =
                    [
                        "outcome": run.outcome.rawValue,
                        "trigger": run.trigger.rawValue,
                        "started": Readable.time(run.startedAt),
                        "took": Readable.duration(milliseconds: run.finishedAt - run.startedAt),
                        "environments": run.environments.map { environment -> [String: Any] in
                            let n = environment.notifications
                            let t = environment.transactions
                            var entry: [String: Any] = [
                                "environment": environment.environment,
                                "notifications":
                                    "\(n.fetched) notifications read (\(n.applied) applied, \(n.duplicate) known, \(n.ignored) ignored, \(n.refused) refused)",
                                "transactions":
                                    "\(t.histories) histories, \(t.fetched) transactions (\(t.recorded) recorded, \(t.revoked) revoked, \(t.updated) updated)",
                            ]
                            if let error = n.error ?? t.error {
                                entry["failure"] = "\(error.cause.rawValue): \(error.message)"
                            }
                            return entry
                        },
                    ] as [String: Any]
            } catch let error as CatchUpRefusal where error.reason == .catchUpNeverRun {
                page["catchUpAbsent"] =
                    CatchUp.hasAPIKey(app)
                    ? "Never ran yet." : "The app has no App Store Server API key: there is no one to ask."
            }
            var due: [[String: Any]] = []
            for state in [ConsumptionAnswerState.pending, .retrying] {
                for request in try await server.consumption.requests(
                    bundleId: app.bundleId,
                    state: state,
                    page: PageRequest(limit: 50)
                ).items {
                    due.append([
                        "transactionId": request.transactionId,
                        "customer": request.customerId ?? "—",
                        "state": request.state.rawValue,
                        "requested": Readable.time(request.requestedAt),
                        "deadline": Readable.time(request.deadline),
                        "attempts": request.attempts,
                        "detail": request.detail ?? "",
                    ])
                }
            }
            page["consumption"] = due
        }
        return ConsolePage.html("health", page)
    }

    // MARK: Notifications

    func notifications(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/notifications", request, context)
        guard let app = section.app else { return section.noApp }
        let query = request.uri.queryParameters
        let outcomeText = query.get("outcome").map { String($0) } ?? ""
        let outcome = NotificationOutcome(rawValue: outcomeText)
        let type = query.get("type").map { String($0).trimmingCharacters(in: .whitespaces) }.flatMap {
            $0.isEmpty ? nil : $0
        }
        let log: (records: [NotificationRecord], nextCursor: String?)
        do {
            log = try await server.notifications.log(
                bundleId: app.bundleId,
                outcome: outcome,
                type: type,
                page: try PageRequest(limit: "50", cursor: query.get("cursor").map { String($0) })
            )
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            return section.failure(error)
        }
        var page = section.common
        page["type"] = type ?? ""
        page["types"] = Self.notificationTypes
        page["outcomes"] =
            [["value": "", "label": "any", "selected": outcome == nil]]
            + NotificationOutcome.allCases.map {
                ["value": $0.rawValue, "label": $0.rawValue, "selected": $0 == outcome]
            }
        page["notifications"] = log.records.map { record -> [String: Any] in
            var row: [String: Any] = [
                "href": "/console/notifications/\(Readable.percentEncoded(record.notificationUuid))?app="
                    + Readable.percentEncoded(app.bundleId),
                "received": Readable.time(record.receivedAt),
                "typeLabel": record.type + (record.subtype.map { " (\($0))" } ?? ""),
                "environment": record.environment,
                "outcome": record.outcome.rawValue,
                "transactionId": record.transactionId ?? "",
            ]
            if let detail = record.detail { row["detailText"] = detail }
            if let customer = record.customerId {
                row["customerId"] = customer
                row["customerHref"] = customerHref(customer, app: app.bundleId)
            }
            return row
        }
        if let next = log.nextCursor {
            page["nextPage"] =
                "/console/notifications?"
                + Readable.query([
                    ("app", app.bundleId), ("outcome", outcome?.rawValue), ("type", type), ("cursor", next),
                ])
        }
        return ConsolePage.html("notifications", page)
    }

    func notification(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/notifications", request, context)
        guard let app = section.app else { return section.noApp }
        let record: NotificationRecord
        do {
            record = try await server.notifications.recorded(
                bundleId: app.bundleId,
                uuid: try context.pathParameter("uuid")
            )
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            return section.failure(error)
        }
        var page = section.common
        page["uuid"] = record.notificationUuid
        page["typeLabel"] = record.type + (record.subtype.map { " (\($0))" } ?? "")
        page["bundleId"] = record.bundleId
        page["environment"] = record.environment
        page["signed"] = Readable.time(record.signedDate)
        page["received"] = Readable.time(record.receivedAt)
        page["outcome"] = record.outcome.rawValue
        page["transactionId"] = record.transactionId ?? "—"
        if let original = record.originalTransactionId, original != record.transactionId {
            page["originalTransactionId"] = original
        }
        if let detail = record.detail { page["detailText"] = detail }
        if let customer = record.customerId {
            page["customerId"] = customer
            page["customerHref"] = customerHref(customer, app: app.bundleId)
        }
        if let decoded = record.decoded { page["decoded"] = Self.pretty(decoded) }
        return ConsolePage.html("notification", page)
    }

    /// The types the notifications' filter suggests (any type may be typed).
    static let notificationTypes = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RENEW",
        "EXPIRED", "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "METADATA_UPDATE", "MIGRATION", "OFFER_REDEEMED",
        "ONE_TIME_CHARGE", "PRICE_CHANGE", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "RESCIND_CONSENT", "REVOKE", "SUBSCRIBED", "TEST",
    ]

    /// JSON indented for reading, dates (UNIX milliseconds in Apple's fields) left as they are.
    static func pretty(_ json: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
            let data = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            )
        else { return json }
        return String(decoding: data, as: UTF8.self)
    }
}
