import Crypto
import Foundation
import HTTPTypes
import Logging
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

extension AppStoreConnect {
    // MARK: Accounts and devices

    public func createAccount(_ input: AccountInput) async throws -> SimAccount {
        // Xcode accounts stand for StoreKit Testing in Xcode: a device whose purchases are signed locally.
        guard let name = input.environment, let environment = AppStoreEnvironment(parsing: name),
            environment == .production || environment == .sandbox || environment == .xcode
        else { throw AppStoreConnectRefusal(.invalidEnvironment, "an account is Production, Sandbox or Xcode") }
        let id = UUID().uuidString.lowercased()
        let account = SimAccount(
            id: id,
            environment: environment,
            email: input.email ?? "\(environment == .sandbox ? "tester" : "customer")-\(id.prefix(8))@example.com",
            storefront: input.storefront ?? "USA",
            canMakePayments: input.canMakePayments ?? true,
            paymentFailure: input.paymentFailure.flatMap { $0 < 0 ? nil : $0 },
            askToBuy: input.askToBuy ?? false,
            familyId: input.familyId,
            deleted: false,
            createdAt: clock.nowMilliseconds
        )
        try Self.validate(storefront: account.storefront)
        try await store.insert(account, on: store.sql)
        return account
    }

    public func updateAccount(id: String, _ input: AccountInput) async throws -> SimAccount {
        try await database.transaction { db in
            guard var account = try await self.store.appStoreConnect.account(id: id, on: db) else {
                throw AppStoreConnectRefusal(.accountNotFound, "no account \(id)")
            }
            if let environment = input.environment,
                AppStoreEnvironment(parsing: environment) != account.environment
            {
                throw AppStoreConnectRefusal(
                    .environmentIsFixed,
                    "account \(id) is a \(account.environment) account; make another account for \(environment)"
                )
            }
            if let storefront = input.storefront {
                try Self.validate(storefront: storefront)
                account.storefront = storefront
            }
            if let allowed = input.canMakePayments { account.canMakePayments = allowed }
            if let failure = input.paymentFailure { account.paymentFailure = failure < 0 ? nil : failure }
            if let askToBuy = input.askToBuy { account.askToBuy = askToBuy }
            if let family = input.familyId { account.familyId = family.isEmpty ? nil : family }
            if let email = input.email { account.email = email }
            try await self.store.update(account, on: db)
            return account
        }
    }

    /// Deletes an account: its receipts then fail verifyReceipt with 21010.
    public func deleteAccount(id: String) async throws {
        try await database.transaction { db in
            guard var account = try await self.store.appStoreConnect.account(id: id, on: db) else {
                throw AppStoreConnectRefusal(.accountNotFound, "no account \(id)")
            }
            account.deleted = true
            try await self.store.update(account, on: db)
        }
        subscriptions.due.signal()
    }

    public func account(id: String) async throws -> SimAccount {
        guard let account = try await store.appStoreConnect.account(id: id, on: store.sql) else {
            throw AppStoreConnectRefusal(.accountNotFound, "no account \(id)")
        }
        return account
    }

    public func accounts() async throws -> [SimAccount] { try await store.appStoreConnect.accounts(on: store.sql) }

    public func createDevice(accountId: String, _ input: DeviceInput) async throws -> SimDevice {
        _ = try await account(id: accountId)
        let vendor = input.vendorIdentifier ?? UUID().uuidString
        guard UUID(uuidString: vendor) != nil else {
            throw AppStoreConnectRefusal(.invalidVendorIdentifier, "vendorIdentifier is a UUID")
        }
        let device = SimDevice(
            id: UUID().uuidString.lowercased(),
            accountId: accountId,
            name: input.name ?? "iPhone",
            vendorIdentifier: vendor.uppercased(),
            createdAt: clock.nowMilliseconds
        )
        try await store.insert(device, on: store.sql)
        return device
    }

    public func devices(accountId: String) async throws -> [SimDevice] {
        _ = try await account(id: accountId)
        return try await store.appStoreConnect.devices(accountId: accountId, on: store.sql)
    }

    static func validate(storefront: String) throws {
        guard Storefronts.countries.contains(storefront) else {
            throw AppStoreConnectRefusal(
                .invalidStorefront,
                "a storefront is a country's ISO 3166-1 alpha-3 code such as USA, got \(storefront)"
            )
        }
    }
}
