import TillCore

/// Why the customer room refuses what it is asked; the HTTP layer gives each reason its status
/// (`API/RefusalStatuses.swift`).
package enum CustomerReason: String, RefusalReason {
    case accountIsAGuest
    case guestIsAnAccount
    case guestLinkedElsewhere
    case invalidAlias
    case invalidCustomerId
}

package typealias CustomerRefusal = Refused<CustomerReason>
