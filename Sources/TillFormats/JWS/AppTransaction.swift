import Foundation
import TillCore

/// The payload of a signed app transaction (`signedAppTransactionInfo`, StoreKit 2 `AppTransaction`):
/// the customer's purchase of the app itself.
///
/// ```
/// {"receiptType":"Sandbox","appAppleId":531412,"bundleId":"com.example",
///  "applicationVersion":"1.2.3","versionExternalIdentifier":512,
///  "receiptCreationDate":1698148900000,"originalPurchaseDate":1698148800000,
///  "originalApplicationVersion":"1.1.2","appTransactionId":"71134","originalPlatform":"iOS", …}
/// ```
///
/// Every field is optional and named as Apple's key; dates are epoch milliseconds
/// (decode and encode with ``AppleJSON``). Unknown keys are ignored when decoding.
public struct AppTransaction: JWSPayload, Hashable {
    public static var payloadKind: JWSPayloadKind { .appTransaction }

    /// The environment the app was bought in.
    public var receiptType: AppStoreEnvironment?
    /// The app's Apple ID (absent in sandbox and Xcode).
    public var appAppleId: Int64?
    public var bundleId: String?
    /// The app version the customer has (CFBundleVersion on iOS, CFBundleShortVersionString on macOS).
    public var applicationVersion: String?
    /// The App Store's id of the app version (absent in sandbox and Xcode).
    public var versionExternalIdentifier: Int64?
    /// When the App Store created the app transaction; the chain is checked at this date.
    public var receiptCreationDate: Date?
    /// When the customer first bought (or downloaded) the app.
    public var originalPurchaseDate: Date?
    /// The app version the customer first bought.
    public var originalApplicationVersion: String?
    /// Base64 SHA-384 device verification value.
    public var deviceVerification: String?
    /// The nonce (UUID string) of `deviceVerification`.
    public var deviceVerificationNonce: String?
    /// When the customer pre-ordered the app (pre-orders only).
    public var preorderDate: Date?
    /// Unique per Apple Account and app download.
    public var appTransactionId: String?
    public var originalPlatform: OriginalPlatform?
    /// When the app requested the app transaction (emitted by Xcode).
    public var requestDate: Date?

    public init(
        receiptType: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        applicationVersion: String? = nil,
        versionExternalIdentifier: Int64? = nil,
        receiptCreationDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        originalApplicationVersion: String? = nil,
        deviceVerification: String? = nil,
        deviceVerificationNonce: String? = nil,
        preorderDate: Date? = nil,
        appTransactionId: String? = nil,
        originalPlatform: OriginalPlatform? = nil,
        requestDate: Date? = nil
    ) {
        self.receiptType = receiptType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion
        self.versionExternalIdentifier = versionExternalIdentifier
        self.receiptCreationDate = receiptCreationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.originalApplicationVersion = originalApplicationVersion
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
        self.preorderDate = preorderDate
        self.appTransactionId = appTransactionId
        self.originalPlatform = originalPlatform
        self.requestDate = requestDate
    }

    /// `receiptCreationDate`: an app transaction has no `signedDate`.
    public var verificationDate: Date? { receiptCreationDate }

    /// `bundleId`, `appAppleId`, and `receiptType` as the environment.
    public var identity: PayloadIdentity {
        PayloadIdentity(bundleId: bundleId, appAppleId: appAppleId, environment: receiptType)
    }
}
