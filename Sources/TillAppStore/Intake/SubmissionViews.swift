import TillCatalogue
import TillContract
import TillCore
import TillLedger

extension SubmissionView {
    /// The submission as the app and the admin API see it: when it is tried next and why only while it retries.
    init(_ record: SubmissionRecord) {
        self.init(
            id: record.id,
            state: record.state,
            kind: record.kind,
            environment: record.environment.rawValue,
            customerId: record.customerId,
            transactionIds: record.transactionIds.ids,
            attempts: record.attempts,
            nextAttemptAt: record.state == .retrying ? record.nextAttemptAt : nil,
            lastStatus: record.lastStatus,
            lastError: record.lastError,
            retryCause: record.state == .retrying ? record.retryCause : nil,
            reason: record.reason,
            createdAt: record.createdAt,
            confirmedAt: record.confirmedAt
        )
    }
}
