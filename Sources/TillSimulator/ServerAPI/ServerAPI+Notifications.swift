import Foundation
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The App Store Server API's notification calls: a test notification, its status, and the notification history.
extension ServerAPI {
    /// Request a Test Notification.
    func requestTestNotification(app: SimApp, environment: AppStoreEnvironment) async throws
        -> SendTestNotificationResponse
    {
        let token = UUID().uuidString.lowercased() + "_" + String(clock.nowMilliseconds)
        _ = try await database.transaction { db in
            try await notifications.enqueueNotification(
                app: app,
                environment: environment,
                type: .test,
                subtype: nil,
                transaction: nil,
                testToken: token,
                on: db
            )
        }
        notifications.due.signal()
        return SendTestNotificationResponse(testNotificationToken: token)
    }

    /// Get Test Notification Status.
    func testNotificationStatus(_ token: String, app: SimApp, environment: AppStoreEnvironment) async throws
        -> CheckTestNotificationResponse
    {
        guard let record = try await store.notifications.notification(testToken: token, on: store.sql),
            record.appAppleId == app.appAppleId,
            record.environment == environment
        else { throw ServerAPIFailure(.testNotificationNotFound) }
        return CheckTestNotificationResponse(signedPayload: record.signedPayload, sendAttempts: attempts(of: record))
    }

    /// Get Notification History: notifications sent in a window of at most 180 days, with filters, 20 a page.
    /// `transactionId` selects every notification of that transaction's customer.
    func notificationHistory(
        _ request: NotificationHistoryRequest,
        paginationToken: String?,
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws -> NotificationHistoryResponse {
        guard let start = request.startDate else { throw ServerAPIFailure(.invalidStartDate) }
        guard let end = request.endDate else { throw ServerAPIFailure(.invalidEndDate) }
        guard start < end else { throw ServerAPIFailure(.startDateAfterEndDate) }
        guard clock.now().timeIntervalSince(start) <= 180 * 86_400 else {
            throw ServerAPIFailure(.startDateTooFarInPast)
        }
        if request.transactionId != nil && request.notificationType != nil {
            throw ServerAPIFailure(.multipleFiltersSupplied)
        }
        // Apple: `transactionId` is any transaction of the customer and limits the history to that customer,
        // not to one subscription (NotificationHistoryRequest).
        var customerTransactions: Set<String>?
        if let id = request.transactionId {
            let tx = try await requireTransaction(id, app: app, environment: environment, acceptsAppTransactionId: true)
            customerTransactions = Set(
                try await store.purchases.transactions(
                    accountId: tx.accountId,
                    appAppleId: app.appAppleId,
                    environment: environment,
                    on: store.sql
                ).map(\.transactionId)
            )
        }
        let records = try await store.notifications.notifications(
            appAppleId: app.appAppleId,
            environment: environment,
            from: start.millisecondsSince1970,
            to: end.millisecondsSince1970,
            on: store.sql
        ).filter { record in
            if let type = request.notificationType, record.notificationType != type.rawValue { return false }
            if let subtype = request.notificationSubtype, record.subtype != subtype.rawValue { return false }
            if let customerTransactions, !customerTransactions.contains(record.transactionId ?? "") { return false }
            if request.onlyFailures == true, record.state == .delivered || record.state == .unsent { return false }
            return record.testToken == nil || record.attempts > 0
        }
        let page: (items: [SimNotificationRecord], revision: String?, hasMore: Bool)
        do { page = try paginate(records, revision: paginationToken) } catch {
            throw ServerAPIFailure(.invalidPaginationToken)
        }
        return NotificationHistoryResponse(
            paginationToken: page.revision,
            hasMore: page.hasMore,
            notificationHistory: page.items.map {
                NotificationHistoryResponseItem(signedPayload: $0.signedPayload, sendAttempts: attempts(of: $0))
            }
        )
    }
}
