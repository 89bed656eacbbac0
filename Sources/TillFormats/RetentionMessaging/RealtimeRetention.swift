import Foundation
import TillCore

/// What the App Store sends a developer's Get Retention Message endpoint when a customer is about to cancel a
/// subscription: `{"signedPayload":"<JWS>"}` whose payload is this, signed like a notification.
///
/// ```
/// {"originalTransactionId":"2000000900000001","appAppleId":1234567890,"productId":"premium.monthly",
///  "userLocale":"en-US","requestIdentifier":"3db5c98d-…","environment":"Sandbox","signedDate":1795325540043}
/// ```
public struct DecodedRealtimeRequestBody: JWSPayload, Hashable {
    public static var payloadKind: JWSPayloadKind { .realtimeRequest }

    public var originalTransactionId: String?
    public var appAppleId: Int64?
    public var productId: String?
    public var userLocale: String?
    public var requestIdentifier: String?
    public var environment: AppStoreEnvironment?
    public var signedDate: Date?

    public init(
        originalTransactionId: String? = nil,
        appAppleId: Int64? = nil,
        productId: String? = nil,
        userLocale: String? = nil,
        requestIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedDate: Date? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.signedDate = signedDate
    }

    public var verificationDate: Date? { signedDate }

    public var identity: PayloadIdentity { PayloadIdentity(appAppleId: appAppleId, environment: environment) }
}

/// The developer's answer to a realtime request: exactly one of a message, a switch-plan offer or a promotional
/// offer, each naming an approved message.
public struct RealtimeResponseBody: Codable, Sendable, Hashable {
    public struct Message: Codable, Sendable, Hashable {
        public var messageIdentifier: String?
        public init(messageIdentifier: String?) { self.messageIdentifier = messageIdentifier }
    }

    public struct AlternateProduct: Codable, Sendable, Hashable {
        public var messageIdentifier: String?
        /// A subscription of the same group to switch to.
        public var productId: String?
        /// `BILLED_UPFRONT` or `MONTHLY` (12-month-commitment plans).
        public var billingPlanType: String?

        public init(messageIdentifier: String?, productId: String?, billingPlanType: String? = nil) {
            self.messageIdentifier = messageIdentifier
            self.productId = productId
            self.billingPlanType = billingPlanType
        }
    }

    public struct PromotionalOffer: Codable, Sendable, Hashable {
        public var messageIdentifier: String?
        /// A promotional offer signed as a compact JWS (`aud` `promotional-offer`).
        public var promotionalOfferSignatureV2: String?
        public var promotionalOfferSignatureV1: PromotionalOfferSignatureV1?

        public init(
            messageIdentifier: String?,
            promotionalOfferSignatureV2: String? = nil,
            promotionalOfferSignatureV1: PromotionalOfferSignatureV1? = nil
        ) {
            self.messageIdentifier = messageIdentifier
            self.promotionalOfferSignatureV2 = promotionalOfferSignatureV2
            self.promotionalOfferSignatureV1 = promotionalOfferSignatureV1
        }
    }

    public var message: Message?
    public var alternateProduct: AlternateProduct?
    public var promotionalOffer: PromotionalOffer?

    public init(message: Message? = nil, alternateProduct: AlternateProduct? = nil, promotionalOffer: PromotionalOffer? = nil) {
        self.message = message
        self.alternateProduct = alternateProduct
        self.promotionalOffer = promotionalOffer
    }
}

/// A promotional offer signed the original way: ECDSA over Apple's joined fields, as a realtime answer carries it.
public struct PromotionalOfferSignatureV1: Codable, Sendable, Hashable {
    public var encodedSignature: String?
    public var productId: String?
    public var nonce: String?
    /// Milliseconds since 1970, when the signature was made.
    public var timestamp: Int64?
    public var keyId: String?
    public var offerIdentifier: String?
    public var appAccountToken: String?

    public init(
        encodedSignature: String?,
        productId: String?,
        nonce: String?,
        timestamp: Int64?,
        keyId: String?,
        offerIdentifier: String?,
        appAccountToken: String? = nil
    ) {
        self.encodedSignature = encodedSignature
        self.productId = productId
        self.nonce = nonce
        self.timestamp = timestamp
        self.keyId = keyId
        self.offerIdentifier = offerIdentifier
        self.appAccountToken = appAccountToken
    }
}
