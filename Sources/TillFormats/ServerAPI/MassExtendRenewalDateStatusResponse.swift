import Foundation

/// The response of Get Status of Subscription Renewal Date Extensions
/// (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`).
///
/// ```
/// {"requestIdentifier":"20fba8a0-…","complete":true,"completeDate":1698148900000,
///  "succeededCount":30,"failedCount":2}
/// ```
public struct MassExtendRenewalDateStatusResponse: Codable, Sendable, Hashable {
    public var requestIdentifier: String?
    /// Whether the App Store finished extending.
    public var complete: Bool?
    /// When it finished.
    public var completeDate: Date?
    /// How many subscriptions were extended.
    public var succeededCount: Int64?
    /// How many subscriptions could not be extended.
    public var failedCount: Int64?

    public init(
        requestIdentifier: String? = nil,
        complete: Bool? = nil,
        completeDate: Date? = nil,
        succeededCount: Int64? = nil,
        failedCount: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}
