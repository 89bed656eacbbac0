import Instrumentation
import Tracing

/// Traces (docs/tracing.md): the spans Till's rooms open, and the W3C trace context a row keeps so that the work it
/// queues (a confirmation with Apple, a webhook delivery) continues the trace of the request that queued it, in
/// another task, another process, or after a restart.
///
/// A server with tracing on binds its tracer to its requests and workers (`withTracer`); with tracing off none is
/// bound, `InstrumentationSystem` answers its no-op tracer, no context is kept (`current` is nil) and a span costs a
/// task-local read.
package enum Traces {
    /// Whether a tracer is bound to this task: the server's tracing is on.
    package static var isOn: Bool { !(InstrumentationSystem.tracer is NoOpTracer) }

    /// The W3C `traceparent` of the span under way (`00-<trace id>-<span id>-<flags>`), for a row that queues work to
    /// keep; nil when no tracer records one.
    package static var current: String? {
        guard let context = ServiceContext.current else { return nil }
        var carrier: String? = nil
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: TraceParentWriter())
        return carrier
    }

    /// Runs `body` in a span named `name`: a child of `traceparent` when the work was queued by a traced change, of
    /// the span under way otherwise (a root when there is none).
    package static func withSpan<T>(
        _ name: String,
        continuing traceparent: String?,
        ofKind kind: SpanKind = .internal,
        _ body: (any Span) async throws -> T
    ) async rethrows -> T {
        var context = ServiceContext.current ?? .topLevel
        if let traceparent {
            context = .topLevel
            InstrumentationSystem.instrument.extract(traceparent, into: &context, using: TraceParentReader())
        }
        return try await Tracing.withSpan(name, context: context, ofKind: kind) { span in try await body(span) }
    }
}

/// A kept `traceparent` as the carrier of a propagator: the one header W3C Trace Context needs (`tracestate`, a
/// vendor's, is not kept).
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
