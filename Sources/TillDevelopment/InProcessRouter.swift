import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded

/// An answer of a router called in this process.
public struct RouterReply: Sendable, Hashable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// Requests through a router's responder in this process, as Hummingbird's server hands them over (the body read
/// the same way, errors made answers by the same middleware), without sockets: thousands a second. The fuzz targets
/// send hostile bodies through it, and `till bench limits` the worst input of each body limit.
public struct InProcessRouter<Context: RequestContext>: Sendable
where Context.Source == ApplicationRequestContextSource {
    let responder: RouterResponder<Context>
    let logger: Logger
    /// The channel every request's context names: one for the router's life (a channel per request would be one
    /// more pipeline to close per request).
    let channel = NIOAsyncTestingChannel()

    public init(_ router: Router<Context>, logger: Logger) {
        self.responder = router.buildResponder()
        self.logger = logger
    }

    /// Closes the channel the requests' contexts named.
    public func close() async {
        try? await channel.close()
    }

    public func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        headers: HTTPFields = [:],
        body: [UInt8]
    ) async throws -> RouterReply {
        var headers = headers
        headers[.contentLength] = String(body.count)
        headers[.contentType] = "application/json"
        let request = Request(
            head: HTTPRequest(
                method: method,
                scheme: "http",
                authority: "localhost",
                path: path,
                headerFields: headers
            ),
            body: RequestBody(buffer: ByteBuffer(bytes: body))
        )
        let context = Context(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            // What Hummingbird's server does with an error no middleware answered: a bare 500.
            return RouterReply(status: 500, body: Array("unhandled error: \(error)".utf8))
        }
        let collector = BodyCollector()
        try await response.body.write(collector)
        return RouterReply(status: Int(response.status.code), body: collector.bytes)
    }
}

/// Collects a response body (written by one task, read after it finished).
private final class BodyCollector: ResponseBodyWriter, @unchecked Sendable {
    var bytes: [UInt8] = []

    func write(_ buffer: ByteBuffer) async throws {
        bytes.append(contentsOf: buffer.readableBytesView)
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
