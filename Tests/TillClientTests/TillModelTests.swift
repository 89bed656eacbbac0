import Foundation
import Observation
import Synchronization
import Testing
import TillContract
import TillCore
import TillSnapshot
import TillTestSupport

@testable import TillClient
@testable import TillServer
@testable import TillSimulator

/// The SwiftUI model, observed with the Observation module as SwiftUI observes it (the module is part of Swift on
/// Linux too): what a view reads changes when a purchase is delivered, the purchase in progress shows, a stale
/// snapshot stops granting, and the outbox is sent when the network or the app comes back.
@Suite(.sharingTheMachine, .timeLimit(.minutes(10)))
struct TillModelTests {
    @Test func aViewObservingTheModelSeesThePurchaseDelivered() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in try await Self.purchaseIsObserved(fixture, url) }
        }
    }

    @MainActor static func purchaseIsObserved(_ fixture: ClientFixture, _ url: String) async throws {
        let till = TillModel(try fixture.coordinator(url), connectivity: nil)
        defer { till.stop() }
        await till.start()
        #expect(
            till.products.map(\.productId).sorted() == ["gems.100", "issue.1", "news.free", "premium.monthly", "pro"]
        )
        #expect(!till.isActive("pro") && !till.state.isStale)
        let changed = Flag()
        withObservationTracking {
            _ = till.isActive("pro")
        } onChange: {
            changed.set(true)
        }
        let outcome = await till.purchase("pro")
        #expect(outcome?.kind == "delivered")
        #expect(changed.isSet, "a view reading isActive(\"pro\") was told to update")
        #expect(till.isActive("pro") && till.state.lastOutcome == outcome && till.state.purchaseInProgress == nil)
        await till.purchase("gems.100")
        #expect(till.balance(of: "gems") == 100)
        #expect(till.state.activeEntitlements() == ["pro"])
    }

    @Test func thePurchaseInProgressShowsWhileTheStoreDecides() async throws {
        try await ClientFixture.run { fixture in
            try await fixture.serve { url in try await Self.purchaseInProgress(fixture, url) }
        }
    }

    @MainActor static func purchaseInProgress(_ fixture: ClientFixture, _ url: String) async throws {
        let seen = Counter()
        let box = ModelBox()
        let store = ObservedStorefront(
            fixture.storefront(),
            beforePurchase: { _ in
                let inProgress = await MainActor.run { box.model?.state.purchaseInProgress }
                seen.add(inProgress ?? "none")
            }
        )
        let till = TillModel(try fixture.coordinator(url, store: store), connectivity: nil)
        box.model = till
        defer { till.stop() }
        await till.start()
        await till.purchase("pro")
        #expect(seen.all == ["pro"])
        #expect(till.state.purchaseInProgress == nil)
    }

    /// Offline, the stored snapshot grants for the configured time after the server signed it; then the model says
    /// it is stale, views are told, and nothing is granted from it.
    @Test func aSnapshotOlderThanTheOfflineAllowanceIsStaleAndGrantsNothing() async throws {
        try await ClientFixture.run { fixture in
            var url = ""
            var keys: [SnapshotPublicKey] = []
            try await fixture.serve { served in
                url = served
                let coordinator = try fixture.coordinator(served)
                guard case .delivered = try await coordinator.purchase(productId: "pro") else {
                    Issue.record("pro was not delivered")
                    return
                }
                // The app ships the server's keys, to believe its snapshot offline.
                keys = try await fixture.client(served).snapshotKeys().keys
            }
            // The server is gone: the app launches offline with its stored snapshot.
            try await Self.staleOffline(fixture, url, keys: keys)
        }
    }

    @MainActor static func staleOffline(_ fixture: ClientFixture, _ url: String, keys: [SnapshotPublicKey])
        async throws
    {
        // Thirty seconds from now, the stored snapshot is too old to be believed offline. (Ten were too few: with the
        // whole suite and a fuzzer on the two cores, the model's start took longer, and the snapshot was already stale
        // when the test looked for it fresh.)
        let stored = try fixture.coordinator(url, store: fixture.storefront(), pinnedKeys: keys).entitlements
        _ = await stored.load()
        let issued = try #require(await stored.snapshot).snapshot.issuedAt
        let age = Date().timeIntervalSince1970 - Double(issued) / 1000
        let till = TillModel(
            try fixture.coordinator(url, store: fixture.storefront(), pinnedKeys: keys),
            configuration: TillModelConfiguration(maximumOfflineAge: age + 30),
            connectivity: nil
        )
        defer { till.stop() }
        await till.start()
        #expect(till.isActive("pro") && !till.state.isStale)
        let stale = Flag()
        withObservationTracking {
            _ = till.state.isStale
        } onChange: {
            stale.set(true)
        }
        for _ in 0..<1200 where !stale.isSet { try await Task.sleep(nanoseconds: 100_000_000) }
        #expect(stale.isSet && till.state.isStale)
        #expect(!till.isActive("pro"))
    }

    /// A purchase made with the server unreachable waits in the outbox; when the network comes back
    /// (`NWPathMonitor`, here a test's), the model sends it at once.
    @Test func theOutboxIsSentWhenTheNetworkComesBack() async throws {
        try await ClientFixture.run { fixture in
            var url = ""
            try await fixture.serve { url = $0 }
            let port = try #require(URLComponents(string: url)?.port)
            let network = TestConnectivity()
            let till = try await Self.purchaseOffline(fixture, url, network: network)
            try await fixture.serve(port: port) { _ in
                await Self.networkComesBack(till, network)
            }
        }
    }

    /// Launches the model with the server down and buys gems: the submission waits in the outbox.
    @MainActor static func purchaseOffline(_ fixture: ClientFixture, _ url: String, network: TestConnectivity?)
        async throws -> TillModel
    {
        let till = TillModel(try fixture.coordinator(url), connectivity: network)
        await till.start()
        network?.send(false)
        let outcome = await till.purchase("gems.100")
        #expect(outcome?.kind == "notDelivered" && till.state.waitingSubmissions == 1)
        return till
    }

    @MainActor static func networkComesBack(_ till: TillModel, _ network: TestConnectivity) async {
        defer { till.stop() }
        network.send(true)
        for _ in 0..<600 where till.state.waitingSubmissions > 0 {
            try? await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(till.state.waitingSubmissions == 0 && till.state.isOnline)
        #expect(till.balance(of: "gems") == 100)
    }

    /// Coming back to the foreground (`scenePhase` active) sends the outbox and refreshes the snapshot.
    @Test func comingBackToTheForegroundSendsTheOutbox() async throws {
        try await ClientFixture.run { fixture in
            var url = ""
            try await fixture.serve { url = $0 }
            let port = try #require(URLComponents(string: url)?.port)
            let till = try await Self.purchaseOffline(fixture, url, network: nil)
            try await fixture.serve(port: port) { _ in
                await Self.foreground(till)
            }
        }
    }

    @MainActor static func foreground(_ till: TillModel) async {
        defer { till.stop() }
        await till.sceneBecameActive()
        #expect(till.state.waitingSubmissions == 0)
        #expect(till.balance(of: "gems") == 100)
    }
}

/// The network as a test says it is: like `NWPathMonitor`, a new watcher hears the current state first.
final class TestConnectivity: Connectivity {
    private let state = Mutex<(current: Bool?, continuations: [AsyncStream<Bool>.Continuation])>((nil, []))

    func changes() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self)
        state.withLock { state in
            if let current = state.current { continuation.yield(current) }
            state.continuations.append(continuation)
        }
        return stream
    }

    func send(_ online: Bool) {
        let continuations = state.withLock { state in
            state.current = online
            return state.continuations
        }
        for continuation in continuations { continuation.yield(online) }
    }
}

/// Lets a storefront's hook look at the model that uses it.
@MainActor
final class ModelBox {
    var model: TillModel?
}
