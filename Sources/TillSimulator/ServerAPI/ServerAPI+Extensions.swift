import Foundation
import TillCore
import TillFormats

/// Renewal-date extensions over the App Store Server API: Apple's checks of the request, then the subscription
/// engine (``SubscriptionEngine/extendRenewalDate(originalTransactionId:app:environment:days:reason:requestIdentifier:)``).
extension ServerAPI {
    /// Extend a Subscription Renewal Date.
    func extendRenewalDate(
        _ originalTransactionId: String,
        body: [UInt8],
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws -> ExtendRenewalDateResponse {
        guard Self.isTransactionId(originalTransactionId) else {
            throw ServerAPIFailure(.invalidOriginalTransactionId)
        }
        guard let request = try? TillFormatsJSON.decoder.decode(ExtendRenewalDateRequest.self, from: Data(body)) else {
            throw ServerAPIFailure(.generalBadRequest)
        }
        let (days, reason, identifier) = try Self.checked(
            days: request.extendByDays,
            reason: request.extendReasonCode,
            requestIdentifier: request.requestIdentifier
        )
        switch try await subscriptions.extendRenewalDate(
            originalTransactionId: originalTransactionId,
            app: app,
            environment: environment,
            days: days,
            reason: reason,
            requestIdentifier: identifier
        ) {
        case .success(let extended):
            return ExtendRenewalDateResponse(
                originalTransactionId: extended.originalTransactionId,
                webOrderLineItemId: extended.webOrderLineItemId,
                success: true,
                effectiveDate: extended.effectiveDate.map(Date.init(milliseconds:))
            )
        case .failure(.notFound): throw ServerAPIFailure(.originalTransactionIdNotFound)
        case .failure(.familyShared): throw ServerAPIFailure(.familySharedSubscriptionExtensionIneligible)
        case .failure(.maximumReached): throw ServerAPIFailure(.subscriptionMaxExtension)
        case .failure(.ineligible): throw ServerAPIFailure(.subscriptionExtensionIneligible)
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: accepted at once, done in the background.
    func extendRenewalDatesForAllActiveSubscribers(body: [UInt8], app: SimApp, environment: AppStoreEnvironment)
        async throws -> MassExtendRenewalDateResponse
    {
        guard let request = try? TillFormatsJSON.decoder.decode(MassExtendRenewalDateRequest.self, from: Data(body))
        else { throw ServerAPIFailure(.generalBadRequest) }
        let (days, reason, identifier) = try Self.checked(
            days: request.extendByDays,
            reason: request.extendReasonCode,
            requestIdentifier: request.requestIdentifier
        )
        // A mass extension's request identifier is a UUID (it names the request in the status call's path).
        guard UUID(uuidString: identifier) != nil else { throw ServerAPIFailure(.invalidRequestIdentifier) }
        guard let productId = request.productId,
            let product = try await store.appStoreConnect.product(
                appAppleId: app.appAppleId,
                productId: productId,
                on: store.sql
            ),
            product.type == .autoRenewable
        else { throw ServerAPIFailure(.invalidProductId) }
        if let storefronts = request.storefrontCountryCodes {
            guard !storefronts.isEmpty else { throw ServerAPIFailure(.invalidEmptyStorefrontCountryCodeList) }
            guard storefronts.allSatisfy({ $0.count == 3 && $0.allSatisfy { $0.isASCII && $0.isUppercase } }) else {
                throw ServerAPIFailure(.invalidStorefrontCountryCode)
            }
        }
        // A request identifier already used names the request it started: asking again starts nothing new.
        _ = try await subscriptions.requestMassExtension(
            app: app,
            environment: environment,
            productId: productId,
            storefronts: request.storefrontCountryCodes ?? [],
            days: days,
            reason: reason,
            requestIdentifier: identifier
        )
        return MassExtendRenewalDateResponse(requestIdentifier: identifier)
    }

    /// Get Status of Subscription Renewal Date Extensions.
    func massExtensionStatus(
        productId: String,
        requestIdentifier: String,
        app: SimApp,
        environment: AppStoreEnvironment
    ) async throws -> MassExtendRenewalDateStatusResponse {
        guard Self.isRequestIdentifier(requestIdentifier) else { throw ServerAPIFailure(.invalidRequestIdentifier) }
        guard
            let request = try await store.serverAPI.massExtension(
                requestIdentifier: requestIdentifier,
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            ), request.productId == productId
        else { throw ServerAPIFailure(.statusRequestNotFound) }
        // The counts and the date are given once the request is complete.
        return MassExtendRenewalDateStatusResponse(
            requestIdentifier: request.requestIdentifier,
            complete: request.complete,
            completeDate: request.complete ? request.completeDate.map(Date.init(milliseconds:)) : nil,
            succeededCount: request.complete ? Int64(request.succeededCount) : nil,
            failedCount: request.complete ? Int64(request.failedCount) : nil
        )
    }

    /// Apple's limits on an extension request: 1 to 90 days, a reason code of 0 to 3, a request identifier.
    private static func checked(days: Int?, reason: ExtendReasonCode?, requestIdentifier: String?)
        throws(ServerAPIFailure) -> (Int, Int, String)
    {
        guard let days, (1...90).contains(days) else { throw ServerAPIFailure(.invalidExtendByDays) }
        guard let reason = reason?.rawValue, (0...3).contains(reason) else {
            throw ServerAPIFailure(.invalidExtendReasonCode)
        }
        guard let requestIdentifier, isRequestIdentifier(requestIdentifier) else {
            throw ServerAPIFailure(.invalidRequestIdentifier)
        }
        return (days, reason, requestIdentifier)
    }

    /// A request identifier is the developer's own string (Apple suggests a UUID) of at most 128 characters.
    static func isRequestIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 128
    }
}
