import Foundation
import Hummingbird
import NIOCore
import NIOHTTPTypes
import NIOPosix
import TillFormats

/// The request context of the simulator's routes: Apple's JSON conventions (dates as epoch milliseconds).
public struct SimulatorRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }

    public var requestDecoder: JSONDecoder { AppleJSON.makeDecoder() }
    public var responseEncoder: JSONEncoder { AppleJSON.makeEncoder() }
    public var maxUploadSize: Int { 2 * 1024 * 1024 }
}

/// Resets connections whose request a `reset` outage covers, before any routing: the client sees the
/// connection drop without an answer, as when Apple's front end fails.
final class ConnectionResetHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let faults: FaultRegistry

    init(faults: FaultRegistry) {
        self.faults = faults
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let request) = unwrapInboundIn(data), faults.resets(path: request.path ?? "/") {
            // Linger 0: close with a TCP reset rather than a clean FIN.
            let channel = context.channel
            if let provider = channel as? any SocketOptionProvider {
                provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
            return
        }
        context.fireChannelRead(data)
    }
}
