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

struct RedeemInput: Codable {
    var bundleId: String
    var code: String
}

/// StoreKit as an app on a device sees it.
func addStoreKitRoutes(to group: RouterGroup<SimulatorRequestContext>, _ simulator: Simulator) {
    group.get("devices/{device}/can-make-payments") { _, context in
        let (_, account) = try await simulator.store.requireDevice(
            try context.parameters.require("device"),
            environment: try storeKitEnvironment(context),
            on: simulator.store.sql
        )
        return try jsonResponse(["canMakePayments": account.canMakePayments], context: context)
    }
    group.post("products") { request, context in
        let input = try await decodeBody(ProductsInput.self, from: request, context: context)
        guard input.productIdentifiers.count <= 200 else {
            throw TillHTTPError.badRequest("tooManyProducts", "at most 200 product identifiers per request")
        }
        let environment = try storeKitEnvironment(context)
        var account: SimAccount?
        if let deviceId = input.deviceId {
            account = try await simulator.store.requireDevice(
                deviceId,
                environment: environment,
                on: simulator.store.sql
            ).1
        }
        let response = try await simulator.payments.lookUpProducts(
            bundleId: input.bundleId,
            productIds: input.productIdentifiers,
            storefront: account?.storefront ?? "USA",
            locale: input.locale ?? "en-US",
            environment: environment,
            account: account
        )
        return try jsonResponse(response, context: context)
    }
    group.post("payments") { request, context in
        let input = try await decodeBody(PaymentRequest.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.payments.addPayment(input, environment: try storeKitEnvironment(context)),
            context: context
        )
    }
    // The offer code redemption sheet (`presentOfferCodeRedeemSheet`): the customer types a code.
    group.post("devices/{device}/offer-codes/redeem") { request, context in
        let input = try await decodeBody(RedeemInput.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.payments.redeemOfferCode(
                input.code,
                deviceId: try context.parameters.require("device"),
                bundleId: input.bundleId,
                environment: try storeKitEnvironment(context)
            ),
            context: context
        )
    }
    group.get("devices/{device}/queue") { request, context in
        let bundleId = try bundle(request)
        let queue = try await simulator.payments.queue(
            deviceId: try context.parameters.require("device"),
            bundleId: bundleId,
            environment: try storeKitEnvironment(context)
        )
        return try jsonResponse(queue, context: context)
    }
    group.post("devices/{device}/queue/{entry}/finish") { _, context in
        try await simulator.payments.finish(
            entryId: try context.parameters.require("entry"),
            deviceId: try context.parameters.require("device"),
            environment: try storeKitEnvironment(context)
        )
        return Response(status: .noContent)
    }
    group.post("devices/{device}/restore") { request, context in
        let input = try await decodeBody(BundleInput.self, from: request, context: context)
        let result = try await simulator.payments.restore(
            deviceId: try context.parameters.require("device"),
            bundleId: input.bundleId,
            environment: try storeKitEnvironment(context)
        )
        return try jsonResponse(result, context: context)
    }
    group.get("devices/{device}/receipt") { request, context in
        let receipt = try await simulator.payments.appReceipt(
            deviceId: try context.parameters.require("device"),
            bundleId: try bundle(request),
            environment: try storeKitEnvironment(context)
        )
        return try jsonResponse(["receiptData": Base64.encode(receipt)], context: context)
    }
    group.get("devices/{device}/app-transaction") { request, context in
        let signed = try await simulator.payments.signedAppTransaction(
            deviceId: try context.parameters.require("device"),
            bundleId: try bundle(request),
            environment: try storeKitEnvironment(context)
        )
        return try jsonResponse(["signedAppTransaction": signed], context: context)
    }
    group.get("devices/{device}/transactions") { request, context in
        let signed = try await simulator.payments.signedTransactions(
            deviceId: try context.parameters.require("device"),
            bundleId: try bundle(request),
            environment: try storeKitEnvironment(context)
        )
        return try jsonResponse(["signedTransactions": signed], context: context)
    }
    group.get("devices/{device}/subscriptions/{original}/renewal-info") { _, context in
        let signed = try await simulator.payments.signedRenewalInfo(
            deviceId: try context.parameters.require("device"),
            originalTransactionId: try context.parameters.require("original"),
            environment: try storeKitEnvironment(context)
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
            environment: try storeKitEnvironment(context)
        )
        let subscription = try await simulator.subscriptions.setAutoRenew(
            originalTransactionId: original,
            enabled: input.enabled
        )
        return try jsonResponse(subscription, context: context)
    }
    // The customer answers a price increase that needs consent (the App Store's consent sheet).
    group.post("devices/{device}/subscriptions/{original}/price-consent") { request, context in
        let input = try await decodeBody(PriceConsentInput.self, from: request, context: context)
        let original = try context.parameters.require("original")
        _ = try await simulator.payments.signedRenewalInfo(
            deviceId: try context.parameters.require("device"),
            originalTransactionId: original,
            environment: try storeKitEnvironment(context)
        )
        return try jsonResponse(
            try await simulator.subscriptions.respondToPriceIncrease(originalTransactionId: original, accept: input.accept),
            context: context
        )
    }
    // The customer views the subscription in their account settings and taps Cancel: Retention Messaging.
    group.post("devices/{device}/subscriptions/{original}/retention-message") { request, context in
        let input = try await decodeBody(RetentionMessageInput.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.retention.retentionMessage(
                deviceId: try context.parameters.require("device"),
                originalTransactionId: try context.parameters.require("original"),
                locale: input.locale ?? "en-US",
                environment: try storeKitEnvironment(context)
            ),
            context: context
        )
    }
}

struct RetentionMessageInput: Codable { var locale: String? }

private func bundle(_ request: Request) throws -> String {
    guard let bundleId = request.uri.queryParameters.get("bundleId"), !bundleId.isEmpty else {
        throw TillHTTPError.badRequest("missingBundleId", "the bundleId query parameter is required")
    }
    return bundleId
}

/// Apple's own endpoints, per environment: verifyReceipt and the App Store Server API, with their faults.
