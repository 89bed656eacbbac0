import Foundation
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// Default messages and the realtime URL.
extension RetentionMessaging {
    /// Configure Default Message: an approved text message (its image approved too) for an auto-renewable product
    /// and an App Store Connect locale. Configuring again replaces it.
    func configureDefaultMessage(
        productId: String,
        locale: String,
        body: [UInt8],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws {
        try await checkProductAndLocale(productId, locale, app: app)
        guard let request = try? TillFormatsJSON.decoder.decode(DefaultConfiguration.self, from: Data(body)),
            let requested = request.messageIdentifier
        else { throw ServerAPIFailure(.generalBadRequest) }
        let id = try Self.identifier(requested)
        try await database.transaction { db in
            guard
                let message = try await self.store.retention.retentionAsset(
                    SimRetentionMessage.self,
                    id,
                    appAppleId: app.appAppleId,
                    environment: environment,
                    on: db
                )
            else { throw ServerAPIFailure(.messageNotFound) }
            guard message.state == .approved else {
                throw ServerAPIFailure(.messageNotApproved)
            }
            for imageId in Self.content(of: message).imageIdentifiers {
                let image = try await self.store.retention.retentionAsset(
                    SimRetentionImage.self,
                    imageId,
                    appAppleId: app.appAppleId,
                    environment: environment,
                    on: db
                )
                guard image?.state == .approved else {
                    throw ServerAPIFailure(.imageNotApproved)
                }
            }
            try await self.store.upsert(
                SimRetentionDefault(
                    appAppleId: app.appAppleId,
                    environment: environment,
                    productId: productId,
                    locale: locale,
                    messageIdentifier: id,
                    updatedAt: self.clock.nowMilliseconds
                ),
                on: db
            )
        }
    }

    /// Delete Default Message: answered 200 whether or not one was configured.
    func deleteDefaultMessage(productId: String, locale: String, app: SimApp, environment: AppStoreEnvironment)
        async throws
    {
        try await checkProductAndLocale(productId, locale, app: app)
        try await store.retention.deleteRetentionDefault(
            productId: productId,
            locale: locale,
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        )
    }

    func defaultMessage(productId: String, locale: String, app: SimApp, environment: AppStoreEnvironment)
        async throws -> DefaultConfiguration
    {
        try await checkProductAndLocale(productId, locale, app: app)
        guard
            let configured = try await store.retention.retentionDefault(
                productId: productId,
                locale: locale,
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            )
        else { throw ServerAPIFailure(.defaultMessageNotFound) }
        return DefaultConfiguration(messageIdentifier: configured.messageIdentifier)
    }

    /// Configure Realtime URL: `https://`, at most 256 characters (the simulator also takes `http://` to a loopback
    /// host, as it does for notification URLs, so that tests need no certificate). Production takes one only after
    /// a performance test of the app passed in the sandbox.
    func configureRealtimeURL(body: [UInt8], app: SimApp, environment: AppStoreEnvironment) async throws {
        guard let request = try? TillFormatsJSON.decoder.decode(RealtimeURLConfiguration.self, from: Data(body)),
            let url = request.realtimeURL
        else { throw ServerAPIFailure(.generalBadRequest) }
        guard url.count <= 256, Self.acceptsRealtimeURL(url) else { throw ServerAPIFailure(.badRequestRealtimeUrl) }
        if environment == .production {
            let passed = try await store.retention.performanceTests(
                appAppleId: app.appAppleId,
                environment: .sandbox,
                on: store.sql
            ).contains { $0.result == .pass }
            guard passed else { throw ServerAPIFailure(.forbiddenNoPassingTest) }
        }
        try await store.retention.setRealtimeURL(
            url,
            appAppleId: app.appAppleId,
            environment: environment,
            at: clock.nowMilliseconds,
            on: store.sql
        )
    }

    func realtimeURL(app: SimApp, environment: AppStoreEnvironment) async throws -> RealtimeURLConfiguration {
        guard
            let url = try await store.retention.realtimeURL(
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            )
        else { throw ServerAPIFailure(.realtimeUrlNotFound) }
        return RealtimeURLConfiguration(realtimeURL: url)
    }

    func deleteRealtimeURL(app: SimApp, environment: AppStoreEnvironment) async throws {
        try await store.retention.setRealtimeURL(
            nil,
            appAppleId: app.appAppleId,
            environment: environment,
            at: clock.nowMilliseconds,
            on: store.sql
        )
    }

    static func acceptsRealtimeURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty
        else { return false }
        if scheme == "https" { return true }
        return scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
    }

    private func checkProductAndLocale(_ productId: String, _ locale: String, app: SimApp) async throws {
        guard
            let product = try await store.appStoreConnect.product(
                appAppleId: app.appAppleId,
                productId: productId,
                on: store.sql
            ),
            product.type == .autoRenewable
        else { throw ServerAPIFailure(.invalidProductId) }
        guard Self.locales.contains(locale) else { throw ServerAPIFailure(.invalidLocale) }
    }
}
