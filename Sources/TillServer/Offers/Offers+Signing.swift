import Crypto
import Foundation
import HTTPTypes
import Logging
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillStorage

/// Signing for apps: a promotional offer of the catalogue for a customer its rule admits, and a customer's
/// introductory-offer eligibility as the ledger (or the operator) decides it.
extension Offers {
    public typealias PromotionalOfferRequest = Components.Schemas.PromotionalOfferRequest
    public typealias PromotionalOfferSignature = Components.Schemas.PromotionalOfferSignature
    public typealias IntroductoryEligibilityRequest = Components.Schemas.IntroductoryEligibilityRequest
    public typealias IntroductoryEligibilitySignature = Components.Schemas.IntroductoryEligibilitySignature

    /// Signs a promotional offer for a customer, in the format asked for. Refused with `productNotFound` or
    /// `offerNotFound` when the catalogue does not have it, `notEligible` when its rule does not admit the customer
    /// now, `noSigningKey` when the app has no key.
    public func signPromotionalOffer(_ request: PromotionalOfferRequest, customerId: String, app: ServerApp)
        async throws -> PromotionalOfferSignature
    {
        if let token = request.appAccountToken {
            guard request.format == .signature else {
                throw OfferRefusal(
                    .appAccountTokenWithJWS,
                    "the JWS does not sign an app account token: send it with format signature, or leave it out"
                )
            }
            guard (1...255).contains(token.unicodeScalars.count) else {
                throw OfferRefusal(.invalidAppAccountToken, "appAccountToken has 1 to 255 characters")
            }
        }
        let product = try await product(bundleId: app.bundleId, productId: request.productId)
        guard
            let offer = try await offerStore.offer(
                bundleId: app.bundleId,
                productId: request.productId,
                offerIdentifier: request.offerIdentifier,
                on: database.sql
            ), let group = OfferRules.group(of: product)
        else {
            throw OfferRefusal(.offerNotFound, "no offer \(request.offerIdentifier) for \(request.productId)")
        }
        let signer = try signer(for: app)
        let customer = try await facts(of: customerId, in: group, app: app)
        guard OfferRules.admits(offer.eligibility, customer.history) else {
            throw OfferRefusal(
                .notEligible,
                "\(request.offerIdentifier) is for \(OfferRules.describe(offer.eligibility, group: group)); \(customer.owner) is not, by the ledger"
            )
        }
        let nonce = UUID()
        let now = clock.milliseconds
        var answer = PromotionalOfferSignature(
            format: request.format == .signature ? .signature : .jws,
            productId: request.productId,
            offerIdentifier: request.offerIdentifier,
            keyIdentifier: signer.keyId
        )
        switch request.format {
        case .signature:
            answer.nonce = nonce.uuidString.lowercased()
            answer.timestamp = now
            answer.appAccountToken = request.appAccountToken?.lowercased()
            answer.signature = try signer.promotionalSignature(
                productId: request.productId,
                offerIdentifier: request.offerIdentifier,
                appAccountToken: request.appAccountToken,
                nonce: nonce,
                timestamp: now
            )
        case .jws:
            answer.transactionId = customer.newestTransactionId
            answer.compactJWS = try await signer.signedRequest(
                audience: "promotional-offer",
                claims: OfferSigner.RequestClaims(
                    productId: request.productId,
                    offerIdentifier: request.offerIdentifier,
                    transactionId: customer.newestTransactionId
                ),
                nonce: nonce,
                issuedAt: now / 1000
            )
        }
        try await record(
            .promotionalOfferSigned,
            "\(request.offerIdentifier) of \(request.productId) (\(request.format.rawValue), key \(signer.keyId))",
            for: customer.owner,
            app: app,
            at: now
        )
        return answer
    }

    /// Signs whether a customer may have a subscription's introductory offer, as the ledger (or the operator's
    /// override) decides it, naming the customer's newest transaction in the ledger, or else `appTransactionId`: the
    /// request's, or that of the AppTransaction the customer's app recorded (`AppTransactions`).
    public func signIntroductoryEligibility(
        _ request: IntroductoryEligibilityRequest,
        customerId: String,
        app: ServerApp
    ) async throws -> IntroductoryEligibilitySignature {
        if let given = request.appTransactionId {
            guard (1...30).contains(given.count), given.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw OfferRefusal(.invalidAppTransactionId, "appTransactionId is 1 to 30 digits")
            }
        }
        let product = try await subscriptionProduct(bundleId: app.bundleId, productId: request.productId)
        let group = OfferRules.group(of: product) ?? product.productId
        let signer = try signer(for: app)
        let customer = try await facts(of: customerId, in: group, app: app)
        var named = customer.newestTransactionId ?? request.appTransactionId
        if named == nil {
            named = try await appTransactions.appTransactionId(bundleId: app.bundleId, owner: customer.owner)
        }
        guard let transactionId = named else {
            throw OfferRefusal(
                .appTransactionIdRequired,
                "the ledger has no purchase of \(customer.owner) to name and no AppTransaction of theirs was recorded: "
                    + "send appTransactionId (StoreKit's AppTransaction)"
            )
        }
        let override = try await offerStore.introductoryOverride(
            bundleId: app.bundleId,
            customerId: customer.owner,
            group: group,
            on: database.sql
        )
        let decision = OfferRules.introductoryOffer(customer.history, override: override?.allowIntroductoryOffer)
        let now = clock.milliseconds
        let jws = try await signer.signedRequest(
            audience: "introductory-offer-eligibility",
            claims: OfferSigner.RequestClaims(
                productId: request.productId,
                allowIntroductoryOffer: decision.allow,
                transactionId: transactionId
            ),
            nonce: UUID(),
            issuedAt: now / 1000
        )
        try await record(
            .introductoryEligibilitySigned,
            "\(request.productId): \(decision.allow) (\(decision.reason), key \(signer.keyId))",
            for: customer.owner,
            app: app,
            at: now
        )
        return IntroductoryEligibilitySignature(
            productId: request.productId,
            subscriptionGroup: group,
            allowIntroductoryOffer: decision.allow,
            reason: decision.reason,
            transactionId: transactionId,
            keyIdentifier: signer.keyId,
            compactJWS: jws
        )
    }

    /// The app's In-App Purchase key, or its App Store Server API key (Apple allows one key for both).
    func signer(for app: ServerApp) throws -> OfferSigner {
        let chosen: (id: String, issuer: String, pem: String)
        if let pem = app.inAppPurchasePrivateKey, let id = app.inAppPurchaseKeyId,
            let issuer = app.inAppPurchaseIssuerId
        {
            chosen = (id, issuer, pem)
        } else if let pem = app.apiPrivateKey, let id = app.apiKeyId, let issuer = app.apiIssuerId {
            chosen = (id, issuer, pem)
        } else {
            throw OfferRefusal(
                .noSigningKey,
                "\(app.bundleId) has no key to sign offers with: set inAppPurchaseKeyId, inAppPurchaseIssuerId and inAppPurchasePrivateKey (or the App Store Server API key)"
            )
        }
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: chosen.pem) else {
            throw OfferRefusal(.noSigningKey, "\(app.bundleId)'s key \(chosen.id) does not load")
        }
        return OfferSigner(keyId: chosen.id, issuerId: chosen.issuer, key: key, bundleId: app.bundleId)
    }

    /// What the ledger says of a customer (aliases resolved) in a group, and the customer's newest transaction.
    private func facts(of customerId: String, in group: String, app: ServerApp) async throws
        -> (owner: String, history: OfferRules.GroupHistory, newestTransactionId: String?)
    {
        let snapshot = try await database.read { db in
            try await self.customers.snapshot(bundleId: app.bundleId, customerId: customerId, on: db)
        }
        let history = OfferRules.history(
            in: group,
            ledger: snapshot.ledger,
            catalogue: try await catalogue.products(of: app.bundleId),
            gracePeriods: CustomerSnapshot.gracePeriods(snapshot.states),
            now: clock.milliseconds
        )
        // Apple's transactions only: an operator's grant (`grant-…`) is no App Store's, and Apple refuses a signature
        // that names it.
        let newest = snapshot.ledger.filter { !$0.isRevokedByRejection && $0.source != .operator }
            .max { $0.purchaseDate < $1.purchaseDate }
        return (snapshot.owner, history, newest?.transactionId)
    }

    /// Keeps who was given what, for the customer's timeline: a signature changes no money, credits or access, so
    /// it is not an event.
    private func record(
        _ kind: CustomerActivityKind,
        _ detail: String,
        for customerId: String,
        app: ServerApp,
        at now: Int64
    ) async throws {
        logger.info("\(kind.rawValue): \(app.bundleId) \(customerId) \(detail)")
        try await timelineStore.insert(
            CustomerActivity(bundleId: app.bundleId, customerId: customerId, at: now, kind: kind, detail: detail),
            on: database.sql
        )
    }
}
