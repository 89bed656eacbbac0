import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// The `tracing.…` settings (docs/tracing.md): where spans are exported over OTLP/HTTP, and how many traces are kept.
public struct TracingSettings: Sendable, Equatable {
    /// The collector's OTLP/HTTP traces URL (`http://collector:4318/v1/traces`); an address with no path gets
    /// `/v1/traces`, as `OTEL_EXPORTER_OTLP_ENDPOINT` does.
    public var endpoint: String
    /// The share of new traces kept, 0 to 1; a request that comes with a `traceparent` follows its sampled flag.
    public var sampleRatio: Double
    /// Headers sent with every export (a hosted collector's key).
    public var headers: [String: String]
    /// The `service.name` of the spans.
    public var serviceName: String

    public init(
        endpoint: String,
        sampleRatio: Double = 1,
        headers: [String: String] = [:],
        serviceName: String = "till"
    ) {
        self.endpoint = endpoint
        self.sampleRatio = sampleRatio
        self.headers = headers
        self.serviceName = serviceName
    }

    /// The URL spans are posted to.
    var tracesURL: String {
        guard let url = URL(string: endpoint), url.path.isEmpty || url.path == "/" else { return endpoint }
        return endpoint.hasSuffix("/") ? endpoint + "v1/traces" : endpoint + "/v1/traces"
    }
}

/// A server's tracer, made by swift-otel, and the service that exports its spans. It is bound to the server's requests
/// (`TracingScopeMiddleware`) and workers (`TracedService`) rather than installed for the process: a process may run
/// several servers (the tests do), and `InstrumentationSystem.bootstrap` may be called once.
public struct ServerTracing: Sendable {
    public let tracer: any Tracer
    /// Batches the spans and posts them; it runs first among the workers, so that it stops last and sends what the
    /// others ended.
    let exporter: any Service

    /// Logs carry the trace and span ids of the span under way (`trace_id`, `span_id`), for a logger made with it.
    public static var logMetadataProvider: Logger.MetadataProvider { OTel.makeLoggingMetadataProvider() }

    /// The tracer of `settings`. Made outside any tracer's scope: the exporter's own HTTP client must not trace its
    /// exports.
    public init(_ settings: TracingSettings, logger: Logger) throws {
        var configuration = OTel.Configuration.default
        configuration.serviceName = settings.serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        // swift-otel's own warnings (a malformed traceparent) print the request's headers: errors only.
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .error
        configuration.propagators = [.traceContext]
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.traces.otlpExporter.endpoint = settings.tracesURL
        configuration.traces.otlpExporter.headers = settings.headers.sorted { $0.key < $1.key }.map {
            ($0.key, $0.value)
        }
        configuration.traces.sampler =
            .parentBasedTraceIDRatio(ratio: settings.sampleRatio) ?? .parentBasedAlwaysOn
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        tracer = backend.factory
        exporter = backend.service
    }
}

/// Binds the server's tracer to a request, and passes on the app's `traceparent` only when it is well formed (W3C
/// Trace Context: `00-` 32 hex digits `-` 16 hex digits `-` 2 hex digits, neither id zero). A malformed one is dropped
/// before `TracingMiddleware` reads it, so the request starts a trace of its own.
struct TracingScopeMiddleware<Context: RequestContext>: RouterMiddleware {
    let tracer: any Tracer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var request = request
        if let given = request.headers[.traceparent], !Self.isWellFormed(given) {
            var head = request.head
            head.headerFields[.traceparent] = nil
            head.headerFields[.tracestate] = nil
            request = Request(head: head, body: request.body)
        }
        return try await withTracer(tracer) { try await next(request, context) }
    }

    static func isWellFormed(_ traceparent: String) -> Bool {
        let bytes = Array(traceparent.utf8)
        guard bytes.count == 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"),
            bytes[52] == UInt8(ascii: "-")
        else { return false }
        let hex = { (range: Range<Int>) -> Bool in
            bytes[range].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }
        let nonZero = { (range: Range<Int>) -> Bool in bytes[range].contains { $0 != UInt8(ascii: "0") } }
        return hex(0..<2) && bytes[0..<2] != [UInt8(ascii: "f"), UInt8(ascii: "f")] && hex(3..<35) && nonZero(3..<35)
            && hex(36..<52) && nonZero(36..<52) && hex(53..<55)
    }
}

/// A worker run with the server's tracer bound: its spans (a confirmation, a webhook attempt) are exported.
struct TracedService: Service {
    let service: any Service
    let tracer: any Tracer

    func run() async throws {
        try await withTracer(tracer) { try await service.run() }
    }
}

extension HTTPField.Name {
    static let traceparent = HTTPField.Name("traceparent")!
    static let tracestate = HTTPField.Name("tracestate")!
}
