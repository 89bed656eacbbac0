import Foundation
import Hummingbird
import Logging
import TillCore
import TillFormats
import TillHTTPKit

struct ProductsInput: Codable {
    var bundleId: String
    var productIdentifiers: [String]
    var deviceId: String?
    var locale: String?
}

struct BundleInput: Codable { var bundleId: String }

/// StoreKit as an app on a device sees it.
func addStoreKitRoutes(to group: RouterGroup<SimulatorRequestContext>, _ simulator: Simulator) {
    group.get("devices/{device}/can-make-payments") { _, context in
        let (_, account) = try await simulator.store.requireDevice(
            try context.parameters.require("device"),
            environment: try environment(context),
            on: simulator.store.sql
        )
        return try jsonResponse(["canMakePayments": account.canMakePayments], context: context)
    }
    group.post("products") { request, context in
        let input = try await decodeBody(ProductsInput.self, from: request, context: context)
        guard input.productIdentifiers.count <= 200 else {
            throw TillHTTPError.badRequest("tooManyProducts", "at most 200 product identifiers per request")
        }
        let environment = try environment(context)
        var storefront = "USA"
        if let deviceId = input.deviceId {
            storefront = try await simulator.store.requireDevice(
                deviceId,
                environment: environment,
                on: simulator.store.sql
            )
            .1.storefront
        }
        let response = try await simulator.payments.lookUpProducts(
            bundleId: input.bundleId,
            productIds: input.productIdentifiers,
            storefront: storefront,
            locale: input.locale ?? "en-US",
            environment: environment
        )
        return try jsonResponse(response, context: context)
    }
    group.post("payments") { request, context in
        let input = try await decodeBody(PaymentRequest.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.payments.addPayment(input, environment: try environment(context)),
            context: context
        )
    }
    group.get("devices/{device}/queue") { request, context in
        let bundleId = try bundle(request)
        let queue = try await simulator.payments.queue(
            deviceId: try context.parameters.require("device"),
            bundleId: bundleId,
            environment: try environment(context)
        )
        return try jsonResponse(queue, context: context)
    }
    group.post("devices/{device}/queue/{entry}/finish") { _, context in
        try await simulator.payments.finish(
            entryId: try context.parameters.require("entry"),
            deviceId: try context.parameters.require("device"),
            environment: try environment(context)
        )
        return Response(status: .noContent)
    }
    group.post("devices/{device}/restore") { request, context in
        let input = try await decodeBody(BundleInput.self, from: request, context: context)
        let result = try await simulator.payments.restore(
            deviceId: try context.parameters.require("device"),
            bundleId: input.bundleId,
            environment: try environment(context)
        )
        return try jsonResponse(result, context: context)
    }
    group.get("devices/{device}/receipt") { request, context in
        let receipt = try await simulator.payments.appReceipt(
            deviceId: try context.parameters.require("device"),
            bundleId: try bundle(request),
            environment: try environment(context)
        )
        return try jsonResponse(["receiptData": Base64.encode(receipt)], context: context)
    }
    group.get("devices/{device}/app-transaction") { request, context in
        let signed = try await simulator.payments.signedAppTransaction(
            deviceId: try context.parameters.require("device"),
            bundleId: try bundle(request),
            environment: try environment(context)
        )
        return try jsonResponse(["signedAppTransaction": signed], context: context)
    }
    group.get("devices/{device}/transactions") { request, context in
        let signed = try await simulator.payments.signedTransactions(
            deviceId: try context.parameters.require("device"),
            bundleId: try bundle(request),
            environment: try environment(context)
        )
        return try jsonResponse(["signedTransactions": signed], context: context)
    }
    group.get("devices/{device}/subscriptions/{original}/renewal-info") { _, context in
        let signed = try await simulator.payments.signedRenewalInfo(
            deviceId: try context.parameters.require("device"),
            originalTransactionId: try context.parameters.require("original"),
            environment: try environment(context)
        )
        return try jsonResponse(["signedRenewalInfo": signed], context: context)
    }
    group.post("devices/{device}/subscriptions/{original}/auto-renew") { request, context in
        let input = try await decodeBody(AutoRenewInput.self, from: request, context: context)
        let deviceId = try context.parameters.require("device")
        let original = try context.parameters.require("original")
        _ = try await simulator.payments.signedRenewalInfo(
            deviceId: deviceId,
            originalTransactionId: original,
            environment: try environment(context)
        )
        let subscription = try await simulator.subscriptions.setAutoRenew(
            originalTransactionId: original,
            enabled: input.enabled
        )
        return try jsonResponse(subscription, context: context)
    }
}

private func bundle(_ request: Request) throws -> String {
    guard let bundleId = request.uri.queryParameters.get("bundleId"), !bundleId.isEmpty else {
        throw TillHTTPError.badRequest("missingBundleId", "the bundleId query parameter is required")
    }
    return bundleId
}

/// Apple's own endpoints, per environment: verifyReceipt and the App Store Server API, with their faults.
func addAppleRoutes(to router: Router<SimulatorRequestContext>, _ simulator: Simulator) {
    router.on("{environment}/verifyReceipt", method: .post) { request, context in
        try await verifyReceipt(request, context, simulator)
    }
    for method in [HTTPRequest.Method.get, .put, .delete, .patch] {
        router.on("{environment}/verifyReceipt", method: method) { request, context in
            try await verifyReceipt(request, context, simulator)
        }
    }

    let api = router.group("{environment}/inApps")
    api.get("v1/transactions/{transaction}") { request, context in
        try await serverAPI(request, context, simulator) { app, environment in
            try await simulator.serverAPI.transactionInfo(
                try context.parameters.require("transaction"),
                app: app,
                environment: environment
            )
        }
    }
    api.get("v2/history/{transaction}") { request, context in
        try await serverAPI(request, context, simulator) { app, environment in
            try await simulator.serverAPI.transactionHistory(
                try context.parameters.require("transaction"),
                query: QueryString.parse(request.uri.query ?? ""),
                app: app,
                environment: environment
            )
        }
    }
    api.get("v1/subscriptions/{transaction}") { request, context in
        try await serverAPI(request, context, simulator) { app, environment in
            try await simulator.serverAPI.subscriptionStatuses(
                try context.parameters.require("transaction"),
                query: QueryString.parse(request.uri.query ?? ""),
                app: app,
                environment: environment
            )
        }
    }
    api.get("v1/lookup/{order}") { request, context in
        try await serverAPI(request, context, simulator) { app, environment in
            try await simulator.serverAPI.lookUpOrder(
                try context.parameters.require("order"),
                app: app,
                environment: environment
            )
        }
    }
    api.get("v2/refund/lookup/{transaction}") { request, context in
        try await serverAPI(request, context, simulator) { app, environment in
            try await simulator.serverAPI.refundHistory(
                try context.parameters.require("transaction"),
                revision: request.uri.queryParameters.get("revision"),
                app: app,
                environment: environment
            )
        }
    }
    api.post("v1/notifications/test") { request, context in
        try await serverAPI(request, context, simulator) { app, environment in
            try await simulator.serverAPI.requestTestNotification(app: app, environment: environment)
        }
    }
    api.get("v1/notifications/test/{token}") { request, context in
        try await serverAPI(request, context, simulator) { app, environment in
            try await simulator.serverAPI.testNotificationStatus(
                try context.parameters.require("token"),
                app: app,
                environment: environment
            )
        }
    }
    api.post("v1/notifications/history") { request, context in
        var request = request
        let body = try await request.collectBody(upTo: 64 * 1024)
        return try await serverAPI(request, context, simulator) { app, environment in
            guard
                let filter = try? TillFormatsJSON.decoder.decode(
                    NotificationHistoryRequest.self,
                    from: Data(body.readableBytesView)
                )
            else {
                throw ServerAPIFailure(.generalBadRequest)
            }
            return try await simulator.serverAPI.notificationHistory(
                filter,
                paginationToken: request.uri.queryParameters.get("paginationToken"),
                app: app,
                environment: environment
            )
        }
    }
}

/// Applies an endpoint's fault: latency, then an outage or nothing. Returns the rule for status faults.
private func applyFault(_ simulator: Simulator, _ environment: AppStoreEnvironment, _ endpoint: FaultEndpoint)
    async throws -> FaultRule?
{
    guard let rule = simulator.faults.take(environment: environment, endpoint: endpoint) else { return nil }
    if let latency = rule.latency { try await Task.sleep(for: .seconds(latency)) }
    switch rule.outage {
    case .http503?, .reset?:
        return rule
    case .hang?:
        try await Task.sleep(for: .seconds(rule.hangSeconds ?? 300))
        return rule
    case nil:
        return rule
    }
}

private func verifyReceipt(_ request: Request, _ context: SimulatorRequestContext, _ simulator: Simulator) async throws
    -> Response
{
    let environment = try environment(context)
    if let rule = try await applyFault(simulator, environment, .verifyReceipt) {
        if rule.outage != nil { return Response(status: .serviceUnavailable) }
        if let status = rule.status {
            let retryable = (21100...21199).contains(status) ? (rule.isRetryable ?? true) : nil
            return try jsonResponse(
                VerifyReceiptResponse(status: ReceiptStatus(status), isRetryable: retryable),
                context: context
            )
        }
    }
    var request = request
    let body = try? await request.collectBody(upTo: 2 * 1024 * 1024)
    let response = await simulator.receipts.verifyReceipt(
        body: body.map { Array($0.readableBytesView) },
        isPOST: request.method == .post,
        environment: environment
    )
    return try jsonResponse(response, context: context)
}

private func serverAPI<T: Encodable>(
    _ request: Request,
    _ context: SimulatorRequestContext,
    _ simulator: Simulator,
    _ body: (SimApp, AppStoreEnvironment) async throws -> T
) async throws -> Response {
    let environment = try environment(context)
    do {
        if let rule = try await applyFault(simulator, environment, .serverAPI) {
            if rule.outage != nil { return Response(status: .serviceUnavailable) }
            if rule.rateLimited == true { throw ServerAPIFailure(.rateLimitExceeded) }
        }
        let app = try await simulator.serverAPI.authenticate(authorization: request.headers[.authorization])
        return try jsonResponse(try await body(app, environment), context: context)
    } catch let failure as ServerAPIFailure {
        guard let error = failure.error else { return Response(status: .init(code: failure.status)) }
        return try jsonResponse(error, status: .init(code: failure.status), context: context)
    } catch is CancellationError {
        throw CancellationError()
    } catch {
        simulator.logger.error("App Store Server API request failed: \(error)")
        return try jsonResponse(APIError(.generalInternal), status: .internalServerError, context: context)
    }
}
