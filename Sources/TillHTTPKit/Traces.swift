import Instrumentation
import Tracing

/// Traces (docs/tracing.md): the spans Till's rooms open, and the W3C trace context a row keeps so that the work it
/// queues (a confirmation with Apple, a webhook delivery) continues the trace of the request that queued it, in
/// another task, another process, or after a restart.
///
/// A server with tracing on binds its tracer to its requests and workers (`bind`); with tracing off none is bound,
/// and a span is its body called with a no-op span: no task-local is pushed, no lock taken, no context kept.
package enum Traces {
    /// The server's tracer, for this task and its children (nil: tracing off).
    @TaskLocal private static var bound: (any Tracer)? = nil

    /// Runs `body` with `tracer` bound: Till's spans, and those of Hummingbird and AsyncHTTPClient (`withTracer`).
    package static func bind<T: Sendable>(_ tracer: any Tracer, _ body: () async throws -> T) async throws -> T {
        try await $bound.withValue(tracer) { try await withTracer(tracer) { try await body() } }
    }

    /// The tracer bound to this task, for a client that makes spans of its own (AsyncHTTPClient); nil when off.
    package static var tracer: (any Tracer)? { bound }

    /// The W3C `traceparent` of the span under way (`00-<trace id>-<span id>-<flags>`), for a row that queues work to
    /// keep; nil when tracing is off or no span is under way.
    ///
    /// Read it in the task of the change, not in a database transaction's body: on SQLite a group commit runs the
    /// bodies of several callers on its leader's task (`GroupCommit`), whose span is another's.
    package static var current: String? {
        guard let tracer = bound, let context = ServiceContext.current else { return nil }
        var carrier: String? = nil
        tracer.inject(context, into: &carrier, using: TraceParentWriter())
        return carrier
    }

    /// Runs `body` in a span named `name`: a child of `traceparent` when the work was queued by a traced change, of
    /// the span under way otherwise (a root when there is none).
    package static func withSpan<T>(
        _ name: String,
        continuing traceparent: String?,
        ofKind kind: SpanKind = .internal,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (any Span) async throws -> T
    ) async rethrows -> T {
        guard let tracer = bound else { return try await body(NoOpTracer.NoOpSpan(context: .topLevel)) }
        var context = ServiceContext.current ?? .topLevel
        if let traceparent {
            context = .topLevel
            tracer.extract(traceparent, into: &context, using: TraceParentReader())
        }
        return try await tracer.withAnySpan(name, context: context, ofKind: kind, isolation: isolation, body)
    }
}

/// A kept `traceparent`, written by a propagator as the one header W3C Trace Context needs (`tracestate`, a vendor's,
/// is not kept).
struct TraceParentWriter: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout String?) {
        if key == "traceparent" { carrier = value }
    }
}

/// A kept `traceparent` read back as the only header of a propagator's carrier.
struct TraceParentReader: Extractor {
    func extract(key: String, from carrier: String) -> String? {
        key == "traceparent" ? carrier : nil
    }
}
