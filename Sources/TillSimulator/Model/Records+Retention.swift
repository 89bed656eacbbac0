import Foundation
import TillCore
import TillFormats

/// What an app uploads for Retention Messaging and Apple reviews: an image or a message, each in its table and named
/// by its identifier (`SimRetentionStore`'s functions serve both).
protocol RetentionAsset: SimulatorRow {
    static var identifierColumn: String { get }
    /// How many of them an app may have (Apple's limit).
    static var maximum: Int { get }
    /// Apple's refusals: none with this identifier; one has it already; the app has `maximum`.
    static var notFound: ServerAPIErrorCode { get }
    static var alreadyExists: ServerAPIErrorCode { get }
    static var maximumReached: ServerAPIErrorCode { get }
    var appAppleId: Int64 { get }
    var environment: AppStoreEnvironment { get }
    var identifier: String { get }
}

/// An image uploaded for retention messages (PNG, base64 in the row).
struct SimRetentionImage: RetentionAsset, Hashable {
    static let table = "sim_retention_images"
    static let identifierColumn = "image_identifier"
    static let maximum = 2000
    static let notFound = ServerAPIErrorCode.imageNotFound
    static let alreadyExists = ServerAPIErrorCode.imageAlreadyExists
    static let maximumReached = ServerAPIErrorCode.maximumNumberOfImagesReached
    var identifier: String { imageIdentifier }

    var appAppleId: Int64
    var environment: AppStoreEnvironment
    var imageIdentifier: String
    var imageSize: RetentionImageSize
    var state: RetentionReviewState
    var png: String
    var createdAt: Int64
}

/// A retention message: its content as uploaded (`UploadMessageRequestBody`, JSON) and its review state.
struct SimRetentionMessage: RetentionAsset, Hashable {
    static let table = "sim_retention_messages"
    static let identifierColumn = "message_identifier"
    static let maximum = 2000
    static let notFound = ServerAPIErrorCode.messageNotFound
    static let alreadyExists = ServerAPIErrorCode.messageAlreadyExists
    static let maximumReached = ServerAPIErrorCode.maximumNumberOfMessagesReached
    var identifier: String { messageIdentifier }

    var appAppleId: Int64
    var environment: AppStoreEnvironment
    var messageIdentifier: String
    var state: RetentionReviewState
    var content: String
    var createdAt: Int64
}

/// The message shown for a product and locale when the realtime URL gives none.
struct SimRetentionDefault: Codable, Sendable, Hashable {
    var appAppleId: Int64
    var environment: AppStoreEnvironment
    var productId: String
    var locale: String
    var messageIdentifier: String
    var updatedAt: Int64
}

/// One call of the developer's realtime URL: a customer about to cancel, or a performance test's request.
public struct SimRetentionRequest: Codable, Sendable, Hashable {
    public var requestIdentifier: String
    public var appAppleId: Int64
    public var environment: AppStoreEnvironment
    public var originalTransactionId: String
    public var productId: String
    public var userLocale: String
    public var performanceTestId: String?
    /// `PENDING`, then `SUCCESS` or the failure (`TIMED_OUT`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `INVALID_RESPONSE`,
    /// `NO_RESPONSE`, …), as Apple's performance test counts them.
    public var outcome: SendAttemptResult
    /// The developer's answer, as sent.
    public var response: String?
    public var durationMs: Int?
    public var createdAt: Int64
}

/// A performance test of a realtime URL (sandbox).
struct SimPerformanceTest: Codable, Sendable, Hashable {
    var requestId: String
    var appAppleId: Int64
    var environment: AppStoreEnvironment
    var originalTransactionId: String
    var target: String
    var result: PerformanceTestStatus
    /// The configuration it ran with (`PerformanceTestConfig`, JSON).
    var summary: String?
    var createdAt: Int64
}

extension SendAttemptResult {
    /// A realtime call sent and not answered yet: the simulator's own mark, never one of Apple's results.
    static let pending: SendAttemptResult = "PENDING"
}
