import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OTel
import ServiceLifecycle
import TillHTTPKit
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
    public var tracesURL: String {
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
        // swift-otel's own lines (an export that failed), without the carrier a warning about an unreadable
        // traceparent would print: the request's headers, the app key among them.
        var diagnostics = Logger(label: "till.tracing") { _ in CarrierlessLogHandler(base: logger.handler) }
        diagnostics.logLevel = .warning
        configuration.diagnosticLogger = .custom(diagnostics)
        configuration.diagnosticLogLevel = .warning
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
        // swift-otel's processor exports one batch a tick: its defaults (512 spans each 5 s, 2,048 queued) keep about
        // 100 spans a second and drop the rest. A purchase makes about ten, and Till takes 1,000 a second on two cores
        // (docs/benchmarks.md#traces): up to 4,096 spans each 200 ms, 32,768 queued (a few MB) in case the collector
        // is slow. OTEL_BSP_… variables override these.
        configuration.traces.batchSpanProcessor.scheduleDelay = .milliseconds(200)
        configuration.traces.batchSpanProcessor.maxExportBatchSize = 4096
        configuration.traces.batchSpanProcessor.maxQueueSize = 32_768
        // With no tracer bound: the exporter's HTTP client must not trace its own exports.
        let backend = try withTracer(NoOpTracer()) { try OTel.makeTracingBackend(configuration: configuration) }
        tracer = backend.factory
        exporter = backend.service
    }
}

/// Binds the server's tracer to a request, and passes on the app's `traceparent` only when it is well formed (W3C
/// Trace Context's version 00: `00-` 32 hex digits `-` 16 hex digits `-` 2 hex digits, neither id zero). A malformed
/// one is dropped before `TracingMiddleware` reads it, so the request starts a trace of its own. `tracestate` (a
/// vendor's) is always dropped: one that swift-otel cannot parse would cost the app's trace, and Till keeps none.
struct TracingScopeMiddleware<Context: RequestContext>: RouterMiddleware {
    let tracer: any Tracer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var request = request
        let traceparent = request.headers[.traceparent]
        if request.headers[.tracestate] != nil || (traceparent.map { !Self.isWellFormed($0) } ?? false) {
            var head = request.head
            if let traceparent, !Self.isWellFormed(traceparent) { head.headerFields[.traceparent] = nil }
            head.headerFields[.tracestate] = nil
            request = Request(head: head, body: request.body)
        }
        return try await Traces.bind(tracer) { try await next(request, context) }
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
        return bytes[0] == UInt8(ascii: "0") && bytes[1] == UInt8(ascii: "0") && hex(3..<35) && nonZero(3..<35)
            && hex(36..<52) && nonZero(36..<52) && hex(53..<55)
    }
}

/// A worker run with the server's tracer bound: its spans (a confirmation, a webhook attempt) are exported.
struct TracedService: Service {
    let service: any Service
    let tracer: any Tracer

    func run() async throws {
        try await Traces.bind(tracer) { try await service.run() }
    }
}

/// swift-otel's diagnostics into the server's log, less the `carrier` metadata, which holds a request's headers.
struct CarrierlessLogHandler: LogHandler {
    var base: any LogHandler

    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.metadata?["carrier"] = nil
        base.log(event: event)
    }
}

extension HTTPField.Name {
    static let traceparent = HTTPField.Name("traceparent")!
    static let tracestate = HTTPField.Name("tracestate")!
}
