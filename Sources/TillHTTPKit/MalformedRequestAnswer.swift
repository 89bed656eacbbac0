import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

extension HTTPServerBuilder {
    /// HTTP/1.1 as `till serve` speaks it: Hummingbird's, with a request NIO's parser refuses answered as every other
    /// refusal is (``MalformedRequestAnswer``), and a connection idle for `idleTimeout` closed.
    public static func tillHTTP1(idleTimeout: TimeAmount? = nil) -> HTTPServerBuilder {
        .http1(configuration: .init(additionalChannelHandlers: [MalformedRequestAnswer()], idleTimeout: idleTimeout))
    }
}

/// Gives the answer to a request that is not HTTP/1.1 (a `Content-Length` that is not a length, headers over the
/// limit, a malformed request line) the JSON body every other refusal has, `{"error":{"code":"malformedRequest",…}}`,
/// and 431 for headers over the limit (RFC 6585, §5).
///
/// Hummingbird answers such a request itself, with an empty 400 and `Connection: close`, once NIO's parser has
/// thrown (its `HTTPChannelHandler`): no route or middleware sees it. This handler sits between the HTTP codec and
/// Hummingbird, notes the parser's error as it passes, and rewrites that one answer's head and body; the connection
/// still closes after it. Every other answer passes through untouched.
public final class MalformedRequestAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    /// The parser's error, from when it passes until Hummingbird's answer to it is written.
    private var refused: HTTPParserError?
    /// The requests' heads read and the answers' heads written on the connection: Hummingbird's answer to the
    /// parser's error answers no head, so it is the one written when every head read has its answer. NIO reads
    /// ahead, so the error can pass while an earlier request of the connection is still being answered.
    private var headsRead = 0
    private var headsWritten = 0

    public init() {}

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { headsRead += 1 }
        context.fireChannelRead(data)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? HTTPParserError { refused = error }
        context.fireErrorCaught(error)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(let head) = unwrapOutboundIn(data), head.status.kind != .informational else {
            context.write(data, promise: promise)
            return
        }
        headsWritten += 1
        // Hummingbird's answer to the parser's error: a 400 without a body that answers no request's head.
        guard let error = refused, headsWritten > headsRead, head.status == .badRequest,
            head.headerFields[.contentLength] == "0"
        else {
            context.write(data, promise: promise)
            return
        }
        refused = nil
        let answer = Self.answer(to: error)
        let body = context.channel.allocator.buffer(string: answer.body)
        var fields = head.headerFields
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.readableBytes)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: promise)
    }

    /// What a client is told of each of the parser's errors.
    static func answer(to error: HTTPParserError) -> TillHTTPError {
        switch error {
        case .headerOverflow:
            return TillHTTPError(
                .init(code: 431, reasonPhrase: "Request Header Fields Too Large"),
                "headersTooLarge",
                "the request's headers are over the server's limit (80 KiB, 1,000 fields)"
            )
        case .invalidContentLength:
            return malformed("its Content-Length is not a length")
        case .unexpectedContentLength:
            return malformed("it has a Content-Length beside Transfer-Encoding: chunked, or two that differ")
        case .invalidChunkSize:
            return malformed("a chunk's size is not a hexadecimal length")
        case .invalidMethod:
            return malformed("its method is not a token")
        case .invalidURL:
            return malformed("its target is not a URL path")
        case .invalidVersion:
            return malformed("its version is not HTTP/1.x")
        case .invalidHeaderToken, .invalidCharactersUsed:
            return malformed("a header's name or value holds a character HTTP does not allow")
        default:
            return malformed("its framing is broken (\(error))")
        }
    }

    private static func malformed(_ why: String) -> TillHTTPError {
        TillHTTPError.badRequest("malformedRequest", "the request is not well-formed HTTP/1.1: \(why)")
    }
}
