import Foundation
import TillCore

/// The payload of an App Store Server Notification V2 (the JWS in ``ResponseBodyV2``'s `signedPayload`).
///
/// ```
/// {"notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY",
///  "notificationUUID":"002e14d5-51f5-4503-b5a8-c3a1af68eb20","version":"2.0",
///  "signedDate":1698148900000,
///  "data":{"environment":"Sandbox","appAppleId":41234,"bundleId":"com.example", …}}
/// ```
///
/// Exactly one of `data`, `summary`, `externalPurchaseToken` and `appData` is present.
/// Every field is optional and named as Apple's key; dates are epoch milliseconds
/// (decode and encode with ``AppleJSON``). Unknown keys are ignored when decoding.
public struct ResponseBodyV2DecodedPayload: JWSPayload, Hashable {
    public static var payloadKind: JWSPayloadKind { .notification }

    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    /// Unique per notification; a retried delivery carries the same UUID.
    public var notificationUUID: String?
    /// The notification format version, `"2.0"`.
    public var version: String?
    /// When the App Store signed the notification.
    public var signedDate: Date?
    /// The app, environment and signed transaction/renewal info the notification is about.
    public var data: NotificationData?
    /// The result of a renewal date extension for all active subscribers.
    public var summary: NotificationSummary?
    /// An external purchase token (External Purchase API).
    public var externalPurchaseToken: ExternalPurchaseToken?
    /// The app data of a RESCIND_CONSENT notification.
    public var appData: AppData?

    public init(
        notificationType: NotificationType? = nil,
        subtype: NotificationSubtype? = nil,
        notificationUUID: String? = nil,
        version: String? = nil,
        signedDate: Date? = nil,
        data: NotificationData? = nil,
        summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = version
        self.signedDate = signedDate
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
    }

    /// `signedDate`: the chain is checked at the moment Apple signed the notification.
    public var verificationDate: Date? { signedDate }

    /// The identity of `data`, else `summary`, else `externalPurchaseToken`, else `appData`;
    /// empty when the payload has none of them.
    public var identity: PayloadIdentity {
        if let data {
            PayloadIdentity(bundleId: data.bundleId, appAppleId: data.appAppleId, environment: data.environment)
        } else if let summary {
            PayloadIdentity(
                bundleId: summary.bundleId,
                appAppleId: summary.appAppleId,
                environment: summary.environment
            )
        } else if let externalPurchaseToken {
            PayloadIdentity(
                bundleId: externalPurchaseToken.bundleId,
                appAppleId: externalPurchaseToken.appAppleId,
                environment: externalPurchaseToken.environment
            )
        } else if let appData {
            PayloadIdentity(
                bundleId: appData.bundleId,
                appAppleId: appData.appAppleId,
                environment: appData.environment
            )
        } else {
            PayloadIdentity()
        }
    }
}
