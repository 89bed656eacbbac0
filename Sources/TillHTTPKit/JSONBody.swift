import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TillFormats

/// The largest request bodies the two servers read, by what a route's body carries (docs/fuzzing.md, "Resource
/// bounds"). A body over its route's limit is refused with 413 `bodyTooLarge` once that many bytes have arrived,
/// before any of it is decoded.
public enum BodyLimit {
    /// A JSON body of settings or of a small request (most routes): 64 KiB, ten times the largest legitimate one
    /// (an app's settings with its keys and StoreKit test certificates, a product priced in every storefront).
    public static let json = 64 * 1024
    /// A body carrying a receipt (`POST /v1/receipts`, restore): an app receipt is at most 1 MiB, 1.4 MiB in base64.
    public static let receipt = 2 * 1024 * 1024
    /// An App Store Server Notification: a signed payload of at most 256 KiB (the verifier's limit for a JWS).
    public static let notification = 512 * 1024
}

/// JSON request and response bodies, with the refusals every route gives for a body it cannot take.
public enum JSONBody {
    /// `value` encoded by `encoder` as an `application/json` response.
    public static func response<T: Encodable>(
        _ value: T,
        status: HTTPResponse.Status = .ok,
        encoder: JSONEncoder
    ) throws -> Response {
        response(bytes: ByteBuffer(bytes: try encoder.encode(value)), status: status)
    }

    /// JSON already written (by `JSONWriter` on a hot path) as an `application/json` response.
    public static func response(bytes: ByteBuffer, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: bytes))
    }

    /// The request's body decoded as `T`: 413 `bodyTooLarge` over `limit` bytes (``BodyLimit``), 400 `invalidBody`
    /// saying what is wrong when it is not strict JSON (``StrictJSON``: a key twice in an object, U+0000 in a
    /// string, nesting deeper than 64 levels) or not a `T`.
    public static func decode<T: Decodable>(
        _ type: T.Type,
        from request: Request,
        limit: Int,
        decoder: JSONDecoder
    ) async throws -> T {
        let (bytes, _) = try await strictBody(of: request, limit: limit, findingNulls: false)
        return try read(T.self, from: bytes, decoder: decoder)
    }

    /// The same, and with `refusingNull` also 400 `invalidBody` for a `null` that `T` reads: one in a field `T`
    /// has, which Foundation's decoder takes as the field left out. A member `T` does not have is ignored whatever
    /// it holds, `null` included, as the contract's schemas allow (they do not close their objects).
    public static func decode<T: Decodable & Equatable>(
        _ type: T.Type,
        from request: Request,
        limit: Int,
        decoder: JSONDecoder,
        refusingNull: Bool
    ) async throws -> T {
        let (bytes, nulls) = try await strictBody(of: request, limit: limit, findingNulls: refusingNull)
        let value = try read(T.self, from: bytes, decoder: decoder)
        // After decoding, so that a null the type cannot take is told as the decoder tells it ("expected a string,
        // not null"); what is left is a null the decoder read as the field left out, or one it did not read at all.
        if refusingNull, let null = NullReading(bytes: bytes, value: value, decoder: decoder).oneRead(of: nulls) {
            let steps = nulls.path(to: null)
            throw TillHTTPError.badRequest(
                "invalidBody",
                "the request body is not a valid \(T.self): \(steps.isEmpty ? "the body" : path(steps)) is "
                    + "null, and no field of a request may be; leave it out"
            )
        }
        return value
    }

    /// The body's bytes within `limit`, checked as strict JSON, and the nulls it holds.
    private static func strictBody(
        of request: Request,
        limit: Int,
        findingNulls: Bool
    ) async throws -> ([UInt8], StrictJSON.Nulls) {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw TillHTTPError(.contentTooLarge, "bodyTooLarge", "the request body is larger than \(limit) bytes")
        } catch let error as CancellationError {
            throw error
        } catch {
            // The connection ended, or was reset, before the body did: not a body too large (it was logged as one).
            throw TillHTTPError.badRequest("incompleteBody", "the request body ended before its end")
        }
        let bytes = Array(buffer.readableBytesView)
        do {
            return (bytes, try StrictJSON.check(bytes, findingNulls: findingNulls))
        } catch {
            throw TillHTTPError.badRequest("invalidBody", "the request body is not strict JSON: \(error)")
        }
    }

    /// `bytes`, strict JSON, decoded as `T`, or 400 `invalidBody` saying why not.
    private static func read<T: Decodable>(_ type: T.Type, from bytes: [UInt8], decoder: JSONDecoder) throws -> T {
        do {
            return try decoder.decode(T.self, from: Data(bytes))
        } catch DecodingError.dataCorrupted(let context)
            where context.codingPath.isEmpty && context.debugDescription.hasPrefix("The given data was not valid JSON")
        {
            // The body is strict JSON (checked above), yet Foundation says "not valid JSON", with no path: that is
            // what it says of a number its field cannot hold (1.5 or 1e400 for a whole number). Any other refusal
            // at the top (a type's own `init(from:)`) keeps its words, below.
            throw TillHTTPError.badRequest(
                "invalidBody",
                "the request body is not a valid \(T.self): a number does not fit its field "
                    + "(a fraction where a whole number is needed, or one too large)"
            )
        } catch let error as DecodingError {
            throw TillHTTPError.badRequest(
                "invalidBody",
                "the request body is not a valid \(T.self): \(describe(error))"
            )
        } catch {
            throw TillHTTPError.badRequest("invalidBody", "the request body is not JSON")
        }
    }

    /// What is wrong with a body, in a few words: the missing key, or the path and what was expected there.
    public static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            "missing " + path(context.codingPath + [key])
        case .typeMismatch(let type, let context):
            at(context.codingPath, "expected " + kind(type))
        case .valueNotFound(let type, let context):
            at(context.codingPath, "expected " + kind(type) + ", not null")
        case .dataCorrupted(let context):
            at(context.codingPath, context.debugDescription)
        @unknown default: "\(error)"
        }
    }

    private static func at(_ keys: [any CodingKey], _ words: String) -> String {
        keys.isEmpty ? words : path(keys) + ": " + words
    }

    /// What a Swift type is in JSON's words, for a body's reader (Foundation says `Expected to decode Dictionary<String,
    /// Any> but found an array instead.`).
    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is any JSONObjectKind.Type: "an object"
        case is any JSONArrayKind.Type: "an array"
        case is String.Type, is Substring.Type: "a string"
        case is Bool.Type: "true or false"
        case is any FixedWidthInteger.Type: "a whole number"
        case is any BinaryFloatingPoint.Type, is Decimal.Type: "a number"
        default: "a \(type)"
        }
    }

    /// A coding path as a reader writes it: `eventTypes[0]`, `price.amount` (Foundation names an array's element
    /// `Index 0`).
    static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }
}

/// Marks the types that JSON writes as an object or as an array, whatever their elements (`JSONBody.kind`).
protocol JSONObjectKind {}
protocol JSONArrayKind {}
extension Dictionary: JSONObjectKind {}
extension Array: JSONArrayKind {}

/// Which `null` of a body a type reads: one in a field it has, which Foundation's decoder takes as the field left out,
/// rather than one in a member it does not have, which the decoder skips whatever it holds. The decoder cannot say
/// which keys a type asked for, so the body is decoded again with `{}` in the place of nulls: a field that reads one
/// fails to decode it, or decodes to another value. Nothing is decoded again for a body without a `null`, which is
/// every body a client of the contract sends.
struct NullReading<T: Decodable & Equatable> {
    let bytes: [UInt8]
    /// The body decoded as it is.
    let value: T
    let decoder: JSONDecoder

    /// The offset of a null of `nulls` that `T` reads, or nil when it reads none. Usually one decoding says which:
    /// the decoder names where `{}` did not fit. When it does not (a null in a field that holds an object), the nulls
    /// are halved, a decoding a half, so that a body of 400,000 nulls costs about 20 decodings, not 400,000.
    func oneRead(of nulls: StrictJSON.Nulls) -> Int? {
        guard !nulls.isEmpty else { return nil }
        switch attempt(nulls.offsets[...]) {
        case .unread: return nil
        case .read(let path?):
            if let null = nulls.offset(at: path) { return null }
        case .read(nil): break
        }
        var candidates = nulls.offsets[...]
        while candidates.count > 1 {
            let half = candidates.prefix(candidates.count / 2)
            if case .unread = attempt(half) {
                candidates = candidates.dropFirst(half.count)
            } else {
                candidates = half
            }
        }
        return candidates.first
    }

    private enum Outcome {
        case unread
        /// Read, at the path the decoder named when it could not take `{}` there.
        case read([any CodingKey]?)
    }

    /// Decodes the body with `{}` in the place of the nulls at `offsets`.
    private func attempt(_ offsets: ArraySlice<Int>) -> Outcome {
        var changed = bytes
        for at in offsets {
            // `{}  ` for `null`: four bytes for four, so that no other null's offsets move.
            changed[at] = UInt8(ascii: "{")
            changed[at + 1] = UInt8(ascii: "}")
            changed[at + 2] = UInt8(ascii: " ")
            changed[at + 3] = UInt8(ascii: " ")
        }
        do {
            return try decoder.decode(T.self, from: Data(changed)) == value ? .unread : .read(nil)
        } catch DecodingError.typeMismatch(_, let context) {
            return .read(context.codingPath)
        } catch {
            return .read(nil)
        }
    }
}
