import Foundation
import TillCatalogue
import TillCore
import TillLedger

/// A signed-in console session, as `srv_console_sessions` keeps it: the SHA-256 of its cookie (the cookie itself is
/// never stored), the token its forms carry against cross-site requests, and when it ends.
struct ConsoleSession: Codable, Sendable {
    var tokenHash: String
    var csrfToken: String
    var createdAt: Int64
    var expiresAt: Int64
    var lastSeenAt: Int64
    /// The address it signed in from.
    var address: String?
}

/// What an operator did in the console (`srv_console_actions.action`).
public enum ConsoleAction: String, Codable, Sendable, CaseIterable {
    case signIn, signInRefused, signOut
    case grant, revoke, adjustBalance
    case retrySubmission, retryAllSubmissions
    case saveProduct, uploadContent, deleteContent
    case createApp, updateApp, rotateSharedSecret, removeSharedSecret, setAPIKey, setInAppPurchaseKey
    case addCertificate, removeCertificate, putOffer, deleteOffer, catchUp
}

/// One action taken in the console, with the operator's note and how it ended.
struct ConsoleActionRecord: Codable, Sendable {
    var id: String = UUID.random().uuidString.lowercased()
    var at: Int64
    var action: ConsoleAction
    var bundleId: String?
    /// What it was done to: a customer, a submission, a product, a file.
    var target: String?
    var note: String?
    /// `done`, or the refusal's code and message.
    var outcome: String
    /// The first characters of the session's hash (never the cookie).
    var session: String?
    var address: String?
}
