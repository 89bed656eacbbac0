import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SQLKit
import TillCore
import TillFormats
import TillHTTPKit
import TillStorage

/// What a customer about to cancel sees: the message the developer's realtime URL chose, else the default message
/// of the product and locale, else none.
public struct RetentionMessageShown: Codable, Sendable, Hashable {
    /// `realtime`, `default` or `none`.
    public var source: String
    /// The realtime request's identifier, when the realtime URL was asked.
    public var requestIdentifier: String?
    /// How the realtime call went: `SUCCESS`, or why it was not used (`TIMED_OUT`, `INVALID_RESPONSE`, …).
    public var realtimeOutcome: SendAttemptResult?
    public var messageIdentifier: String?
    public var header: String?
    public var body: String?
    public var headerPosition: String?
    public var image: UploadMessageImage?
    public var bulletPoints: [BulletPoint]?
    /// A switch-plan offer: the product to switch to.
    public var alternateProductId: String?
    public var billingPlanType: String?
    /// A promotional offer, signed by the developer, as the realtime answer gave it.
    public var promotionalOffer: RealtimeResponseBody.PromotionalOffer?
    /// The product the offer is for, and the offer as a payment carries it (`POST …/payments` with
    /// `productId` and `promotionalOffer`): what the customer buys if they accept.
    public var offerProductId: String?
    public var paymentOffer: PromotionalOfferInput?
}

extension RetentionMessaging {
    /// The customer views a subscription and taps Cancel: the App Store asks the developer's realtime URL (a
    /// `{"signedPayload"}` POST, answered within the realtime timeout) and shows its choice, or falls back.
    public func retentionMessage(
        deviceId: String,
        originalTransactionId: String,
        locale: String,
        environment: AppStoreEnvironment
    ) async throws -> RetentionMessageShown {
        let (_, account) = try await store.requireDevice(deviceId, environment: environment, on: store.sql)
        guard
            let subscription = try await store.subscriptions.subscription(
                originalTransactionId: originalTransactionId,
                on: store.sql
            ),
            subscription.accountId == account.id, subscription.environment == environment
        else { throw RetentionRefusal(.subscriptionNotFound, "no subscription \(originalTransactionId)") }
        let app = try await store.requireApp(appAppleId: subscription.appAppleId, on: store.sql)
        var shown = RetentionMessageShown(source: "none")
        if let url = try await store.retention.realtimeURL(
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        ) {
            let call = try await callRealtimeURL(
                url,
                app: app,
                subscription: subscription,
                locale: locale,
                performanceTestId: nil,
                timeout: configuration.realtimeTimeout
            )
            shown.requestIdentifier = call.requestIdentifier
            shown.realtimeOutcome = call.outcome
            if var chosen = call.shown {
                chosen.requestIdentifier = call.requestIdentifier
                chosen.realtimeOutcome = call.outcome
                return chosen
            }
        }
        if let fallback = try await store.retention.retentionDefault(
            productId: subscription.productId,
            locale: locale,
            appAppleId: app.appAppleId,
            environment: environment,
            on: store.sql
        ), let message = try await approvedMessage(fallback.messageIdentifier, app: app, environment: environment) {
            shown.source = "default"
            shown.fill(from: message)
        }
        return shown
    }

    /// The request log of the admin API: every customer request to the realtime URL and what it answered.
    public func realtimeRequests(appAppleId: Int64, environment: AppStoreEnvironment) async throws
        -> [SimRetentionRequest]
    {
        try await store.retention.retentionRequests(
            appAppleId: appAppleId,
            environment: environment,
            on: store.sql
        )
    }

    // MARK: The realtime call

    /// A message the App Store may show: it and its images are approved.
    struct ApprovedMessage: Sendable {
        var id: String
        var content: UploadMessageRequestBody
    }

    struct RealtimeCall: Sendable {
        var requestIdentifier: String
        var outcome: SendAttemptResult
        /// What the customer is shown of a valid answer.
        var shown: RetentionMessageShown?
        var durationMs: Int
    }

    /// Sends one signed realtime request and records it with its outcome. A non-200 answer is
    /// `UNSUCCESSFUL_HTTP_RESPONSE_CODE`; a body that is not a realtime response, does not name exactly one choice,
    /// or names one the App Store cannot show (a message missing or not approved, a product outside the group, an
    /// offer message with an image) is `INVALID_RESPONSE`, as Apple's performance test counts them.
    func callRealtimeURL(
        _ url: String,
        app: SimApp,
        subscription: SimSubscription,
        locale: String,
        performanceTestId: String?,
        timeout: Duration
    ) async throws -> RealtimeCall {
        let environment = subscription.environment
        let identifier = UUID().uuidString.lowercased()
        let now = clock.now()
        var record = SimRetentionRequest(
            requestIdentifier: identifier,
            appAppleId: app.appAppleId,
            environment: environment,
            originalTransactionId: subscription.originalTransactionId,
            productId: subscription.productId,
            userLocale: locale,
            performanceTestId: performanceTestId,
            outcome: .pending,
            response: nil,
            durationMs: nil,
            createdAt: now.millisecondsSince1970
        )
        try await store.insert(record, on: store.sql)
        let signed = try receipts.signRealtimeRequest(
            DecodedRealtimeRequestBody(
                originalTransactionId: subscription.originalTransactionId,
                appAppleId: app.appAppleId,
                productId: subscription.productId,
                userLocale: locale,
                requestIdentifier: identifier,
                environment: environment,
                signedDate: now
            )
        )
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"signedPayload":"\#(signed)"}"#))
        let started = ContinuousClock.now
        var shown: RetentionMessageShown?
        var raw: String?
        let outcome: SendAttemptResult
        do {
            let answer = try await http.execute(request, timeout: .milliseconds(timeout.milliseconds))
            let body = try await answer.body.collect(upTo: 64 * 1024)
            raw = String(buffer: body)
            if answer.status.code != 200 {
                outcome = .unsuccessfulHTTPResponseCode
            } else if let decoded = try? TillFormatsJSON.decoder.decode(
                RealtimeResponseBody.self,
                from: Data(body.readableBytesView)
            ), decoded.choices == 1, let valid = try await show(decoded, subscription: subscription, app: app) {
                shown = valid
                outcome = .success
            } else {
                outcome = .invalidResponse
            }
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout
        {
            outcome = .timedOut
        } catch let error as HTTPClientError where error == .remoteConnectionClosed {
            outcome = .prematureClose
        } catch {
            outcome = .noResponse
        }
        let elapsed = ContinuousClock.now - started
        record.outcome = outcome
        record.response = raw.map { String($0.prefix(4096)) }
        record.durationMs = Int(elapsed.milliseconds)
        try await store.update(record, on: store.sql)
        return RealtimeCall(
            requestIdentifier: identifier,
            outcome: outcome,
            shown: shown,
            durationMs: record.durationMs ?? 0
        )
    }

    /// What the customer sees of a valid realtime answer; nil when it names a message that is missing or not
    /// approved, a product outside the subscription's group, or an offer message with an image (Apple then falls back
    /// to the default message).
    private func show(_ response: RealtimeResponseBody, subscription: SimSubscription, app: SimApp) async throws
        -> RetentionMessageShown?
    {
        let environment = subscription.environment
        var shown = RetentionMessageShown(source: "realtime")
        if let message = response.message {
            guard let found = try await approvedMessage(message.messageIdentifier, app: app, environment: environment)
            else { return nil }
            shown.fill(from: found)
            return shown
        }
        let identifier = response.alternateProduct?.messageIdentifier ?? response.promotionalOffer?.messageIdentifier
        guard let found = try await approvedMessage(identifier, app: app, environment: environment),
            found.content.imageIdentifiers.isEmpty
        else { return nil }
        shown.fill(from: found)
        if let alternate = response.alternateProduct {
            guard let productId = alternate.productId,
                let product = try await store.appStoreConnect.product(
                    appAppleId: app.appAppleId,
                    productId: productId,
                    on: store.sql
                ),
                product.type == .autoRenewable, product.subscriptionGroup == subscription.subscriptionGroup,
                product.productId != subscription.productId
            else { return nil }
            shown.alternateProductId = productId
            shown.billingPlanType = alternate.billingPlanType
        } else if let offer = response.promotionalOffer {
            guard (offer.promotionalOfferSignatureV1 == nil) != (offer.promotionalOfferSignatureV2 == nil) else {
                return nil
            }
            shown.promotionalOffer = offer
            if let original = offer.promotionalOfferSignatureV1 {
                guard let identifier = original.offerIdentifier else { return nil }
                shown.offerProductId = original.productId
                shown.paymentOffer = PromotionalOfferInput(
                    offerIdentifier: identifier,
                    keyIdentifier: original.keyId,
                    nonce: original.nonce,
                    timestamp: original.timestamp,
                    signature: original.encodedSignature
                )
            } else if let jws = offer.promotionalOfferSignatureV2 {
                // Read, not verified: the payment that uses it is checked as every offer payment is.
                struct Claims: Decodable { var productId: String?; var offerIdentifier: String? }
                let segments = jws.split(separator: ".")
                guard segments.count == 3, let bytes = Base64.decode(segments[1], alphabet: .url),
                    let claims = try? JSONDecoder().decode(Claims.self, from: Data(bytes)),
                    let identifier = claims.offerIdentifier
                else { return nil }
                shown.offerProductId = claims.productId
                shown.paymentOffer = PromotionalOfferInput(offerIdentifier: identifier, compactJWS: jws)
            }
        }
        return shown
    }

    /// A message with its id, when it and its images are approved.
    func approvedMessage(_ identifier: String?, app: SimApp, environment: AppStoreEnvironment) async throws
        -> ApprovedMessage?
    {
        guard let identifier,
            let message = try await store.retention.retentionAsset(
                SimRetentionMessage.self,
                identifier.lowercased(),
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            ), message.state == .approved
        else { return nil }
        let content = Self.content(of: message)
        for imageId in content.imageIdentifiers {
            let image = try await store.retention.retentionAsset(
                SimRetentionImage.self,
                imageId,
                appAppleId: app.appAppleId,
                environment: environment,
                on: store.sql
            )
            guard image?.state == .approved else { return nil }
        }
        return ApprovedMessage(id: message.messageIdentifier, content: content)
    }
}

extension RetentionMessageShown {
    mutating func fill(from message: RetentionMessaging.ApprovedMessage) {
        messageIdentifier = message.id
        header = message.content.header
        body = message.content.body
        headerPosition = message.content.headerPosition?.rawValue
        image = message.content.image
        bulletPoints = message.content.bulletPoints
    }
}

extension RealtimeResponseBody {
    /// How many of the three choices the answer names: Apple takes exactly one.
    var choices: Int {
        [message != nil, alternateProduct != nil, promotionalOffer != nil].filter { $0 }.count
    }
}

extension Duration {
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
