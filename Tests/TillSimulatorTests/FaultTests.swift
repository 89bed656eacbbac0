import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillCore
import TillHTTPKit
import TillTestSupport

@testable import TillSimulator

@Suite(.sharingTheMachine)
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
            // Past what a Duration or Int64 milliseconds hold: they trapped in Task.sleep and in the rule's end.
            "sandbox:verifyReceipt:latency=inf", "sandbox:verifyReceipt:latency=1-1e300",
            "sandbox:serverAPI:hang=1e300",
            "sandbox:serverAPI:hang=inf", "sandbox:serverAPI:outage=503,for=1e300",
            "sandbox:serverAPI:outage=503,for=inf",
        ] {
            #expect(throws: FaultRefusal.self) { try FaultRule(parsing: bad) }
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

    @Test(arguments: TestDatabase.all) func aStoreKitOutageFailsPaymentsAndRestores(_ database: TestDatabase)
        async throws
    {
        let fixture = try await SimulatorFixture.make(database: database)
        _ = try await fixture.buy("pro")
        fixture.simulator.faults.add(try FaultRule(parsing: "sandbox:storeKit:outage=503,times=2"))
        await #expect { _ = try await fixture.buy("gems.100") } throws: {
            ($0 as? PaymentRefusal)?.reason == .storeUnavailable
        }
        let restore = try await fixture.simulator.payments.restore(
            deviceId: fixture.tablet.id,
            bundleId: SimulatorFixture.bundleId,
            environment: .sandbox
        )
        #expect(restore.status == .failed && restore.error?.message == "Cannot connect to the App Store.")
        #expect(
            try await fixture.simulator.payments.restore(
                deviceId: fixture.tablet.id,
                bundleId: SimulatorFixture.bundleId,
                environment: .sandbox
            ).status == .completed
        )
    }

    @Test func requestPathsAreClassified() {
        #expect(FaultRegistry.classify(path: "/sandbox/verifyReceipt")! == (.sandbox, .verifyReceipt))
        #expect(FaultRegistry.classify(path: "/production/inApps/v1/transactions/1")! == (.production, .serverAPI))
        #expect(FaultRegistry.classify(path: "/storekit/sandbox/payments")! == (.sandbox, .storeKit))
        #expect(FaultRegistry.classify(path: "/admin/v1/apps") == nil)
    }

    /// The bodies of docs/simulator.md's `curl … $S/admin/v1/faults -d '…'` examples, so the guide and this test
    /// cannot drift apart.
    static func documentedFaultBodies() throws -> [String] {
        let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/simulator.md")
        let text = try String(contentsOf: guide, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("-X POST $S/admin/v1/faults -d '"),
                let start = line.range(of: "-d '")?.upperBound,
                let end = line[start...].firstIndex(of: "'")
            else { return nil }
            return String(line[start..<end])
        }
    }

    @Test func theGuidesFaultExamplesWorkAsWrittenAndEachCanBeRemovedByItsId() async throws {
        let bodies = try Self.documentedFaultBodies()
        #expect(bodies.count >= 4 && bodies.contains { !$0.contains("spec") }, "\(bodies)")
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            var ids: [String] = []
            for body in bodies {
                let created = try await client.execute(
                    uri: "/admin/v1/faults",
                    method: .post,
                    body: ByteBuffer(string: body)
                ) { response in
                    (response.status, try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)))
                }
                let object = created.1 as? [String: Any]
                #expect(created.0 == .created, "\(body): \(object ?? [:])")
                // A fault given without an id gets one, which the answer carries.
                ids.append(try #require(object?["id"] as? String, "\(body)"))
            }
            #expect(Set(ids).count == bodies.count)
            let rateLimit = try #require(simulator.faults.all.first { $0.rateLimited == true && $0.probability == 0.5 })
            #expect(rateLimit.environment == "Sandbox" && rateLimit.endpoint == .serverAPI)

            for id in ids {
                try await client.execute(uri: "/admin/v1/faults/\(id)", method: .delete) { response in
                    #expect(response.status == .noContent)
                }
            }
            #expect(simulator.faults.all.isEmpty)
        }
        try await simulator.shutdown()
    }

    /// Delays and rates past what `Duration` and Int64 milliseconds hold trapped and stopped the simulator; the
    /// admin API refuses them with 400 (and the simulator goes on answering).
    @Test func hugeDelaysAndRatesAreRefusedWith400() async throws {
        let simulator = try await Simulator.open(SimulatorConfiguration(keys: .shared))
        let app = Application(router: buildSimulatorRouter(simulator))
        try await app.test(.router) { client in
            for (method, uri, body) in [
                (HTTPRequest.Method.post, "/admin/v1/faults", #"{"spec":"sandbox:serverAPI:latency=1e300"}"#),
                (.post, "/admin/v1/faults", #"{"spec":"sandbox:serverAPI:outage=503,for=1e300"}"#),
                (.post, "/admin/v1/faults", #"{"endpoint":"serverAPI","hangSeconds":1e300,"outage":"hang"}"#),
                (.put, "/admin/v1/clock/rate", #"{"monthSeconds":1e300}"#),
                (.put, "/admin/v1/clock/rate", #"{"monthSeconds":0.5}"#),
            ] {
                try await client.execute(uri: uri, method: method, body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .badRequest, "\(body)")
                }
            }
            #expect(simulator.faults.all.isEmpty)
            try await client.execute(
                uri: "/admin/v1/clock/rate",
                method: .put,
                body: ByteBuffer(string: #"{"monthSeconds":31536000}"#)
            ) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains(#""renewalRate":"monthly-every-31536000-seconds""#))
            }
        }
        try await simulator.shutdown()
    }

    @Test func aFaultObjectIsCheckedLikeTheCommandLineSyntax() throws {
        let decoder = JSONDecoder()
        let lowercase = try decoder.decode(
            FaultRule.self,
            from: Data(#"{"environment":"sandbox","endpoint":"verifyReceipt","status":21005}"#.utf8)
        )
        #expect(lowercase.environment == "Sandbox" && !lowercase.id.isEmpty)
        let named = try decoder.decode(FaultRule.self, from: Data(#"{"id":"slow","endpoint":"storeKit"}"#.utf8))
        #expect(named.id == "slow" && named.environment == nil)
        for bad in [
            #"{"endpoint":"inbox"}"#, #"{"environment":"Mars","endpoint":"serverAPI"}"#,
            #"{"endpoint":"serverAPI","probability":2}"#, #"{"id":"","endpoint":"serverAPI"}"#,
            #"{"endpoint":"serverAPI","latencyMaximum":1e300}"#, #"{"endpoint":"serverAPI","hangSeconds":1e300}"#,
            #"{"endpoint":"serverAPI","hangSeconds":-1}"#, #"{"endpoint":"serverAPI","remaining":-1}"#,
        ] {
            #expect(throws: (any Error).self, "\(bad)") { try decoder.decode(FaultRule.self, from: Data(bad.utf8)) }
        }
    }
}
