import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import TillServer

/// A browser's part in the console's HTTP tests: cookies kept across requests, forms sent as a browser sends them,
/// the CSRF token read from the last page.
final class ConsoleClient: @unchecked Sendable {
    let client: any TestClientProtocol
    private(set) var cookies: [String: String] = [:]
    private(set) var lastPage = ""

    struct Answer {
        var status: Int
        var headers: HTTPFields
        var body: String

        var location: String? { headers[.location] }
        /// The value of `<… data-figure="name">value<`.
        func figure(_ name: String) -> String? {
            guard let range = body.range(of: "data-figure=\"\(name)\">"),
                let end = body[range.upperBound...].firstIndex(of: "<")
            else { return nil }
            return String(body[range.upperBound..<end])
        }
    }

    init(_ client: any TestClientProtocol) {
        self.client = client
    }

    /// The session's CSRF token, as the last page's forms carry it.
    var csrf: String? { Self.field("csrf", in: lastPage) }

    static func field(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\""),
            let end = html[range.upperBound...].firstIndex(of: "\"")
        else { return nil }
        return String(html[range.upperBound..<end])
    }

    @discardableResult
    func get(_ path: String, headers extra: HTTPFields = [:]) async throws -> Answer {
        try await send(.get, path, headers: extra, body: nil)
    }

    /// Posts a form; `csrf` true adds the session's token as the console's forms do.
    @discardableResult
    func post(_ path: String, _ fields: [(String, String)], csrf: Bool = true) async throws -> Answer {
        var fields = fields
        if csrf, let token = self.csrf { fields.append(("csrf", token)) }
        let body = fields.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try await send(
            .post,
            path,
            headers: [.contentType: "application/x-www-form-urlencoded"],
            body: ByteBuffer(string: body)
        )
    }

    func send(_ method: HTTPRequest.Method, _ path: String, headers extra: HTTPFields, body: ByteBuffer?) async throws
        -> Answer
    {
        var headers = extra
        if !cookies.isEmpty {
            headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
        }
        let response = try await client.execute(uri: path, method: method, headers: headers, body: body)
        for cookie in response.headers[values: .setCookie] {
            guard let pair = cookie.split(separator: ";").first else { continue }
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            if parts[1].isEmpty { cookies[String(parts[0])] = nil } else { cookies[String(parts[0])] = String(parts[1]) }
        }
        let answer = Answer(
            status: Int(response.status.code),
            headers: response.headers,
            body: String(buffer: response.body)
        )
        if answer.headers[.contentType]?.hasPrefix("text/html") == true { lastPage = answer.body }
        return answer
    }

    /// Signs in with `token` as the sign-in page's form does; answers the form's answer.
    @discardableResult
    func signIn(_ token: String = "operator") async throws -> Answer {
        try await get("/console/sign-in")
        return try await post("/console/sign-in", [("token", token)])
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? ""
    }
}
