import TillCore

/// Why the console's sign-in refuses what it is asked; the HTTP layer gives each reason its status
/// (TillServer's `API/RefusalStatuses.swift`).
package enum ConsoleReason: RefusalReason {
    case invalidToken
    /// Too many failed sign-ins from one address: the next is taken after this many seconds.
    case tooManySignIns(retryAfterSeconds: Int)

    package var code: String {
        switch self {
        case .invalidToken: "invalidToken"
        case .tooManySignIns: "tooManySignIns"
        }
    }
}

package typealias ConsoleRefusal = Refused<ConsoleReason>
