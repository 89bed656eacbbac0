import Hummingbird
import TillAppStore
import TillCatalogue
import TillFormats
import TillHTTPKit
import TillLedger

/// `POST /v1/apple/notifications`: App Store Server Notifications V2 (docs/notifications.md).
///
/// Outside the app-key group: Apple sends no key, and the signed payload is its own proof. The body is
/// `{"signedPayload":"<JWS>"}`; the answer `{"status":"applied"|"duplicate"|"ignored","notificationUUID":…}`.
func addNotificationRoutes(to router: Router<ServerRequestContext>, _ server: PurchaseServer) {
    router.post("v1/apple/notifications") { request, context in
        // Apple's body, read by Apple's rules: a null is a member left out.
        let body = try await JSONBody.decode(
            ResponseBodyV2.self,
            from: request,
            limit: BodyLimit.notification,
            decoder: context.requestDecoder
        )
        guard let signedPayload = body.signedPayload, !signedPayload.isEmpty else {
            throw TillHTTPError.badRequest("missingSignedPayload", "the body is {\"signedPayload\":\"<JWS>\"}")
        }
        return try json(
            try await server.notifications.receiveNotification(signedPayload: signedPayload),
            context: context
        )
    }
}
