import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TillAppStore
import TillCatalogue
import TillConsole
import TillContract
import TillCore
import TillHTTPKit
import TillLedger

/// What each console page shows and what each of its forms does, read and written through the server's components
/// (`Figures`, `Customers`, `Ledger`, `ConfirmationQueue`, `Catalogue`, …): the console has no SQL of its own.
/// Contexts are dictionaries for the templates; values are text already written for people (`Readable`).
struct ConsolePages: Sendable {
    let server: PurchaseServer

    // MARK: Common to every page

    /// The console's sections, in the order the navigation lists them.
    static let sections: [(path: String, label: String)] = [
        ("/console/overview", "Overview"), ("/console/customers", "Customers"), ("/console/queue", "Queue"),
        ("/console/health", "Health"), ("/console/notifications", "Notifications"),
        ("/console/catalogue", "Catalogue"), ("/console/apps", "Apps"), ("/console/imports", "Imports"),
        ("/console/activity", "Activity"),
    ]

    /// The app a page is about (`?app=` or the form's `app`, else the first app), and every app.
    func apps(_ request: Request, _ context: ServerRequestContext) async throws -> (ServerApp?, [ServerApp]) {
        let apps = try await server.catalogue.apps()
        let asked = request.uri.queryParameters.get("app") ?? context.form["app"]
        return (apps.first { $0.bundleId == asked } ?? apps.first, apps)
    }

    /// The app an action is about: the form's `app` (or `?app=`), which must name an app. A page falls back to the
    /// first app; an action never does, so that a form posted without its app, or for an app since deleted, changes
    /// nothing rather than another app's customers or catalogue.
    func actionApp(_ request: Request, _ context: ServerRequestContext) async throws -> ServerApp {
        let asked = request.uri.queryParameters.get("app") ?? context.form["app"] ?? ""
        guard let app = try await server.catalogue.apps().first(where: { $0.bundleId == asked }) else {
            throw TillHTTPError.notFound("app", asked)
        }
        return app
    }

    /// The page of `path`'s section that this request asks for: the app it is about (`?app=` or the form's `app`, else
    /// the first app) and every app, with the layout made for them.
    func section(_ path: String, _ request: Request, _ context: ServerRequestContext) async throws -> ConsoleSection {
        let (app, apps) = try await self.apps(request, context)
        return ConsoleSection(pages: self, request: request, context: context, path: path, app: app, apps: apps)
    }

    /// Runs an action of a form: records it with the operator's note and its outcome, and goes back to `back` with a
    /// notice, or with the refusal's message.
    func act(
        _ action: ConsoleAction,
        _ context: ServerRequestContext,
        bundleId: String?,
        target: String?,
        back: String,
        done: String,
        _ body: () async throws -> Void
    ) async throws -> Response {
        let note = context.form["note"]?.trimmingCharacters(in: .whitespacesAndNewlines)
        var outcome = "done"
        var failure: String?
        do {
            guard let note, !note.isEmpty, note.unicodeScalars.count <= 500 else {
                throw TillHTTPError.badRequest("invalidNote", "each action needs a note of 1 to 500 characters")
            }
            try await body()
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            outcome = error.code
            failure = "\(error.message) (\(error.code))"
        }
        try await server.consoleAudit.record(
            action,
            bundleId: bundleId,
            target: target,
            note: note,
            outcome: outcome,
            session: context.console?.label,
            address: context.remoteAddress
        )
        return failure.map { ConsolePage.redirect(back, error: $0) } ?? ConsolePage.redirect(back, notice: done)
    }

    /// A static file of the console, with an ETag.
    static func asset(_ bytes: [UInt8], type: String, request: Request) -> Response {
        let etag = "\"" + SHA256.hash(data: bytes).prefix(8).map { String(format: "%02x", $0) }.joined() + "\""
        if request.headers[values: .ifNoneMatch].contains(etag) {
            var response = Response(status: .notModified)
            response.headers[.eTag] = etag
            return response
        }
        var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        response.headers[.contentType] = type
        response.headers[.eTag] = etag
        response.headers[.cacheControl] = "no-cache"
        response.headers[.contentTypeOptions] = "nosniff"
        return response
    }

    // MARK: Signing in and out

    func signInPage(_ request: Request, error: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        let pairing = ConsoleSessions.randomToken()
        var context: [String: Any] = [
            "signInCSRF": pairing,
            "footer": "sign in with the operator token",
        ]
        if let error { context["error"] = error }
        if let notice = request.uri.queryParameters.get("notice") { context["notice"] = String(notice.prefix(300)) }
        if let next = request.uri.queryParameters.get("next") {
            context["next"] = Readable.percentEncoded(String(next))
        }
        var response = ConsolePage.html("sign-in", context, status: status)
        response.headers[.setCookie] = ConsoleCookie.header(
            ConsoleCookie.signIn,
            pairing,
            maxAge: 3600,
            request: request
        )
        return response
    }

    func signIn(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        // Before there is a session, the form's token must match the cookie set with the form (a page of another
        // site cannot read it, and the cookie is not sent on its requests).
        guard let paired = ConsoleCookie.value(ConsoleCookie.signIn, in: request),
            ConsoleSessions.constantTimeEqual(context.form["csrf"] ?? "", paired)
        else {
            return signInPage(
                request,
                error: "This form was not the one this browser was given (csrfTokenMissing): sign in again.",
                status: .forbidden
            )
        }
        do {
            let (cookie, _) = try await server.consoleSessions.signIn(
                token: context.form["token"] ?? "",
                address: context.remoteAddress
            )
            var next = request.uri.queryParameters.get("next").map { String($0) } ?? "/console/overview"
            if !next.hasPrefix("/console/") || next.hasPrefix("//") { next = "/console/overview" }
            var response = ConsolePage.redirect(next)
            response.headers[values: .setCookie] = [
                ConsoleCookie.header(ConsoleCookie.session, cookie, maxAge: 86_400, request: request),
                ConsoleCookie.header(ConsoleCookie.signIn, "", maxAge: 0, request: request),
            ]
            return response
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            var response = signInPage(request, error: "\(error.message) (\(error.code))", status: error.status)
            for field in error.headers { response.headers.append(field) }
            return response
        }
    }

    func signOut(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        if let current = context.console { try await server.consoleSessions.signOut(current) }
        var response = ConsolePage.redirect("/console/sign-in", notice: "Signed out.")
        response.headers[.setCookie] = ConsoleCookie.header(ConsoleCookie.session, "", maxAge: 0, request: request)
        return response
    }
}

/// One request's page in a section of the console: the app it is about and every app, and what every page of the
/// section has (the layout, the page for no app yet, the page of a refused read).
struct ConsoleSection {
    let pages: ConsolePages
    let request: Request
    let context: ServerRequestContext
    /// The section's path (`/console/customers`): the navigation marks it, and a refusal's page links back to it.
    let path: String
    let app: ServerApp?
    let apps: [ServerApp]

    /// What the layout needs: the session's token, the navigation, the app picker, a notice or error passed on by a
    /// redirect.
    var common: [String: Any] {
        var page: [String: Any] = [
            "signedIn": true,
            "csrf": context.console?.session.csrfToken ?? "",
            "path": request.uri.path,
            "hasApps": !apps.isEmpty,
            "apps": apps.map { ["bundleId": $0.bundleId, "name": $0.name, "selected": $0.bundleId == app?.bundleId] },
            "nav": ConsolePages.sections.map { item -> [String: Any] in
                [
                    "href": item.path + appQuery,
                    "label": item.label,
                    "current": item.path == path,
                ]
            },
            "footer": "server time \(Readable.time(pages.server.nowMilliseconds))",
        ]
        if let app {
            page["app"] = app.bundleId
            page["appName"] = app.name
        }
        if let notice = request.uri.queryParameters.get("notice") { page["notice"] = String(notice.prefix(300)) }
        if let error = request.uri.queryParameters.get("error") { page["error"] = String(error.prefix(500)) }
        return page
    }

    /// `?app=` and the app's bundle id, or nothing without an app.
    private var appQuery: String { app.map { "?app=" + Readable.percentEncoded($0.bundleId) } ?? "" }

    /// The page for a section that needs an app when there is none yet.
    var noApp: Response {
        ConsolePage.message(
            status: .ok,
            heading: "No app yet",
            message: "Add the first app to see its figures, customers and catalogue.",
            back: "/console/apps",
            backLabel: "Add an app",
            common: common
        )
    }

    /// A page answering an error of a read: its message, with the layout.
    func failure(_ error: TillHTTPError) -> Response {
        ConsolePage.message(
            status: error.status,
            heading: error.status == .notFound ? "Not found" : "Refused",
            message: "\(error.message) (\(error.code))",
            back: path + appQuery,
            backLabel: "Back",
            common: common
        )
    }
}
