/// How an attempt at a job ended.
package enum JobOutcome: String, Sendable, CaseIterable {
    case finished, retried, deadLettered
}

/// Where the job queue counts each attempt's outcome, per kind (`/metrics`: `till_job_attempts_total`): the
/// server's metrics, or a test's tally. A seam because the metrics' registry belongs to the server above this module.
package protocol JobMetrics: Sendable {
    /// `count` attempts of `kind` ended with `outcome`.
    func jobs(_ kind: JobKind, _ outcome: JobOutcome, count: Int)
}
