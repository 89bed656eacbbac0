import Logging
import ServiceLifecycle
import Synchronization
import TillCatalogue
import TillContract
import TillHTTPKit
import TillJobs
import TillLedger
import Tracing

/// Catches up every app that has an App Store Server API key when the server starts, then every
/// `catch-up.interval-seconds` (docs/configuration.md): the due `catchUp` jobs of the job queue, each run scheduling the
/// next. With an interval of zero it does nothing, and only the admin API runs a catch-up. A graceful shutdown ends the
/// wait between runs at once; the app being caught up is finished first, the others wait for the next start.
public struct CatchUpWorker: Service {
    let catchUp: CatchUp

    package init(catchUp: CatchUp) {
        self.catchUp = catchUp
    }

    public func run() async throws {
        let interval = catchUp.configuration.catchUp.interval
        guard interval > .zero else {
            try? await gracefulShutdown()
            return
        }
        let clock = catchUp.clock
        do { try await catchUp.schedule(dueAt: clock.milliseconds) } catch {
            catchUp.logger.error("catch-up: the runs at start could not be scheduled: \(error)")
        }
        let runs = CatchUpRuns(catchUp: catchUp, longestWait: min(interval, .seconds(60)))
        await withDiscardingTaskGroup { group in
            group.addTask {
                // Apps added since: their first run, an interval from now at the latest. (Each run schedules the
                // app's next itself.)
                while (try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }) != nil {
                    do { try await catchUp.schedule(dueAt: clock.milliseconds + interval.milliseconds) } catch {
                        catchUp.logger.error("catch-up: the next runs could not be scheduled: \(error)")
                    }
                }
            }
            await JobRunner(queue: catchUp.jobs, handler: runs, logger: catchUp.logger).run()
        }
    }
}

/// The catch-up jobs as the job runner runs them: one app at a time; an app another process is catching up is left
/// to it.
final class CatchUpRuns: JobHandler {
    let catchUp: CatchUp
    let longestWait: Duration
    /// The apps this process has caught up since it started: the first run of each is the run at start.
    private let caughtUp = Mutex<Set<String>>([])

    init(catchUp: CatchUp, longestWait: Duration) {
        self.catchUp = catchUp
        self.longestWait = longestWait
    }

    var kind: JobKind { .catchUp }

    func room(running: Int) -> JobRoom { .claim(running == 0 ? 1 : 0) }

    func claim(limit: Int) async throws -> [Job] {
        try await catchUp.jobs.claim(.catchUp, limit: limit, lease: CatchUp.lease)
    }

    /// One app's run, in a trace of its own: its calls to Apple are its children.
    func run(_ job: Job) async {
        await Traces.withSpan("catch-up", continuing: job.trace, ofKind: .consumer) { span in
            if span.isRecording { span.attributes["till.bundle_id"] = job.jobKey }
            await catchUp.run(job) { bundleId in
                caughtUp.withLock { $0.insert(bundleId).inserted } ? .start : .interval
            }
        }
    }
}
