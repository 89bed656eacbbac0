import Foundation
import Testing
import TillCore
import TillFormats
import TillTestSupport

@testable import TillSimulator

extension LiveTests {
    /// Each notification is delivered on its own: one app's slow receiver does not hold up another app's
    /// notifications (the delivery loop used to wait for a whole batch, up to the 10-second timeout).
    @Test func aSlowReceiverHoldsUpOnlyItsOwnNotifications() async throws {
        let fixture = try await SimulatorFixture.make()
        let simulator = fixture.simulator
        let other = try await simulator.appStoreConnect.createApp(
            AppInput(appAppleId: 42, bundleId: "com.example.other")
        )
        // Slow, but within the simulator's 10-second delivery timeout, so that its notification is delivered too.
        let slow = NotificationReceiver(delay: .seconds(8))
        let fast = NotificationReceiver()
        try await withServices({ slow.application(onServerRunning: $0) }) { slowPort in
            try await withServices({ fast.application(onServerRunning: $0) }) { fastPort in
                _ = try await simulator.appStoreConnect.updateApp(
                    appAppleId: fixture.app.appAppleId,
                    AppPatch(notificationUrlSandbox: "http://127.0.0.1:\(slowPort)/notifications")
                )
                _ = try await simulator.appStoreConnect.updateApp(
                    appAppleId: other.appAppleId,
                    AppPatch(notificationUrlSandbox: "http://127.0.0.1:\(fastPort)/notifications")
                )
                // The apps as they are now, with their notification URLs.
                let slowApp = try #require(
                    try await simulator.store.appStoreConnect.app(
                        appAppleId: fixture.app.appAppleId,
                        on: simulator.store.sql
                    )
                )
                let fastApp = try #require(
                    try await simulator.store.appStoreConnect.app(appAppleId: other.appAppleId, on: simulator.store.sql)
                )
                try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { _ in
                    _ = try await simulator.serverAPI.requestTestNotification(app: slowApp, environment: .sandbox)
                    try await Task.sleep(for: .milliseconds(300))
                    _ = try await simulator.serverAPI.requestTestNotification(app: fastApp, environment: .sandbox)
                    // The order is the proof, not a wall-clock bound a loaded machine could miss: the fast app's
                    // notification arrives while the slow receiver still holds the first one.
                    #expect(await fast.waitFor(1).count == 1)
                    #expect(slow.payloads.isEmpty, "the slow receiver answers only after 8 s")
                    #expect(await slow.waitFor(1).count == 1)

                }
            }
        }
    }
}

extension LiveTests {
    /// Each notification is sent once while its receiver answers: the delivery loop's read of what is due can begin
    /// before a delivery records its attempt and end after it, and the notification it still listed was sent again,
    /// its attempt recorded once (a newcomer's receiver got 15 requests for 12 renewals).
    @Test func aDeliveredNotificationIsNotSentAgain() async throws {
        let fixture = try await SimulatorFixture.make()
        let simulator = fixture.simulator
        let receiver = NotificationReceiver()
        let count = 300
        try await withServices({ receiver.application(onServerRunning: $0) }) { port in
            _ = try await simulator.appStoreConnect.updateApp(
                appAppleId: fixture.app.appAppleId,
                AppPatch(notificationUrlSandbox: "http://127.0.0.1:\(port)/notifications")
            )
            let app = try #require(
                try await simulator.store.appStoreConnect.app(
                    appAppleId: fixture.app.appAppleId,
                    on: simulator.store.sql
                )
            )
            try await withServices({ buildSimulatorApplication(simulator, port: 0, onServerRunning: $0) }) { _ in
                for _ in 0..<count {
                    _ = try await simulator.serverAPI.requestTestNotification(app: app, environment: .sandbox)
                }
                #expect(await receiver.waitFor(count).count >= count)
                // Time for a second sending of any of them to arrive.
                try await Task.sleep(for: .milliseconds(500))
                let payloads = receiver.payloads
                #expect(payloads.count == count && Set(payloads).count == count, "\(payloads.count) requests")
            }
        }
    }
}
