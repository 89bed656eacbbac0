import AsyncHTTPClient
import Logging
import ServiceLifecycle
import TillHTTPKit

/// Answers Apple's consumption requests in the background (`ConsumptionAnswers`): woken when one is queued, and
/// when the next retry is due. A graceful shutdown lets the answer under way finish; what is left waits in the
/// database for the next start (a claim of a process that stopped lapses).
public struct ConsumptionWorker: Service {
    let answers: ConsumptionAnswers

    public init(server: PurchaseServer) {
        self.answers = server.consumption
    }

    public func run() async throws {
        let settings = answers.configuration
        let client = AppleClient(
            http: .shared,
            endpoints: settings.apple,
            timeout: settings.confirmation.requestTimeout
        )
        let jobs = answers.jobs
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let since = jobs.signal(.consumptionAnswer).current
            do {
                if try await answers.answerDue(client: client) > 0 { continue }
            } catch {
                answers.logger.error("answering consumption requests failed: \(error)")
            }
            // Wake for a new request, when the next retry is due, or after a few seconds at most (a server following
            // another clock, a request queued by another process sharing the database).
            _ = try? await cancelWhenGracefulShutdown {
                await jobs.waitForWork(.consumptionAnswer, since: since, longest: .seconds(5))
            }
        }
    }
}
