import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOFileSystem
import TillCatalogue
import TillContent
import TillContract
import TillHTTPKit
import TillLedger

/// Content delivery over HTTP (see docs/content.md): operators upload files to products, apps ask for signed
/// download URLs for an entitled customer, and the device fetches the file with the URL alone.
struct ContentController {
    let server: PurchaseServer

    func addRoutes(to router: Router<ServerRequestContext>) {
        let admin = router.group("admin/v1").add(
            middleware: OperatorTokenMiddleware(token: server.configuration.operatorToken)
        )
        admin.get("apps/{bundle}/products/{product}/content", use: list)
        admin.put("apps/{bundle}/products/{product}/content/{name}", use: upload)
        admin.delete("apps/{bundle}/products/{product}/content/{name}", use: remove)
        router.group("v1").add(middleware: AppKeyMiddleware(server: server))
            .post("customers/{customer}/downloads", use: downloads)
        // Outside the app-key group: a download URL is handed to a download manager or a background session that
        // sends no Authorization header; its signature is the authority.
        router.get("v1/content/{bundle}/{sha256}") { request, context in
            try await download(request, context: context, sendBody: true)
        }
        router.head("v1/content/{bundle}/{sha256}") { request, context in
            try await download(request, context: context, sendBody: false)
        }
    }

    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let files = try await server.content.content(
            bundleId: try context.pathParameter("bundle"),
            productId: try context.pathParameter("product")
        )
        return try json(
            Page.of(files, key: { PageKey(number: 0, text: $0.name) }, try request.pageRequest()),
            context: context
        )
    }

    /// The body is streamed to disk rather than collected: content files are far larger than the 2 MiB the
    /// context allows JSON bodies.
    @Sendable func upload(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let upload = try await server.content.putContent(
            bundleId: try context.pathParameter("bundle"),
            productId: try context.pathParameter("product"),
            name: try context.pathParameter("name"),
            contentType: request.headers[.contentType],
            declaredLength: request.headers[.contentLength].flatMap { Int64($0) },
            body: request.body
        )
        return try json(upload.file, status: upload.created ? .created : .ok, context: context)
    }

    @Sendable func remove(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try await server.content.deleteContent(
            bundleId: try context.pathParameter("bundle"),
            productId: try context.pathParameter("product"),
            name: try context.pathParameter("name")
        )
        return Response(status: .noContent)
    }

    @Sendable func downloads(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let app = try context.requireApp()
        let input = try await decode(Components.Schemas.DownloadsRequest.self, request, context)
        let downloads = try await server.content.downloads(
            bundleId: app.bundleId,
            customerId: try context.customerParameter(),
            productId: input.productId,
            name: input.name
        )
        return try json(Components.Schemas.Downloads(downloads: downloads), context: context)
    }

    /// `GET` (and `HEAD`) of a signed URL: 200 with the file, 206 with a range of it, 304 when the client's copy is
    /// current, 416 for a range outside it. The file is streamed from disk in chunks.
    func download(_ request: Request, context: ServerRequestContext, sendBody: Bool) async throws -> Response {
        let query = request.uri.queryParameters
        let file = try await server.content.authorizeDownload(
            bundleId: try context.pathParameter("bundle"),
            sha256: try context.pathParameter("sha256"),
            name: query.get("name"),
            customerId: query.get("customer"),
            expires: query.get("expires"),
            signature: query.get("signature")
        )
        guard let size = try await server.content.blobs.size(file.sha256), size == file.size else {
            context.logger.error("content file \(file.sha256) (\(file.name)) is missing or truncated on disk")
            throw TillHTTPError(.internalServerError, "contentMissing", "the server has lost \(file.name)")
        }
        let etag = "\"\(file.sha256)\""
        var headers: HTTPFields = [.eTag: etag, .acceptRanges: "bytes", .cacheControl: "private"]
        let plan = DownloadPlan.plan(
            ifNoneMatch: request.headers[values: .ifNoneMatch],
            range: request.headers[.range],
            ifRange: request.headers[.ifRange],
            etag: etag,
            size: size
        )
        let range: ClosedRange<Int64>?
        switch plan {
        case .notModified:
            return Response(status: .notModified, headers: headers)
        case .unsatisfiable:
            var response = try TillHTTPError(
                .rangeNotSatisfiable,
                "rangeNotSatisfiable",
                "\(file.name) has \(size) bytes"
            ).response(from: request, context: context)
            response.headers[.contentRange] = "bytes */\(size)"
            return response
        case .whole:
            range = size > 0 ? 0...(size - 1) : nil
        case .partial(let partial):
            range = partial
            headers[.contentRange] = "bytes \(partial.lowerBound)-\(partial.upperBound)/\(size)"
        }
        headers[.contentType] = file.contentType
        headers[.contentDisposition] = Self.attachment(file.name)
        headers[.contentLength] = String(range.map { $0.upperBound - $0.lowerBound + 1 } ?? 0)
        var body = ResponseBody()
        if sendBody, let range { body = stream(file.sha256, range) }
        return Response(status: plan == .whole ? .ok : .partialContent, headers: headers, body: body)
    }

    /// The bytes of `range` read from disk 128 KiB at a time, so a large file never sits in memory.
    private func stream(_ sha256: String, _ range: ClosedRange<Int64>) -> ResponseBody {
        let path = server.content.blobs.path(sha256)
        return ResponseBody(contentLength: Int(range.upperBound - range.lowerBound + 1)) { writer in
            try await FileSystem.shared.withFileHandle(forReadingAt: path) { handle in
                for try await chunk in handle.readChunks(
                    in: range.lowerBound..<(range.upperBound + 1),
                    chunkLength: .kibibytes(128)
                ) {
                    try await writer.write(chunk)
                }
            }
            try await writer.finish(nil)
        }
    }

    /// `attachment; filename="…"` with an ASCII fallback, plus RFC 6266's `filename*` for names beyond ASCII.
    static func attachment(_ name: String) -> String {
        let ascii = String(String.UnicodeScalarView(name.unicodeScalars.map { $0.isASCII ? $0 : "_" }))
        var value = "attachment; filename=\"\(ascii)\""
        if ascii != name { value += "; filename*=UTF-8''\(DownloadSigner.encode(name))" }
        return value
    }
}
