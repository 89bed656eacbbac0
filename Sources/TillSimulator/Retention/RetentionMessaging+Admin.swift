import Foundation
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// What App Store Connect shows of Retention Messaging, and its review of production images and messages.
extension RetentionMessaging {
    public struct Overview: Codable, Sendable {
        public struct Image: Codable, Sendable {
            public var imageIdentifier: String
            public var imageSize: RetentionImageSize
            public var state: RetentionReviewState
            public var bytes: Int
        }

        public struct Message: Codable, Sendable {
            public var messageIdentifier: String
            public var state: RetentionReviewState
            public var content: UploadMessageRequestBody
        }

        public struct Default: Codable, Sendable {
            public var productId: String
            public var locale: String
            public var messageIdentifier: String
        }

        public var realtimeURL: String?
        public var images: [Image]
        public var messages: [Message]
        public var defaultMessages: [Default]
        /// Customers' requests to the realtime URL (performance tests' requests are in their results).
        public var requests: [SimRetentionRequest]
    }

    enum Reviewed { case image, message }

    public func overview(appAppleId: Int64, environment: AppStoreEnvironment) async throws -> Overview {
        let db = store.sql
        _ = try await store.requireApp(appAppleId: appAppleId, on: db)
        let env = environment
        return Overview(
            realtimeURL: try await store.retention.realtimeURL(appAppleId: appAppleId, environment: env, on: db),
            images: try await store.retention.retentionAssets(
                SimRetentionImage.self,
                appAppleId: appAppleId,
                environment: env,
                on: db
            ).map {
                .init(
                    imageIdentifier: $0.imageIdentifier,
                    imageSize: $0.imageSize,
                    state: $0.state,
                    bytes: Data(base64Encoded: $0.png)?.count ?? 0
                )
            },
            messages: try await store.retention.retentionAssets(
                SimRetentionMessage.self,
                appAppleId: appAppleId,
                environment: env,
                on: db
            ).map {
                .init(messageIdentifier: $0.messageIdentifier, state: $0.state, content: Self.content(of: $0))
            },
            defaultMessages: try await store.retention.retentionDefaults(
                appAppleId: appAppleId,
                environment: env,
                on: db
            ).map {
                .init(productId: $0.productId, locale: $0.locale, messageIdentifier: $0.messageIdentifier)
            },
            requests: try await store.retention.retentionRequests(appAppleId: appAppleId, environment: env, on: db)
        )
    }

    /// App Store review of an image or a message: approved, rejected, or back to pending.
    func review(
        _ kind: Reviewed,
        id: String,
        state: RetentionReviewState,
        appAppleId: Int64,
        environment: AppStoreEnvironment
    ) async throws {
        let db = store.sql
        let identifier = id.lowercased()
        switch kind {
        case .image:
            guard
                try await store.retention.retentionAsset(
                    SimRetentionImage.self,
                    identifier,
                    appAppleId: appAppleId,
                    environment: environment,
                    on: db
                ) != nil
            else { throw RetentionRefusal(.imageNotFound, "no image \(id)") }
            try await store.retention.setRetentionAssetState(
                SimRetentionImage.self,
                identifier,
                appAppleId: appAppleId,
                environment: environment,
                state: state,
                on: db
            )
        case .message:
            guard
                try await store.retention.retentionAsset(
                    SimRetentionMessage.self,
                    identifier,
                    appAppleId: appAppleId,
                    environment: environment,
                    on: db
                ) != nil
            else { throw RetentionRefusal(.messageNotFound, "no message \(id)") }
            try await store.retention.setRetentionAssetState(
                SimRetentionMessage.self,
                identifier,
                appAppleId: appAppleId,
                environment: environment,
                state: state,
                on: db
            )
        }
    }
}
