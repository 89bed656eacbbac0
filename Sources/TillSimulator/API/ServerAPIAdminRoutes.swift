import Foundation
import Hummingbird
import TillCore
import TillFormats
import TillHTTPKit

struct ReviewInput: Codable { var state: String }

/// What App Store Connect shows of the Server API's records, and the review of retention images and messages.
func addServerAPIAdminRoutes(to group: RouterGroup<SimulatorRequestContext>, _ simulator: Simulator) {
    // Consumption information the developer sent, with when Apple asked for it.
    group.get("apps/{app}/consumption") { request, context in
        try jsonResponse(
            try await simulator.serverAPI.consumptionLog(
                appAppleId: try int64(context, "app"),
                environment: try adminEnvironment(request)
            ),
            context: context
        )
    }
    // Retention Messaging: images, messages, default messages, the realtime URL and the calls made to it.
    group.get("apps/{app}/retention") { request, context in
        try jsonResponse(
            try await simulator.retention.overview(
                appAppleId: try int64(context, "app"),
                environment: try adminEnvironment(request)
            ),
            context: context
        )
    }
    for kind in ["images", "messages"] {
        group.post("apps/{app}/retention/\(kind)/{id}/review") { request, context in
            let input = try await decodeBody(ReviewInput.self, from: request, context: context)
            let state = RetentionReviewState(rawValue: input.state)
            guard state == .approved || state == .rejected || state == .pending else {
                throw TillHTTPError.badRequest("invalidState", "state is APPROVED, REJECTED or PENDING")
            }
            try await simulator.retention.review(
                kind == "images" ? .image : .message,
                id: try context.parameters.require("id"),
                state: state,
                appAppleId: try int64(context, "app"),
                environment: try adminEnvironment(request)
            )
            return Response(status: .noContent)
        }
    }
}

/// `?environment=` of an admin read: `sandbox` (the default) or `production`.
func adminEnvironment(_ request: Request) throws -> AppStoreEnvironment {
    let name = request.uri.queryParameters.get("environment") ?? "sandbox"
    guard let environment = AppStoreEnvironment(parsing: name), environment == .sandbox || environment == .production
    else { throw TillHTTPError.badRequest("invalidEnvironment", "environment is sandbox or production, got \(name)") }
    return environment
}

struct PriceConsentInput: Codable { var accept: Bool }
struct RescindConsentInput: Codable { var bundleId: String }

/// Admin actions that make the App Store send its other notifications: REFUND_REVERSED, PRICE_INCREASE,
/// RESCIND_CONSENT, EXTERNAL_PURCHASE_TOKEN, and the Advanced Commerce ones.
func addEventAdminRoutes(to group: RouterGroup<SimulatorRequestContext>, _ simulator: Simulator) {
    // A transaction as the store keeps it: its order id (the customer's e-mailed receipt), offer, revocation, ….
    group.get("transactions/{transaction}") { _, context in
        let id = try parameter(context, "transaction")
        guard let tx = try await simulator.store.purchases.transaction(id: id, on: simulator.store.sql) else {
            throw TillHTTPError.notFound("transaction", id)
        }
        return try jsonResponse(tx, context: context)
    }
    group.post("transactions/{transaction}/reverse-refund") { _, context in
        try jsonResponse(
            try await simulator.subscriptions.reverseRefund(transactionId: try context.parameters.require("transaction")),
            context: context
        )
    }
    group.post("apps/{app}/products/{product}/price-increase") { request, context in
        let input = try await decodeBody(PriceIncreaseInput.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.subscriptions.increasePrice(
                appAppleId: try int64(context, "app"),
                productId: try context.parameters.require("product"),
                input
            ),
            context: context
        )
    }
    group.post("accounts/{account}/rescind-consent") { request, context in
        let input = try await decodeBody(RescindConsentInput.self, from: request, context: context)
        let uuid = try await simulator.events.rescindConsent(
            accountId: try context.parameters.require("account"),
            bundleId: input.bundleId
        )
        return try jsonResponse(["notificationUUID": uuid], status: .accepted, context: context)
    }
    group.post("apps/{app}/external-purchase-tokens") { request, context in
        let input = try await decodeBody(ExternalPurchaseTokenInput.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.events.externalPurchaseToken(appAppleId: try int64(context, "app"), input),
            status: .created,
            context: context
        )
    }
    group.post("subscriptions/{original}/advanced-commerce/{event}") { _, context in
        let name = try context.parameters.require("event")
        guard let event = AdvancedCommerceEvent(rawValue: name) else {
            throw TillHTTPError.notFound("Advanced Commerce event", name)
        }
        let uuid = try await simulator.events.advancedCommerce(
            event,
            originalTransactionId: try context.parameters.require("original")
        )
        return try jsonResponse(["notificationUUID": uuid], status: .accepted, context: context)
    }
}
