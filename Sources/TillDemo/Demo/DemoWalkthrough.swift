import Foundation
import TillClient
import TillContract
import TillCore
import TillDevelopment
import TillServer
import TillSimulator

/// The story `till demo` tells. Each step does what the app, its customer, Apple or the operator would, then
/// checks that the system behaved as it should; ``DemoReport`` prints it.
///
/// The app is TillClient's ``PurchaseCoordinator`` over the simulator's StoreKit, as `till shop` uses it; "launching
/// the app again" makes a new coordinator on the same folder, as a new process would.
final class DemoWalkthrough {
    let world: DemoWorld
    let report: DemoReport
    /// The app on alice's iPhone, as it runs now.
    var phone: DemoWorld.App
    /// The app on her iPad, once step "restore" installed it.
    var tablet: DemoWorld.App?
    /// The first purchase of each product, by product id.
    var bought: [String: StoreTransaction] = [:]
    /// How many of the backend's events were shown already.
    var shownEvents = 0

    static let phoneFolder = "iphone"
    /// What the app sells, and what each product grants (its entitlement, or its credits).
    static let productTypes: [(productId: String, kind: String, grants: String)] = [
        ("gems.100", "consumable credits", "gems"),
        ("pro", "non-consumable", "pro"),
        ("premium.monthly", "auto-renewable subscription", "premium"),
        ("season.pass", "non-renewing subscription", "season"),
        ("newsletter", "free subscription", "newsletter"),
    ]

    init(world: DemoWorld, report: DemoReport) throws {
        self.world = world
        self.report = report
        phone = try world.app(deviceId: world.app.deviceId, folder: Self.phoneFolder)
    }

    /// Every step, in the order of the story; after each, what the app's backend heard of it.
    func run() async {
        let steps: [() async -> Void] = [
            catalogue, oneOfEachType, appleSlow, appleDown, serverDown, magazine, restoreOnSecondDevice, renewals,
            refund, sandboxReceiptInProduction, tamperedStore,
        ]
        for step in steps {
            await step()
            await showBackendEvents()
        }
        await backend()
    }

    /// The app launched again on the iPhone: a new process on the same files.
    func relaunchPhone() throws -> DemoWorld.App {
        phone = try world.app(deviceId: world.app.deviceId, folder: Self.phoneFolder)
        return phone
    }

    // MARK: Helpers

    /// Asks `probe` every `interval` until it answers something or `timeout` passes; answers what it found and
    /// after how long, or nil.
    func wait<T>(
        timeout: Duration,
        every interval: Duration = .milliseconds(100),
        _ probe: () async throws -> T?
    ) async throws -> (value: T, after: Duration)? {
        let clock = ContinuousClock()
        let start = clock.now
        while true {
            if let value = try await probe() { return (value, clock.now - start) }
            if clock.now - start > timeout { return nil }
            try await Task.sleep(for: interval)
        }
    }

    /// Waits until the server settled a submission (confirmed, rejected, dead-lettered).
    func settled(_ submissionId: String, timeout: Duration = .seconds(15)) async throws -> (
        value: SubmissionStatus, after: Duration
    )? {
        try await wait(timeout: timeout) {
            let status = try await world.client.submission(id: submissionId)
            return status.state.isSettled ? status : nil
        }
    }

    /// Times an operation.
    func timed<T>(_ operation: () async throws -> T) async rethrows -> (T, Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        let value = try await operation()
        return (value, clock.now - start)
    }

    /// The App Store's time (the server follows it), in UNIX milliseconds.
    var storeNow: Int64 { world.simulator.clock.nowMilliseconds }

    static func describe(_ outcome: PurchaseOutcome) -> String {
        switch outcome {
        case .delivered(let delivery): "delivered \(delivery.transaction.productId)"
        case .userCancelled: "cancelled by the customer"
        case .pending(let pending): "pending (\(pending.productId) waits for approval)"
        case .failed(_, let error): "refused by the store: \(error)"
        case .unverified(_, let error): "not verified on the device: \(error)"
        case .notDelivered(let failure): "\(failure)"
        }
    }
}
