import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TillAppStore
import TillCatalogue
import TillContract
import TillCore
import TillFormats
import TillHTTPKit
import TillLedger
import X509

// The admin API under /admin/v1 (the operator token): apps, the catalogue, catching up with Apple, imports of existing
// customers, submissions and the revenue report.

struct RevenueQuery {
    var from: Int64
    var to: Int64
    var groupBy: String
}

func addAdminRoutes(to group: RouterGroup<ServerRequestContext>, _ server: PurchaseServer) {
    group.get("apps") { request, context in
        let page = Page.of(
            try await server.catalogue.apps(),
            key: { PageKey(number: $0.createdAt, text: $0.bundleId) },
            try request.pageRequest()
        )
        return try json(page.map(AppView.init), context: context)
    }
    group.post("apps") { request, context in
        let input = try await decode(ServerAppInput.self, request, context)
        return try json(AppView(try await server.catalogue.createApp(input)), status: .created, context: context)
    }
    group.get("apps/{bundle}") { _, context in
        try json(
            AppView(try await server.catalogue.app(bundleId: try context.pathParameter("bundle"))),
            context: context
        )
    }
    group.patch("apps/{bundle}") { request, context in
        let input = try await decode(ServerAppInput.self, request, context)
        return try json(
            AppView(
                try await server.catalogue.updateApp(bundleId: try context.pathParameter("bundle"), input)
            ),
            context: context
        )
    }
    group.post("apps/{bundle}/catch-up") { _, context in
        try json(try await server.catchUp.run(bundleId: try context.pathParameter("bundle")), context: context)
    }
    group.get("apps/{bundle}/catch-up") { _, context in
        try json(try await server.catchUp.lastRun(bundleId: try context.pathParameter("bundle")), context: context)
    }
    group.post("apps/{bundle}/imports") { request, context in
        let file = try await request.body.collect(upTo: Imports.maximumFileBytes)
        let (started, created) = try await server.imports.start(
            bundleId: try context.pathParameter("bundle"),
            name: request.uri.queryParameters.get("name"),
            file: Array(file.readableBytesView)
        )
        return try json(started, status: created ? .accepted : .ok, context: context)
    }
    group.get("apps/{bundle}/imports") { request, context in
        try json(
            try await server.imports.list(
                bundleId: try context.pathParameter("bundle"),
                page: try request.pageRequest()
            ),
            context: context
        )
    }
    group.get("apps/{bundle}/imports/{import}") { _, context in
        try json(
            try await server.imports.view(
                id: try context.pathParameter("import"),
                bundleId: try context.pathParameter("bundle")
            ),
            context: context
        )
    }
    group.get("apps/{bundle}/imports/{import}/rows") { request, context in
        try json(
            try await server.imports.rows(
                bundleId: try context.pathParameter("bundle"),
                id: try context.pathParameter("import"),
                outcome: request.uri.queryParameters.get("outcome"),
                page: try request.pageRequest()
            ),
            context: context
        )
    }
    group.post("apps/{bundle}/imports/{import}/cancel") { _, context in
        try json(
            try await server.imports.cancel(
                bundleId: try context.pathParameter("bundle"),
                id: try context.pathParameter("import")
            ),
            context: context
        )
    }
    group.get("apps/{bundle}/products") { request, context in
        let page = Page.of(
            try await server.catalogue.products(bundleId: try context.pathParameter("bundle")).map(ProductView.init),
            key: { PageKey(number: Int64($0.position), text: $0.productId) },
            try request.pageRequest()
        )
        return try json(page, context: context)
    }
    group.put("apps/{bundle}/products/{product}") { request, context in
        let input = try await decode(CatalogProductInput.self, request, context)
        let written = try await server.catalogue.putProduct(
            bundleId: try context.pathParameter("bundle"),
            productId: try context.pathParameter("product"),
            input
        )
        return try json(ProductView(written.product), status: written.created ? .created : .ok, context: context)
    }
    group.get("submissions") { request, context in
        guard let state = SubmissionState(rawValue: request.uri.queryParameters.get("state") ?? "deadLettered") else {
            throw TillHTTPError.badRequest(
                "invalidState",
                "state is pending, confirmed, retrying, rejected or deadLettered"
            )
        }
        return try json(
            try await server.queueAdmin.submissions(state: state, page: try request.pageRequest()),
            context: context
        )
    }
    group.post("submissions/{id}/retry") { _, context in
        try json(try await server.queueAdmin.requeue(id: try context.pathParameter("id")), context: context)
    }
    group.get("reports/revenue") { request, context in
        let query = request.uri.queryParameters
        guard let fromText = query.get("from"), let toText = query.get("to"),
            let from = ReportDates.parse(fromText), let to = ReportDates.parse(toText), from < to
        else {
            throw TillHTTPError.badRequest(
                "invalidRange",
                "from and to are dates (2026-11-01) or UNIX milliseconds, from before to"
            )
        }
        guard let groupBy = RevenueReport.GroupByPayload(rawValue: query.get("groupBy") ?? "day") else {
            throw TillHTTPError.badRequest("invalidGroupBy", "groupBy is day, product or currency")
        }
        let bundleId = query.get("bundleId")
        // An app that does not exist is `404 appNotFound`, not a report of no sales.
        if let bundleId { _ = try await server.catalogue.app(bundleId: bundleId) }
        return try json(
            try await server.figures.revenue(bundleId: bundleId, from: from, to: to, groupBy: groupBy),
            context: context
        )
    }
}

extension Request {
    /// The admin lists' `?limit=` and `?cursor=`.
    func pageRequest() throws -> PageRequest {
        try PageRequest(limit: uri.queryParameters.get("limit"), cursor: uri.queryParameters.get("cursor"))
    }
}

/// An app as the admin API shows it (the contract's `App`): its private keys are never returned.
typealias AppView = Components.Schemas.App

extension Components.Schemas.App {
    init(_ app: ServerApp) {
        self.init(
            bundleId: app.bundleId,
            appAppleId: app.appAppleId,
            name: app.name,
            appKey: app.appKey,
            sharedSecrets: app.sharedSecrets,
            apiKeyId: app.apiKeyId,
            apiIssuerId: app.apiIssuerId,
            hasAPIKey: app.apiPrivateKey != nil,
            inAppPurchaseKeyId: app.inAppPurchaseKeyId,
            inAppPurchaseIssuerId: app.inAppPurchaseIssuerId,
            hasInAppPurchaseKey: app.inAppPurchasePrivateKey != nil,
            acceptSandbox: app.acceptSandbox,
            restorePolicy: app.restorePolicy,
            consumption: app.consumption,
            storeKitTestCertificates: app.storeKitTestCertificates.flatMap {
                ((try? StoreKitTestCertificate.parse($0)) ?? []).map(Components.Schemas.StoreKitTestCertificate.init)
            },
            createdAt: app.createdAt
        )
    }
}

extension Components.Schemas.StoreKitTestCertificate {
    init(_ trusted: StoreKitTestCertificate) {
        self.init(
            sha256: trusted.sha256Fingerprint,
            subject: String(describing: trusted.certificate.subject),
            notValidBefore: trusted.certificate.notValidBefore.millisecondsSince1970,
            notValidAfter: trusted.certificate.notValidAfter.millisecondsSince1970,
            pem: trusted.pem
        )
    }
}
