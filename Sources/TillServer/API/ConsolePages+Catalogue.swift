import Foundation
import Hummingbird
import TillAppStore
import TillCatalogue
import TillConsole
import TillContent
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import X509

/// The catalogue (products, their content with an upload's progress, their signable offers), the apps (policies,
/// shared secrets and their rotation, keys, StoreKit test certificates) and the console's activity: the same
/// components the admin API calls (`Catalogue`, `ContentDelivery`, `Offers`, `CatchUp`).
extension ConsolePages {
    func catalogue(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/catalogue", request, context)
        guard let app = section.app else { return section.noApp }
        var page = section.common
        var rows: [[String: Any]] = []
        for product in try await server.catalogue.products(bundleId: app.bundleId) {
            let offers =
                product.type == .autoRenewable
                ? try await server.offers.offers(bundleId: app.bundleId, productId: product.productId).items
                    .map(\.offerIdentifier).joined(separator: ", ") : ""
            rows.append([
                "href": productHref(product.productId, app: app.bundleId),
                "title": product.title,
                "productId": product.productId,
                "type": product.type.rawValue,
                "grants":
                    (product.entitlements + product.credits.sorted { $0.key < $1.key }.map { "\($0.key) +\($0.value)" })
                    .joined(separator: ", "),
                "price": product.price.map { "\(Readable.money($0)) \(product.currency ?? "")" } ?? "—",
                "files": product.content.count,
                "offers": offers,
            ])
        }
        page["products"] = rows
        return ConsolePage.html("catalogue", page)
    }

    func productHref(_ productId: String, app: String) -> String {
        "/console/catalogue/\(Readable.percentEncoded(productId))?app=\(Readable.percentEncoded(app))"
    }

    func newProduct(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let (app, _) = try await self.apps(request, context)
        let id = (request.uri.queryParameters.get("product").map { String($0) } ?? "").trimmingCharacters(
            in: .whitespaces
        )
        let bundleId = app?.bundleId ?? ""
        // The form requires an id; a request without one (typed, or from a page without the check) is sent back to
        // the catalogue with the reason, not to a product page named by a placeholder that a save would create.
        guard !id.isEmpty else {
            return ConsolePage.redirect(
                "/console/catalogue?app=\(Readable.percentEncoded(bundleId))",
                error: "Give the new product an id."
            )
        }
        return ConsolePage.redirect(productHref(id, app: bundleId))
    }

    func product(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/catalogue", request, context)
        guard let app = section.app else { return section.noApp }
        let productId = try context.pathParameter("product")
        let product = try await server.catalogue.products(of: app.bundleId)[productId]
        var page = section.common
        page["productId"] = productId
        page["exists"] = product != nil
        page["base"] = "/console/catalogue/" + Readable.percentEncoded(productId)
        page["types"] = ProductType.allCases.map {
            ["value": $0.rawValue, "label": $0.rawValue, "selected": $0 == (product?.type ?? .nonConsumable)]
        }
        page["title"] = product?.title ?? ""
        page["entitlements"] = product?.entitlements.joined(separator: ", ") ?? ""
        page["credits"] =
            product?.credits.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: ", ") ?? ""
        page["subscriptionGroup"] = product?.subscriptionGroup ?? ""
        page["durationSeconds"] = product?.durationSeconds.map { String($0) } ?? ""
        page["price"] = product?.price.map { String($0) } ?? ""
        page["currency"] = product?.currency ?? ""
        page["position"] = product.map { String($0.position) } ?? ""
        if let product {
            page["files"] = product.content.map { file -> [String: Any] in
                [
                    "name": file.name,
                    "encodedName": Readable.percentEncoded(file.name),
                    "size": Self.bytes(file.size),
                    "contentType": file.contentType,
                    "sha256": file.sha256,
                ]
            }
            page["subscription"] = product.type == .autoRenewable
            if product.type == .autoRenewable {
                page["offers"] = try await server.offers.offers(bundleId: app.bundleId, productId: productId).items
                    .map { offer -> [String: Any] in
                        [
                            "offerIdentifier": offer.offerIdentifier,
                            "encodedOffer": Readable.percentEncoded(offer.offerIdentifier),
                            "eligibility": offer.eligibility.rawValue,
                        ]
                    }
                page["eligibilities"] = Offers.Eligibility.allCases.map(\.rawValue)
            }
        }
        return ConsolePage.html("product", page)
    }

    static func bytes(_ count: Int64) -> String {
        if count < 1024 { return "\(count) B" }
        if count < 1024 * 1024 { return String(format: "%.1f KiB", Double(count) / 1024) }
        return String(format: "%.1f MiB", Double(count) / 1_048_576)
    }

    func saveProduct(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let app = try await actionApp(request, context)
        let productId = try context.pathParameter("product")
        let form = context.form
        return try await act(
            .saveProduct,
            context,
            bundleId: app.bundleId,
            target: productId,
            back: productHref(productId, app: app.bundleId),
            done: "Saved \(productId)."
        ) {
            guard let type = Components.Schemas.ProductType(rawValue: form["type"] ?? "") else {
                throw TillHTTPError.badRequest("invalidType", "choose the product's type")
            }
            func number(_ name: String) throws -> Int64? {
                guard let text = form[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
                guard let value = Int64(text) else {
                    throw TillHTTPError.badRequest("invalidNumber", "\(name) is a whole number")
                }
                return value
            }
            var credits: [String: Int64] = [:]
            for pair in (form["credits"] ?? "").split(separator: ",") {
                let parts = pair.split(separator: "=").map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty, let amount = Int64(parts[1]) else {
                    throw TillHTTPError.badRequest("invalidCredits", "credits are written gems=100, coins=5")
                }
                credits[parts[0]] = amount
            }
            let text = { (name: String) -> String? in
                let value = form[name]?.trimmingCharacters(in: .whitespaces) ?? ""
                return value.isEmpty ? nil : value
            }
            try await server.catalogue.putProduct(
                bundleId: app.bundleId,
                productId: productId,
                CatalogProductInput(
                    _type: type,
                    title: text("title"),
                    entitlements: (form["entitlements"] ?? "").split(separator: ",")
                        .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty },
                    credits: credits.isEmpty ? nil : Components.Schemas.Credits(additionalProperties: credits),
                    subscriptionGroup: text("subscriptionGroup"),
                    durationSeconds: try number("durationSeconds"),
                    price: try number("price"),
                    currency: text("currency")?.uppercased(),
                    position: try number("position").map { Int($0) }
                )
            )
        }
    }

    /// A content file streamed from the upload form's script (`upload.js`): the note comes in a header, and the
    /// answer is JSON for the script.
    func uploadContent(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let app = try await actionApp(request, context)
        let productId = try context.pathParameter("product")
        let name = try context.pathParameter("name")
        let note = (request.headers[.consoleNote]?.removingPercentEncoding ?? "").trimmingCharacters(in: .whitespaces)
        var outcome = "done"
        defer {}
        do {
            guard !note.isEmpty, note.unicodeScalars.count <= 500 else {
                throw TillHTTPError.badRequest("invalidNote", "each action needs a note of 1 to 500 characters")
            }
            let upload = try await server.content.putContent(
                bundleId: app.bundleId,
                productId: productId,
                name: name,
                contentType: request.headers[.contentType],
                declaredLength: request.headers[.contentLength].flatMap { Int64($0) },
                body: request.body
            )
            try await server.consoleAudit.record(
                .uploadContent,
                bundleId: app.bundleId,
                target: "\(productId)/\(name) (\(upload.file.size) bytes, \(upload.file.sha256))",
                note: note,
                session: context.console?.label,
                address: context.remoteAddress
            )
            return try json(upload.file, status: upload.created ? .created : .ok, context: context)
        } catch {
            guard let error = TillHTTPError.refusal(error) else { throw error }
            outcome = error.code
            try await server.consoleAudit.record(
                .uploadContent,
                bundleId: app.bundleId,
                target: "\(productId)/\(name)",
                note: note,
                outcome: outcome,
                session: context.console?.label,
                address: context.remoteAddress
            )
            throw error
        }
    }

    func deleteContent(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let app = try await actionApp(request, context)
        let productId = try context.pathParameter("product")
        let name = try context.pathParameter("name")
        return try await act(
            .deleteContent,
            context,
            bundleId: app.bundleId,
            target: "\(productId)/\(name)",
            back: productHref(productId, app: app.bundleId),
            done: "Removed \(name)."
        ) {
            try await server.content.deleteContent(bundleId: app.bundleId, productId: productId, name: name)
        }
    }

    func putOffer(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let app = try await actionApp(request, context)
        let productId = try context.pathParameter("product")
        let offer = (context.form["offer"] ?? "").trimmingCharacters(in: .whitespaces)
        return try await act(
            .putOffer,
            context,
            bundleId: app.bundleId,
            target: "\(productId): \(offer)",
            back: productHref(productId, app: app.bundleId),
            done: "Offer \(offer) saved."
        ) {
            guard let eligibility = Offers.Eligibility(rawValue: context.form["eligibility"] ?? "") else {
                throw TillHTTPError.badRequest("invalidEligibility", "choose who may have the offer")
            }
            _ = try await server.offers.putOffer(
                bundleId: app.bundleId,
                productId: productId,
                offerIdentifier: offer,
                eligibility: eligibility
            )
        }
    }

    func deleteOffer(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let app = try await actionApp(request, context)
        let productId = try context.pathParameter("product")
        let offer = try context.pathParameter("offer")
        return try await act(
            .deleteOffer,
            context,
            bundleId: app.bundleId,
            target: "\(productId): \(offer)",
            back: productHref(productId, app: app.bundleId),
            done: "Offer \(offer) removed."
        ) {
            try await server.offers.deleteOffer(bundleId: app.bundleId, productId: productId, offerIdentifier: offer)
        }
    }

    // MARK: Apps

    func appsPage(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/apps", request, context)
        var page = section.common
        page["appList"] = section.apps.map { app -> [String: Any] in
            [
                "href": "/console/apps/" + Readable.percentEncoded(app.bundleId),
                "name": app.name,
                "bundleId": app.bundleId,
                "sandbox": app.acceptSandbox ? "accepted" : "refused",
                "keys": [
                    app.apiPrivateKey == nil ? nil : "App Store Server API",
                    app.inAppPurchasePrivateKey == nil ? nil : "In-App Purchase",
                    app.sharedSecrets.isEmpty ? nil : "\(app.sharedSecrets.count) shared secret(s)",
                ].compactMap { $0 }.joined(separator: ", "),
                "restorePolicy": app.restorePolicy.rawValue,
            ]
        }
        return ConsolePage.html("apps", page)
    }

    func appHref(_ bundleId: String) -> String { "/console/apps/" + Readable.percentEncoded(bundleId) }

    func createApp(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let form = context.form
        let bundleId = (form["bundleId"] ?? "").trimmingCharacters(in: .whitespaces)
        return try await act(
            .createApp,
            context,
            bundleId: bundleId,
            target: bundleId,
            back: bundleId.isEmpty ? "/console/apps" : appHref(bundleId),
            done: "Added \(bundleId)."
        ) {
            let secret = (form["sharedSecret"] ?? "").trimmingCharacters(in: .whitespaces)
            _ = try await server.catalogue.createApp(
                ServerAppInput(
                    bundleId: bundleId,
                    appAppleId: try Self.appAppleId(form["appAppleId"]),
                    name: form["name"]?.trimmingCharacters(in: .whitespaces),
                    sharedSecrets: secret.isEmpty ? [] : [secret],
                    acceptSandbox: form["acceptSandbox"] == "true"
                )
            )
        }
    }

    static func appAppleId(_ text: String?) throws -> Int64? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        guard let value = Int64(text), value > 0 else {
            throw TillHTTPError.badRequest("invalidAppAppleId", "the app Apple id is a number")
        }
        return value
    }

    func app(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let bundleId = try context.pathParameter("bundle")
        let apps = try await server.catalogue.apps()
        let found = apps.first(where: { $0.bundleId == bundleId })
        let section = ConsoleSection(
            pages: self,
            request: request,
            context: context,
            path: "/console/apps",
            app: found ?? apps.first,
            apps: apps
        )
        guard let app = found else { return section.failure(.notFound("app", bundleId)) }
        var page = section.common
        page["base"] = appHref(app.bundleId)
        page["bundleId"] = app.bundleId
        page["appKey"] = app.appKey
        page["appAppleId"] = app.appAppleId.map { String($0) } ?? ""
        page["created"] = Readable.time(app.createdAt)
        page["acceptSandbox"] = app.acceptSandbox
        page["restorePolicies"] = [
            ("keepWithFirstOwner", "Refuse it: the first owner keeps it"),
            ("transferToLatest", "Move the whole purchase to the latest customer"),
        ].map { ["value": $0.0, "label": $0.1, "selected": $0.0 == app.restorePolicy.rawValue] }
        page["sampleContentProvided"] = app.consumption.sampleContentProvided ?? false
        let preference = app.consumption.refundPreference?.rawValue ?? ""
        page["refundPreferences"] =
            [("", "none")]
            + ConsumptionSettings.RefundPreference.allCases.map { ($0.rawValue, $0.rawValue) }
            .map { ["value": $0.0, "label": $0.1, "selected": $0.0 == preference] }
        page["secrets"] = app.sharedSecrets.enumerated().map { index, secret -> [String: Any] in
            ["index": index, "masked": Self.masked(secret), "first": index == 0]
        }
        page["apiKeyState"] = app.apiPrivateKey == nil ? "none" : "set (\(app.apiKeyId ?? "?"))"
        page["iapKeyState"] =
            app.inAppPurchasePrivateKey == nil
            ? "none (the App Store Server API key signs offers)"
            : "set (\(app.inAppPurchaseKeyId ?? "?"))"
        page["apiKeyId"] = app.apiKeyId ?? ""
        page["apiIssuerId"] = app.apiIssuerId ?? ""
        page["iapKeyId"] = app.inAppPurchaseKeyId ?? ""
        page["iapIssuerId"] = app.inAppPurchaseIssuerId ?? ""
        let certificates = app.storeKitTestCertificates.flatMap { (try? StoreKitTestCertificate.parse($0)) ?? [] }
        page["certificates"] = certificates.enumerated().map { index, certificate -> [String: Any] in
            [
                "index": index,
                "sha256": certificate.sha256Fingerprint,
                "subject": String(describing: certificate.certificate.subject),
                "validity": "valid \(Readable.date(certificate.certificate.notValidBefore.millisecondsSince1970)) to "
                    + Readable.date(certificate.certificate.notValidAfter.millisecondsSince1970),
            ]
        }
        var offers: [[String: Any]] = []
        for product in try await server.catalogue.products(bundleId: app.bundleId) where product.type == .autoRenewable
        {
            for offer in try await server.offers.offers(bundleId: app.bundleId, productId: product.productId).items {
                offers.append([
                    "productId": product.productId,
                    "href": productHref(product.productId, app: app.bundleId),
                    "offerIdentifier": offer.offerIdentifier,
                    "eligibility": offer.eligibility.rawValue,
                ])
            }
        }
        page["offers"] = offers
        return ConsolePage.html("app", page)
    }

    /// A secret as the page shows it: its first and last four characters.
    static func masked(_ secret: String) -> String {
        secret.count <= 10
            ? String(repeating: "•", count: secret.count)
            : String(secret.prefix(4)) + "••••" + String(secret.suffix(4))
    }

    /// Changes an app's settings with an action of its page.
    private func updateApp(
        _ action: ConsoleAction,
        _ context: ServerRequestContext,
        done: String,
        _ input: @escaping (ServerApp) throws -> ServerAppInput
    ) async throws -> Response {
        let bundleId = try context.pathParameter("bundle")
        return try await act(action, context, bundleId: bundleId, target: bundleId, back: appHref(bundleId), done: done)
        {
            let app = try await server.catalogue.app(bundleId: bundleId)
            _ = try await server.catalogue.updateApp(bundleId: bundleId, try input(app))
        }
    }

    func updateSettings(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let form = context.form
        return try await updateApp(.updateApp, context, done: "Policies saved.") { _ in
            guard let policy = RestorePolicy(rawValue: form["restorePolicy"] ?? "") else {
                throw TillHTTPError.badRequest("invalidRestorePolicy", "choose a restore policy")
            }
            let preference = form["refundPreference"] ?? ""
            return ServerAppInput(
                appAppleId: try Self.appAppleId(form["appAppleId"]),
                name: form["name"]?.trimmingCharacters(in: .whitespaces),
                acceptSandbox: form["acceptSandbox"] == "true",
                restorePolicy: policy,
                consumption: ConsumptionSettings(
                    sampleContentProvided: form["sampleContentProvided"] == "true",
                    refundPreference: preference.isEmpty
                        ? nil : ConsumptionSettings.RefundPreference(rawValue: preference)
                )
            )
        }
    }

    func rotateSecret(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let secret = (context.form["secret"] ?? "").trimmingCharacters(in: .whitespaces)
        return try await updateApp(.rotateSharedSecret, context, done: "The new shared secret is sent first.") { app in
            guard !secret.isEmpty else { throw TillHTTPError.badRequest("invalidSecret", "type the new shared secret") }
            // The new one first (verifyReceipt gets it); the one it replaces second, accepted until removed.
            return ServerAppInput(sharedSecrets: [secret] + app.sharedSecrets.filter { $0 != secret }.prefix(1))
        }
    }

    func removeSecret(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let index = Int(context.form["index"] ?? "") ?? -1
        return try await updateApp(.removeSharedSecret, context, done: "Shared secret removed.") { app in
            guard index > 0, index < app.sharedSecrets.count else {
                throw TillHTTPError.badRequest("invalidSecret", "only a secret after the first can be removed")
            }
            var secrets = app.sharedSecrets
            secrets.remove(at: index)
            return ServerAppInput(sharedSecrets: secrets)
        }
    }

    func setAPIKey(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let form = context.form
        return try await updateApp(.setAPIKey, context, done: "App Store Server API key saved.") { _ in
            ServerAppInput(
                apiKeyId: form["keyId"]?.trimmingCharacters(in: .whitespaces),
                apiIssuerId: form["issuerId"]?.trimmingCharacters(in: .whitespaces),
                apiPrivateKey: form["privateKey"]?.replacingOccurrences(of: "\r\n", with: "\n")
            )
        }
    }

    func setInAppPurchaseKey(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let form = context.form
        return try await updateApp(.setInAppPurchaseKey, context, done: "In-App Purchase key saved.") { _ in
            let pem = (form["privateKey"] ?? "").replacingOccurrences(of: "\r\n", with: "\n")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return ServerAppInput(
                inAppPurchaseKeyId: pem.isEmpty ? nil : form["keyId"]?.trimmingCharacters(in: .whitespaces),
                inAppPurchaseIssuerId: pem.isEmpty ? nil : form["issuerId"]?.trimmingCharacters(in: .whitespaces),
                inAppPurchasePrivateKey: pem
            )
        }
    }

    func addCertificate(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let certificate = (context.form["certificate"] ?? "").replacingOccurrences(of: "\r\n", with: "\n")
        return try await updateApp(.addCertificate, context, done: "Certificate added.") { app in
            ServerAppInput(storeKitTestCertificates: app.storeKitTestCertificates + [certificate])
        }
    }

    func removeCertificate(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let fingerprint = context.form["sha256"] ?? ""
        return try await updateApp(.removeCertificate, context, done: "Certificate removed.") { app in
            ServerAppInput(
                storeKitTestCertificates: app.storeKitTestCertificates.filter { pem in
                    !((try? StoreKitTestCertificate.parse(pem)) ?? []).contains { $0.sha256Fingerprint == fingerprint }
                }
            )
        }
    }

    func catchUp(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let bundleId = try context.pathParameter("bundle")
        var summary = ""
        let back = "/console/health?app=" + Readable.percentEncoded(bundleId)
        let response = try await act(
            .catchUp,
            context,
            bundleId: bundleId,
            target: bundleId,
            back: back,
            done: "Caught up."
        ) {
            let run = try await server.catchUp.run(bundleId: bundleId)
            summary = run.outcome.rawValue
        }
        _ = summary
        return response
    }

    // MARK: Activity

    func activity(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        let section = try await self.section("/console/activity", request, context)
        var page = section.common
        let cursor = request.uri.queryParameters.get("cursor").flatMap { PageKey(cursor: String($0)) }
        let actions = try await server.consoleAudit.actions(before: cursor, limit: 51)
        let shown = actions.prefix(50)
        page["actions"] = shown.map { action -> [String: Any] in
            [
                "when": Readable.time(action.at),
                "action": action.action.rawValue,
                "bundleId": action.bundleId ?? "",
                "target": action.target ?? "",
                "note": action.note ?? "",
                "outcome": action.outcome,
                "address": action.address ?? "",
                "session": action.session.map { "session " + $0 } ?? "",
            ]
        }
        if actions.count > 50, let last = shown.last {
            page["nextPage"] = "/console/activity?cursor=" + PageKey(number: last.at, text: last.id).cursor
        }
        return ConsolePage.html("activity", page)
    }
}
