import TillCatalogue
import TillCore
import TillFormats
import TillLedger

/// Why the intake room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum IntakeReason: RefusalReason {
    case idempotencyKeyReused
    case invalidEnvironment
    case invalidIdempotencyKey
    case malformedPayload
    case oneFormatExpected
    case ownedByAnotherCustomer
    case sandboxNotAccepted
    case storeKitTestingNotEnabled
    case submissionLost
    case submissionNotFound
    case untrustedForProduction
    case untrustedForXcode
    /// Signed data that does not verify: the verifier's own reason is the code (`invalidChain`,
    /// `verificationFailure`…).
    case unverified(VerificationFailure.Reason)

    package var code: String {
        switch self {
        case .unverified(let reason): reason.rawValue
        default: String(describing: self)
        }
    }
}

package typealias IntakeRefusal = Refused<IntakeReason>
