import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TillLedger
import TillTestSupport

@testable import TillServer

/// The OpenAPI document served at `/openapi.yaml`, held against the router it describes: every operation it lists is
/// routed and answers only statuses it lists, and every route the router registers is in it.
@Suite(.sharingTheMachine)
struct OpenAPITests {
    /// One operation of the document.
    struct Operation: CustomStringConvertible {
        var method: String
        var path: String
        /// The response statuses the document lists for it.
        var statuses: Set<Int> = []

        var key: String { "\(method) \(path)" }
        var description: String { key }
    }

    /// The operations under `paths:`, read line by line from the document's layout (two spaces per level: paths at
    /// 2, methods at 4, `responses:` at 6, statuses at 8). Not a YAML parser; the document is written to this shape.
    static func operations(in yaml: String) -> [Operation] {
        let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
        var operations: [Operation] = []
        var inPaths = false
        var path: String?
        var inOperation = false
        var inResponses = false
        for line in yaml.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty, !text.hasPrefix("#") else { continue }
            let indent = line.prefix { $0 == " " }.count
            let key = text.hasSuffix(":") ? unquoted(String(text.dropLast())) : nil
            switch indent {
            case 0:
                inPaths = text == "paths:"
                path = nil
            case 2 where inPaths:
                path = key
                inOperation = false
            case 4 where inPaths:
                inOperation = false
                inResponses = false
                if let path, let key, methods.contains(key) {
                    operations.append(Operation(method: key.uppercased(), path: path))
                    inOperation = true
                }
            case 6 where inOperation:
                inResponses = text == "responses:"
            case 8 where inResponses:
                if let status = key.flatMap({ Int($0) }) { operations[operations.count - 1].statuses.insert(status) }
            default:
                break
            }
        }
        return operations
    }

    static func unquoted(_ text: String) -> String {
        guard text.count >= 2, let first = text.first, first == text.last, first == "'" || first == "\"" else {
            return text
        }
        return String(text.dropFirst().dropLast())
    }

    /// A sample value for each path parameter of the document; a new parameter needs one here.
    static let samples: [String: String] = [
        "bundle": ServerFixture.bundleId,
        "product": "pro",
        "name": "manual.pdf",
        "customer": "alice",
        "offer": "loyal",
        "group": "premium",
        "id": "00000000-0000-0000-0000-000000000000",
        "sha256": String(repeating: "0", count: 64),
        "endpoint": "ep_0",
        "delivery": "dlv_0",
        "import": "imp_0",
    ]

    typealias Reply = HTTPReply

    func call(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        body: String? = nil,
        token: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        try await client.call(method, path, json: body, token: token, headers: headers)
    }

    /// Runs `body` with the fixture's server behind an in-process router, its content in a directory of its own.
    func withRouter(_ body: @Sendable (ServerFixture, any TestClientProtocol) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("till-openapi-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerFixture.run(configure: { $0.contentDirectory = directory }) { fixture in
            let app = Application(router: buildServerRouter(fixture.server))
            try await app.test(.router) { client in try await body(fixture, client) }
        }
    }

    @Test func theDocumentIsServedWithAnETag() async throws {
        try await withRouter { _, client in
            let reply = try await call(client, .get, "/openapi.yaml")
            #expect(reply.status == 200)
            #expect(reply.headers[.contentType] == "application/yaml")
            #expect(String(decoding: reply.body, as: UTF8.self) == OpenAPIDocument.yaml)
            #expect(OpenAPIDocument.yaml.hasPrefix("openapi: 3.1."))
            let etag = try #require(reply.headers[.eTag])
            let again = try await call(client, .get, "/openapi.yaml", headers: [.ifNoneMatch: etag])
            #expect(again.status == 304 && again.body.isEmpty && again.headers[.eTag] == etag)
            let stale = try await call(client, .get, "/openapi.yaml", headers: [.ifNoneMatch: "\"stale\""])
            #expect(stale.status == 200)
        }
    }

    /// Each documented operation, called with sample parameters and an empty JSON body, reaches a handler (not the
    /// router's "no such route" 404) and answers a status the document lists for it.
    @Test func everyDocumentedOperationIsRoutedAndAnswersADocumentedStatus() async throws {
        let operations = Self.operations(in: OpenAPIDocument.yaml)
        #expect(operations.count >= 20, "the reader found only \(operations)")
        try await withRouter { fixture, client in
            // The check can fail: a path or a method the router does not know is told apart from a handler's 404.
            #expect(try await call(client, .get, "/v1/nothing-here", token: fixture.app.appKey).unrouted)
            #expect(try await call(client, .delete, "/health").unrouted)
            #expect(try await call(client, .get, "/v1/customers/nobody", token: fixture.app.appKey).status == 200)
            #expect(
                try await call(client, .get, "/admin/v1/apps/com.example.none", token: "operator").code == "appNotFound"
            )

            for operation in operations {
                var path = operation.path
                for (name, value) in Self.samples { path = path.replacingOccurrences(of: "{\(name)}", with: value) }
                #expect(!path.contains("{"), "\(operation): give OpenAPITests.samples a value for this parameter")
                let method = try #require(HTTPRequest.Method(operation.method))
                let token = path.hasPrefix("/admin/") ? "operator" : fixture.app.appKey
                let body = [.post, .put, .patch].contains(method) ? "{}" : nil
                let reply = try await call(client, method, path, body: body, token: token)
                #expect(!reply.unrouted, "\(operation) is documented but not routed")
                #expect(
                    operation.statuses.contains(reply.status),
                    "\(operation) answered \(reply.status) \(reply.code ?? ""), not among \(operation.statuses.sorted())"
                )
            }
        }
    }

    /// Hummingbird 2's `Router.routes` lists every method and path registered, so the two sets must be equal.
    @Test func everyRouteIsDocumented() async throws {
        try await withRouter { fixture, _ in
            // The console's pages are HTML for a browser, not the API: docs/console.md lists them.
            let routed = Set(
                buildServerRouter(fixture.server).routes.map { "\($0.method) \($0.path)" }
                    .filter { !$0.split(separator: " ")[1].hasPrefix("/console") }
            )
            let documented = Set(Self.operations(in: OpenAPIDocument.yaml).map(\.key))
            #expect(routed.count >= 20, "the router listed only \(routed)")
            #expect(routed.subtracting(documented).isEmpty, "routed, not documented: \(routed.subtracting(documented))")
            #expect(documented.subtracting(routed).isEmpty, "documented, not routed: \(documented.subtracting(routed))")
        }
    }

    /// An independent check of the document against the OpenAPI 3.1 schema. `.ci/run` installs the validator;
    /// elsewhere the test is skipped with a message (and fails under CI).
    @Test(
        .enabled(
            if: Prerequisite.openAPIValidator.shouldRun,
            Comment(rawValue: Prerequisite.openAPIValidator.skipMessage)
        )
    )
    func theDocumentIsValidOpenAPI() async throws {
        try Prerequisite.openAPIValidator.require()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("till-openapi-\(UUID()).yaml")
        try Data(OpenAPIDocument.yaml.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, text) = try await ChildProcess.run(
            "/usr/bin/env",
            ["python3", "-m", "openapi_spec_validator", file.path]
        )
        #expect(status == 0, "\(text)")
    }
}

extension HTTPReply {
    /// The router found no route for the path and method: `notFound` for an unknown path, `methodNotAllowed`
    /// for a known one (handlers' own 404s carry a more specific code).
    var unrouted: Bool { (status == 404 && code == "notFound") || (status == 405 && code == "methodNotAllowed") }
}
