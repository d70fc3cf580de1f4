"""Trace context from producer to consumer: a W3C ``traceparent`` record header.

    python examples/traceparent.py produce --topic orders --tower 127.0.0.1:5556 --count 3
    python examples/traceparent.py consume --topic orders --tower 127.0.0.1:5556 --count 3

The producer publishes each order inside a span and injects the span's context into the
record's headers with OpenTelemetry's propagator (``traceparent``, and ``tracestate``
when there is one); the consumer extracts it from the headers it receives and processes
the order in a span of the same trace, so a tracing backend shows the order's path
across the topic. Both print ``trace <trace id> order <n>``.

It uses only OpenTelemetry's API package (``pip install 'dafka[otel]'``): with no SDK
configured the API's spans record nothing, but their context still propagates, so the
producer starts each order's trace itself (as an incoming request's ``traceparent``
would); configure an SDK (``opentelemetry-sdk`` and an exporter) and the same code
exports real spans. Headers are part of what the producer signs: a store cannot change
the trace an order claims to belong to.
"""

from __future__ import annotations

import argparse
import json
import random
import signal

from opentelemetry import propagate, trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from dafka import Consumer, Producer

tracer = trace.get_tracer("dafka.examples.traceparent")


def _request_context() -> object:
    """The context of an incoming request: here a new trace (a web framework's
    instrumentation would extract the caller's ``traceparent`` instead)."""
    span = NonRecordingSpan(
        SpanContext(
            trace_id=random.getrandbits(128) or 1,
            span_id=random.getrandbits(64) or 1,
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    )
    return trace.set_span_in_context(span)


def produce(args: argparse.Namespace) -> None:
    with Producer(args.topic, towers=args.tower) as producer:
        for n in range(args.count):
            ctx = _request_context()
            with tracer.start_as_current_span(
                f"{args.topic} publish", context=ctx, kind=SpanKind.PRODUCER
            ) as span:
                carrier: dict[str, str] = {}
                propagate.inject(carrier)  # the current span's context: traceparent
                headers = [(name, value.encode()) for name, value in carrier.items()]
                value = json.dumps({"order": n}).encode()
                producer.send(value, str(n).encode(), headers=headers)
                trace_id = span.get_span_context().trace_id
            print(f"trace {trace_id:032x} order {n}", flush=True)
        producer.flush(30)


def consume(args: argparse.Namespace) -> None:
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    seen = 0
    with Consumer([args.topic], towers=args.tower, offset_reset="earliest") as consumer:
        while not stopping and seen < args.count:
            record = consumer.poll(timeout=0.5)
            if record is None:
                continue
            carrier = {k: v.decode() for k, v in record.headers if v is not None}
            ctx = propagate.extract(carrier)  # the producer's span, as the parent
            with tracer.start_as_current_span(
                f"{args.topic} process", context=ctx, kind=SpanKind.CONSUMER
            ) as span:
                order = json.loads(record.value or b"{}").get("order")
                trace_id = span.get_span_context().trace_id
            print(f"trace {trace_id:032x} order {order}", flush=True)
            seen += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("role", choices=["produce", "consume"])
    ap.add_argument("--topic", default="orders")
    ap.add_argument("--tower", default="127.0.0.1:5556")
    ap.add_argument("--count", type=int, default=3)
    args = ap.parse_args()
    produce(args) if args.role == "produce" else consume(args)


if __name__ == "__main__":
    main()
