import Foundation
import Logging
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillStorage

/// Reads an app's Notification History (`POST /inApps/v1/notifications/history`, every page) over the window since
/// the last complete read, and hands each signed payload to `NotificationIntake` exactly as a delivery: the same
/// verification, recorded once by its UUID, so a notification already delivered or recovered is a no-op.
///
/// The window starts `overlap` before the checkpoint (the end of the last complete read), or `firstLookBack` before
/// now on the first read, and never more than Apple's 180 days back; it ends now. The checkpoint moves to the
/// window's end only once every page was read: a read Apple interrupts is read again, whole, by the next run.
struct NotificationHistoryReader: AppStoreRoom, Sendable {
    let settings: CatchUpSettings
    let services: AppStoreServices
    /// The catch-up's own tables: its reports, checkpoints and history pages.
    var catchUpStore: CatchUpStore { CatchUpStore(database: database) }
    let notifications: NotificationIntake

    /// Apple keeps 180 days of notifications; a day less leaves room for a server clock ahead of Apple's, which
    /// would have the request refused (`startDateTooFarInPast`).
    static let furthestBackMilliseconds: Int64 = 179 * 86_400_000
    /// Pages of one read at most (Apple's are 20 notifications): a bound on a history that never ends.
    static let maximumPages = 100_000

    func read(_ app: ServerApp, _ environment: AppStoreEnvironment, client: AppleClient) async
        -> NotificationHistoryReport
    {
        let now = clock.milliseconds
        var report = NotificationHistoryReport(
            from: now,
            to: now,
            complete: false,
            pages: 0,
            fetched: 0,
            applied: 0,
            duplicate: 0,
            ignored: 0,
            refused: 0
        )
        let checkpoint: Int64?
        do {
            checkpoint = try await catchUpStore.notificationCheckpoint(
                bundleId: app.bundleId,
                environment: environment,
                on: database.sql
            )
        } catch {
            report.error = CatchUpError(cause: .other, message: "the checkpoint could not be read: \(error)")
            return report
        }
        let start = checkpoint.map { $0 - settings.overlap.milliseconds } ?? now - settings.firstLookBack.milliseconds
        report.from = min(now - 1, max(now - Self.furthestBackMilliseconds, start))
        let request = NotificationHistoryRequest(
            startDate: Date(millisecondsSince1970: report.from),
            endDate: Date(millisecondsSince1970: report.to)
        )
        var token: String?
        repeat {
            guard report.pages < Self.maximumPages else {
                report.error = CatchUpError(
                    cause: .other,
                    message: "Notification History has over \(report.pages) pages"
                )
                return report
            }
            let answer = await client.notificationHistory(environment, request, paginationToken: token, app: app)
            let page: NotificationHistoryResponse
            switch answer.body(of: .notificationHistory, in: environment, metrics: metrics) {
            case .failure(let error):
                report.error = error
                return report
            case .body(let body):
                guard
                    let decoded = try? AppleJSON.makeDecoder().decode(
                        NotificationHistoryResponse.self,
                        from: Data(body)
                    )
                else {
                    report.error = CatchUpError(
                        cause: .other,
                        message:
                            "Notification History (\(environment.rawValue)) answered something that is not its JSON"
                    )
                    return report
                }
                page = decoded
            }
            report.pages += 1
            for item in page.notificationHistory ?? [] {
                report.fetched += 1
                if let failure = await record(item.signedPayload, into: &report) {
                    report.error = failure
                    return report
                }
            }
            token = page.hasMore == true ? page.paginationToken : nil
            if page.hasMore == true && token == nil {
                report.error = CatchUpError(
                    cause: .other,
                    message: "Notification History (\(environment.rawValue)) has more pages and no paginationToken"
                )
                return report
            }
        } while token != nil
        let until = report.to
        do {
            try await database.transaction(bookkeeping: true) { db in
                try await self.catchUpStore.moveNotificationCheckpoint(
                    bundleId: app.bundleId,
                    environment: environment,
                    to: until,
                    at: now,
                    on: db
                )
            }
        } catch {
            report.error = CatchUpError(cause: .other, message: "the checkpoint could not be stored: \(error)")
            return report
        }
        report.complete = true
        return report
    }

    /// Records one listed notification as a delivery; returns why the read must stop (the server's own failure,
    /// never a refused notification, which is counted and passed).
    private func record(_ signedPayload: String?, into report: inout NotificationHistoryReport) async
        -> CatchUpError?
    {
        guard let signedPayload, !signedPayload.isEmpty else {
            report.refused += 1
            return nil
        }
        do {
            let result = try await notifications.receiveNotification(
                signedPayload: signedPayload,
                recoveredByCatchUp: true
            )
            switch result.status {
            case .applied: report.applied += 1
            case .duplicate: report.duplicate += 1
            case .ignored: report.ignored += 1
            }
            return nil
        } catch let error as any Refusal {
            // Refused as a delivery would be (a signature, an app): nothing recorded, and it will not verify later.
            report.refused += 1
            logger.warning("catch-up: a notification of the history was refused: \(error)")
            return nil
        } catch {
            return CatchUpError(cause: .other, message: "a notification could not be recorded: \(error)")
        }
    }
}
