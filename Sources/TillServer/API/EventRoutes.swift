import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TillCatalogue
import TillContract
import TillCore
import TillHTTPKit
import TillLedger
import TillWebhooks

// Events to the app's own backend (docs/events.md), on the admin API: the feed, webhook endpoints, their deliveries and
// replays, and the operator's changes to a customer, which are events too.

func addEventAdminRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("events") { request, context in
        let query = request.uri.queryParameters
        var type: EventType?
        if let text = query.get("type") {
            guard let parsed = EventType(rawValue: text) else {
                throw TillHTTPError.badRequest("invalidEventType", "\(text.prefix(100)) is not an event type")
            }
            type = parsed
        }
        let customerId = try query.get("customerId").map {
            try CustomerIdentifier.validated($0, field: "customerId")
        }
        let page = try request.pageRequest()
        // An app that does not exist is `404 appNotFound`, not an empty feed: a typo read as "nothing happened".
        if let bundleId = query.get("bundleId") { _ = try await server.catalogue.app(bundleId: bundleId) }
        let body = try await server.events.feed(
            after: query.get("after"),
            limit: page.limit,
            bundleId: query.get("bundleId"),
            customerId: customerId,
            type: type
        )
        var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        response.headers[.contentType] = "application/json"
        return response
    }
    addWebhookEndpointRoutes(to: group, server)
    addOperatorChangeRoutes(to: group, server)
}

private func addWebhookEndpointRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("apps/{bundle}/webhooks") { request, context in
        try json(
            try await server.webhookEndpoints.list(
                bundleId: try context.pathParameter("bundle"),
                page: try request.pageRequest()
            ),
            context: context
        )
    }
    group.post("apps/{bundle}/webhooks") { request, context in
        let input = try await decode(Components.Schemas.WebhookEndpointInput.self, request, context)
        return try json(
            try await server.webhookEndpoints.create(bundleId: try context.pathParameter("bundle"), input),
            status: .created,
            context: context
        )
    }
    group.get("apps/{bundle}/webhooks/{endpoint}") { _, context in
        try json(
            try await server.webhookEndpoints.endpoint(
                bundleId: try context.pathParameter("bundle"),
                id: try context.pathParameter("endpoint")
            ),
            context: context
        )
    }
    group.patch("apps/{bundle}/webhooks/{endpoint}") { request, context in
        let patch = try await decode(Components.Schemas.WebhookEndpointPatch.self, request, context)
        return try json(
            try await server.webhookEndpoints.update(
                bundleId: try context.pathParameter("bundle"),
                id: try context.pathParameter("endpoint"),
                patch
            ),
            context: context
        )
    }
    group.delete("apps/{bundle}/webhooks/{endpoint}") { _, context in
        try await server.webhookEndpoints.delete(
            bundleId: try context.pathParameter("bundle"),
            id: try context.pathParameter("endpoint")
        )
        return Response(status: .noContent)
    }
    group.post("apps/{bundle}/webhooks/{endpoint}/secret") { request, context in
        // The body may be left out: the default overlap.
        var request = request
        let buffer = try await request.collectBody(upTo: context.maxUploadSize)
        let input =
            buffer.readableBytes == 0
            ? Components.Schemas.WebhookSecretRotation()
            : try await decode(Components.Schemas.WebhookSecretRotation.self, request, context)
        return try json(
            try await server.webhookEndpoints.rotateSecret(
                bundleId: try context.pathParameter("bundle"),
                id: try context.pathParameter("endpoint"),
                overlap: .seconds(input.previousSecretExpiresInSeconds ?? 86_400)
            ),
            context: context
        )
    }
    group.get("apps/{bundle}/webhooks/{endpoint}/deliveries") { request, context in
        var state: WebhookDeliveryState?
        if let text = request.uri.queryParameters.get("state") {
            guard let parsed = WebhookDeliveryState(rawValue: String(text)) else {
                throw TillHTTPError.badRequest("invalidState", "state is pending, delivered or deadLettered")
            }
            state = parsed
        }
        return try json(
            try await server.webhookHistory.deliveries(
                bundleId: try context.pathParameter("bundle"),
                endpointId: try context.pathParameter("endpoint"),
                state: state,
                page: try request.pageRequest()
            ),
            context: context
        )
    }
    group.get("apps/{bundle}/webhooks/{endpoint}/deliveries/{delivery}") { _, context in
        try json(
            try await server.webhookHistory.delivery(
                bundleId: try context.pathParameter("bundle"),
                endpointId: try context.pathParameter("endpoint"),
                id: try context.pathParameter("delivery")
            ),
            context: context
        )
    }
    group.post("apps/{bundle}/webhooks/{endpoint}/replay") { request, context in
        let input = try await decode(Components.Schemas.WebhookReplayRequest.self, request, context)
        let queued = try await server.webhookDeliveries.replay(
            bundleId: try context.pathParameter("bundle"),
            endpointId: try context.pathParameter("endpoint"),
            input
        )
        return try json(Components.Schemas.WebhookReplayResult(queued: queued), status: .accepted, context: context)
    }
}

private func addOperatorChangeRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.post("apps/{bundle}/customers/{customer}/grants") { request, context in
        let bundleId = try context.pathParameter("bundle")
        let customerId = try context.customerParameter()
        let input = try await decode(Components.Schemas.GrantRequest.self, request, context)
        let app = try await server.catalogue.app(bundleId: bundleId)
        try await server.ledger.grant(
            bundleId: bundleId,
            customerId: customerId,
            productId: input.productId,
            expiresDate: input.expiresDate,
            environment: AppStoreEnvironment(input.environment?.rawValue ?? AppStoreEnvironment.production.rawValue),
            note: input.note,
            app: app,
            catalogue: try await server.catalogue.products(of: bundleId)
        )
        return try json(
            try await server.customers.customer(bundleId: bundleId, customerId: customerId),
            status: .created,
            context: context
        )
    }
    group.post("apps/{bundle}/customers/{customer}/revocations") { request, context in
        let bundleId = try context.pathParameter("bundle")
        let customerId = try context.customerParameter()
        let input = try await decode(Components.Schemas.RevocationRequest.self, request, context)
        _ = try await server.catalogue.app(bundleId: bundleId)
        try await server.ledger.revoke(
            bundleId: bundleId,
            customerId: customerId,
            transactionId: input.transactionId,
            environment: input.environment.map { AppStoreEnvironment($0.rawValue) },
            note: input.note,
            catalogue: try await server.catalogue.products(of: bundleId)
        )
        return try json(
            try await server.customers.customer(bundleId: bundleId, customerId: customerId),
            context: context
        )
    }
    group.post("apps/{bundle}/customers/{customer}/balance-adjustments") { request, context in
        let bundleId = try context.pathParameter("bundle")
        let customerId = try context.customerParameter()
        let input = try await decode(Components.Schemas.BalanceAdjustmentRequest.self, request, context)
        _ = try await server.catalogue.app(bundleId: bundleId)
        _ = try await server.ledger.adjustBalance(
            bundleId: bundleId,
            customerId: customerId,
            credit: input.credit,
            delta: input.delta,
            requestId: input.requestId,
            note: input.note
        )
        return try json(
            try await server.customers.customer(bundleId: bundleId, customerId: customerId),
            context: context
        )
    }
}
