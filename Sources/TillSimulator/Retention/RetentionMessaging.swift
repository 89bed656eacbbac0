import AsyncHTTPClient
import Foundation
import Logging
import SQLKit
import TillCore
import TillFormats
import TillStorage

/// The Retention Messaging API: images and messages a developer uploads (reviewed by the App Store: approved at
/// once in the sandbox, waiting for the admin API's review in production), the default message of a product and
/// locale, the developer's realtime URL, and what the App Store does with them — it calls that URL when a customer
/// is about to cancel (``RetentionMessaging/retentionMessage(deviceId:originalTransactionId:locale:environment:)``)
/// and tests its speed (``RetentionMessaging/initiatePerformanceTest(body:app:environment:)``).
public struct RetentionMessaging: Sendable {
    let configuration: SimulatorConfiguration
    let database: TillDatabase
    let store: SimulatorStore
    let clock: SimulatorClock
    let receipts: Receipts
    let logger: Logger
    let http: HTTPClient

    /// Apple's limit (of images and messages: `RetentionAsset.maximum`).
    static let maximumBulletPoints = 5

    /// App Store Connect's locale codes, as Retention Messaging takes them (case-sensitive).
    static let locales: Set<String> = [
        "ar-SA", "ca", "cs", "da", "de-DE", "el", "en-AU", "en-CA", "en-GB", "en-US", "es-ES", "es-MX", "fi", "fr-CA",
        "fr-FR", "he", "hi", "hr", "hu", "id", "it", "ja", "ko", "ms", "nl-NL", "no", "pl", "pt-BR", "pt-PT", "ro",
        "ru", "sk", "sv", "th", "tr", "uk", "vi", "zh-Hans", "zh-Hant",
    ]
}

extension RetentionMessaging {
    // MARK: Images

    /// Upload Image: a PNG without transparency, 3840 px wide and 160–2160 px high (`FULL_SIZE`), or 1024 × 1024 px
    /// (`BULLET_POINT`).
    func uploadImage(
        _ identifier: String,
        size: String?,
        png: [UInt8],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws {
        let id = try Self.identifier(identifier)
        let imageSize = RetentionImageSize(rawValue: size ?? RetentionImageSize.fullSize.rawValue)
        guard imageSize == .fullSize || imageSize == .bulletPoint else { throw ServerAPIFailure(.generalBadRequest) }
        guard let image = PNGHeader(png), !image.hasTransparency, image.fits(imageSize) else {
            throw ServerAPIFailure(.invalidImage)
        }
        try await database.transaction { db in
            try await self.add(
                SimRetentionImage(
                    appAppleId: app.appAppleId,
                    environment: environment,
                    imageIdentifier: id,
                    imageSize: imageSize,
                    state: Self.initialState(environment),
                    png: Data(png).base64EncodedString(),
                    createdAt: self.clock.nowMilliseconds
                ),
                on: db
            )
        }
    }

    /// Delete Image: refused while a message uses it.
    func deleteImage(_ identifier: String, app: SimApp, environment: AppStoreEnvironment) async throws {
        let id = try Self.identifier(identifier)
        try await database.transaction { db in
            try await self.remove(SimRetentionImage.self, id, app: app, environment: environment, on: db) {
                let messages = try await self.store.retention.retentionAssets(
                    SimRetentionMessage.self,
                    appAppleId: app.appAppleId,
                    environment: environment,
                    on: db
                )
                guard !messages.contains(where: { Self.content(of: $0).imageIdentifiers.contains(id) }) else {
                    throw ServerAPIFailure(.imageInUse)
                }
            }
        }
    }

    func imageList(app: SimApp, environment: AppStoreEnvironment) async throws -> GetImageListResponse {
        GetImageListResponse(
            imageIdentifiers: try await store.retention.retentionAssets(
                SimRetentionImage.self,
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            ).map {
                GetImageListResponseItem(
                    imageIdentifier: $0.imageIdentifier,
                    imageState: $0.state,
                    imageSize: $0.imageSize
                )
            }
        )
    }

    // MARK: Messages

    /// Upload Message: header (66), body (144), an optional full-size image with its alternative text (150), up to
    /// five bullet points (66 each, with a bullet-point image), and where the header goes.
    func uploadMessage(_ identifier: String, body: [UInt8], app: SimApp, environment: AppStoreEnvironment)
        async throws
    {
        let id = try Self.identifier(identifier)
        guard let message = try? TillFormatsJSON.decoder.decode(UploadMessageRequestBody.self, from: Data(body)) else {
            throw ServerAPIFailure(.generalBadRequest)
        }
        guard let header = message.header, !header.isEmpty else { throw ServerAPIFailure(.generalBadRequest) }
        guard header.count <= 66 else { throw ServerAPIFailure(.headerTooLong) }
        guard let text = message.body, !text.isEmpty else { throw ServerAPIFailure(.generalBadRequest) }
        guard text.count <= 144 else { throw ServerAPIFailure(.bodyTooLong) }
        if message.headerPosition == .aboveImage, message.image == nil {
            throw ServerAPIFailure(.badRequestAboveImageRequiresAnImage)
        }
        let bullets = message.bulletPoints ?? []
        guard bullets.count <= Self.maximumBulletPoints else { throw ServerAPIFailure(.badRequestTooManyBulletPoints) }
        try await database.transaction { db in
            func requireImage(_ imageId: String?, altText: String?, size: RetentionImageSize) async throws {
                guard let altText, !altText.isEmpty else { throw ServerAPIFailure(.generalBadRequest) }
                guard altText.count <= 150 else { throw ServerAPIFailure(.altTextTooLong) }
                guard let imageId,
                    let image = try await self.store.retention.retentionAsset(
                        SimRetentionImage.self,
                        imageId.lowercased(),
                        appAppleId: app.appAppleId,
                        environment: environment,
                        on: db
                    )
                else { throw ServerAPIFailure(.imageNotFound) }
                guard image.imageSize == size else { throw ServerAPIFailure(.badRequestImageSize) }
            }
            if let image = message.image {
                try await requireImage(image.imageIdentifier, altText: image.altText, size: .fullSize)
            }
            for bullet in bullets {
                guard let text = bullet.text, !text.isEmpty else { throw ServerAPIFailure(.generalBadRequest) }
                guard text.count <= 66 else { throw ServerAPIFailure(.badRequestBulletPointTextTooLong) }
                try await requireImage(bullet.imageIdentifier, altText: bullet.altText, size: .bulletPoint)
            }
            try await self.add(
                SimRetentionMessage(
                    appAppleId: app.appAppleId,
                    environment: environment,
                    messageIdentifier: id,
                    state: Self.initialState(environment),
                    content: String(decoding: try TillFormatsJSON.encoder.encode(message), as: UTF8.self),
                    createdAt: self.clock.nowMilliseconds
                ),
                on: db
            )
        }
    }

    func deleteMessage(_ identifier: String, app: SimApp, environment: AppStoreEnvironment) async throws {
        let id = try Self.identifier(identifier)
        try await database.transaction { db in
            try await self.remove(SimRetentionMessage.self, id, app: app, environment: environment, on: db)
        }
    }

    func messageList(app: SimApp, environment: AppStoreEnvironment) async throws -> GetMessageListResponse {
        GetMessageListResponse(
            messageIdentifiers: try await store.retention.retentionAssets(
                SimRetentionMessage.self,
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            ).map {
                GetMessageListResponseItem(
                    messageIdentifier: $0.messageIdentifier,
                    messageState: $0.state
                )
            }
        )
    }

    // MARK: Helpers

    /// Stores a new image or message in `db`'s transaction: refused when the app has one with its identifier already,
    /// or has as many as Apple allows.
    private func add<Asset: RetentionAsset>(_ asset: Asset, on db: any SQLDatabase) async throws {
        let assets = try await store.retention.retentionAssets(
            Asset.self,
            appAppleId: asset.appAppleId,
            environment: asset.environment,
            on: db
        )
        guard !assets.contains(where: { $0.identifier == asset.identifier }) else {
            throw ServerAPIFailure(Asset.alreadyExists)
        }
        guard assets.count < Asset.maximum else { throw ServerAPIFailure(Asset.maximumReached) }
        try await store.insert(asset, on: db)
    }

    /// Deletes an image or message in `db`'s transaction: refused when there is none, or when `check` refuses (an
    /// image a message uses).
    private func remove<Asset: RetentionAsset>(
        _ type: Asset.Type,
        _ id: String,
        app: SimApp,
        environment: AppStoreEnvironment,
        on db: any SQLDatabase,
        unless check: () async throws -> Void = {}
    ) async throws {
        guard
            try await store.retention.retentionAsset(
                Asset.self,
                id,
                appAppleId: app.appAppleId,
                environment: environment,
                on: db
            ) != nil
        else { throw ServerAPIFailure(Asset.notFound) }
        try await check()
        try await store.retention.deleteRetentionAsset(
            Asset.self,
            id,
            appAppleId: app.appAppleId,
            environment: environment,
            on: db
        )
    }

    /// Identifiers are the developer's UUIDs; kept lowercase, as Apple prints them.
    static func identifier(_ text: String) throws(ServerAPIFailure) -> String {
        guard UUID(uuidString: text) != nil else { throw ServerAPIFailure(.generalBadRequest) }
        return text.lowercased()
    }

    /// The sandbox approves images and messages at once; production waits for App Store review.
    static func initialState(_ environment: AppStoreEnvironment) -> RetentionReviewState {
        environment == .production ? .pending : .approved
    }

    static func content(of message: SimRetentionMessage) -> UploadMessageRequestBody {
        (try? TillFormatsJSON.decoder.decode(UploadMessageRequestBody.self, from: Data(message.content.utf8)))
            ?? UploadMessageRequestBody()
    }
}

extension UploadMessageRequestBody {
    /// Every image the message shows: its own and its bullet points'.
    var imageIdentifiers: [String] {
        ([image?.imageIdentifier] + (bulletPoints ?? []).map(\.imageIdentifier)).compactMap { $0?.lowercased() }
    }
}

/// What Upload Image needs of a PNG: its size and whether it can be transparent (an alpha channel or a `tRNS`
/// chunk). Hand-written: no package of the mirror reads PNG headers, and this is the IHDR and a walk of chunk
/// headers up to the image data.
struct PNGHeader: Equatable {
    var width: Int
    var height: Int
    var hasTransparency: Bool

    init?(_ bytes: [UInt8]) {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard bytes.count >= 33, Array(bytes[0..<8]) == signature, Array(bytes[12..<16]) == Array("IHDR".utf8)
        else { return nil }
        func uint32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        width = uint32(16)
        height = uint32(20)
        let colorType = bytes[25]
        var transparent = colorType == 4 || colorType == 6
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = uint32(offset)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            if type == "tRNS" { transparent = true }
            if type == "IDAT" || type == "IEND" { break }
            offset += 12 + length
        }
        hasTransparency = transparent
        guard width > 0, height > 0 else { return nil }
    }

    func fits(_ size: RetentionImageSize) -> Bool {
        size == .bulletPoint ? width == 1024 && height == 1024 : width == 3840 && (160...2160).contains(height)
    }
}
