import Foundation
import HTTPTypes
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// The lookups every room of the simulator shares: an app, a device with its account, and the next ids.
extension SimulatorStore {
    func requireApp(bundleId: String, on db: any SQLDatabase) async throws -> SimApp {
        guard let app = try await appStoreConnect.app(bundleId: bundleId, on: db) else {
            throw LookupRefusal(.appNotFound, "no app \(bundleId)")
        }
        return app
    }

    func requireApp(appAppleId: Int64, on db: any SQLDatabase) async throws -> SimApp {
        guard let app = try await appStoreConnect.app(appAppleId: appAppleId, on: db) else {
            throw LookupRefusal(.appNotFound, "no app \(String(appAppleId))")
        }
        return app
    }

    /// The device, its account, and a check that the account belongs to the environment and still exists.
    func requireDevice(_ deviceId: String, environment: AppStoreEnvironment, on db: any SQLDatabase) async throws
        -> (SimDevice, SimAccount)
    {
        guard let device = try await appStoreConnect.device(id: deviceId, on: db) else {
            throw LookupRefusal(.deviceNotFound, "no device \(deviceId)")
        }
        guard let account = try await appStoreConnect.account(id: device.accountId, on: db) else {
            throw LookupRefusal(.accountNotFound, "no account \(device.accountId)")
        }
        guard !account.deleted else {
            throw LookupRefusal(.accountDeleted, "the account signed in on \(deviceId) was deleted")
        }
        guard account.environment == environment else {
            throw LookupRefusal(
                .wrongEnvironment,
                "the account on \(deviceId) is a \(account.environment) account, not \(environment)"
            )
        }
        return (device, account)
    }

    /// The next transaction id of an environment: production ids have 15 digits, sandbox ids 16, as Apple's do.
    func nextTransactionId(_ environment: AppStoreEnvironment, on db: any SQLDatabase) async throws -> String {
        // StoreKit Testing in Xcode numbers its transactions from 1 within a project; here from 1 for the simulator.
        let start: Int64 =
            environment == .production ? 530_000_000_000_000 : environment == .sandbox ? 2_000_000_900_000_000 : 1
        return String(try await self.next("transaction-\(environment.rawValue)", startingAt: start, on: db))
    }

    func nextWebOrderLineItemId(_ environment: AppStoreEnvironment, on db: any SQLDatabase) async throws -> String {
        let start: Int64 =
            environment == .production ? 530_000_010_000_000 : environment == .sandbox ? 2_000_000_100_000_000 : 1
        return String(try await self.next("web-order-\(environment.rawValue)", startingAt: start, on: db))
    }

    func nextSequence(on db: any SQLDatabase) async throws -> Int64 {
        try await self.next("revision", on: db)
    }
}

/// An order id as on Apple's e-mailed receipts (`MK5TTTVWJH`).
func makeOrderId() -> String {
    let characters = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
    return String((0..<10).map { _ in characters.randomElement()! })
}
