import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import TillHTTPKit

/// The one error shape of the server and the simulator, and the middleware that gives every failure that shape.
struct TillHTTPErrorTests {
    struct Failure: Error {}

    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        let routes = RouteMethods()
        router.middlewares.add(TillHTTPErrorMiddleware(routes: routes, program: "test"))
        router.get("/items/{id}") { _, context -> String in
            let id = try context.parameters.require("id")
            guard id == "1" else { throw TillHTTPError.notFound("item", id) }
            return "one"
        }
        router.put("/items/{id}") { _, _ in "put" }
        router.get("/broken") { _, _ -> String in throw Failure() }
        router.post("/echo") { request, _ -> [String: Int] in
            try await JSONBody.decode([String: Int].self, from: request, limit: 64, decoder: JSONDecoder())
        }
        router.post("/settings") { request, _ -> String in
            let settings = try await JSONBody.decode(
                Settings.self,
                from: request,
                limit: 1024,
                decoder: JSONDecoder(),
                refusingNull: true
            )
            return settings.name ?? "-"
        }
        router.post("/raw") { request, _ -> String in
            var request = request
            return String(buffer: try await request.collectBody(upTo: 16))
        }
        routes.record(router.routes)
        return router
    }

    struct Settings: Decodable, Equatable {
        var name: String?
        var tags: [String?]?
        var inner: Inner?

        struct Inner: Decodable, Equatable {
            var size: Int?
        }
    }

    struct Answer {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var code: String?
        var message: String?
    }

    func call(_ method: HTTPRequest.Method, _ path: String, body: String? = nil) async throws -> Answer {
        try await Application(router: Self.router()).test(.router) { client in
            try await client.execute(uri: path, method: method, body: body.map { ByteBuffer(string: $0) }) { response in
                let object = try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))
                let error = (object as? [String: Any])?["error"] as? [String: Any]
                return Answer(
                    status: response.status,
                    headers: response.headers,
                    code: error?["code"] as? String,
                    message: error?["message"] as? String
                )
            }
        }
    }

    @Test func theBodyIsJSONWhateverTheMessageHolds() throws {
        let error = TillHTTPError(.badRequest, "odd", "a \"quote\", a \\ backslash, a /path/, a\nnewline and \u{1}")
        let object = try JSONSerialization.jsonObject(with: Data(error.body.utf8)) as? [String: [String: String]]
        #expect(object?["error"]?["code"] == "odd")
        #expect(object?["error"]?["message"] == error.message)
        #expect(error.body.contains("/path/"), "slashes are left as they are")
    }

    @Test func aHandlersRefusalKeepsItsCode() async throws {
        let answer = try await call(.get, "/items/2")
        #expect(answer.status == .notFound && answer.code == "itemNotFound" && answer.message == "no item 2")
    }

    /// Found by the `simulator-admin` fuzz target: a route that collects its body itself (the simulator's faults)
    /// answered a body over its limit with Hummingbird's bare 413, no error shape.
    @Test func aBodyOverTheLimitARouteCollectedItWithIsBodyTooLarge() async throws {
        let large = try await call(.post, "/raw", body: String(repeating: "x", count: 17))
        #expect(large.status == .contentTooLarge && large.code == "bodyTooLarge")
        #expect(large.message == "the request body is larger than 16 bytes")
        #expect(try await call(.post, "/raw", body: "small").status == .ok)
    }

    @Test func aThingOfSeveralWordsMakesOneCode() {
        #expect(TillHTTPError.notFound("offer code", "X").code == "offerCodeNotFound")
        #expect(TillHTTPError.notFound("Advanced Commerce event", "x").code == "advancedCommerceEventNotFound")
        #expect(TillHTTPError.notFound("auto-renewable product", "p").code == "autoRenewableProductNotFound")
        #expect(TillHTTPError.notFound("offer code", "X").message == "no offer code X")
    }

    @Test func anUnknownPathIsNotFoundAndAKnownOneWithAnotherMethodIsNotAllowed() async throws {
        let unknown = try await call(.get, "/nothing")
        #expect(unknown.status == .notFound && unknown.code == "notFound")
        let wrongMethod = try await call(.delete, "/items/1")
        #expect(wrongMethod.status == .methodNotAllowed && wrongMethod.code == "methodNotAllowed")
        #expect(wrongMethod.headers[.allow] == "GET, PUT")
    }

    @Test func anUnexpectedErrorIsA500WithoutItsDetails() async throws {
        let answer = try await call(.get, "/broken")
        #expect(answer.status == .internalServerError && answer.code == "internalError")
        #expect(answer.message == "the test could not handle the request")
    }

    @Test func aBodyThatIsNotWhatTheRouteTakesSaysWhatIsWrong() async throws {
        let wrong = try await call(.post, "/echo", body: #"{"a":"text"}"#)
        #expect(wrong.status == .badRequest && wrong.code == "invalidBody")
        #expect(wrong.message?.contains("a") == true)
        let notJSON = try await call(.post, "/echo", body: "{")
        #expect(notJSON.status == .badRequest && notJSON.code == "invalidBody")
        let large = try await call(.post, "/echo", body: "{\"a\":" + String(repeating: " ", count: 100) + "1}")
        #expect(large.status == .contentTooLarge && large.code == "bodyTooLarge")
    }

    struct PathBody: Decodable {
        struct Inner: Decodable { var count: Int }
        var items: [Int]
        var inner: Inner?
    }

    /// What `JSONBody` says is wrong with `json` as a `PathBody`.
    static func described(_ json: String) -> String {
        do {
            _ = try JSONDecoder().decode(PathBody.self, from: Data(json.utf8))
            return "decoded"
        } catch {
            return (error as? DecodingError).map(JSONBody.describe) ?? "\(error)"
        }
    }

    /// The path to what is wrong is written as a reader writes it: `items[1]`, not Foundation's `items.Index 1`.
    @Test func whatIsWrongIsNamedByItsPath() {
        let element = Self.described(#"{"items":[1,"x"]}"#)
        #expect(element.hasPrefix("items[1]: "), "\(element)")
        #expect(Self.described(#"{"items":[],"inner":{}}"#) == "missing inner.count")
        #expect(Self.described(#"{"items":[],"inner":{"count":"x"}}"#).hasPrefix("inner.count: "))
    }

    /// A `null` in a field the type has is refused, by its path: the decoder would read it as the field left out. A
    /// member the type does not have is ignored whatever it holds, as it was before nulls were refused.
    @Test func aNullIsRefusedWhereTheTypeReadsIt() async throws {
        let refused = [
            (#"{"name":null}"#, "name is null"),
            (#"{"tags":["a",null]}"#, "tags[1] is null"),
            (#"{"other":null,"name":null}"#, "name is null"),
            // Named by the decoder, after 40 in a member the type does not have.
            (
                "{\"other\":[" + Array(repeating: "null", count: 40).joined(separator: ",") + #"],"tags":[null]}"#,
                "tags[0] is null"
            ),
            // A field that holds an object takes `{}`, so the nulls are halved until one is left.
            (
                "{\"other\":[" + Array(repeating: "null", count: 40).joined(separator: ",") + #"],"inner":null}"#,
                "inner is null"
            ),
            // A key is named as the decoder reads it, its escapes resolved.
            (#"{"na\u006de":null}"#, "name is null"),
            ("{\"other\":[null,null],\"inn\\u0065r\":null}", "inner is null"),
        ]
        for (body, words) in refused {
            let answer = try await call(.post, "/settings", body: body)
            #expect(answer.status == .badRequest && answer.code == "invalidBody", "\(body)")
            #expect(
                answer.message == "the request body is not a valid Settings: \(words), and no field of a request may "
                    + "be; leave it out",
                "\(answer.message ?? "")"
            )
        }
        for body in [#"{"other":null}"#, #"{"name":"a","deep":{"x":[null]},"more":[1,null]}"#, "{}"] {
            #expect(try await call(.post, "/settings", body: body).status == .ok, "\(body)")
        }
    }

    @Test func aBodyMustBeStrictJSON() async throws {
        let twice = try await call(.post, "/echo", body: #"{"a":1,"\u0061":2}"#)
        #expect(twice.status == .badRequest && twice.code == "invalidBody")
        #expect(twice.message == #"the request body is not strict JSON: duplicate key "a""#)
        let nul = try await call(.post, "/echo", body: #"{"\u0000":1}"#)
        #expect(nul.status == .badRequest && nul.message?.contains("U+0000") == true)
        let deep = try await call(
            .post,
            "/echo",
            body: String(repeating: "[", count: 30) + String(repeating: "]", count: 30)
        )
        #expect(deep.status == .badRequest && deep.code == "invalidBody")
        #expect(try await call(.post, "/echo", body: #"{"a":1}"#).status == .ok)
    }
}
