import Foundation
import Hummingbird
import TillCore
import TillFormats

/// The App Store Server API at `/{environment}/inApps`, every call of Apple's official client (docs/simulator.md).
func addServerAPIRoutes(to api: RouterGroup<SimulatorRequestContext>, _ call: ServerAPICall) {
    let serverAPI = call.simulator.serverAPI

    // Transactions
    api.get("v1/transactions/{transaction}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.transactionInfo(try parameter(context, "transaction"), app: app, environment: environment)
        }
    }
    for version in [1, 2] {
        api.get("v\(version)/history/{transaction}") { request, context in
            try await call.json(request, context) { app, environment, _ in
                try await serverAPI.transactionHistory(
                    try parameter(context, "transaction"),
                    version: version,
                    query: QueryString.parse(request.uri.query ?? ""),
                    app: app,
                    environment: environment
                )
            }
        }
    }
    api.get("v1/lookup/{order}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.lookUpOrder(try parameter(context, "order"), app: app, environment: environment)
        }
    }
    api.get("v2/refund/lookup/{transaction}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.refundHistory(
                try parameter(context, "transaction"),
                revision: request.uri.queryParameters.get("revision"),
                app: app,
                environment: environment
            )
        }
    }
    api.get("v1/transactions/appTransactions/{transaction}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.appTransactionInfo(
                try parameter(context, "transaction"),
                app: app,
                environment: environment
            )
        }
    }
    api.put("v1/transactions/{transaction}/appAccountToken") { request, context in
        try await call.empty(request, context) { app, environment, body in
            try await serverAPI.setAppAccountToken(
                try parameter(context, "transaction"),
                body: body,
                app: app,
                environment: environment
            )
        }
    }
    api.post("v1/transactions/{transaction}/finish") { request, context in
        try await call.empty(request, context) { app, environment, _ in
            try await serverAPI.finishTransaction(try parameter(context, "transaction"), app: app, environment: environment)
        }
    }
    api.put("v1/transactions/consumption/{transaction}") { request, context in
        try await call.empty(request, context, status: .accepted) { app, environment, body in
            try await serverAPI.sendConsumptionInformationV1(
                try parameter(context, "transaction"),
                body: body,
                app: app,
                environment: environment
            )
        }
    }
    api.put("v2/transactions/consumption/{transaction}") { request, context in
        try await call.empty(request, context, status: .accepted) { app, environment, body in
            try await serverAPI.sendConsumptionInformation(
                try parameter(context, "transaction"),
                body: body,
                app: app,
                environment: environment
            )
        }
    }

    // Subscriptions
    api.get("v1/subscriptions/{transaction}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.subscriptionStatuses(
                try parameter(context, "transaction"),
                query: QueryString.parse(request.uri.query ?? ""),
                app: app,
                environment: environment
            )
        }
    }
    api.put("v1/subscriptions/extend/{original}") { request, context in
        try await call.json(request, context) { app, environment, body in
            try await serverAPI.extendRenewalDate(
                try parameter(context, "original"),
                body: body,
                app: app,
                environment: environment
            )
        }
    }
    api.post("v1/subscriptions/extend/mass") { request, context in
        try await call.json(request, context) { app, environment, body in
            try await serverAPI.extendRenewalDatesForAllActiveSubscribers(body: body, app: app, environment: environment)
        }
    }
    api.get("v1/subscriptions/extend/mass/{product}/{request}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.massExtensionStatus(
                productId: try parameter(context, "product"),
                requestIdentifier: try parameter(context, "request"),
                app: app,
                environment: environment
            )
        }
    }

    // Notifications
    api.post("v1/notifications/test") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.requestTestNotification(app: app, environment: environment)
        }
    }
    api.get("v1/notifications/test/{token}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await serverAPI.testNotificationStatus(try parameter(context, "token"), app: app, environment: environment)
        }
    }
    api.post("v1/notifications/history") { request, context in
        try await call.json(request, context) { app, environment, body in
            guard let filter = try? TillFormatsJSON.decoder.decode(NotificationHistoryRequest.self, from: Data(body))
            else { throw ServerAPIFailure(.generalBadRequest) }
            return try await serverAPI.notificationHistory(
                filter,
                paginationToken: request.uri.queryParameters.get("paginationToken"),
                app: app,
                environment: environment
            )
        }
    }

    addRetentionMessagingRoutes(to: api, call)
}

/// Retention Messaging, at `/{environment}/inApps/v1/messaging`.
private func addRetentionMessagingRoutes(to api: RouterGroup<SimulatorRequestContext>, _ call: ServerAPICall) {
    let retention = call.simulator.retention
    api.put("v1/messaging/image/{image}") { request, context in
        try await call.empty(request, context) { app, environment, body in
            try await retention.uploadImage(
                try parameter(context, "image"),
                size: request.uri.queryParameters.get("imageSize"),
                png: body,
                app: app,
                environment: environment
            )
        }
    }
    api.delete("v1/messaging/image/{image}") { request, context in
        try await call.empty(request, context) { app, environment, _ in
            try await retention.deleteImage(try parameter(context, "image"), app: app, environment: environment)
        }
    }
    api.get("v1/messaging/image/list") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await retention.imageList(app: app, environment: environment)
        }
    }
    api.put("v1/messaging/message/{message}") { request, context in
        try await call.empty(request, context) { app, environment, body in
            try await retention.uploadMessage(
                try parameter(context, "message"),
                body: body,
                app: app,
                environment: environment
            )
        }
    }
    api.delete("v1/messaging/message/{message}") { request, context in
        try await call.empty(request, context) { app, environment, _ in
            try await retention.deleteMessage(try parameter(context, "message"), app: app, environment: environment)
        }
    }
    api.get("v1/messaging/message/list") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await retention.messageList(app: app, environment: environment)
        }
    }
    api.put("v1/messaging/default/{product}/{locale}") { request, context in
        try await call.empty(request, context) { app, environment, body in
            try await retention.configureDefaultMessage(
                productId: try parameter(context, "product"),
                locale: try parameter(context, "locale"),
                body: body,
                app: app,
                environment: environment
            )
        }
    }
    api.delete("v1/messaging/default/{product}/{locale}") { request, context in
        try await call.empty(request, context) { app, environment, _ in
            try await retention.deleteDefaultMessage(
                productId: try parameter(context, "product"),
                locale: try parameter(context, "locale"),
                app: app,
                environment: environment
            )
        }
    }
    api.get("v1/messaging/default/{product}/{locale}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await retention.defaultMessage(
                productId: try parameter(context, "product"),
                locale: try parameter(context, "locale"),
                app: app,
                environment: environment
            )
        }
    }
    api.put("v1/messaging/realtime/url") { request, context in
        try await call.empty(request, context) { app, environment, body in
            try await retention.configureRealtimeURL(body: body, app: app, environment: environment)
        }
    }
    api.get("v1/messaging/realtime/url") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await retention.realtimeURL(app: app, environment: environment)
        }
    }
    api.delete("v1/messaging/realtime/url") { request, context in
        try await call.empty(request, context) { app, environment, _ in
            try await retention.deleteRealtimeURL(app: app, environment: environment)
        }
    }
    api.post("v1/messaging/performanceTest") { request, context in
        try await call.json(request, context) { app, environment, body in
            try await retention.initiatePerformanceTest(body: body, app: app, environment: environment)
        }
    }
    api.get("v1/messaging/performanceTest/result/{request}") { request, context in
        try await call.json(request, context) { app, environment, _ in
            try await retention.performanceTestResults(
                try parameter(context, "request"),
                app: app,
                environment: environment
            )
        }
    }
}
