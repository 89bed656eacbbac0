import Hummingbird
import TillAppStore
import TillCatalogue
import TillContract
import TillHTTPKit
import TillLedger

// Apple's consumption requests: the customer's consent, which the app records (app API), and the requests with the
// server's answers (admin API). See docs/notifications.md, "Consumption requests".

func addConsumptionAppRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("customers/{customer}/consumption-consent") { _, context in
        let app = try context.requireApp()
        return try json(
            try await server.consumption.consent(bundleId: app.bundleId, customerId: try context.customerParameter()),
            context: context
        )
    }
    group.put("customers/{customer}/consumption-consent") { request, context in
        let app = try context.requireApp()
        let customerId = try context.customerParameter()
        let input = try await decode(Components.Schemas.ConsumptionConsentInput.self, request, context)
        return try json(
            try await server.consumption.setConsent(
                bundleId: app.bundleId,
                customerId: customerId,
                consented: input.consented
            ),
            context: context
        )
    }
}

func addConsumptionAdminRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("apps/{bundle}/consumption-requests") { request, context in
        var state: ConsumptionAnswerState?
        if let text = request.uri.queryParameters.get("state") {
            guard let parsed = ConsumptionAnswerState(rawValue: String(text)) else {
                throw TillHTTPError.badRequest(
                    "invalidState",
                    "state is pending, retrying, sent, notSent, refused or expired"
                )
            }
            state = parsed
        }
        return try json(
            try await server.consumption.requests(
                bundleId: try context.pathParameter("bundle"),
                state: state,
                page: try request.pageRequest()
            ),
            context: context
        )
    }
}
