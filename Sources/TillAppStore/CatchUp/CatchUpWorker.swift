import Logging
import ServiceLifecycle
import TillCatalogue
import TillContract
import TillHTTPKit
import TillJobs
import TillLedger

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
        let jobs = catchUp.jobs
        let clock = catchUp.clock
        var caughtUp: Set<String> = []
        do { try await catchUp.schedule(dueAt: clock.milliseconds) } catch {
            catchUp.logger.error("catch-up: the runs at start could not be scheduled: \(error)")
        }
        var scheduled = ContinuousClock.now
        await jobs.runWorker(
            .catchUp,
            longest: min(interval, .seconds(60)),
            logger: catchUp.logger,
            failure: "catch-up: the next runs could not be scheduled"
        ) {
            _ = await catchUp.runDue { bundleId in
                caughtUp.insert(bundleId).inserted ? .start : .interval
            }
            if ContinuousClock.now - scheduled >= interval {
                // Apps added since: their first run, an interval from now at the latest.
                scheduled = ContinuousClock.now
                try await catchUp.schedule(dueAt: clock.milliseconds + interval.milliseconds)
            }
            // Each run schedules the next itself: what is due now was run, so wait.
            return 0
        }
    }
}
