/// How one delivery attempt ended.
package enum WebhookAttemptOutcome: String, Sendable, CaseIterable {
    /// A 2xx answer: the event is delivered.
    case delivered
    /// Any other answer, or none: the delivery is tried again later.
    case failed
    /// It failed, and the next attempt would come after the delivery's deadline.
    case deadLettered
}

/// Where deliveries count their attempts (`/metrics`: `till_webhook_attempts_total`, `till_webhook_attempt_seconds`):
/// the server's metrics, or a test's tally. A seam because the metrics' registry belongs to the server above this
/// module.
package protocol WebhookMetrics: Sendable {
    /// An attempt ended with `outcome` after `duration`.
    func webhookAttempt(_ outcome: WebhookAttemptOutcome, duration: Duration)
}
