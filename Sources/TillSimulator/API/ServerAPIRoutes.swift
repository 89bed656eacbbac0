import Foundation
import Hummingbird
import TillCore
import TillFormats

/// The App Store Server API at `/{environment}/inApps`, every call of Apple's official client (docs/simulator.md).
func addServerAPIRoutes(to api: RouterGroup<SimulatorRequestContext>, _ call: ServerAPICall) {
    let serverAPI = call.simulator.serverAPI
    let routes = ServerAPIRoutes(api: api, call: call)

    // Transactions
    routes.json(.get, "v1/transactions/{transaction}") {
        try await serverAPI.transactionInfo(try $0.path("transaction"), app: $0.app, environment: $0.environment)
    }
    for version in [1, 2] {
        routes.json(.get, "v\(version)/history/{transaction}") {
            try await serverAPI.transactionHistory(
                try $0.path("transaction"),
                version: version,
                query: QueryString.parse($0.query),
                app: $0.app,
                environment: $0.environment
            )
        }
    }
    routes.json(.get, "v1/lookup/{order}") {
        try await serverAPI.lookUpOrder(try $0.path("order"), app: $0.app, environment: $0.environment)
    }
    routes.json(.get, "v2/refund/lookup/{transaction}") {
        try await serverAPI.refundHistory(
            try $0.path("transaction"),
            revision: $0.query("revision"),
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.json(.get, "v1/transactions/appTransactions/{transaction}") {
        try await serverAPI.appTransactionInfo(try $0.path("transaction"), app: $0.app, environment: $0.environment)
    }
    routes.empty(.put, "v1/transactions/{transaction}/appAccountToken") {
        try await serverAPI.setAppAccountToken(
            try $0.path("transaction"),
            body: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.empty(.post, "v1/transactions/{transaction}/finish") {
        try await serverAPI.finishTransaction(try $0.path("transaction"), app: $0.app, environment: $0.environment)
    }
    routes.empty(.put, "v1/transactions/consumption/{transaction}", status: .accepted) {
        try await serverAPI.sendConsumptionInformationV1(
            try $0.path("transaction"),
            body: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.empty(.put, "v2/transactions/consumption/{transaction}", status: .accepted) {
        try await serverAPI.sendConsumptionInformation(
            try $0.path("transaction"),
            body: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }

    // Subscriptions
    routes.json(.get, "v1/subscriptions/{transaction}") {
        try await serverAPI.subscriptionStatuses(
            try $0.path("transaction"),
            query: QueryString.parse($0.query),
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.json(.put, "v1/subscriptions/extend/{original}") {
        try await serverAPI.extendRenewalDate(
            try $0.path("original"),
            body: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.json(.post, "v1/subscriptions/extend/mass") {
        try await serverAPI.extendRenewalDatesForAllActiveSubscribers(
            body: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.json(.get, "v1/subscriptions/extend/mass/{product}/{request}") {
        try await serverAPI.massExtensionStatus(
            productId: try $0.path("product"),
            requestIdentifier: try $0.path("request"),
            app: $0.app,
            environment: $0.environment
        )
    }

    // Notifications
    routes.json(.post, "v1/notifications/test") {
        try await serverAPI.requestTestNotification(app: $0.app, environment: $0.environment)
    }
    routes.json(.get, "v1/notifications/test/{token}") {
        try await serverAPI.testNotificationStatus(try $0.path("token"), app: $0.app, environment: $0.environment)
    }
    routes.json(.post, "v1/notifications/history") {
        guard let filter = try? TillFormatsJSON.decoder.decode(NotificationHistoryRequest.self, from: Data($0.body))
        else { throw ServerAPIFailure(.generalBadRequest) }
        return try await serverAPI.notificationHistory(
            filter,
            paginationToken: $0.query("paginationToken"),
            app: $0.app,
            environment: $0.environment
        )
    }

    addRetentionMessagingRoutes(to: routes)
}

/// Retention Messaging, at `/{environment}/inApps/v1/messaging`.
private func addRetentionMessagingRoutes(to routes: ServerAPIRoutes) {
    let retention = routes.call.simulator.retention
    routes.empty(.put, "v1/messaging/image/{image}") {
        try await retention.uploadImage(
            try $0.path("image"),
            size: $0.query("imageSize"),
            png: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.empty(.delete, "v1/messaging/image/{image}") {
        try await retention.deleteImage(try $0.path("image"), app: $0.app, environment: $0.environment)
    }
    routes.json(.get, "v1/messaging/image/list") {
        try await retention.imageList(app: $0.app, environment: $0.environment)
    }
    routes.empty(.put, "v1/messaging/message/{message}") {
        try await retention.uploadMessage(
            try $0.path("message"),
            body: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.empty(.delete, "v1/messaging/message/{message}") {
        try await retention.deleteMessage(try $0.path("message"), app: $0.app, environment: $0.environment)
    }
    routes.json(.get, "v1/messaging/message/list") {
        try await retention.messageList(app: $0.app, environment: $0.environment)
    }
    routes.empty(.put, "v1/messaging/default/{product}/{locale}") {
        try await retention.configureDefaultMessage(
            productId: try $0.path("product"),
            locale: try $0.path("locale"),
            body: $0.body,
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.empty(.delete, "v1/messaging/default/{product}/{locale}") {
        try await retention.deleteDefaultMessage(
            productId: try $0.path("product"),
            locale: try $0.path("locale"),
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.json(.get, "v1/messaging/default/{product}/{locale}") {
        try await retention.defaultMessage(
            productId: try $0.path("product"),
            locale: try $0.path("locale"),
            app: $0.app,
            environment: $0.environment
        )
    }
    routes.empty(.put, "v1/messaging/realtime/url") {
        try await retention.configureRealtimeURL(body: $0.body, app: $0.app, environment: $0.environment)
    }
    routes.json(.get, "v1/messaging/realtime/url") {
        try await retention.realtimeURL(app: $0.app, environment: $0.environment)
    }
    routes.empty(.delete, "v1/messaging/realtime/url") {
        try await retention.deleteRealtimeURL(app: $0.app, environment: $0.environment)
    }
    routes.json(.post, "v1/messaging/performanceTest") {
        try await retention.initiatePerformanceTest(body: $0.body, app: $0.app, environment: $0.environment)
    }
    routes.json(.get, "v1/messaging/performanceTest/result/{request}") {
        try await retention.performanceTestResults(try $0.path("request"), app: $0.app, environment: $0.environment)
    }
}

/// The Server API's routes, each a call answered through ``ServerAPICall`` (faults, the bearer token, Apple's
/// errors): the route names its method and path and what the simulator does with its ``ServerAPIInput``.
struct ServerAPIRoutes {
    let api: RouterGroup<SimulatorRequestContext>
    let call: ServerAPICall

    /// A call answered with a JSON body.
    func json<T: Encodable>(
        _ method: HTTPRequest.Method,
        _ path: RouterPath,
        _ serve: @escaping @Sendable (ServerAPIInput) async throws -> T
    ) {
        api.on(path, method: method) { [call] request, context in
            try await call.json(request, context) { app, environment, body in
                try await serve(
                    ServerAPIInput(app: app, environment: environment, body: body, request: request, context: context)
                )
            }
        }
    }

    /// A call answered with a status and no body (Apple's 200 or 202 for PUTs and DELETEs).
    func empty(
        _ method: HTTPRequest.Method,
        _ path: RouterPath,
        status: HTTPResponse.Status = .ok,
        _ serve: @escaping @Sendable (ServerAPIInput) async throws -> Void
    ) {
        api.on(path, method: method) { [call] request, context in
            try await call.empty(request, context, status: status) { app, environment, body in
                try await serve(
                    ServerAPIInput(app: app, environment: environment, body: body, request: request, context: context)
                )
            }
        }
    }
}

/// What one Server API call was sent: the app its bearer token named, the environment of its URL, its body, and its
/// path's parameters and query.
struct ServerAPIInput {
    let app: SimApp
    let environment: AppStoreEnvironment
    let body: [UInt8]
    let request: Request
    let context: SimulatorRequestContext

    /// A parameter of the path, percent-decoded.
    func path(_ name: String) throws -> String { try parameter(context, name) }

    /// The query as sent.
    var query: String { request.uri.query ?? "" }

    /// One parameter of the query.
    func query(_ name: String) -> String? { request.uri.queryParameters.get(name) }
}
