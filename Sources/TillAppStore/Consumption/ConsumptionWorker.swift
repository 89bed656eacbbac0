import AsyncHTTPClient
import Logging
import ServiceLifecycle
import TillCatalogue
import TillHTTPKit
import TillJobs
import TillLedger

/// Answers Apple's consumption requests in the background (`ConsumptionAnswers`): woken when one is queued, and
/// when the next retry is due. A graceful shutdown lets the answer under way finish; what is left waits in the
/// database for the next start (a claim of a process that stopped lapses).
public struct ConsumptionWorker: Service {
    let answers: ConsumptionAnswers

    package init(answers: ConsumptionAnswers) {
        self.answers = answers
    }

    public func run() async throws {
        let settings = answers.configuration
        let client = AppleClient(
            http: .shared,
            endpoints: settings.apple,
            timeout: settings.confirmation.requestTimeout,
            metrics: answers.metrics
        )
        // Woken for a new request and when the next retry is due; a few seconds at most (a server following another
        // clock, a request queued by another process sharing the database).
        await answers.jobs.runWorker(
            .consumptionAnswer,
            longest: .seconds(5),
            logger: answers.logger,
            failure: "answering consumption requests failed"
        ) { try await answers.answerDue(client: client) }
    }
}
