import Foundation
import TillCatalogue
import TillContract
import TillFormats
import TillLedger

/// A customer's AppTransaction, verified: a row of `srv_app_transactions`, one per customer (the account the id
/// resolved to). Apple's fields as the App Store signed them, the JWS itself, and when the server stored it.
struct AppTransactionRecord: Codable, Sendable, Hashable {
    var bundleId: String
    var customerId: String
    var environment: Components.Schemas.Environment
    var appAppleId: Int64?
    var appTransactionId: String?
    var applicationVersion: String?
    var versionExternalIdentifier: Int64?
    var originalApplicationVersion: String?
    var originalPurchaseDate: Int64?
    var preorderDate: Int64?
    var receiptCreationDate: Int64?
    var originalPlatform: String?
    var deviceVerification: String?
    var deviceVerificationNonce: String?
    var signedAppTransaction: String
    var receivedAt: Int64

    init(
        _ payload: AppTransaction,
        environment: Components.Schemas.Environment,
        jws: String,
        bundleId: String,
        customerId: String,
        at now: Int64
    ) {
        self.bundleId = bundleId
        self.customerId = customerId
        self.environment = environment
        appAppleId = payload.appAppleId
        appTransactionId = payload.appTransactionId
        applicationVersion = payload.applicationVersion
        versionExternalIdentifier = payload.versionExternalIdentifier
        originalApplicationVersion = payload.originalApplicationVersion
        originalPurchaseDate = payload.originalPurchaseDate?.millisecondsSince1970
        preorderDate = payload.preorderDate?.millisecondsSince1970
        receiptCreationDate = payload.receiptCreationDate?.millisecondsSince1970
        originalPlatform = payload.originalPlatform?.rawValue
        deviceVerification = payload.deviceVerification
        deviceVerificationNonce = payload.deviceVerificationNonce
        signedAppTransaction = jws
        receivedAt = now
    }

    /// Whether `newer`, sent for the same customer, takes this one's place: a production AppTransaction is replaced
    /// only by another production one, and a production one replaces any other; within that, the one the App Store
    /// signed later (a second device, a reinstall, an AppTransaction StoreKit refreshed) wins, and a tie keeps the
    /// one stored. The same JWS again replaces nothing.
    func isReplaced(by newer: AppTransactionRecord) -> Bool {
        guard newer.signedAppTransaction != signedAppTransaction else { return false }
        switch (environment == .production, newer.environment == .production) {
        case (true, false): return false
        case (false, true): return true
        default: return (newer.receiptCreationDate ?? .min) > (receiptCreationDate ?? .min)
        }
    }

    /// The row as the app API answers it.
    var view: AppTransactionView {
        AppTransactionView(
            customerId: customerId,
            bundleId: bundleId,
            environment: environment,
            appAppleId: appAppleId,
            appTransactionId: appTransactionId,
            applicationVersion: applicationVersion,
            versionExternalIdentifier: versionExternalIdentifier,
            originalApplicationVersion: originalApplicationVersion,
            originalPurchaseDate: originalPurchaseDate,
            preorderDate: preorderDate,
            receiptCreationDate: receiptCreationDate,
            originalPlatform: originalPlatform,
            deviceVerification: deviceVerification,
            deviceVerificationNonce: deviceVerificationNonce,
            signedAppTransaction: signedAppTransaction,
            receivedAt: receivedAt
        )
    }
}
