import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TillCatalogue
import TillContract
import TillLedger

/// `GET /openapi.yaml`: the contract (Client/Sources/TillContract/openapi.yaml), the one source of the server's HTTP
/// API and of the types on both sides of it.
///
/// `OpenAPITests` calls every operation it lists against the router and compares its paths with the routes the
/// router registers, so a route added without documenting it (or documented without existing) fails the tests.
enum OpenAPIDocument {
    /// The document, in YAML.
    static let yaml = ContractDocument.yaml

    /// A strong ETag of the document: the first 16 bytes of its SHA-256, in hex, quoted.
    static let etag =
        "\"" + SHA256.hash(data: Array(yaml.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined() + "\""

    /// `GET /openapi.yaml`: the document, or 304 when the client's copy (`If-None-Match`) is current.
    @Sendable static func respond(_ request: Request, context: ServerRequestContext) -> Response {
        let bytes = ByteBuffer(string: yaml)
        // The conditional rules of downloads (RFC 9110 If-None-Match: a list, weak comparison, `*`).
        let plan = DownloadPlan.plan(
            ifNoneMatch: request.headers[values: .ifNoneMatch],
            range: nil,
            ifRange: nil,
            etag: etag,
            size: Int64(bytes.readableBytes)
        )
        let headers: HTTPFields = [.eTag: etag, .cacheControl: "no-cache"]
        if plan == .notModified { return Response(status: .notModified, headers: headers) }
        var response = Response(status: .ok, headers: headers, body: .init(byteBuffer: bytes))
        response.headers[.contentType] = "application/yaml"
        return response
    }
}
