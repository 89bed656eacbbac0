/// An `errorCode` of the App Store Server API (apple-formats §4.9).
///
/// ```
/// {"errorCode":4040010,"errorMessage":"Transaction id not found."}
/// ```
///
/// The first three digits are the HTTP status of the response (4000006 → 400, 4290000 → 429).
/// Clients must tolerate codes they do not know (Apple's fixture uses 9990000); the raw value is kept.
/// Every code Apple's official libraries list is here, with the two Send Consumption Information codes Apple
/// documents that they do not yet (4000044, 4000209).
public struct ServerAPIErrorCode: AppleIntValue {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// An error that indicates an invalid request.
    public static let generalBadRequest: ServerAPIErrorCode = 4000000
    /// An error that indicates an invalid app identifier.
    public static let invalidAppIdentifier: ServerAPIErrorCode = 4000002
    /// An error that indicates an invalid request revision.
    public static let invalidRequestRevision: ServerAPIErrorCode = 4000005
    /// An error that indicates an invalid transaction identifier.
    public static let invalidTransactionId: ServerAPIErrorCode = 4000006
    /// An error that indicates an invalid original transaction identifier.
    public static let invalidOriginalTransactionId: ServerAPIErrorCode = 4000008
    /// An error that indicates an invalid extend-by-days value.
    public static let invalidExtendByDays: ServerAPIErrorCode = 4000009
    /// An error that indicates an invalid reason code.
    public static let invalidExtendReasonCode: ServerAPIErrorCode = 4000010
    /// An error that indicates an invalid request identifier.
    public static let invalidRequestIdentifier: ServerAPIErrorCode = 4000011
    /// An error that indicates that the start date is earlier than the earliest allowed date.
    public static let startDateTooFarInPast: ServerAPIErrorCode = 4000012
    /// An error that indicates that the end date precedes the start date, or the two dates are equal.
    public static let startDateAfterEndDate: ServerAPIErrorCode = 4000013
    /// An error that indicates the pagination token is invalid.
    public static let invalidPaginationToken: ServerAPIErrorCode = 4000014
    /// An error that indicates the start date is invalid.
    public static let invalidStartDate: ServerAPIErrorCode = 4000015
    /// An error that indicates the end date is invalid.
    public static let invalidEndDate: ServerAPIErrorCode = 4000016
    /// An error that indicates the pagination token expired.
    public static let paginationTokenExpired: ServerAPIErrorCode = 4000017
    /// An error that indicates the notification type or subtype is invalid.
    public static let invalidNotificationType: ServerAPIErrorCode = 4000018
    /// An error that indicates the request is invalid because it has too many constraints applied.
    public static let multipleFiltersSupplied: ServerAPIErrorCode = 4000019
    /// An error that indicates the test notification token is invalid.
    public static let invalidTestNotificationToken: ServerAPIErrorCode = 4000020
    /// An error that indicates an invalid sort parameter.
    public static let invalidSort: ServerAPIErrorCode = 4000021
    /// An error that indicates an invalid product type parameter.
    public static let invalidProductType: ServerAPIErrorCode = 4000022
    /// An error that indicates the product ID parameter is invalid.
    public static let invalidProductId: ServerAPIErrorCode = 4000023
    /// An error that indicates an invalid subscription group identifier.
    public static let invalidSubscriptionGroupIdentifier: ServerAPIErrorCode = 4000024
    /// An error that indicates the query parameter exclude-revoked is invalid.
    public static let invalidExcludeRevoked: ServerAPIErrorCode = 4000025
    /// An error that indicates an invalid in-app ownership type parameter.
    public static let invalidInAppOwnershipType: ServerAPIErrorCode = 4000026
    /// An error that indicates a required storefront country code is empty.
    public static let invalidEmptyStorefrontCountryCodeList: ServerAPIErrorCode = 4000027
    /// An error that indicates a storefront code is invalid.
    public static let invalidStorefrontCountryCode: ServerAPIErrorCode = 4000028
    /// An error that indicates the revoked parameter contains an invalid value.
    public static let invalidRevoked: ServerAPIErrorCode = 4000030
    /// An error that indicates the status parameter is invalid.
    public static let invalidStatus: ServerAPIErrorCode = 4000031
    /// An error that indicates the value of the account tenure field is invalid.
    public static let invalidAccountTenure: ServerAPIErrorCode = 4000032
    /// An error that indicates the value of the app account token field is invalid.
    public static let invalidAppAccountToken: ServerAPIErrorCode = 4000033
    /// An error that indicates the value of the consumption status field is invalid.
    public static let invalidConsumptionStatus: ServerAPIErrorCode = 4000034
    /// An error that indicates the customer consented field is invalid or doesn't indicate that the customer consented.
    public static let invalidCustomerConsented: ServerAPIErrorCode = 4000035
    /// An error that indicates the value in the delivery status field is invalid.
    public static let invalidDeliveryStatus: ServerAPIErrorCode = 4000036
    /// An error that indicates the value in the lifetime dollars purchased field is invalid.
    public static let invalidLifetimeDollarsPurchased: ServerAPIErrorCode = 4000037
    /// An error that indicates the value in the lifetime dollars refunded field is invalid.
    public static let invalidLifetimeDollarsRefunded: ServerAPIErrorCode = 4000038
    /// An error that indicates the value in the platform field is invalid.
    public static let invalidPlatform: ServerAPIErrorCode = 4000039
    /// An error that indicates the value in the playtime field is invalid.
    public static let invalidPlayTime: ServerAPIErrorCode = 4000040
    /// An error that indicates the value in the sample content provided field is invalid.
    public static let invalidSampleContentProvided: ServerAPIErrorCode = 4000041
    /// An error that indicates the value in the user status field is invalid.
    public static let invalidUserStatus: ServerAPIErrorCode = 4000042
    /// An error that indicates the transaction is not a consumable in-app purchase.
    public static let invalidTransactionNotConsumable: ServerAPIErrorCode = 4000043
    /// An error that indicates an invalid refund preference.
    public static let invalidRefundPreference: ServerAPIErrorCode = 4000044
    /// An error that indicates the transaction type is not supported by this endpoint.
    public static let invalidTransactionTypeNotSupported: ServerAPIErrorCode = 4000047
    /// An error that indicates the endpoint doesn't support an app transaction ID.
    public static let appTransactionIdNotSupported: ServerAPIErrorCode = 4000048
    /// An error that indicates the image isn't a valid PNG of an accepted size (Retention Messaging).
    public static let invalidImage: ServerAPIErrorCode = 4000161
    /// An error that indicates a message header is longer than 66 characters.
    public static let headerTooLong: ServerAPIErrorCode = 4000162
    /// An error that indicates a message body is longer than 144 characters.
    public static let bodyTooLong: ServerAPIErrorCode = 4000163
    /// An error that indicates an invalid locale.
    public static let invalidLocale: ServerAPIErrorCode = 4000164
    /// An error that indicates alternative text is longer than 150 characters.
    public static let altTextTooLong: ServerAPIErrorCode = 4000175
    /// An error that indicates the app account token is not a valid UUID.
    public static let invalidAppAccountTokenUUID: ServerAPIErrorCode = 4000183
    /// An error that indicates the endpoint doesn't support Family Sharing transactions.
    public static let familyTransactionNotSupported: ServerAPIErrorCode = 4000185
    /// An error that indicates the transaction ID is not an original transaction ID.
    public static let transactionIdNotOriginalTransactionId: ServerAPIErrorCode = 4000187
    /// An error that indicates a consumption percentage was sent for an auto-renewable subscription.
    public static let consumptionPercentageAutoRenewableSubscription: ServerAPIErrorCode = 4000209
    /// An error that indicates an invalid performance test request.
    public static let invalidPerformanceTestRequest: ServerAPIErrorCode = 4000211
    /// An error that indicates an invalid performance test request identifier.
    public static let invalidRequestId: ServerAPIErrorCode = 4000212
    /// An error that indicates a performance test is already running.
    public static let existingPerformanceTestRun: ServerAPIErrorCode = 4000213
    /// An error that indicates an invalid realtime URL.
    public static let badRequestRealtimeUrl: ServerAPIErrorCode = 4000215
    /// An error that indicates an image of the wrong size for where a message uses it.
    public static let badRequestImageSize: ServerAPIErrorCode = 4000216
    /// An error that indicates a message has too many bullet points.
    public static let badRequestTooManyBulletPoints: ServerAPIErrorCode = 4000218
    /// An error that indicates a bullet point's text is longer than 66 characters.
    public static let badRequestBulletPointTextTooLong: ServerAPIErrorCode = 4000219
    /// An error that indicates a header above the image was asked for a message without an image.
    public static let badRequestAboveImageRequiresAnImage: ServerAPIErrorCode = 4000224
    /// An error that indicates the subscription doesn't qualify for a renewal-date extension.
    public static let subscriptionExtensionIneligible: ServerAPIErrorCode = 4030004
    /// An error that indicates the subscription has reached the maximum number of renewal-date extensions.
    public static let subscriptionMaxExtension: ServerAPIErrorCode = 4030005
    /// An error that indicates a Family Sharing subscription can't be extended directly.
    public static let familySharedSubscriptionExtensionIneligible: ServerAPIErrorCode = 4030007
    /// An error that indicates the app has the maximum number of images.
    public static let maximumNumberOfImagesReached: ServerAPIErrorCode = 4030014
    /// An error that indicates the app has the maximum number of messages.
    public static let maximumNumberOfMessagesReached: ServerAPIErrorCode = 4030016
    /// An error that indicates the message isn't approved.
    public static let messageNotApproved: ServerAPIErrorCode = 4030017
    /// An error that indicates the message's image isn't approved.
    public static let imageNotApproved: ServerAPIErrorCode = 4030018
    /// An error that indicates a message still uses the image.
    public static let imageInUse: ServerAPIErrorCode = 4030019
    /// An error that indicates no performance test passed, so a production realtime URL can't be set.
    public static let forbiddenNoPassingTest: ServerAPIErrorCode = 4030026
    /// An error that indicates the App Store account wasn't found.
    public static let accountNotFound: ServerAPIErrorCode = 4040001
    /// An error response that indicates the App Store account wasn't found, but you can try again.
    public static let accountNotFoundRetryable: ServerAPIErrorCode = 4040002
    /// An error that indicates the app wasn't found.
    public static let appNotFound: ServerAPIErrorCode = 4040003
    /// An error response that indicates the app wasn't found, but you can try again.
    public static let appNotFoundRetryable: ServerAPIErrorCode = 4040004
    /// An error that indicates an original transaction identifier wasn't found.
    public static let originalTransactionIdNotFound: ServerAPIErrorCode = 4040005
    /// An error response that indicates the original transaction identifier wasn't found, but you can try again.
    public static let originalTransactionIdNotFoundRetryable: ServerAPIErrorCode = 4040006
    /// An error that indicates that the App Store server couldn't find a notifications URL for your app in this environment.
    public static let serverNotificationUrlNotFound: ServerAPIErrorCode = 4040007
    /// An error that indicates that the test notification token is expired or the test notification status isn't available.
    public static let testNotificationNotFound: ServerAPIErrorCode = 4040008
    /// An error that indicates the server didn't find a subscription-renewal-date extension request for the request identifier and product identifier you provided.
    public static let statusRequestNotFound: ServerAPIErrorCode = 4040009
    /// An error that indicates a transaction identifier wasn't found.
    public static let transactionIdNotFound: ServerAPIErrorCode = 4040010
    /// An error that indicates the image wasn't found.
    public static let imageNotFound: ServerAPIErrorCode = 4040014
    /// An error that indicates the message wasn't found.
    public static let messageNotFound: ServerAPIErrorCode = 4040015
    /// An error that indicates the performance test wasn't found.
    public static let performanceTestRunNotFound: ServerAPIErrorCode = 4040018
    /// An error that indicates no AppTransaction exists for the customer.
    public static let appTransactionDoesNotExist: ServerAPIErrorCode = 4040019
    /// An error that indicates no default message is configured.
    public static let defaultMessageNotFound: ServerAPIErrorCode = 4040020
    /// An error that indicates no realtime URL is configured.
    public static let realtimeUrlNotFound: ServerAPIErrorCode = 4040021
    /// An error that indicates the image identifier already exists (retention messaging).
    public static let imageAlreadyExists: ServerAPIErrorCode = 4090000
    /// An error that indicates the message identifier already exists (retention messaging).
    public static let messageAlreadyExists: ServerAPIErrorCode = 4090001
    /// An error that indicates that the request exceeded the rate limit.
    public static let rateLimitExceeded: ServerAPIErrorCode = 4290000
    /// An error that indicates a general internal error.
    public static let generalInternal: ServerAPIErrorCode = 5000000
    /// An error response that indicates an unknown error occurred, but you can try again.
    public static let generalInternalRetryable: ServerAPIErrorCode = 5000001

    /// Every code listed above, with Apple's name for it, in ascending order.
    public static let known: [(code: ServerAPIErrorCode, name: String)] = [
        (generalBadRequest, "generalBadRequest"),
        (invalidAppIdentifier, "invalidAppIdentifier"),
        (invalidRequestRevision, "invalidRequestRevision"),
        (invalidTransactionId, "invalidTransactionId"),
        (invalidOriginalTransactionId, "invalidOriginalTransactionId"),
        (invalidExtendByDays, "invalidExtendByDays"),
        (invalidExtendReasonCode, "invalidExtendReasonCode"),
        (invalidRequestIdentifier, "invalidRequestIdentifier"),
        (startDateTooFarInPast, "startDateTooFarInPast"),
        (startDateAfterEndDate, "startDateAfterEndDate"),
        (invalidPaginationToken, "invalidPaginationToken"),
        (invalidStartDate, "invalidStartDate"),
        (invalidEndDate, "invalidEndDate"),
        (paginationTokenExpired, "paginationTokenExpired"),
        (invalidNotificationType, "invalidNotificationType"),
        (multipleFiltersSupplied, "multipleFiltersSupplied"),
        (invalidTestNotificationToken, "invalidTestNotificationToken"),
        (invalidSort, "invalidSort"),
        (invalidProductType, "invalidProductType"),
        (invalidProductId, "invalidProductId"),
        (invalidSubscriptionGroupIdentifier, "invalidSubscriptionGroupIdentifier"),
        (invalidExcludeRevoked, "invalidExcludeRevoked"),
        (invalidInAppOwnershipType, "invalidInAppOwnershipType"),
        (invalidEmptyStorefrontCountryCodeList, "invalidEmptyStorefrontCountryCodeList"),
        (invalidStorefrontCountryCode, "invalidStorefrontCountryCode"),
        (invalidRevoked, "invalidRevoked"),
        (invalidStatus, "invalidStatus"),
        (invalidAccountTenure, "invalidAccountTenure"),
        (invalidAppAccountToken, "invalidAppAccountToken"),
        (invalidConsumptionStatus, "invalidConsumptionStatus"),
        (invalidCustomerConsented, "invalidCustomerConsented"),
        (invalidDeliveryStatus, "invalidDeliveryStatus"),
        (invalidLifetimeDollarsPurchased, "invalidLifetimeDollarsPurchased"),
        (invalidLifetimeDollarsRefunded, "invalidLifetimeDollarsRefunded"),
        (invalidPlatform, "invalidPlatform"),
        (invalidPlayTime, "invalidPlayTime"),
        (invalidSampleContentProvided, "invalidSampleContentProvided"),
        (invalidUserStatus, "invalidUserStatus"),
        (invalidTransactionNotConsumable, "invalidTransactionNotConsumable"),
        (invalidRefundPreference, "invalidRefundPreference"),
        (invalidTransactionTypeNotSupported, "invalidTransactionTypeNotSupported"),
        (appTransactionIdNotSupported, "appTransactionIdNotSupported"),
        (invalidImage, "invalidImage"),
        (headerTooLong, "headerTooLong"),
        (bodyTooLong, "bodyTooLong"),
        (invalidLocale, "invalidLocale"),
        (altTextTooLong, "altTextTooLong"),
        (invalidAppAccountTokenUUID, "invalidAppAccountTokenUUID"),
        (familyTransactionNotSupported, "familyTransactionNotSupported"),
        (transactionIdNotOriginalTransactionId, "transactionIdNotOriginalTransactionId"),
        (consumptionPercentageAutoRenewableSubscription, "consumptionPercentageAutoRenewableSubscription"),
        (invalidPerformanceTestRequest, "invalidPerformanceTestRequest"),
        (invalidRequestId, "invalidRequestId"),
        (existingPerformanceTestRun, "existingPerformanceTestRun"),
        (badRequestRealtimeUrl, "badRequestRealtimeUrl"),
        (badRequestImageSize, "badRequestImageSize"),
        (badRequestTooManyBulletPoints, "badRequestTooManyBulletPoints"),
        (badRequestBulletPointTextTooLong, "badRequestBulletPointTextTooLong"),
        (badRequestAboveImageRequiresAnImage, "badRequestAboveImageRequiresAnImage"),
        (subscriptionExtensionIneligible, "subscriptionExtensionIneligible"),
        (subscriptionMaxExtension, "subscriptionMaxExtension"),
        (familySharedSubscriptionExtensionIneligible, "familySharedSubscriptionExtensionIneligible"),
        (maximumNumberOfImagesReached, "maximumNumberOfImagesReached"),
        (maximumNumberOfMessagesReached, "maximumNumberOfMessagesReached"),
        (messageNotApproved, "messageNotApproved"),
        (imageNotApproved, "imageNotApproved"),
        (imageInUse, "imageInUse"),
        (forbiddenNoPassingTest, "forbiddenNoPassingTest"),
        (accountNotFound, "accountNotFound"),
        (accountNotFoundRetryable, "accountNotFoundRetryable"),
        (appNotFound, "appNotFound"),
        (appNotFoundRetryable, "appNotFoundRetryable"),
        (originalTransactionIdNotFound, "originalTransactionIdNotFound"),
        (originalTransactionIdNotFoundRetryable, "originalTransactionIdNotFoundRetryable"),
        (serverNotificationUrlNotFound, "serverNotificationUrlNotFound"),
        (testNotificationNotFound, "testNotificationNotFound"),
        (statusRequestNotFound, "statusRequestNotFound"),
        (transactionIdNotFound, "transactionIdNotFound"),
        (imageNotFound, "imageNotFound"),
        (messageNotFound, "messageNotFound"),
        (performanceTestRunNotFound, "performanceTestRunNotFound"),
        (appTransactionDoesNotExist, "appTransactionDoesNotExist"),
        (defaultMessageNotFound, "defaultMessageNotFound"),
        (realtimeUrlNotFound, "realtimeUrlNotFound"),
        (imageAlreadyExists, "imageAlreadyExists"),
        (messageAlreadyExists, "messageAlreadyExists"),
        (rateLimitExceeded, "rateLimitExceeded"),
        (generalInternal, "generalInternal"),
        (generalInternalRetryable, "generalInternalRetryable"),
    ]

    /// The messages Apple's own fixtures and documentation show for a code.
    private static let appleMessages: [Int: String] = [
        4000006: "Invalid transaction id.",
        4000183: "Invalid request. The app account token field must be a valid UUID.",
        4000185: "Invalid request. Family Sharing transactions aren't supported by this endpoint.",
        4000187: "Invalid request. The transaction ID provided is not an original transaction ID.",
        4040010: "Transaction id not found.",
        4040019: "No AppTransaction exists for the customer.",
        4290000: "Rate limit exceeded.",
        5000000: "An unknown error occurred.",
    ]

    /// Apple's name of the code (`invalidTransactionId`); nil for a code not listed here.
    public var name: String? {
        Self.known.first { $0.code == self }?.name
    }

    /// The HTTP status Apple answers with: the first three digits of the code (400 for 4000006).
    public var httpStatus: Int {
        var value = abs(rawValue)
        while value >= 1000 { value /= 10 }
        return value
    }

    /// Whether Apple marks the condition as temporary (its `…Retryable` codes, and the rate limit).
    public var isRetryable: Bool {
        self == .rateLimitExceeded || name?.hasSuffix("Retryable") == true
    }

    /// The `errorMessage` Apple sends with this code.
    ///
    /// Apple's exact text where its fixtures show it; otherwise the code's name as a sentence
    /// (`invalidExtendByDays` → "Invalid extend by days."), which is how Apple's older messages read;
    /// "An unknown error occurred." for an unlisted code.
    public var message: String {
        if let text = Self.appleMessages[rawValue] { return text }
        guard let name else { return "An unknown error occurred." }
        var words: [String] = []
        var current = ""
        for character in name {
            if character.isUppercase, !current.isEmpty, !(current.last?.isUppercase ?? false) {
                words.append(current)
                current = ""
            }
            current.append(character)
        }
        words.append(current)
        let sentence = words.map { $0.allSatisfy(\.isUppercase) ? $0 : $0.lowercased() }.joined(separator: " ")
        return sentence.prefix(1).uppercased() + sentence.dropFirst() + "."
    }
}
