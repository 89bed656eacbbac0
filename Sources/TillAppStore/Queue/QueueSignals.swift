import TillHTTPKit

/// The confirmation queue's two wake-ups, shared by the components that fill it (intake, a credentials fix in
/// the catalogue, an operator's requeue) and the one that drains it.
package struct QueueSignals: Sendable {
    /// Nudges the confirmation worker when a submission is queued or brought forward: the job queue's wake-up of
    /// its confirmations.
    package let workAvailable: Wakeup
    /// Wakes requests waiting (`?wait=`) for a submission to leave the queue.
    package let submissionSettled = Wakeup()

    package init(workAvailable: Wakeup) {
        self.workAvailable = workAvailable
    }
}
