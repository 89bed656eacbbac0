import Foundation
import TillContract
import TillCore

// The server's answers, as the app SDK names them. Each is the type swift-openapi-generator made from the contract
// (Sources/TillContract/openapi.yaml): the client and the server read and write the same generated types, so a
// field the server adds is a field here. Only behaviour is written by hand, in the extensions below.

/// Where a submission stands on the server (`GET /v1/submissions/{id}`).
public typealias SubmissionStatus = Components.Schemas.Submission
/// What the server says a customer has (`GET /v1/customers/{id}`): unsigned, for display. Decisions about content
/// and credits come from the signed snapshot (``EntitlementStore``).
public typealias CustomerAccount = Components.Schemas.Customer
/// A transaction of a submission that was not credited to the customer (another customer owns it).
public typealias RefusedPurchase = Components.Schemas.RefusedTransaction
/// The server's answer to a submission: recorded (and maybe already confirmed), with the customer's state. Its
/// `signedSnapshot` is not yet verified: ``EntitlementStore/accept(_:)`` checks and keeps it.
public typealias SubmissionAnswer = Components.Schemas.SubmissionResult
/// The server's answer to a restore: the submission and everything the customer can have back.
public typealias RestoreAnswer = Components.Schemas.RestoreResult
/// A signed download URL for one file (`POST /v1/customers/{id}/downloads`); relative to the server's base URL,
/// it works without the app key until `expiresAt`.
public typealias ContentLink = Components.Schemas.ContentDownload
/// The answer to `GET /v1/customers/{id}/snapshot`: the signed snapshot, and its payload in the clear. Only
/// `signedSnapshot` counts: ``EntitlementStore`` verifies it and ignores the clear copy.
public typealias SnapshotAnswer = Components.Schemas.SignedSnapshot
/// A promotional offer the server signed for a customer (`POST /v1/customers/{id}/offers/promotional`); its
/// ``promotionalOffer`` is what a ``Payment`` carries.
public typealias SignedPromotionalOffer = Components.Schemas.PromotionalOfferSignature
/// The server's signed word on a customer's introductory offer; `compactJWS` goes in
/// ``Payment/introductoryOfferEligibility``.
public typealias SignedIntroductoryEligibility = Components.Schemas.IntroductoryEligibilitySignature
/// The AppTransaction the server verified and keeps for a customer (`PUT` and `GET /v1/customers/{id}/app-transaction`).
public typealias ServerAppTransaction = Components.Schemas.AppTransaction

extension Components.Schemas.PromotionalOfferSignature {
    /// The offer as a payment carries it, in the format the server signed.
    public var promotionalOffer: PromotionalOffer? {
        if let compactJWS { return PromotionalOffer(offerIdentifier: offerIdentifier, compactJWS: compactJWS) }
        guard let nonce, let uuid = UUID(uuidString: nonce), let timestamp, let signature else { return nil }
        return PromotionalOffer(
            offerIdentifier: offerIdentifier,
            keyIdentifier: keyIdentifier,
            nonce: uuid,
            timestamp: timestamp,
            signature: signature
        )
    }
}

extension Components.Schemas.ContentDownload {
    /// The file the link downloads, as the master list describes it.
    public var file: CatalogueFile {
        CatalogueFile(name: name, sha256: sha256, size: size, contentType: contentType)
    }
}
