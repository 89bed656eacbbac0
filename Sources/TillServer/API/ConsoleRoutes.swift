import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TillCatalogue
import TillConsole
import TillCore
import TillHTTPKit
import TillLedger

// The operator's console at /console (docs/console.md): HTML pages rendered on the server from TillConsole's
// templates, reading through the same components the admin API calls. Nothing but the sign-in page and the
// stylesheet answers without a session; every form carries the session's CSRF token, and every action is recorded
// with the operator's note (`ConsoleAudit`).

/// The session cookie, and the cookie that pairs the sign-in form with its browser before there is a session.
enum ConsoleCookie {
    static let session = "till_console"
    static let signIn = "till_console_sign_in"

    /// `name`'s value in the request's `Cookie` headers (Hummingbird's `Cookies`).
    static func value(_ name: String, in request: Request) -> String? {
        request.cookies[name]?.value
    }

    /// A cookie for the console's paths: HttpOnly, SameSite=Strict, and Secure when the request reached a TLS
    /// front (`X-Forwarded-Proto: https` or `Forwarded: proto=https`; `till serve` itself speaks plain HTTP).
    static func header(_ name: String, _ value: String, maxAge: Int, request: Request) -> String {
        Cookie(
            name: name,
            value: value,
            maxAge: maxAge,
            path: "/console",
            secure: isTLS(request),
            httpOnly: true,
            sameSite: .strict
        ).description
    }

    static func isTLS(_ request: Request) -> Bool {
        if let proto = request.headers[.xForwardedProto], proto.lowercased().hasPrefix("https") { return true }
        if let forwarded = request.headers[.forwarded], forwarded.lowercased().contains("proto=https") { return true }
        return false
    }
}

extension HTTPField.Name {
    static let xForwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwarded = HTTPField.Name("Forwarded")!
    static let csrfToken = HTTPField.Name("X-CSRF-Token")!
    static let consoleNote = HTTPField.Name("X-Console-Note")!
    static let contentSecurityPolicy = HTTPField.Name("Content-Security-Policy")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let frameOptions = HTTPField.Name("X-Frame-Options")!
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}

/// Lets through to the console only requests of a live session, and among them only forms (and uploads) carrying
/// the session's CSRF token: a page asked without a session is sent to the sign-in page, anything else refused.
/// The sign-in page and the console's static files are open.
struct ConsoleGate: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: PurchaseServer

    /// The largest form the console takes (a certificate or a private key in PEM is a few kilobytes).
    static let formLimit = 256 * 1024

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        let path = request.uri.path
        let writes = request.method != .get && request.method != .head
        var request = request
        if writes, request.headers[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true {
            // A form the console cannot read is answered as a page, as every other refusal to a browser is (it was
            // the API's JSON): the status, the reason's code, and a way back.
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: Self.formLimit)
            } catch is NIOTooManyBytesError {
                return Self.refusal(
                    .contentTooLarge,
                    "This form is larger than \(Self.formLimit / 1024) KiB (formTooLarge): the console's forms are not."
                )
            }
            // Hummingbird's decoder: `+` a space, `%XX` a byte; a name given twice is refused, as the console's forms
            // never repeat one.
            do {
                context.form = try URLEncodedFormDecoder().decode([String: String].self, from: String(buffer: body))
            } catch {
                return Self.refusal(
                    .badRequest,
                    "This form is not URL-encoded fields, each given once (invalidForm): \(error). "
                        + "Reload the page and send it again."
                )
            }
            request = Request(head: request.head, body: .init(buffer: ByteBuffer()))
        }
        if path == "/console/sign-in" || path.hasPrefix("/console/assets/") {
            return try await next(request, context)
        }
        guard let cookie = ConsoleCookie.value(ConsoleCookie.session, in: request),
            let session = try await server.consoleSessions.session(cookie: cookie)
        else {
            if !writes {
                var response = Response(status: .seeOther)
                response.headers[.location] =
                    "/console/sign-in?next=" + Readable.percentEncoded(request.uri.description)
                return response
            }
            return ConsolePage.message(
                status: .unauthorized,
                heading: "Signed out",
                message: "Your session has ended: sign in again.",
                back: "/console/sign-in",
                backLabel: "Sign in"
            )
        }
        context.console = ConsoleSessions.Current(session: session, address: context.remoteAddress)
        if writes {
            let given = context.form["csrf"] ?? request.headers[.csrfToken]
            guard ConsoleSessions.csrfMatches(given, session) else {
                return ConsolePage.message(
                    status: .forbidden,
                    heading: "Refused",
                    message: "This request did not carry the console's token against cross-site requests "
                        + "(csrfTokenMissing): reload the page and send the form again.",
                    back: "/console/overview",
                    backLabel: "Back to the console"
                )
            }
        }
        return try await next(request, context)
    }

    private static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        ConsolePage.message(
            status: status,
            heading: "Refused",
            message: message,
            back: "/console/overview",
            backLabel: "Back to the console"
        )
    }
}

/// Builds HTML answers: a page rendered with the console's templates and headers, a redirect after a form.
enum ConsolePage {
    static let templates: Result<ConsoleTemplates, any Error> = Result { try ConsoleTemplates() }

    /// Headers of every console page: no caching, no framing, scripts and styles from the console only.
    static func headers(_ response: inout Response) {
        response.headers[.cacheControl] = "no-store"
        response.headers[.contentSecurityPolicy] =
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'"
        response.headers[.referrerPolicy] = "same-origin"
        response.headers[.frameOptions] = "DENY"
        response.headers[.contentTypeOptions] = "nosniff"
    }

    static func html(_ name: String, _ context: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        let body: String
        switch templates {
        case .success(let templates): body = templates.render(name, context)
        case .failure(let error): body = "the console's templates do not parse: \(error)"
        }
        var response = Response(status: status, body: .init(byteBuffer: ByteBuffer(string: body)))
        response.headers[.contentType] = "text/html; charset=utf-8"
        headers(&response)
        return response
    }

    /// A page that says one thing (an error, a refusal).
    static func message(
        status: HTTPResponse.Status,
        heading: String,
        message: String,
        back: String,
        backLabel: String,
        common: [String: Any] = [:]
    ) -> Response {
        var context = common
        context["heading"] = heading
        context["message"] = message
        context["back"] = back
        context["backLabel"] = backLabel
        context["footer"] = "\(status.code) \(status.reasonPhrase)"
        return html("message", context, status: status)
    }

    /// See other: `to`, with a notice or an error for the page it leads to.
    static func redirect(_ to: String, notice: String? = nil, error: String? = nil) -> Response {
        var location = to
        let extra = Readable.query([("notice", notice), ("error", error)])
        if !extra.isEmpty { location += (to.contains("?") ? "&" : "?") + extra }
        var response = Response(status: .seeOther)
        response.headers[.location] = location
        headers(&response)
        return response
    }
}

/// The console's routes (docs/console.md lists them).
func addConsoleRoutes(to router: Router<ServerRequestContext>, _ server: PurchaseServer) {
    let console = router.group("console").add(middleware: ConsoleGate(server: server))
    let pages = ConsolePages(server: server)
    router.get("console") { _, _ in ConsolePage.redirect("/console/overview") }
    console.get("assets/console.css") { request, _ in
        ConsolePages.asset(ConsoleTemplates.stylesheet, type: "text/css; charset=utf-8", request: request)
    }
    console.get("assets/upload.js") { request, _ in
        ConsolePages.asset(ConsoleTemplates.uploadScript, type: "text/javascript; charset=utf-8", request: request)
    }
    console.get("sign-in") { request, _ in pages.signInPage(request) }
    console.post("sign-in") { request, context in try await pages.signIn(request, context) }
    console.post("sign-out") { request, context in try await pages.signOut(request, context) }
    console.get("overview") { request, context in try await pages.overview(request, context) }
    console.get("overview.csv") { request, context in try await pages.overviewCSV(request, context) }
    console.get("customers") { request, context in try await pages.customers(request, context) }
    console.get("customers/{customer}") { request, context in try await pages.customer(request, context) }
    console.post("customers/{customer}/grant") { request, context in try await pages.grant(request, context) }
    console.post("customers/{customer}/revoke") { request, context in try await pages.revoke(request, context) }
    console.post("customers/{customer}/adjust") { request, context in try await pages.adjust(request, context) }
    console.get("queue") { request, context in try await pages.queue(request, context) }
    console.post("queue/retry-all") { request, context in try await pages.retryAll(request, context) }
    console.post("queue/{id}/retry") { request, context in try await pages.retry(request, context) }
    console.get("health") { request, context in try await pages.health(request, context) }
    console.get("notifications") { request, context in try await pages.notifications(request, context) }
    console.get("notifications/{uuid}") { request, context in try await pages.notification(request, context) }
    console.get("catalogue") { request, context in try await pages.catalogue(request, context) }
    console.get("catalogue/new") { request, context in try await pages.newProduct(request, context) }
    console.get("catalogue/{product}") { request, context in try await pages.product(request, context) }
    console.post("catalogue/{product}") { request, context in try await pages.saveProduct(request, context) }
    console.put("catalogue/{product}/content/{name}") { request, context in
        try await pages.uploadContent(request, context)
    }
    console.post("catalogue/{product}/content/{name}/delete") { request, context in
        try await pages.deleteContent(request, context)
    }
    console.post("catalogue/{product}/offers") { request, context in try await pages.putOffer(request, context) }
    console.post("catalogue/{product}/offers/{offer}/delete") { request, context in
        try await pages.deleteOffer(request, context)
    }
    console.get("apps") { request, context in try await pages.appsPage(request, context) }
    console.post("apps") { request, context in try await pages.createApp(request, context) }
    console.get("apps/{bundle}") { request, context in try await pages.app(request, context) }
    console.post("apps/{bundle}/settings") { request, context in try await pages.updateSettings(request, context) }
    console.post("apps/{bundle}/shared-secrets") { request, context in try await pages.rotateSecret(request, context) }
    console.post("apps/{bundle}/shared-secrets/remove") { request, context in
        try await pages.removeSecret(request, context)
    }
    console.post("apps/{bundle}/api-key") { request, context in try await pages.setAPIKey(request, context) }
    console.post("apps/{bundle}/in-app-purchase-key") { request, context in
        try await pages.setInAppPurchaseKey(request, context)
    }
    console.post("apps/{bundle}/certificates") { request, context in try await pages.addCertificate(request, context) }
    console.post("apps/{bundle}/certificates/remove") { request, context in
        try await pages.removeCertificate(request, context)
    }
    console.post("apps/{bundle}/catch-up") { request, context in try await pages.catchUp(request, context) }
    console.get("imports") { request, context in try await pages.imports(request, context) }
    console.get("imports/{import}") { request, context in try await pages.importPage(request, context) }
    console.post("imports/{import}/cancel") { request, context in try await pages.cancelImport(request, context) }
    console.get("activity") { request, context in try await pages.activity(request, context) }
}
