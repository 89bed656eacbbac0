import Foundation
import HTTPTypes
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import TillStorage

/// The customers' AppTransactions (docs/api.md, `PUT /v1/customers/{id}/app-transaction`): StoreKit 2's signed
/// record of who bought or downloaded the app, when, which version first and on which platform, sent once by each
/// customer's app and kept for the account the id resolves to.
///
/// An AppTransaction is verified as a submission's signed transaction is (`LocalVerifier`: Apple's roots, the sandbox
/// roots for sandbox data, an app's StoreKit test certificates for Xcode's), and one is kept per customer: a newer one
/// replaces it (`AppTransactionRecord.isReplaced(by:)`), so a second device or a reinstall is idempotent too.
///
/// It is a fact the device reports about the app itself, not a purchase: it moves no money, credits or access, so it
/// goes beside the ledger, not through it, and makes no event (docs/events.md lists the ledger's changes). The
/// introductory-offer signatures read its `appTransactionId` for a customer the ledger has no purchase of.
public struct AppTransactions: Sendable {
    let database: TillDatabase
    /// The customers and their aliases.
    var customerStore: CustomerStore { CustomerStore(database: database) }
    let verifier: LocalVerifier
    let clock: ServerClock
    /// The customers' AppTransactions.
    var appTransactionStore: AppTransactionStore { AppTransactionStore(database: database) }

    /// Verifies `jws` as `app`'s AppTransaction and keeps it for the customer (aliases resolved) unless the customer
    /// has a newer one; answers the one kept now. Refusals are 422s with the verifier's code; nothing is stored then.
    public func record(_ jws: String, customerId: String, app: ServerApp) async throws -> AppTransactionView {
        let verified = try await verifier.verifyAppTransaction(jws, app: app)
        guard let environment = Components.Schemas.Environment(rawValue: verified.environment.rawValue) else {
            // `verifyAppTransaction` admits the four environments Apple defines and no other.
            throw AppTransactionRefusal(
                .invalidEnvironment,
                "\(verified.environment) is not an App Store environment"
            )
        }
        let now = clock.milliseconds
        return try await database.transaction { db in
            let owner = try await self.customerStore.resolve(bundleId: app.bundleId, customerId: customerId, on: db)
            let sent = AppTransactionRecord(
                verified.payload,
                environment: environment,
                jws: jws,
                bundleId: app.bundleId,
                customerId: owner,
                at: now
            )
            // Inserted when the customer has none; otherwise the stored one, locked, decides.
            try await self.appTransactionStore.insertAppTransactionIfAbsent(sent, on: db)
            guard
                let stored = try await self.appTransactionStore.appTransaction(
                    bundleId: app.bundleId,
                    customerId: owner,
                    locking: true,
                    on: db
                )
            else { return sent.view }
            guard stored.isReplaced(by: sent) else { return stored.view }
            try await self.appTransactionStore.replaceAppTransaction(sent, on: db)
            return sent.view
        }
    }

    /// The AppTransaction kept for a customer (aliases resolved); `404 appTransactionNotFound` when none was sent.
    public func appTransaction(bundleId: String, customerId: String) async throws -> AppTransactionView {
        guard let stored = try await stored(bundleId: bundleId, customerId: customerId) else {
            throw AppTransactionRefusal(
                .appTransactionNotFound,
                "no AppTransaction was sent for \(customerId): the app sends it with PUT /v1/customers/{id}/app-transaction"
            )
        }
        return stored.view
    }

    /// The app transaction id of the AppTransaction kept for a customer (as stored: an account), if any.
    func appTransactionId(bundleId: String, owner: String) async throws -> String? {
        try await appTransactionStore.appTransaction(bundleId: bundleId, customerId: owner, on: database.sql)?
            .appTransactionId
    }

    private func stored(bundleId: String, customerId: String) async throws -> AppTransactionRecord? {
        let owner = try await customerStore.resolve(bundleId: bundleId, customerId: customerId, on: database.sql)
        return try await appTransactionStore.appTransaction(bundleId: bundleId, customerId: owner, on: database.sql)
    }
}
