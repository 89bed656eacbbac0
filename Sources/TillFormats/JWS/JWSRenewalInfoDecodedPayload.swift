import Foundation
import TillCore

/// The payload of signed subscription renewal information (`signedRenewalInfo`).
///
/// ```
/// {"originalTransactionId":"12345","autoRenewProductId":"com.example.product.2",
///  "productId":"com.example.product","autoRenewStatus":1,"expirationIntent":1,
///  "isInBillingRetryPeriod":true,"signedDate":1698148800000,"environment":"Sandbox",
///  "renewalDate":1698148850000,"renewalPrice":9990,"currency":"USD", …}
/// ```
///
/// Every field is optional and named as Apple's key; dates are epoch milliseconds
/// (decode and encode with ``AppleJSON``). Unknown keys, including `advancedCommerceInfo`,
/// are ignored when decoding.
public struct JWSRenewalInfoDecodedPayload: JWSPayload, Hashable {
    public static var payloadKind: JWSPayloadKind { .renewalInfo }

    /// Why the subscription expired (only once it has).
    public var expirationIntent: ExpirationIntent?
    /// The transaction id of the original purchase of the subscription.
    public var originalTransactionId: String?
    /// The product the subscription renews to (differs from `productId` after an up/down/crossgrade).
    public var autoRenewProductId: String?
    /// The product of the current period.
    public var productId: String?
    public var autoRenewStatus: AutoRenewStatus?
    /// Whether the App Store is still trying to charge a failed renewal.
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: PriceIncreaseStatus?
    /// When the billing grace period ends (only while in one).
    public var gracePeriodExpiresDate: Date?
    /// The offer that applies to the next period.
    public var offerType: OfferType?
    public var offerIdentifier: String?
    /// When the App Store signed the payload.
    public var signedDate: Date?
    public var environment: AppStoreEnvironment?
    /// The start of the current run of subscribed periods (lapses under 60 days are ignored).
    public var recentSubscriptionStartDate: Date?
    /// When the subscription renews next.
    public var renewalDate: Date?
    /// ISO 4217 currency code of `renewalPrice`.
    public var currency: String?
    /// The next period's price in milliunits of `currency`.
    public var renewalPrice: Int64?
    public var offerDiscountType: OfferDiscountType?
    /// The win-back offers the customer can redeem.
    public var eligibleWinBackOfferIds: [String]?
    /// The UUID the app attached to the purchase, as Apple spells it (lowercase).
    public var appAccountToken: String?
    /// The id of the app download transaction (the AppTransaction).
    public var appTransactionId: String?
    /// The offer duration as an ISO 8601 duration, e.g. `P1Y`.
    public var offerPeriod: String?
    public var renewalBillingPlanType: BillingPlanType?
    /// The commitment the subscription renews into.
    public var commitmentInfo: CommitmentInfo?
    /// Base64 SHA-384 device verification value (Xcode and on-device data).
    public var deviceVerification: String?
    /// The nonce (UUID string) of `deviceVerification`.
    public var deviceVerificationNonce: String?

    /// The commitment a subscription renews into (`commitmentInfo` of renewal info).
    public struct CommitmentInfo: Codable, Sendable, Hashable {
        /// The product the commitment renews to.
        public var commitmentAutoRenewProductId: String?
        public var commitmentAutoRenewStatus: AutoRenewStatus?
        public var commitmentRenewalBillingPlanType: BillingPlanType?
        /// When the commitment renews.
        public var commitmentRenewalDate: Date?
        /// The renewal price of the commitment in milliunits.
        public var commitmentRenewalPrice: Int64?

        public init(
            commitmentAutoRenewProductId: String? = nil,
            commitmentAutoRenewStatus: AutoRenewStatus? = nil,
            commitmentRenewalBillingPlanType: BillingPlanType? = nil,
            commitmentRenewalDate: Date? = nil,
            commitmentRenewalPrice: Int64? = nil
        ) {
            self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
            self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
            self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
            self.commitmentRenewalDate = commitmentRenewalDate
            self.commitmentRenewalPrice = commitmentRenewalPrice
        }
    }

    public init(
        expirationIntent: ExpirationIntent? = nil,
        originalTransactionId: String? = nil,
        autoRenewProductId: String? = nil,
        productId: String? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        priceIncreaseStatus: PriceIncreaseStatus? = nil,
        gracePeriodExpiresDate: Date? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        signedDate: Date? = nil,
        environment: AppStoreEnvironment? = nil,
        recentSubscriptionStartDate: Date? = nil,
        renewalDate: Date? = nil,
        currency: String? = nil,
        renewalPrice: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        appAccountToken: String? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil,
        renewalBillingPlanType: BillingPlanType? = nil,
        commitmentInfo: CommitmentInfo? = nil,
        deviceVerification: String? = nil,
        deviceVerificationNonce: String? = nil
    ) {
        self.expirationIntent = expirationIntent
        self.originalTransactionId = originalTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.productId = productId
        self.autoRenewStatus = autoRenewStatus
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.priceIncreaseStatus = priceIncreaseStatus
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.signedDate = signedDate
        self.environment = environment
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalDate = renewalDate
        self.currency = currency
        self.renewalPrice = renewalPrice
        self.offerDiscountType = offerDiscountType
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.renewalBillingPlanType = renewalBillingPlanType
        self.commitmentInfo = commitmentInfo
        self.deviceVerification = deviceVerification
        self.deviceVerificationNonce = deviceVerificationNonce
    }

    /// `signedDate`: the chain is checked at the moment Apple signed the renewal info.
    public var verificationDate: Date? { signedDate }

    /// Only the `environment`: renewal info carries no bundle id.
    public var identity: PayloadIdentity { PayloadIdentity(environment: environment) }
}
