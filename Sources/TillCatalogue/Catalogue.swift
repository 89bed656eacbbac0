import Crypto
import Foundation
import Logging
import SQLKit
import Synchronization
import TillContract
import TillCore
import TillFormats
import TillLedger
import TillStorage

/// The catalogue: the apps the server serves and their products, the master list apps fetch, and the caches of
/// both that every request reads.
///
/// It is the only component that writes apps and products (content files are written by `ContentDelivery`,
/// which tells it through `changed()`). Everything that depends on the catalogue (customer views, the master list's
/// ETag) reads `revision`, which every change moves.
public final class Catalogue: ProductCatalogue, Sendable {
    package let database: TillDatabase
    /// The product catalogues.
    package var catalogueStore: CatalogueStore { CatalogueStore(database: database) }
    /// The apps Till serves.
    package var serverAppStore: ServerAppStore { ServerAppStore(database: database) }
    package let clock: ServerClock
    /// Called after an app's credentials for Apple changed (shared secrets, the App Store Server API key; `apiKey`:
    /// the key is among them), with the app as saved: the confirmation queue tries again at once what Apple refused
    /// on the old ones, and catch-up runs now for a key that came or changed. A hook because those rooms are above
    /// the catalogue.
    package let credentialsChanged: @Sendable (_ app: ServerApp, _ apiKey: Bool) async throws -> Void
    /// Apps by key, read on every request of the app API.
    private let appsByKey = SnapshotCache<String, AuthenticatedApp?>(lifetime: .seconds(1))
    /// Apps by bundle id, for the confirmation worker (one lookup per attempt).
    private let appsByBundle = SnapshotCache<String, ServerApp?>(lifetime: .seconds(1))
    /// Products by id per bundle id, read on every submission and customer view.
    private let catalogues = SnapshotCache<String, [String: CatalogProduct]>(lifetime: .seconds(1))
    private let changes = Atomic<UInt64>(0)

    package init(
        database: TillDatabase,
        clock: ServerClock,
        credentialsChanged: @escaping @Sendable (_ app: ServerApp, _ apiKey: Bool) async throws -> Void
    ) {
        self.database = database
        self.clock = clock
        self.credentialsChanged = credentialsChanged
    }

    /// Moves with every change this process makes to an app, a product or its content.
    package var revision: UInt64 { changes.load(ordering: .acquiring) }

    /// Forgets cached apps and catalogues after this process changed one.
    package func changed() {
        appsByKey.invalidateAll()
        appsByBundle.invalidateAll()
        catalogues.invalidateAll()
        changes.add(1, ordering: .releasing)
    }

    /// An app's products by id, as of at most a second ago (this process's own changes at once).
    package func products(of bundleId: String) async throws -> [String: CatalogProduct] {
        try await products(of: bundleId, on: database.sql)
    }

    /// The same, read on `db` when it is not cached: inside a transaction, its own connection (taking a second one
    /// from the pool while holding the first can starve the pool when every connection is doing the same).
    package func products(of bundleId: String, on db: any SQLDatabase) async throws -> [String: CatalogProduct] {
        try await catalogues.value(for: bundleId) {
            Dictionary(
                uniqueKeysWithValues: try await catalogueStore.products(bundleId: bundleId, on: db).map {
                    ($0.productId, $0)
                }
            )
        }
    }

    /// The app of a bundle id, as of at most a second ago; nil when there is none.
    package func cachedApp(bundleId: String) async throws -> ServerApp? {
        try await appsByBundle.value(for: bundleId) {
            try await serverAppStore.app(bundleId: bundleId, on: database.sql)
        }
    }

    /// An app's product; nil when the app has no such product (each room says so with its own reason), and
    /// `appNotFound` when there is no such app. The app is read only when the product is not found.
    package func product(bundleId: String, productId: String, on db: any SQLDatabase) async throws -> CatalogProduct? {
        if let product = try await catalogueStore.product(bundleId: bundleId, productId: productId, on: db) {
            return product
        }
        _ = try await requireApp(bundleId: bundleId, on: db)
        return nil
    }

    package func requireApp(bundleId: String, on db: any SQLDatabase) async throws -> ServerApp {
        guard let app = try await serverAppStore.app(bundleId: bundleId, on: db) else {
            throw CatalogueRefusal(.appNotFound, "no app \(bundleId)")
        }
        return app
    }

    // MARK: Apps

    public func createApp(_ input: ServerAppInput) async throws -> ServerApp {
        defer { changed() }
        guard let bundleId = input.bundleId, CatalogueNames.isBundleId(bundleId) else {
            throw CatalogueRefusal(
                .invalidBundleId,
                "bundleId is 1 to 155 letters, digits, hyphens and periods (Apple's rule for a bundle ID)"
            )
        }
        let app = ServerApp(
            bundleId: bundleId,
            appAppleId: input.appAppleId,
            name: input.name ?? bundleId,
            appKey: "tk_" + Self.randomToken(),
            sharedSecrets: input.sharedSecrets ?? [],
            apiKeyId: input.apiKeyId,
            apiIssuerId: input.apiIssuerId,
            apiPrivateKey: input.apiPrivateKey,
            inAppPurchaseKeyId: input.inAppPurchaseKeyId,
            inAppPurchaseIssuerId: input.inAppPurchaseIssuerId,
            inAppPurchasePrivateKey: input.inAppPurchasePrivateKey,
            acceptSandbox: input.acceptSandbox ?? true,
            restorePolicy: input.restorePolicy ?? .keepWithFirstOwner,
            consumption: Self.settings(input.consumption),
            storeKitTestCertificates: try Self.storeKitTestCertificates(input.storeKitTestCertificates ?? []),
            createdAt: clock.milliseconds
        )
        try validateKeys(app)
        try await database.transaction { db in
            if try await self.serverAppStore.app(bundleId: bundleId, on: db) != nil {
                throw CatalogueRefusal(.appExists, "an app with bundle id \(bundleId) exists")
            }
            try await self.serverAppStore.save(app, on: db)
        }
        // An app created with its App Store Server API key catches up at once, as one given it later does.
        if app.apiKeyId != nil { try await credentialsChanged(app, true) }
        return app
    }

    public func updateApp(bundleId: String, _ input: ServerAppInput) async throws -> ServerApp {
        defer { changed() }
        // The bundle id is the app's key everywhere (ledger, catalogue, content, links): it names the app and does
        // not change. Saying it again is harmless; saying another one is refused rather than silently ignored.
        if let given = input.bundleId, given != bundleId {
            throw CatalogueRefusal(
                .bundleIdImmutable,
                "an app's bundle id cannot change; create an app for \(given) instead"
            )
        }
        let (app, before) = try await database.transaction { db in
            var app = try await self.requireApp(bundleId: bundleId, on: db)
            let before = app
            if let value = input.appAppleId { app.appAppleId = value }
            if let value = input.name { app.name = value }
            if let value = input.sharedSecrets { app.sharedSecrets = value }
            if let value = input.apiKeyId { app.apiKeyId = value }
            if let value = input.apiIssuerId { app.apiIssuerId = value }
            if let value = input.apiPrivateKey { app.apiPrivateKey = value }
            if let value = input.inAppPurchaseKeyId { app.inAppPurchaseKeyId = value }
            if let value = input.inAppPurchaseIssuerId { app.inAppPurchaseIssuerId = value }
            if let value = input.inAppPurchasePrivateKey { app.inAppPurchasePrivateKey = value }
            if input.inAppPurchasePrivateKey == "" {
                // An empty key removes the separate In-App Purchase key: the App Store Server API key signs again.
                app.inAppPurchaseKeyId = nil
                app.inAppPurchaseIssuerId = nil
                app.inAppPurchasePrivateKey = nil
            }
            if let value = input.acceptSandbox { app.acceptSandbox = value }
            if let value = input.restorePolicy { app.restorePolicy = value }
            if let value = input.consumption { app.consumption = Self.settings(value) }
            if let value = input.storeKitTestCertificates {
                app.storeKitTestCertificates = try Self.storeKitTestCertificates(value)
            }
            try self.validateKeys(app)
            try await self.serverAppStore.save(app, on: db)
            return (app, before)
        }
        let apiKey = !app.hasSameAPIKey(as: before)
        if apiKey || app.sharedSecrets != before.sharedSecrets {
            // The settings Apple refused may be fixed now: confirmations that failed on them are tried again at
            // once, with the new settings (forget the old ones first), rather than after their back-off.
            changed()
            try await credentialsChanged(app, apiKey)
        }
        return app
    }

    public func apps() async throws -> [ServerApp] { try await serverAppStore.apps(on: database.sql) }

    public func app(bundleId: String) async throws -> ServerApp {
        try await requireApp(bundleId: bundleId, on: database.sql)
    }

    /// The app an app key belongs to.
    public func app(appKey: String) async throws -> AuthenticatedApp? {
        try await appsByKey.value(for: appKey) {
            try await serverAppStore.app(appKey: appKey, on: database.sql).map(AuthenticatedApp.init)
        }
    }

    /// Each key is all three of its fields or none (a key id alone, which a PATCH could leave, is refused too).
    private func validateKeys(_ app: ServerApp) throws {
        if app.apiPrivateKey != nil || app.apiKeyId != nil || app.apiIssuerId != nil {
            guard let pem = app.apiPrivateKey, (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil,
                app.apiKeyId?.isEmpty == false, app.apiIssuerId?.isEmpty == false
            else {
                throw CatalogueRefusal(
                    .invalidAPIKey,
                    "an App Store Server API key needs apiKeyId, apiIssuerId and a P-256 PEM private key"
                )
            }
        }
        if app.inAppPurchasePrivateKey != nil || app.inAppPurchaseKeyId != nil || app.inAppPurchaseIssuerId != nil {
            guard let pem = app.inAppPurchasePrivateKey, (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil,
                app.inAppPurchaseKeyId?.isEmpty == false, app.inAppPurchaseIssuerId?.isEmpty == false
            else {
                throw CatalogueRefusal(
                    .invalidInAppPurchaseKey,
                    "an In-App Purchase key needs inAppPurchaseKeyId, inAppPurchaseIssuerId and a P-256 PEM private key"
                )
            }
        }
    }

    /// The StoreKit Testing in Xcode certificates an operator sent (PEM or base64 DER), each checked to be a self-signed
    /// P-256 certificate and kept once, as PEM.
    private static func storeKitTestCertificates(_ inputs: [String]) throws -> [String] {
        var fingerprints: Set<String> = []
        var kept: [String] = []
        for (index, input) in inputs.enumerated() {
            let certificates: [StoreKitTestCertificate]
            do {
                certificates = try StoreKitTestCertificate.parse(input)
            } catch {
                throw CatalogueRefusal(
                    .invalidStoreKitTestCertificate,
                    "storeKitTestCertificates[\(index)]: \(error); send the PEM of the certificate Xcode exports "
                        + "(Editor → Save Public Certificate; openssl x509 -inform der -in StoreKitTestCertificate.cer)"
                )
            }
            for certificate in certificates where fingerprints.insert(certificate.sha256Fingerprint).inserted {
                kept.append(certificate.pem)
            }
        }
        guard kept.count <= 16 else {
            throw CatalogueRefusal(
                .invalidStoreKitTestCertificate,
                "an app trusts at most 16 StoreKit test certificates, not \(kept.count)"
            )
        }
        return kept
    }

    /// Consumption settings as kept: a field left out takes its default (no sample; no refund preference).
    private static func settings(_ input: ConsumptionSettings?) -> ConsumptionSettings {
        ConsumptionSettings(
            sampleContentProvided: input?.sampleContentProvided ?? false,
            refundPreference: input?.refundPreference
        )
    }

    package static func randomToken() -> String {
        (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// The app a request's key names, held by reference. The request context carries it and is copied at each
/// middleware and handler: a `ServerApp` there would retain each of its dozen strings and arrays at every copy, which
/// `till bench reads` measured on each customer read.
public final class AuthenticatedApp: Sendable {
    public let app: ServerApp

    package init(_ app: ServerApp) {
        self.app = app
    }
}

extension ServerApp {
    /// Whether the App Store Server API key is the same as `other`'s (its id, its issuer and its private key).
    package func hasSameAPIKey(as other: ServerApp) -> Bool {
        apiKeyId == other.apiKeyId && apiIssuerId == other.apiIssuerId && apiPrivateKey == other.apiPrivateKey
    }
}
