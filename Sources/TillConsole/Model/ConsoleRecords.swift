import Foundation
import TillCore

/// A signed-in console session, as `srv_console_sessions` keeps it: the SHA-256 of its cookie (the cookie itself is
/// never stored), the token its forms carry against cross-site requests, and when it ends.
package struct ConsoleSession: Codable, Sendable {
    package var tokenHash: String
    package var csrfToken: String
    package var createdAt: Int64
    package var expiresAt: Int64
    package var lastSeenAt: Int64
    /// The address it signed in from.
    package var address: String?
}

/// What an operator did in the console (`srv_console_actions.action`).
public enum ConsoleAction: String, Codable, Sendable, CaseIterable {
    case signIn, signInRefused, signOut
    case grant, revoke, adjustBalance
    case retrySubmission, retryAllSubmissions
    case saveProduct, uploadContent, deleteContent
    case createApp, updateApp, rotateSharedSecret, removeSharedSecret, setAPIKey, setInAppPurchaseKey
    case addCertificate, removeCertificate, putOffer, deleteOffer, catchUp
    case cancelImport
}

/// One action taken in the console, with the operator's note and how it ended.
package struct ConsoleActionRecord: Codable, Sendable {
    package var id: String = UUID.random().uuidString.lowercased()
    package var at: Int64
    package var action: ConsoleAction
    package var bundleId: String?
    /// What it was done to: a customer, a submission, a product, a file.
    package var target: String?
    package var note: String?
    /// `done`, or the refusal's code and message.
    package var outcome: String
    /// The first characters of the session's hash (never the cookie).
    package var session: String?
    package var address: String?
}
