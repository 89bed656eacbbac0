import Foundation
import Hummingbird
import TillCore
import TillFormats
import TillHTTPKit

struct CodesInput: Codable { var count: Int }

/// App Store Connect's offers: introductory and promotional offers, offer codes (and their one-time-use codes),
/// win-back offers.
func addOfferAdminRoutes(to group: RouterGroup<SimulatorRequestContext>, _ simulator: Simulator) {
    let offers = simulator.offers
    group.get("apps/{app}/offers") { _, context in
        try jsonResponse(try await offers.offers(appAppleId: try int64(context, "app"), productId: nil), context: context)
    }
    group.get("apps/{app}/products/{product}/offers") { _, context in
        try jsonResponse(
            try await offers.offers(
                appAppleId: try int64(context, "app"),
                productId: try parameter(context, "product")
            ),
            context: context
        )
    }
    group.post("apps/{app}/products/{product}/offers") { request, context in
        let input = try await decodeBody(OfferInput.self, from: request, context: context)
        return try jsonResponse(
            try await offers.createOffer(
                appAppleId: try int64(context, "app"),
                productId: try parameter(context, "product"),
                input
            ),
            status: .created,
            context: context
        )
    }
    group.delete("apps/{app}/products/{product}/offers/introductory") { _, context in
        try await offers.deleteOffer(
            appAppleId: try int64(context, "app"),
            productId: try parameter(context, "product"),
            kind: .introductory,
            offerIdentifier: ""
        )
        return Response(status: .noContent)
    }
    group.delete("apps/{app}/products/{product}/offers/{kind}/{offer}") { _, context in
        let name = try context.parameters.require("kind")
        guard let kind = OfferKind(rawValue: name) else { throw TillHTTPError.notFound("offer kind", name) }
        try await offers.deleteOffer(
            appAppleId: try int64(context, "app"),
            productId: try parameter(context, "product"),
            kind: kind,
            offerIdentifier: try parameter(context, "offer")
        )
        return Response(status: .noContent)
    }
    group.post("apps/{app}/products/{product}/offers/offerCode/{offer}/codes") { request, context in
        let input = try await decodeBody(CodesInput.self, from: request, context: context)
        let codes = try await offers.generateCodes(
            appAppleId: try int64(context, "app"),
            productId: try parameter(context, "product"),
            offerIdentifier: try parameter(context, "offer"),
            count: input.count
        )
        return try jsonResponse(["codes": codes], status: .created, context: context)
    }
}
