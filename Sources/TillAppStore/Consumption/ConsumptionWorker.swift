import Logging
import ServiceLifecycle
import TillCatalogue
import TillHTTPKit
import TillJobs
import TillLedger
import Tracing

/// Answers Apple's consumption requests in the background (`ConsumptionAnswers`), on the job runner
/// (`ConsumptionAttempts`): woken when one is queued, and when the next retry is due. A graceful shutdown lets the
/// answers under way finish; what is left waits in the database for the next start (a claim of a process that
/// stopped lapses).
public struct ConsumptionWorker: Service {
    let answers: ConsumptionAnswers

    package init(answers: ConsumptionAnswers) {
        self.answers = answers
    }

    public func run() async throws {
        let settings = answers.configuration
        let client = AppleClient(
            endpoints: settings.apple,
            timeout: settings.confirmation.requestTimeout,
            metrics: answers.metrics
        )
        // Woken for a new request and when the next retry is due; a few seconds at most (a server following another
        // clock, a request queued by another process sharing the database).
        await JobRunner(
            queue: answers.jobs,
            handler: ConsumptionAttempts(answers: answers, client: client),
            logger: answers.logger
        )
        .run()
        await client.shutdown()
    }
}

/// Apple's consumption requests as the job runner runs them: a few at once, each answered on its own.
struct ConsumptionAttempts: JobHandler {
    let answers: ConsumptionAnswers
    let client: AppleClient
    /// Answers under way at once: Apple asks a few times a day per customer at most.
    static let concurrency = 4

    var kind: JobKind { .consumptionAnswer }
    var longestWait: Duration { .seconds(5) }

    func room(running: Int) -> JobRoom { .claim(max(0, Self.concurrency - running)) }

    func claim(limit: Int) async throws -> [ConsumptionAnswers.ClaimedRequest] {
        try await answers.claimDue(limit: limit)
    }

    /// One answer, in a span that continues the notification's trace: the call to Apple is its child.
    func run(_ claimed: ConsumptionAnswers.ClaimedRequest) async {
        await Traces.withSpan("consumption.answer", continuing: claimed.trace, ofKind: .consumer) { span in
            if span.isRecording {
                span.attributes["till.bundle_id"] = claimed.request.bundleId
                span.attributes["till.notification_uuid"] = claimed.request.notificationUuid
                span.attributes["till.attempt"] = claimed.attempt
            }
            do { try await answers.answer(claimed.request, attempt: claimed.attempt, client: client) } catch {
                answers.logger.error(
                    "answering the consumption request \(claimed.request.notificationUuid) failed: \(error)"
                )
            }
        }
    }
}
