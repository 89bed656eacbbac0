import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOPosix
import SwiftASN1
import Testing
import TillCore
import TillFormats
import TillStorage
import TillTestSupport
import X509

@testable import TillSimulator

/// The simulator on real loopback sockets: notifications delivered and retried, connection faults, restarts.
@Suite(.sharingTheMachine)
struct LiveTests {
    @Test(arguments: TestDatabase.all) func notificationsAreSignedDeliveredAndRetriedUntilTheReceiverAccepts(
        _ database: TestDatabase
    ) async throws {
        // Apple's sandbox sends a notification once; retries there are an option, turned on here.
        var configuration = SimulatorConfiguration()
        configuration.notificationRetryDelays[.sandbox] = [10]
        let fixture = try await SimulatorFixture.make(configuration, database: database)
        let receiver = NotificationReceiver(failures: 1)
        try await withServices({ receiver.application(onServerRunning: $0) }) { receiverPort in
            _ = try await fixture.simulator.appStoreConnect.updateApp(
                appAppleId: fixture.app.appAppleId,
                AppPatch(notificationUrlSandbox: "http://127.0.0.1:\(receiverPort)/notifications")
            )
            try await withServices({ buildSimulatorApplication(fixture.simulator, port: 0, onServerRunning: $0) }) {
                _ in
                _ = try await fixture.buy("premium.monthly")
                // The first delivery fails (500); the retry, 10 simulated seconds later, succeeds. The clock moves
                // only once the first attempt was made: on a busy machine it can take longer than a moment.
                for _ in 0..<600 {
                    let log = try await fixture.simulator.notifications.notificationLog(
                        appAppleId: fixture.app.appAppleId,
                        environment: .sandbox
                    )
                    if (log.first?.attempts ?? 0) >= 1 { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(receiver.payloads.isEmpty)
                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 11)
                let payloads = await receiver.waitFor(1)
                let first = try #require(payloads.first)
                let notification = try #require(
                    await fixture.jwsVerifier.verify(first, as: ResponseBodyV2DecodedPayload.self).value
                ).payload
                #expect(notification.notificationType == .subscribed && notification.subtype == .initialBuy)
                #expect(notification.data?.signedTransactionInfo != nil && notification.data?.signedRenewalInfo != nil)
                // The simulator records the delivery once the receiver's answer is in, just after the receiver
                // has the payload: wait for it rather than race it.
                var log = try await fixture.simulator.notifications.notificationLog(
                    appAppleId: fixture.app.appAppleId,
                    environment: .sandbox
                )
                for _ in 0..<600 where log.first?.state != .delivered {
                    try await Task.sleep(for: .milliseconds(100))
                    log = try await fixture.simulator.notifications.notificationLog(
                        appAppleId: fixture.app.appAppleId,
                        environment: .sandbox
                    )
                }
                #expect(log.first?.state == .delivered && log.first?.attempts == 2)

                // A renewal in accelerated time arrives by itself.
                _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 300)
                let renewed = await receiver.waitFor(2)
                #expect(renewed.count == 2)
                let renewal = try #require(
                    await fixture.jwsVerifier.verify(renewed[1], as: ResponseBodyV2DecodedPayload.self).value
                ).payload
                #expect(renewal.notificationType == .didRenew)
            }
        }
    }

    @Test(arguments: TestDatabase.all) func outagesResetConnectionsOrAnswer503(_ database: TestDatabase) async throws {
        let fixture = try await SimulatorFixture.make(database: database)
        // The shared client: a failed expectation that throws must not leave a client to crash the process in
        // its deinit (a loaded machine once took past a 5-second timeout here).
        let client = HTTPClient.shared
        try await withServices({ buildSimulatorApplication(fixture.simulator, port: 0, onServerRunning: $0) }) {
            port in
            func post(_ path: String, timeout: TimeAmount = .seconds(30)) async throws -> HTTPClientResponse {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
                request.method = .POST
                request.body = .bytes(ByteBuffer(string: "{}"))
                return try await client.execute(request, timeout: timeout)
            }
            fixture.simulator.faults.add(try FaultRule(parsing: "production:verifyReceipt:outage=reset,times=1"))
            await #expect(throws: (any Error).self) { _ = try await post("/production/verifyReceipt") }
            // The reset rule is spent by the connection check; the next request is answered.
            fixture.simulator.faults.removeAll()
            #expect(try await post("/production/verifyReceipt").status == .ok)

            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:verifyReceipt:hang=1,times=1"))
            await #expect(throws: (any Error).self) {
                _ = try await post("/sandbox/verifyReceipt", timeout: .milliseconds(300))
            }

            fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:verifyReceipt:latency=0.3,times=1"))
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await post("/sandbox/verifyReceipt").status == .ok)
            #expect(clock.now - start >= .milliseconds(300))
        }
    }

    /// A new database stores the keys its configuration names (the tests share one set); a database that has keys
    /// keeps them whatever the configuration says; and without keys a new database makes its own.
    @Test func aNewDatabaseStoresTheKeysItIsGivenAndKeepsThemAfter() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-sim-\(UUID().uuidString).sqlite")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let given = try SimulatorKeys.make()
        func keys(of simulator: Simulator) throws -> (jws: String, receipt: String, xcode: String) {
            (
                try simulator.signer.jwsAuthority.chain.map { try $0.serializeAsPEM().pemString }.joined(
                    separator: "\n"
                ),
                try simulator.signer.receiptAuthority.chain.map { try $0.serializeAsPEM().pemString }
                    .joined(separator: "\n"),
                try simulator.signer.xcodeCertificate.serializeAsPEM().pemString
            )
        }
        let first = try await Simulator.open(SimulatorConfiguration(database: .sqlite(path: path), keys: given))
        let stored = try keys(of: first)
        #expect(stored == (given.jws.chainPEM, given.receipt.chainPEM, given.xcode.chainPEM))
        try await first.shutdown()

        let reopened = try await Simulator.open(SimulatorConfiguration(database: .sqlite(path: path), keys: .shared))
        #expect(try keys(of: reopened) == stored)
        try await reopened.shutdown()

        let own = try await Simulator.open(SimulatorConfiguration())
        let made = try keys(of: own)
        try await own.shutdown()
        let shared = try SimulatorKeys.shared
        for other in [given, shared] {
            #expect(made.jws != other.jws.chainPEM && made.receipt != other.receipt.chainPEM)
            #expect(made.xcode != other.xcode.chainPEM)
        }
    }

    @Test(arguments: TestDatabase.all) func stateSurvivesARestart(_ database: TestDatabase) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("till-sim-\(UUID().uuidString).sqlite")
            .path
        // The same database for both starts: a file, or one fresh PostgreSQL database.
        let stored = database == .sqlite ? .sqlite(path: path) : try await database.fresh(prefix: "till_sim")
        let configuration = SimulatorConfiguration(database: stored)
        let fixture = try await SimulatorFixture.make(configuration)
        let purchase = try await fixture.buy("premium.monthly")
        _ = try await fixture.simulator.subscriptions.advanceClock(seconds: 42)
        let rootBefore = try fixture.simulator.signer.jwsAuthority.root.serializeAsPEM().pemString
        try await fixture.simulator.shutdown()

        let reopened = try await Simulator.open(configuration)
        #expect(try reopened.signer.jwsAuthority.root.serializeAsPEM().pemString == rootBefore)
        #expect(reopened.clock.offsetMilliseconds == 42_000)
        #expect(try await reopened.appStoreConnect.accounts().map(\.id) == [fixture.account.id])
        let transaction = try await reopened.store.purchases.transaction(
            id: try #require(purchase.transactionId),
            on: reopened.store.sql
        )
        #expect(transaction?.productId == "premium.monthly")
        // Data signed before the restart still verifies after it.
        let signed = try #require(purchase.signedTransaction)
        #expect(await fixture.jwsVerifier.verify(signed, as: JWSTransactionDecodedPayload.self).isValid)
        // The renewal rate set through the admin API is kept; a rate given at the start (`--renewal-rate`) wins.
        #expect(reopened.clock.rate == .monthlyEvery5Minutes)
        try await reopened.subscriptions.setRenewalRate(.monthlyEveryMinute)
        try await reopened.shutdown()
        let kept = try await Simulator.open(configuration)
        #expect(kept.clock.rate == .monthlyEveryMinute)
        try await kept.shutdown()
        var given = configuration
        given.renewalRate = .monthlyEvery10Seconds
        let overridden = try await Simulator.open(given)
        #expect(overridden.clock.rate == .monthlyEvery10Seconds)
        try await overridden.shutdown()
    }
}
