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
