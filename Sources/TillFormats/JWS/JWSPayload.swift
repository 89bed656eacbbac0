import Foundation
import TillCore

/// The kinds of payload Apple signs as JWS.
public enum JWSPayloadKind: String, Sendable, Hashable, CaseIterable {
    /// `signedTransactionInfo` (StoreKit 2 `Transaction`).
    case transaction
    /// `signedRenewalInfo` (StoreKit 2 `Product.SubscriptionInfo.RenewalInfo`).
    case renewalInfo
    /// `signedAppTransactionInfo` (StoreKit 2 `AppTransaction`).
    case appTransaction
    /// `signedPayload` of an App Store Server Notification V2.
    case notification
    /// `signedPayload` of a Retention Messaging realtime request.
    case realtimeRequest
}

/// Where a signed payload says it belongs; checked against the verifier's configured app.
public struct PayloadIdentity: Sendable, Hashable {
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment?

    public init(bundleId: String? = nil, appAppleId: Int64? = nil, environment: AppStoreEnvironment? = nil) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
    }
}

/// A payload that travels as a JWS signed by the App Store.
public protocol JWSPayload: Codable, Sendable {
    /// Which kind of payload this is; decides which identity fields are checked.
    static var payloadKind: JWSPayloadKind { get }
    /// The instant the certificate chain is checked at when online checks are off:
    /// `signedDate` (for an AppTransaction, `receiptCreationDate`). Nil means "now".
    var verificationDate: Date? { get }
    /// The app and environment the payload belongs to.
    var identity: PayloadIdentity { get }
}
