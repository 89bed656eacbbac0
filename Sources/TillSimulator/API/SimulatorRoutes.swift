import Foundation
import Hummingbird
import NIOCore
import SwiftASN1
import TillCore
import TillFormats
import TillHTTPKit
import TillSimulatorContract
import X509

/// The simulator's HTTP interface: App Store Connect (admin), StoreKit for apps, verifyReceipt and the App
/// Store Server API per environment. See docs/simulator.md.
public func buildSimulatorRouter(_ simulator: Simulator) -> Router<SimulatorRequestContext> {
    let router = Router(context: SimulatorRequestContext.self)
    let routeMethods = RouteMethods()
    router.middlewares.add(TillHTTPErrorMiddleware(routes: routeMethods, program: "simulator"))
    router.get("/health") { _, _ in #"{"status":"ok"}"# }
    // The device API's document (Client/Sources/TillSimulatorContract/openapi.yaml), which SimulatorStorefront's
    // types are generated from.
    router.get("storekit/openapi.yaml") { _, _ in
        Response(
            status: .ok,
            headers: [.contentType: "application/yaml"],
            body: .init(byteBuffer: ByteBuffer(string: SimulatorContractDocument.yaml))
        )
    }
    addAdminRoutes(to: router.group("admin/v1"), simulator)
    addStoreKitRoutes(to: router.group("storekit/{environment}"), simulator)
    addAppleRoutes(to: router, simulator)
    routeMethods.record(router.routes)
    return router
}

/// "production" or "sandbox" from the path: Apple's servers have no other.
func environment(_ context: SimulatorRequestContext) throws -> AppStoreEnvironment {
    let name = try context.parameters.require("environment")
    guard let environment = AppStoreEnvironment(parsing: name), environment == .production || environment == .sandbox
    else {
        throw TillHTTPError.notFound("environment", name)
    }
    return environment
}

/// StoreKit's environment from the path: "production", "sandbox", or "xcode" (StoreKit Testing in Xcode, on the
/// device only: it has no verifyReceipt, Server API or notifications).
func storeKitEnvironment(_ context: SimulatorRequestContext) throws -> AppStoreEnvironment {
    let name = try context.parameters.require("environment")
    guard let environment = AppStoreEnvironment(parsing: name),
        environment == .production || environment == .sandbox || environment == .xcode
    else {
        throw TillHTTPError.notFound("environment", name)
    }
    return environment
}

func int64(_ context: SimulatorRequestContext, _ name: String) throws -> Int64 {
    let text = try context.parameters.require(name)
    guard let value = Int64(text) else {
        throw TillHTTPError.badRequest("invalidIdentifier", "\(name) is a number, got \(text)")
    }
    return value
}

// MARK: App Store Connect stand-in

struct RefundInput: Codable {
    var reason: Int?
    /// A prorated refund's share, in milliunits (50000 = 50 %).
    var percentage: Int?
}
struct RefundRequestInput: Codable { var reason: String? }
struct AutoRenewInput: Codable { var enabled: Bool }
struct AdvanceInput: Codable { var seconds: Double }
struct RateInput: Codable {
    var rate: String?
    var monthSeconds: Double?
}
struct ClockView: Codable {
    var now: Int64
    var offsetSeconds: Double
    var renewalRate: String
    var monthSeconds: Double?
}

func addAdminRoutes(to group: RouterGroup<SimulatorRequestContext>, _ simulator: Simulator) {
    if let token = simulator.configuration.adminToken {
        group.add(middleware: AdminTokenMiddleware(token: token))
    }
    group.get("apps") { _, context in try jsonResponse(try await simulator.appStoreConnect.apps(), context: context) }
    group.post("apps") { request, context in
        let input = try await decodeBody(AppInput.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.appStoreConnect.createApp(input),
            status: .created,
            context: context
        )
    }
    group.get("apps/{app}") { _, context in
        try jsonResponse(
            try await simulator.appStoreConnect.app(appAppleId: try int64(context, "app")),
            context: context
        )
    }
    group.patch("apps/{app}") { request, context in
        let patch = try await decodeBody(AppPatch.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.appStoreConnect.updateApp(appAppleId: try int64(context, "app"), patch),
            context: context
        )
    }
    group.post("apps/{app}/shared-secret") { _, context in
        try jsonResponse(
            try await simulator.appStoreConnect.rotateSharedSecret(appAppleId: try int64(context, "app")),
            context: context
        )
    }
    group.post("apps/{app}/api-keys") { _, context in
        try jsonResponse(
            try await simulator.appStoreConnect.createAPIKey(appAppleId: try int64(context, "app")),
            status: .created,
            context: context
        )
    }
    group.get("apps/{app}/products") { _, context in
        try jsonResponse(
            try await simulator.appStoreConnect.products(appAppleId: try int64(context, "app")),
            context: context
        )
    }
    group.post("apps/{app}/products") { request, context in
        let input = try await decodeBody(ProductInput.self, from: request, context: context)
        let product = try await simulator.appStoreConnect.createProduct(appAppleId: try int64(context, "app"), input)
        return try jsonResponse(product, status: .created, context: context)
    }
    group.patch("apps/{app}/products/{product}") { request, context in
        let input = try await decodeBody(ProductInput.self, from: request, context: context)
        let product = try await simulator.appStoreConnect.updateProduct(
            appAppleId: try int64(context, "app"),
            productId: try context.parameters.require("product"),
            input
        )
        return try jsonResponse(product, context: context)
    }
    group.get("apps/{app}/notifications") { request, context in
        let environment = try adminEnvironment(request)
        return try jsonResponse(
            try await simulator.notifications.notificationLog(
                appAppleId: try int64(context, "app"),
                environment: environment
            ),
            context: context
        )
    }

    addServerAPIAdminRoutes(to: group, simulator)
    addOfferAdminRoutes(to: group, simulator)
    addEventAdminRoutes(to: group, simulator)

    group.get("accounts") { _, context in
        try jsonResponse(try await simulator.appStoreConnect.accounts(), context: context)
    }
    group.post("accounts") { request, context in
        let input = try await decodeBody(AccountInput.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.appStoreConnect.createAccount(input),
            status: .created,
            context: context
        )
    }
    group.get("accounts/{account}") { _, context in
        try jsonResponse(
            try await simulator.appStoreConnect.account(id: try context.parameters.require("account")),
            context: context
        )
    }
    group.patch("accounts/{account}") { request, context in
        let input = try await decodeBody(AccountInput.self, from: request, context: context)
        return try jsonResponse(
            try await simulator.appStoreConnect.updateAccount(id: try context.parameters.require("account"), input),
            context: context
        )
    }
    group.delete("accounts/{account}") { _, context in
        try await simulator.appStoreConnect.deleteAccount(id: try context.parameters.require("account"))
        return Response(status: .noContent)
    }
    group.get("accounts/{account}/devices") { _, context in
        try jsonResponse(
            try await simulator.appStoreConnect.devices(accountId: try context.parameters.require("account")),
            context: context
        )
    }
    group.post("accounts/{account}/devices") { request, context in
        let input = try await decodeBody(DeviceInput.self, from: request, context: context)
        let device = try await simulator.appStoreConnect.createDevice(
            accountId: try context.parameters.require("account"),
            input
        )
        return try jsonResponse(device, status: .created, context: context)
    }

    group.post("payments/{payment}/approve") { _, context in
        try jsonResponse(
            try await simulator.payments.resolveDeferredPayment(
                id: try context.parameters.require("payment"),
                approve: true
            ),
            context: context
        )
    }
    group.post("payments/{payment}/decline") { _, context in
        try jsonResponse(
            try await simulator.payments.resolveDeferredPayment(
                id: try context.parameters.require("payment"),
                approve: false
            ),
            context: context
        )
    }
    group.post("transactions/{transaction}/refund") { request, context in
        let input = try await decodeBody(RefundInput.self, from: request, context: context)
        guard [nil, 0, 1].contains(input.reason) else {
            throw TillHTTPError.badRequest("invalidReason", "reason is 0 (other) or 1 (an issue in the app)")
        }
        let tx = try await simulator.subscriptions.refund(
            transactionId: try context.parameters.require("transaction"),
            reason: input.reason ?? 0,
            percentage: input.percentage
        )
        return try jsonResponse(tx, context: context)
    }
    group.post("transactions/{transaction}/revoke") { _, context in
        try jsonResponse(
            try await simulator.subscriptions.revokeFamilyShared(
                transactionId: try context.parameters.require("transaction")
            ),
            context: context
        )
    }
    group.post("transactions/{transaction}/refund-request") { request, context in
        let input = try await decodeBody(RefundRequestInput.self, from: request, context: context)
        try await simulator.subscriptions.requestRefund(
            transactionId: try context.parameters.require("transaction"),
            reason: ConsumptionRequestReason(rawValue: input.reason ?? "UNINTENDED_PURCHASE")
        )
        return Response(status: .accepted)
    }
    group.post("transactions/{transaction}/refund-decline") { _, context in
        try await simulator.subscriptions.declineRefund(transactionId: try context.parameters.require("transaction"))
        return Response(status: .accepted)
    }
    group.post("subscriptions/{original}/auto-renew") { request, context in
        let input = try await decodeBody(AutoRenewInput.self, from: request, context: context)
        let subscription = try await simulator.subscriptions.setAutoRenew(
            originalTransactionId: try context.parameters.require("original"),
            enabled: input.enabled
        )
        return try jsonResponse(subscription, context: context)
    }

    group.get("clock") { _, context in try jsonResponse(simulator.clock.view, context: context) }
    group.post("clock/advance") { request, context in
        let input = try await decodeBody(AdvanceInput.self, from: request, context: context)
        guard input.seconds > 0, input.seconds <= 10 * 365 * 86_400 else {
            throw TillHTTPError.badRequest("invalidSeconds", "seconds is positive and at most ten years")
        }
        _ = try await simulator.subscriptions.advanceClock(seconds: input.seconds)
        return try jsonResponse(simulator.clock.view, context: context)
    }
    group.put("clock/rate") { request, context in
        let input = try await decodeBody(RateInput.self, from: request, context: context)
        let rate: RenewalRate
        if let name = input.rate {
            guard let named = RenewalRate(name: name) else {
                throw TillHTTPError.badRequest(
                    "invalidRate",
                    "rates: \(RenewalRate.presets.keys.sorted().joined(separator: ", "))"
                )
            }
            rate = named
        } else if let seconds = input.monthSeconds, RenewalRate.acceptedMonthSeconds.contains(seconds) {
            rate = RenewalRate(monthSeconds: seconds)
        } else {
            throw TillHTTPError.badRequest(
                "invalidRate",
                "give rate (a preset name) or monthSeconds (1 to \(Int(RenewalRate.acceptedMonthSeconds.upperBound)))"
            )
        }
        try await simulator.subscriptions.setRenewalRate(rate)
        return try jsonResponse(simulator.clock.view, context: context)
    }

    group.get("faults") { _, context in try jsonResponse(simulator.faults.all, context: context) }
    group.post("faults") { request, context in
        var request = request
        let body = Data(try await request.collectBody(upTo: 64 * 1024).readableBytesView)
        let rule: FaultRule
        if let spec = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["spec"] as? String {
            rule = try FaultRule(parsing: spec)
        } else {
            do {
                rule = try TillFormatsJSON.decoder.decode(FaultRule.self, from: body)
            } catch {
                let reason = (error as? DecodingError).map(JSONBody.describe) ?? "the body is not JSON"
                throw TillHTTPError.badRequest(
                    "invalidFault",
                    "give a fault rule object or {\"spec\": \"sandbox:verifyReceipt:status=21005\"}: \(reason)"
                )
            }
        }
        // A rule given without an id got one: the answer carries it, for DELETE /admin/v1/faults/{id}.
        guard simulator.faults.addIfNew(rule) else {
            throw TillHTTPError.conflict("faultExists", "a fault with id \(rule.id) is active")
        }
        return try jsonResponse(rule, status: .created, context: context)
    }
    group.delete("faults") { _, _ in
        simulator.faults.removeAll()
        return Response(status: .noContent)
    }
    group.delete("faults/{fault}") { _, context in
        guard simulator.faults.remove(id: try context.parameters.require("fault")) else {
            throw TillHTTPError.notFound("fault", try context.parameters.require("fault"))
        }
        return Response(status: .noContent)
    }

    group.get("certificates/{kind}") { _, context in
        let name = try context.parameters.require("kind")
        let signer = simulator.signer
        let certificates: [Certificate]
        switch name {
        case "jws-root.pem", "jws-root.der": certificates = [signer.jwsAuthority.root]
        // What Xcode's "Save Public Certificate" exports: a server trusts StoreKit Testing's data by it.
        case "xcode-root.pem", "xcode-root.der": certificates = [signer.xcodeCertificate]
        case "receipt-root.pem", "receipt-root.der": certificates = [signer.receiptAuthority.root]
        case "receipt-intermediate.pem", "receipt-intermediate.der":
            certificates = [signer.receiptAuthority.intermediate]
        // Everything a server needs to accept the simulator's sandbox data (`apple.sandbox-roots`).
        case "sandbox-trust.pem":
            certificates = [
                signer.jwsAuthority.root, signer.receiptAuthority.root, signer.receiptAuthority.intermediate,
            ]
        default: throw TillHTTPError.notFound("certificate", name)
        }
        if name.hasSuffix(".der") {
            var response = Response(
                status: .ok,
                body: .init(byteBuffer: ByteBuffer(bytes: try derBytes(certificates[0])))
            )
            response.headers[.contentType] = "application/pkix-cert"
            return response
        }
        let pem = try certificates.map { try $0.serializeAsPEM().pemString + "\n" }.joined()
        var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: pem)))
        response.headers[.contentType] = "application/x-pem-file"
        return response
    }
}

/// Requires `Authorization: Bearer <admin token>` on the admin API.
struct AdminTokenMiddleware: RouterMiddleware {
    typealias Context = SimulatorRequestContext
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard request.headers[.authorization] == "Bearer \(token)" else {
            throw TillHTTPError(
                .unauthorized,
                "unauthorized",
                "the admin API needs Authorization: Bearer <admin token>"
            )
        }
        return try await next(request, context)
    }
}

func derBytes(_ certificate: Certificate) throws -> [UInt8] {
    var serializer = DER.Serializer()
    try serializer.serialize(certificate)
    return serializer.serializedBytes
}
