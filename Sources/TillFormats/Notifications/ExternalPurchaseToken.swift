import Foundation
import TillCore

/// The `externalPurchaseToken` object of an EXTERNAL_PURCHASE_TOKEN notification.
///
/// ```
/// {"externalPurchaseId":"SANDBOX_b2158121-…","tokenCreationDate":1698148950000,
///  "appAppleId":55555,"bundleId":"com.example"}
/// ```
///
/// It has no environment field: a sandbox token's id starts with `SANDBOX`.
public struct ExternalPurchaseToken: Codable, Sendable, Hashable {
    /// The token's id; prefixed `SANDBOX` in the sandbox.
    public var externalPurchaseId: String?
    /// When the token was created.
    public var tokenCreationDate: Date?
    public var appAppleId: Int64?
    public var bundleId: String?
    /// When a custom link token expires (custom link tokens only).
    public var tokenExpirationDate: Date?
    /// `ACQUISITION` or `SERVICES` (custom link tokens only).
    public var tokenType: String?

    public init(
        externalPurchaseId: String? = nil,
        tokenCreationDate: Date? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        tokenExpirationDate: Date? = nil,
        tokenType: String? = nil
    ) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.tokenExpirationDate = tokenExpirationDate
        self.tokenType = tokenType
    }

    /// Sandbox when `externalPurchaseId` starts with `SANDBOX`, else production (also when the id is missing).
    public var environment: AppStoreEnvironment {
        externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
    }
}
