import Logging
import ServiceLifecycle
import TillHTTPKit
import TillJobs
import Tracing

/// Reads the imports' rows from Apple (`Imports`): the due `import` jobs of the job queue, one import at a time in each
/// process. A graceful stop ends the attempt under way after the rows it is reading; the import resumes at the next
/// start (or in another process sharing the database, once the attempt's lease lapses).
public struct ImportWorker: Service {
    let imports: Imports

    package init(imports: Imports) {
        self.imports = imports
    }

    public func run() async throws {
        await JobRunner(queue: imports.jobs, handler: ImportRuns(imports: imports), logger: imports.logger).run()
    }
}

/// The import jobs as the job runner runs them.
struct ImportRuns: JobHandler {
    let imports: Imports

    var kind: JobKind { .import }
    /// Another process may queue an import (PostgreSQL), or a retried row fall due.
    var longestWait: Duration { .seconds(5) }

    func room(running: Int) -> JobRoom { .claim(running == 0 ? 1 : 0) }

    func claim(limit: Int) async throws -> [Job] {
        try await imports.jobs.claim(.import, limit: limit, lease: Imports.lease)
    }

    /// One attempt, in a trace of its own that continues the request that started the import.
    func run(_ job: Job) async {
        await Traces.withSpan("import", continuing: job.trace, ofKind: .consumer) { span in
            if span.isRecording { span.attributes["till.import_id"] = job.jobKey }
            await imports.run(job)
        }
    }
}
