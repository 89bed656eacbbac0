import Hummingbird
import TillCatalogue
import TillContract
import TillHTTPKit
import TillLedger

// Offers (docs/offers.md): the app asks the server to sign a promotional offer or a customer's introductory-offer
// eligibility (app API); the operator keeps the offers the server may sign and its word on introductory offers
// (admin API).

func addOfferAppRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.post("customers/{customer}/offers/promotional") { request, context in
        let app = try context.requireApp()
        let customerId = try context.customerParameter()
        let input = try await decode(Offers.PromotionalOfferRequest.self, request, context)
        return try json(
            try await server.offers.signPromotionalOffer(input, customerId: customerId, app: app),
            context: context
        )
    }
    group.post("customers/{customer}/offers/introductory-eligibility") { request, context in
        let app = try context.requireApp()
        let customerId = try context.customerParameter()
        let input = try await decode(Offers.IntroductoryEligibilityRequest.self, request, context)
        return try json(
            try await server.offers.signIntroductoryEligibility(input, customerId: customerId, app: app),
            context: context
        )
    }
}

func addOfferAdminRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("apps/{bundle}/products/{product}/offers") { request, context in
        try json(
            try await server.offers.offers(
                bundleId: try context.pathParameter("bundle"),
                productId: try context.pathParameter("product"),
                page: try request.pageRequest()
            ),
            context: context
        )
    }
    group.put("apps/{bundle}/products/{product}/offers/{offer}") { request, context in
        let input = try await decode(Components.Schemas.OfferInput.self, request, context)
        let written = try await server.offers.putOffer(
            bundleId: try context.pathParameter("bundle"),
            productId: try context.pathParameter("product"),
            offerIdentifier: try context.pathParameter("offer"),
            eligibility: input.eligibility
        )
        return try json(written.offer, status: written.created ? .created : .ok, context: context)
    }
    group.delete("apps/{bundle}/products/{product}/offers/{offer}") { _, context in
        try await server.offers.deleteOffer(
            bundleId: try context.pathParameter("bundle"),
            productId: try context.pathParameter("product"),
            offerIdentifier: try context.pathParameter("offer")
        )
        return Response(status: .noContent)
    }
    group.get("apps/{bundle}/customers/{customer}/introductory-offers/{group}") { _, context in
        try json(
            try await server.offers.introductoryOverride(
                bundleId: try context.pathParameter("bundle"),
                customerId: try context.customerParameter(),
                group: try context.pathParameter("group")
            ),
            context: context
        )
    }
    group.put("apps/{bundle}/customers/{customer}/introductory-offers/{group}") { request, context in
        let customerId = try context.customerParameter()
        let input = try await decode(Components.Schemas.IntroductoryOfferOverrideInput.self, request, context)
        return try json(
            try await server.offers.setIntroductoryOverride(
                bundleId: try context.pathParameter("bundle"),
                customerId: customerId,
                group: try context.pathParameter("group"),
                allow: input.allowIntroductoryOffer
            ),
            context: context
        )
    }
    group.delete("apps/{bundle}/customers/{customer}/introductory-offers/{group}") { _, context in
        try await server.offers.deleteIntroductoryOverride(
            bundleId: try context.pathParameter("bundle"),
            customerId: try context.customerParameter(),
            group: try context.pathParameter("group")
        )
        return Response(status: .noContent)
    }
}
