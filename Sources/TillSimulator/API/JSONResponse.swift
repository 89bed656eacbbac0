import Foundation
import Hummingbird
import NIOCore
import TillFormats
import TillHTTPKit

/// Encodes a value with Apple's JSON conventions as a JSON response.
func jsonResponse<T: Encodable>(
    _ value: T,
    status: HTTPResponse.Status = .ok,
    context: some RequestContext
) throws -> Response {
    try JSONBody.response(value, status: status, encoder: TillFormatsJSON.encoder)
}

enum TillFormatsJSON {
    static let encoder = AppleJSON.makeEncoder()
    static let decoder = AppleJSON.makeDecoder()
}

/// Decodes a JSON request body, answering 400 with a stable code when it is not what the route takes, and 413 over
/// the route's limit (every StoreKit and admin body is small; verifyReceipt and the Server API read their own).
func decodeBody<T: Decodable>(
    _ type: T.Type,
    from request: Request,
    context: some RequestContext,
    limit: Int = BodyLimit.json
) async throws -> T {
    try await JSONBody.decode(type, from: request, limit: limit, decoder: TillFormatsJSON.decoder)
}
