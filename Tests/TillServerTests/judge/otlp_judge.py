#!/usr/bin/env python3
"""The independent judge of Till's traces: an OTLP/HTTP collector whose decoder is OpenTelemetry's own
(`opentelemetry-proto` on PyPI, the protobuf messages generated from the specification's .proto files).

Usage: otlp_judge.py OUTPUT
Listens on 127.0.0.1 at a port of the system's choosing and prints it as its first line. Then:
  POST /v1/traces   an ExportTraceServiceRequest in protobuf; each span is appended to OUTPUT as a JSON line
                    {"kind": "span", "traceId", "spanId", "parentSpanId" ("" for a root), "name", "spanKind",
                     "status", "service", "attributes": {key: value}, "links": [[traceId, spanId]]}
                    (ids in lowercase hex); the answer is an empty ExportTraceServiceResponse (200).
  POST anything else  a webhook receiver: {"kind": "webhook", "path", "traceparent", "webhookId", "type"} is
                    appended (the type from the JSON body), 200.
A body that does not decode is answered 400 and appended as {"kind": "undecodable", "error"}: the test fails on it.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

KINDS = {value: name for name, value in trace_pb2.Span.SpanKind.items()}
lock = threading.Lock()


def value_of(any_value):
    which = any_value.WhichOneof("value")
    if which == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    return getattr(any_value, which) if which else None


def append(output, record):
    with lock:
        with open(output, "a") as f:
            f.write(json.dumps(record) + "\n")


def handler_for(output):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/traces":
                try:
                    event_type = json.loads(body).get("type")
                except ValueError:
                    event_type = None
                append(output, {"kind": "webhook", "path": self.path, "traceparent": self.headers.get("traceparent"),
                                "webhookId": self.headers.get("webhook-id"), "type": event_type})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            try:
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            except Exception as error:  # noqa: BLE001 - any decode failure is the finding
                append(output, {"kind": "undecodable", "error": str(error)})
                self.send_response(400)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            for resource_spans in request.resource_spans:
                resource = {a.key: value_of(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        append(output, {
                            "kind": "span",
                            "traceId": span.trace_id.hex(),
                            "spanId": span.span_id.hex(),
                            "parentSpanId": span.parent_span_id.hex(),
                            "name": span.name,
                            "spanKind": KINDS.get(span.kind, str(span.kind)),
                            "status": trace_pb2.Status.StatusCode.Name(span.status.code),
                            "service": resource.get("service.name"),
                            "attributes": {a.key: value_of(a.value) for a in span.attributes},
                            "links": [[link.trace_id.hex(), link.span_id.hex()] for link in span.links],
                        })
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    return Handler


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(sys.argv[1]))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
