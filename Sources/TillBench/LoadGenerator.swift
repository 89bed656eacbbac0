import NIOCore
import NIOHTTP1
import NIOPosix

/// An open-loop HTTP/1.1 load generator on one event loop thread of its own, in the spirit of wrk2.
///
/// The server under test shares this machine's two cores with its load, so the load must cost little and must
/// not queue behind the server's work. AsyncHTTPClient runs each request as a Swift task on the same cooperative
/// threads as the server's handlers, and builds a request, a connection lease and a response stream for each;
/// every late wake-up of its sending task counted as server latency (replacing it took the acknowledgement p99
/// at 1,000/s from 26 to 16 ms).
/// Here each request's bytes are encoded before the run, sent by a timer on the generator's own event loop when
/// due, and timed from that due time (so a server that stalls cannot hide its queue: coordinated omission).
/// Responses are parsed by NIO's HTTP/1 decoder on the same loop; nothing here takes a lock or starts a task.
final class LoadGenerator {
    struct Outcome: Sendable {
        /// The HTTP status, or 0 when the connection failed.
        var status: Int
        /// From when the request was due to when its response ended, in nanoseconds.
        var nanoseconds: Int64
        /// The request's index in `requests`.
        var index: Int
        /// From when the request was due to when its bytes were written (the generator's own lateness), in
        /// nanoseconds; 0 when it was never sent.
        var sendDelayNanoseconds: Int64 = 0
        /// When the request was due, on the monotonic clock (`CLOCK_MONOTONIC`, as `perf record -k mono`
        /// stamps its samples), to line requests up with what the machine did meanwhile.
        var dueUptimeNanoseconds: UInt64 = 0
    }

    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Sends `requests[i]` at `start + i / rate` over at most `connections` keep-alive connections to
    /// `host:port`, and returns each outcome once every request is answered or failed.
    func run(
        host: String,
        port: Int,
        requests: [Request],
        rate: Int,
        connections: Int
    ) async throws -> [Outcome] {
        let loop = group.next()
        var channels: [any Channel] = []
        for _ in 0..<max(1, connections) {
            let channel = try await ClientBootstrap(group: loop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers(leftOverBytesStrategy: .fireError)
                    }
                }
                .connect(host: host, port: port)
                .get()
            channels.append(channel)
        }
        let promise = loop.makePromise(of: [Outcome].self)
        let finalChannels = channels
        loop.execute {
            let run = Run(
                loop: loop,
                requests: requests,
                rate: rate,
                promise: promise
            )
            for channel in finalChannels {
                let handler = ConnectionHandler(run: run)
                // A connection the server already closed is left out.
                guard (try? channel.pipeline.syncOperations.addHandler(handler)) != nil else { continue }
                run.idle.append(handler)
            }
            run.start()
        }
        let outcomes = try await promise.futureResult.get()
        for channel in channels { try? await channel.close() }
        return outcomes
    }

    func shutdown() async throws {
        try await group.shutdownGracefully()
    }

    /// The state of one run, confined to the generator's event loop.
    private final class Run {
        let loop: any EventLoop
        let requests: [Request]
        let rate: Int
        let promise: EventLoopPromise<[Outcome]>
        let origin: NIODeadline
        var idle: [ConnectionHandler] = []
        var connections = 0
        /// Requests due but with no idle connection to go on, oldest first.
        var waiting: [Int] = []
        var waitingHead = 0
        var next = 0
        var outcomes: [Outcome] = []
        /// When each request was written, once it was.
        var sentAt: [NIODeadline?]

        init(
            loop: any EventLoop,
            requests: [Request],
            rate: Int,
            promise: EventLoopPromise<[Outcome]>
        ) {
            self.loop = loop
            self.requests = requests
            self.rate = max(1, rate)
            self.promise = promise
            // A little ahead, so the first request is not late for want of a scheduled wake-up.
            self.origin = .now() + .milliseconds(5)
            self.sentAt = Array(repeating: nil, count: requests.count)
            outcomes.reserveCapacity(requests.count)
        }

        func due(_ index: Int) -> NIODeadline {
            origin + .nanoseconds(Int64(index) * 1_000_000_000 / Int64(rate))
        }

        func start() {
            connections = idle.count
            if requests.isEmpty {
                promise.succeed([])
            } else if connections == 0 {
                for index in requests.indices { record(index, status: 0) }  // nothing to send on
            } else {
                schedule()
            }
        }

        /// Sends every request that is due, then sleeps until the next one is.
        private func schedule() {
            let now = NIODeadline.now()
            while next < requests.count && due(next) <= now {
                dispatch(next)
                next += 1
            }
            guard next < requests.count else { return }
            loop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: due(next)) { self.schedule() }
        }

        private func dispatch(_ index: Int) {
            if let connection = idle.popLast() {
                connection.send(index)
            } else {
                waiting.append(index)
            }
        }

        /// A connection finished `index` and can take the next request.
        func finished(_ index: Int, status: Int, by connection: ConnectionHandler) {
            record(index, status: status)
            if waitingHead < waiting.count {
                let next = waiting[waitingHead]
                waitingHead += 1
                connection.send(next)
            } else {
                idle.append(connection)
            }
        }

        /// A connection closed; its request, if any, failed.
        func lost(_ connection: ConnectionHandler, inFlight: Int?) {
            connections -= 1
            idle.removeAll { $0 === connection }
            if let inFlight { record(inFlight, status: 0) }
            if connections == 0 {
                // Nothing left to send on: everything not yet sent fails.
                while waitingHead < waiting.count {
                    record(waiting[waitingHead], status: 0)
                    waitingHead += 1
                }
                while next < requests.count {
                    record(next, status: 0)
                    next += 1
                }
            }
        }

        private func record(_ index: Int, status: Int) {
            let due = due(index)
            let outcome = Outcome(
                status: status,
                nanoseconds: (NIODeadline.now() - due).nanoseconds,
                index: index,
                sendDelayNanoseconds: sentAt[index].map { ($0 - due).nanoseconds } ?? 0,
                dueUptimeNanoseconds: due.uptimeNanoseconds
            )
            outcomes.append(outcome)
            if outcomes.count == requests.count { promise.succeed(outcomes) }
        }
    }

    /// One keep-alive connection: one request at a time, its response read to the end.
    private final class ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPClientResponsePart

        private let run: Run
        private var context: ChannelHandlerContext?
        private var inFlight: Int?
        private var status = 0

        init(run: Run) { self.run = run }

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }

        func send(_ index: Int) {
            guard let context else { return run.lost(self, inFlight: index) }
            inFlight = index
            run.sentAt[index] = .now()
            let request = run.requests[index]
            context.write(NIOAny(HTTPClientRequestPart.head(request.head)), promise: nil)
            context.write(NIOAny(HTTPClientRequestPart.body(.byteBuffer(request.body))), promise: nil)
            context.writeAndFlush(NIOAny(HTTPClientRequestPart.end(nil)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = Int(head.status.code)
            case .body: break
            case .end:
                guard let index = inFlight else { return }
                inFlight = nil
                run.finished(index, status: status, by: self)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.context = nil
            let lost = inFlight
            inFlight = nil
            run.lost(self, inFlight: lost)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }

    /// A request with a body, ready to write.
    struct Request: Sendable {
        var head: HTTPRequestHead
        var body: ByteBuffer

        init(method: HTTPMethod, path: String, host: String, headers: [(String, String)], body: [UInt8]) {
            var fields = HTTPHeaders([("Host", host)] + headers)
            fields.add(name: "Content-Length", value: String(body.count))
            head = HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: fields)
            self.body = ByteBuffer(bytes: body)
        }
    }
}
