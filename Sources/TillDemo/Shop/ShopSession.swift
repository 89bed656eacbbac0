import ArgumentParser
import Foundation
import NIOHTTP1
import Synchronization
import TillClient

/// The app `till shop` is: TillClient's ``PurchaseCoordinator`` for one customer on one simulator device, keeping
/// its files in `<data>/<device>`. Every command is a launch of the app (``PurchaseCoordinator/start()``): the
/// stored snapshot is verified, the outbox sent, and purchases left unfinished (an approved Ask to Buy, one made
/// while the server was down) are delivered before the command does its own work.
struct ShopSession: Sendable {
    typealias App = PurchaseCoordinator<SimulatorStorefront>

    let app: App
    let sheet: PaymentSheet
    /// The simulator's admin API: the tester's account settings (a declined card, Ask to Buy).
    let simulatorAdmin: AdminHTTP
    let simulatorURL: String
    let deviceId: String
    let customerId: String
    let bundleId: String

    /// Builds the app for `options` (finding the development device when none is given).
    static func open(_ options: ShopOptions, environment: [String: String]) async throws -> ShopSession {
        guard let appKey = options.appKey ?? environment["TILL_APP_KEY"], !appKey.isEmpty else {
            throw ValidationError(
                "give --app-key (or set TILL_APP_KEY): the key till serve prints as \"demo app …, app key tk_…\""
            )
        }
        let admin = AdminHTTP(baseURL: options.simulator, token: options.simulatorToken)
        let deviceId: String
        if let device = options.device {
            deviceId = device
        } else {
            deviceId = try await developmentDevice(admin)
        }
        let sheet = PaymentSheet()
        let server = TillServerClient(baseURL: options.server, appKey: appKey)
        let app = try PurchaseCoordinator(
            storefront: SimulatorStorefront(
                baseURL: options.simulator,
                deviceId: deviceId,
                bundleId: options.bundleId,
                pollInterval: 1,
                paymentSheet: { _ in sheet.answer() }
            ),
            server: server,
            bundleId: options.bundleId,
            customerId: options.customer,
            directory: URL(fileURLWithPath: options.data, isDirectory: true)
                .appendingPathComponent(deviceId, isDirectory: true)
        )
        return ShopSession(
            app: app,
            sheet: sheet,
            simulatorAdmin: admin,
            simulatorURL: admin.baseURL,
            deviceId: deviceId,
            customerId: options.customer,
            bundleId: options.bundleId
        )
    }

    /// The device `till serve` prints in development mode: the first device of the first sandbox tester.
    static func developmentDevice(_ admin: AdminHTTP) async throws -> String {
        do {
            for account in try await admin.json(.GET, "/admin/v1/accounts", as: [Account].self)
            where account.environment == "Sandbox" && !account.deleted {
                let devices = try await admin.json(.GET, "/admin/v1/accounts/\(account.id)/devices", as: [Device].self)
                if let device = devices.first { return device.id }
                break
            }
        } catch {
            throw ValidationError(
                "cannot ask the simulator at \(admin.baseURL) for its devices: \(error). Give the simulator's address "
                    + "(--simulator, the port till serve prints for it) or a device (--device)"
            )
        }
        throw ValidationError("the simulator at \(admin.baseURL) has no sandbox tester with a device; give --device")
    }

    /// The sandbox tester owning this device.
    func accountId() async throws -> String {
        for account in try await simulatorAdmin.json(.GET, "/admin/v1/accounts", as: [Account].self) {
            let devices = try await simulatorAdmin.json(
                .GET,
                "/admin/v1/accounts/\(account.id)/devices",
                as: [Device].self
            )
            if devices.contains(where: { $0.id == deviceId }) { return account.id }
        }
        throw ValidationError("no simulator account owns device \(deviceId)")
    }

    /// Changes the tester's account for the time of `body` (a declined card, Ask to Buy), then changes it back.
    func withAccount<T>(
        _ change: [String: JSONValue],
        restoring: [String: JSONValue],
        _ body: () async throws -> T
    ) async throws -> T {
        let account = try await accountId()
        _ = try await simulatorAdmin.json(.PATCH, "/admin/v1/accounts/\(account)", change, as: Account.self)
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        _ = try await simulatorAdmin.json(.PATCH, "/admin/v1/accounts/\(account)", restoring, as: Account.self)
        return try result.get()
    }

    struct Account: Decodable {
        var id: String
        var environment: String
        var deleted: Bool
    }

    struct Device: Decodable {
        var id: String
    }
}
