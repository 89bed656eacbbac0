import Foundation
import Testing
import TillCore

@testable import TillSimulator

struct FaultTests {
    @Test func theCommandLineSyntaxParses() throws {
        let latency = try FaultRule(parsing: "sandbox:verifyReceipt:latency=3-6,probability=0.5")
        #expect(latency.environment == "Sandbox" && latency.endpoint == .verifyReceipt)
        #expect(latency.latencyMinimum == 3 && latency.latencyMaximum == 6 && latency.probability == 0.5)
        for _ in 0..<50 { #expect((3...6).contains(latency.latency ?? 0)) }
        let any = try FaultRule(parsing: "*:serverAPI:rate-limit,times=2", now: Date(timeIntervalSince1970: 0))
        #expect(any.environment == nil && any.rateLimited == true && any.remaining == 2)
        let window = try FaultRule(
            parsing: "production:verifyReceipt:outage=503,for=60",
            now: Date(timeIntervalSince1970: 100)
        )
        #expect(window.outage == .http503 && window.untilMilliseconds == 160_000)
        let status = try FaultRule(parsing: "production:verifyReceipt:status=21120")
        #expect(status.status == 21120 && status.isRetryable == false)
        for bad in [
            "sandbox:verifyReceipt", "mars:verifyReceipt:latency=1", "sandbox:inbox:latency=1",
            "sandbox:verifyReceipt:latency=x",
            "sandbox:verifyReceipt:outage=fire", "sandbox:verifyReceipt:probability=2", "sandbox:verifyReceipt:warp",
        ] {
            #expect(throws: SimulatorError.self) { try FaultRule(parsing: bad) }
        }
    }

    @Test func countedAndTimedRulesRunOut() throws {
        let registry = FaultRegistry([try FaultRule(parsing: "sandbox:verifyReceipt:status=21005,times=2")])
        #expect(registry.take(environment: .sandbox, endpoint: .verifyReceipt)?.status == 21005)
        #expect(registry.take(environment: .production, endpoint: .verifyReceipt) == nil)
        #expect(registry.take(environment: .sandbox, endpoint: .serverAPI) == nil)
        #expect(registry.take(environment: .sandbox, endpoint: .verifyReceipt) != nil)
        #expect(registry.take(environment: .sandbox, endpoint: .verifyReceipt) == nil)
        registry.add(
            try FaultRule(parsing: "sandbox:verifyReceipt:status=21005,for=1", now: Date(timeIntervalSince1970: 0))
        )
        #expect(registry.take(environment: .sandbox, endpoint: .verifyReceipt) == nil)
        #expect(registry.all.isEmpty)
    }

    @Test func aStoreKitOutageFailsPaymentsAndRestores() async throws {
        let fixture = try await SimulatorFixture.make()
        _ = try await fixture.buy("pro")
        fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:storeKit:outage=503,times=2"))
        await #expect(throws: SimulatorError.self) { _ = try await fixture.buy("gems.100") }
        let restore = try await fixture.simulator.restore(
            deviceId: fixture.tablet.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        #expect(restore.status == "failed" && restore.error?.message == "Cannot connect to the App Store.")
        #expect(
            try await fixture.simulator.restore(
                deviceId: fixture.tablet.id,
                bundleId: SimulatorFixture.bundleId,
                environment: .sandbox
            ).status == "completed"
        )
    }

    @Test func requestPathsAreClassified() {
        #expect(FaultRegistry.classify(path: "/sandbox/verifyReceipt")! == (.sandbox, .verifyReceipt))
        #expect(FaultRegistry.classify(path: "/production/inApps/v1/transactions/1")! == (.production, .serverAPI))
        #expect(FaultRegistry.classify(path: "/storekit/sandbox/payments")! == (.sandbox, .storeKit))
        #expect(FaultRegistry.classify(path: "/admin/v1/apps") == nil)
    }
}
