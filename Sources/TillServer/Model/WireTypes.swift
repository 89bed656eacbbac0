import TillContract

// The server's names for the wire types it answers with. Each is the type swift-openapi-generator made from
// Sources/TillContract/openapi.yaml (see docs/contract.md): a field added there is a field here, on the client, in
// the served document and in the docs at once.

/// What an app sends after a purchase or restore: the customer and exactly one of the three formats.
public typealias SubmissionRequest = Components.Schemas.SubmissionRequest
/// A submission and where its confirmation with Apple stands.
public typealias SubmissionView = Components.Schemas.Submission
/// Where a submission's confirmation with Apple stands.
public typealias SubmissionState = Components.Schemas.SubmissionState
/// The format a submission carried.
public typealias SubmissionKind = Components.Schemas.SubmissionKind
/// Why a confirmation attempt did not settle its submission: what decides when it is tried again. Apple's answer
/// is classified once, in the worker; the queue's SQL reads the stored column rather than parsing `lastStatus`.
public typealias RetryCause = Components.Schemas.RetryCause
/// A transaction a submission carried that was not credited to this customer.
public typealias RefusedTransaction = Components.Schemas.RefusedTransaction
/// A purchase of a customer, as the server recorded it.
public typealias PurchaseView = Components.Schemas.Purchase
/// Everything the server knows a customer has.
public typealias CustomerView = Components.Schemas.Customer
/// An entitlement a customer has now.
public typealias Entitlement = Components.Schemas.Entitlement
/// A subscription's renewal state, as the customer view shows it.
public typealias SubscriptionStateView = Components.Schemas.SubscriptionState
/// The answer to a submission.
public typealias SubmissionResult = Components.Schemas.SubmissionResult
