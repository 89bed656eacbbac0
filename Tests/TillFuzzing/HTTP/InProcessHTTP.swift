import Foundation
import HTTPTypes
import TillDevelopment

/// What the properties read of an answer.
extension RouterReply {
    /// The stable code of an error answer (`{"error":{"code":…}}`).
    public var errorCode: String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return nil }
        return error["code"] as? String
    }

    public var text: String { String(decoding: body.prefix(300), as: UTF8.self) }
}

/// An HTTP input of a fuzz target: its first byte picks a route from the target's table, the rest is the body.
public struct RouteInput: Sendable {
    public var route: Int
    public var body: [UInt8]

    public init?(_ bytes: [UInt8], routes: Int) {
        guard let first = bytes.first, routes > 0 else { return nil }
        route = Int(first) % routes
        body = Array(bytes.dropFirst())
    }
}

/// A route a body goes to: method, path (with the world's ids put in for `{app}`, `{device}`, …), and seed bodies.
public struct FuzzRoute: Sendable {
    public var method: HTTPRequest.Method
    public var path: String
    public var seeds: [String]

    public init(_ method: HTTPRequest.Method, _ path: String, _ seeds: [String]) {
        self.method = method
        self.path = path
        self.seeds = seeds
    }
}

/// The properties every HTTP answer to a hostile body must have, and the mutator of such inputs.
enum HTTPProperties {
    /// Error codes whose answer depends on the body alone (not on what earlier requests stored): the same body
    /// written with other whitespace must get the same answer.
    static let statelessCodes: Set<String> = [
        "invalidBody", "missingSignedPayload", "invalidSignature", "malformedNotification",
    ]

    /// No 5xx; every refusal is the JSON error shape with a lowerCamel code.
    static func checkAnswer(_ reply: RouterReply, _ what: String) throws {
        try require(reply.status < 500, "no 5xx", "\(what) → \(reply.status) \(reply.text)")
        if reply.status >= 400 {
            guard let code = reply.errorCode, let first = code.unicodeScalars.first,
                CharacterSet.lowercaseLetters.contains(first),
                code.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) })
            else {
                throw PropertyViolation("error shape", "\(what) → \(reply.status) \(reply.text)")
            }
        }
    }

    /// A body refused for what it is must be refused the same way when written with other whitespace (and, without
    /// duplicate keys, with its members in the opposite order).
    static func checkIgnoredBytes(
        _ input: RouteInput,
        first: RouterReply,
        _ what: String,
        send: ([UInt8]) async throws -> RouterReply
    ) async throws {
        guard first.status >= 400, let code = first.errorCode, statelessCodes.contains(code),
            let tree = JSONTree.parse(input.body)
        else { return }
        var random = FuzzRandom(seed: UInt64(input.body.count))
        let variant = tree.reformatted(&random, reversed: !tree.hasDuplicateKeys)
        let second = try await send(variant)
        // More whitespace may carry a body over its route's limit: that answer is about the size, not the bytes.
        if second.errorCode == "bodyTooLarge" { return }
        try require(
            second.status == first.status && second.errorCode == first.errorCode,
            "ignored bytes",
            "\(what): \(first.status) \(code) as sent, \(second.status) \(second.errorCode ?? "-") reformatted"
        )
    }

    /// Mostly the body as JSON (with any JWS inside signed again), sometimes another route.
    static func mutate(_ bytes: [UInt8], routes: Int, _ random: inout FuzzRandom, _ byteMutator: ByteMutator)
        -> [UInt8]
    {
        guard var input = RouteInput(bytes, routes: routes) else { return [random.byte()] + Array("{}".utf8) }
        if random.chance(1, in: 16) { input.route = random.int(0...routes - 1) }
        if random.chance(1, in: 8) {
            byteMutator(&input.body, maximumLength: input.body.count + 64)
        } else {
            input.body = FuzzJWS.payloadMutator.mutate(input.body, &random, byteMutator)
        }
        return [UInt8(input.route)] + input.body
    }
}
