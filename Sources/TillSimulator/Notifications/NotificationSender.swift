import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SQLKit
import ServiceLifecycle
import Synchronization
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// App Store Server Notifications V2: each event written once to the outbox, signed, and delivered to the
/// app's URL with Apple's retry schedule (`NotificationDeliveryService` runs it).
public struct NotificationSender: Sendable {
    let configuration: SimulatorConfiguration
    let store: SimulatorStore
    let signer: SimulatorSigner
    let clock: SimulatorClock
    let logger: Logger
    let receipts: Receipts
    /// Signalled when a notification is due, so that the delivery loop wakes at once.
    let due: Wakeup
}

extension NotificationSender {
    /// Records an App Store Server Notification V2 in the outbox; the delivery service sends it.
    @discardableResult
    func enqueueNotification(
        app: SimApp,
        environment: AppStoreEnvironment,
        type: NotificationType,
        subtype: NotificationSubtype?,
        transaction: SimTransaction?,
        consumptionRequestReason: ConsumptionRequestReason? = nil,
        testToken: String? = nil,
        on db: any SQLDatabase
    ) async throws -> String {
        var data = NotificationData(
            appAppleId: app.appAppleId,
            bundleId: app.bundleId,
            bundleVersion: "1",
            environment: environment,
            consumptionRequestReason: consumptionRequestReason
        )
        if let transaction {
            data.signedTransactionInfo = try receipts.signTransaction(transaction, app: app)
            if transaction.productType == .autoRenewable,
                let subscription = try await store.subscriptions.subscription(
                    originalTransactionId: transaction.originalTransactionId,
                    on: db
                )
            {
                data.signedRenewalInfo = try await receipts.signRenewalInfo(subscription, app: app, on: db)
                data.status = AppStoreSubscriptionStatus(rawValue: subscription.status)
            }
        }
        return try await record(
            ResponseBodyV2DecodedPayload(notificationType: type, subtype: subtype, version: "2.0", data: data),
            app: app,
            environment: environment,
            transaction: transaction,
            testToken: testToken,
            on: db
        )
    }

    /// Records a notification whose payload carries a `summary` (RENEWAL_EXTENSION / SUMMARY), an
    /// `externalPurchaseToken` or `appData` instead of `data`.
    @discardableResult
    func enqueueNotification(
        app: SimApp,
        environment: AppStoreEnvironment,
        type: NotificationType,
        subtype: NotificationSubtype?,
        summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil,
        on db: any SQLDatabase
    ) async throws -> String {
        try await record(
            ResponseBodyV2DecodedPayload(
                notificationType: type,
                subtype: subtype,
                version: "2.0",
                summary: summary,
                externalPurchaseToken: externalPurchaseToken,
                appData: appData
            ),
            app: app,
            environment: environment,
            transaction: nil,
            testToken: nil,
            on: db
        )
    }

    /// Signs a notification (a new UUID, signed now) and writes it to the outbox.
    private func record(
        _ payload: ResponseBodyV2DecodedPayload,
        app: SimApp,
        environment: AppStoreEnvironment,
        transaction: SimTransaction?,
        testToken: String?,
        on db: any SQLDatabase
    ) async throws -> String {
        var payload = payload
        let now = clock.now()
        let uuid = UUID().uuidString.lowercased()
        // StoreKit Testing in Xcode sends no server notifications.
        guard environment == .production || environment == .sandbox else { return uuid }
        payload.notificationUUID = uuid
        payload.signedDate = now
        let type = payload.notificationType ?? .test
        let subtype = payload.subtype
        let hasURL = app.notificationURL(for: environment) != nil
        try await store.insert(
            SimNotificationRecord(
                uuid: uuid,
                appAppleId: app.appAppleId,
                environment: environment,
                notificationType: type.rawValue,
                subtype: subtype?.rawValue,
                originalTransactionId: transaction?.originalTransactionId,
                transactionId: transaction?.transactionId,
                signedPayload: try signer.jws.sign(payload),
                testToken: testToken,
                state: hasURL ? .pending : .unsent,
                attempts: 0,
                nextAttemptAt: hasURL ? now.millisecondsSince1970 : nil,
                sendAttempts: "[]",
                createdAt: now.millisecondsSince1970
            ),
            on: db
        )
        return uuid
    }

    /// Sends the notifications that are due; returns how many were attempted.
    @discardableResult
    func deliverDueNotifications(client: HTTPClient, timeout: TimeAmount = .seconds(10)) async throws -> Int {
        let due = try await store.notifications.dueNotifications(now: clock.nowMilliseconds, limit: 50, on: store.sql)
        await withTaskGroup(of: Void.self) { group in
            for notification in due {
                group.addTask { await self.deliver(notification, client: client, timeout: timeout) }
            }
        }
        return due.count
    }

    func deliver(_ record: SimNotificationRecord, client: HTTPClient, timeout: TimeAmount) async {
        var record = record
        let environment = record.environment
        guard let app = try? await store.appStoreConnect.app(appAppleId: record.appAppleId, on: store.sql),
            let url = app.notificationURL(for: environment)
        else {
            record.state = .unsent
            record.nextAttemptAt = nil
            try? await store.update(record, on: store.sql)
            return
        }
        let result: SendAttemptResult
        do {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"signedPayload":"\#(record.signedPayload)"}"#))
            let response = try await client.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 64 * 1024)
            result = (200...206).contains(Int(response.status.code)) ? .success : .unsuccessfulHTTPResponseCode
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout
        {
            result = .timedOut
        } catch let error as HTTPClientError where error == .remoteConnectionClosed {
            result = .prematureClose
        } catch {
            result = .noResponse
        }
        let now = clock.nowMilliseconds
        var attempts = (try? JSONDecoder().decode([SendAttemptItem].self, from: Data(record.sendAttempts.utf8))) ?? []
        attempts.append(SendAttemptItem(attemptDate: Date(milliseconds: now), sendAttemptResult: result))
        record.sendAttempts = String(
            decoding: (try? AppleJSON.makeEncoder().encode(attempts)) ?? Data("[]".utf8),
            as: UTF8.self
        )
        record.attempts += 1
        let delays = configuration.notificationRetryDelays[environment] ?? []
        if result == .success {
            record.state = .delivered
            record.nextAttemptAt = nil
        } else if record.attempts > delays.count {
            record.state = .failed
            record.nextAttemptAt = nil
        } else {
            record.nextAttemptAt = now + Int64(delays[record.attempts - 1] * 1000)
        }
        logger.debug(
            "notification delivery",
            metadata: ["uuid": "\(record.uuid)", "result": "\(result.rawValue)", "attempt": "\(record.attempts)"]
        )
        try? await store.update(record, on: store.sql)
    }
}

/// Sends App Store Server Notifications from the outbox, retrying failed deliveries with back-off.
public struct NotificationDeliveryService: Service {
    let simulator: Simulator

    public init(simulator: Simulator) {
        self.simulator = simulator
    }

    /// At most this many deliveries at once.
    static let width = 64

    /// Each due notification is delivered in a task of its own, started as soon as it is due: a receiver that is
    /// slow or unreachable (Apple waits up to its timeout) holds up its own deliveries only, not every app's.
    public func run() async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let sender = simulator.notifications
        let inFlight = InFlight()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    let seen = sender.due.current
                    inFlight.state.withLock { $0.finished.removeAll() }
                    do {
                        let due = try await sender.store.notifications.dueNotifications(
                            now: sender.clock.nowMilliseconds,
                            limit: Self.width,
                            on: sender.store.sql
                        )
                        for record in due {
                            let started = inFlight.state.withLock { state in
                                state.running.count < Self.width && !state.finished.contains(record.uuid)
                                    && state.running.insert(record.uuid).inserted
                            }
                            guard started else { continue }
                            group.addTask {
                                await sender.deliver(record, client: client, timeout: .seconds(10))
                                inFlight.state.withLock { state in
                                    state.running.remove(record.uuid)
                                    state.finished.insert(record.uuid)
                                }
                                sender.due.signal()
                            }
                        }
                    } catch {
                        simulator.logger.warning("notification delivery failed: \(error)")
                    }
                    await sender.due.wait(since: seen, timeout: .milliseconds(250))
                }
            }
        } onGracefulShutdown: {
        }
        try? await client.shutdown()
    }
}

/// The notifications being delivered now, and those whose delivery ended since the delivery loop last read what is
/// due. A read can begin before a delivery records its attempt and end after it, so the notification is still in
/// what it answers; without `finished` it was sent a second time, its attempt recorded once (seen by a newcomer: 15
/// requests for 12 renewals).
private final class InFlight: Sendable {
    struct State {
        var running: Set<String> = []
        var finished: Set<String> = []
    }
    let state = Mutex(State())
}
