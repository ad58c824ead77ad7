"""Where a tracer's spans go beyond memory: OTLP/HTTP JSON to a URL, or ``opentelemetry-api``.

    Tracer(exporters=[OtlpExporter("http://localhost:4318/v1/traces")])   # a collector, Jaeger...
    Tracer(exporters=[OtelExporter()])    # the application's OpenTelemetry SDK (aerix[otel])

:func:`otlp_json` encodes finished spans as the OTLP/HTTP JSON body (``resourceSpans`` →
``scopeSpans`` → ``spans``; ids in lower-case hex, times as strings of unix nanoseconds, 64-bit
integers as strings, attributes as ``{key, value: {stringValue|intValue|doubleValue|boolValue|
arrayValue}}``). :class:`OtlpExporter` posts it once per finished run through the transport
``OpenAIModel`` uses: httpx on CPython, the page's ``fetch`` in Pyodide (a URL on the page's
origin, e.g. ``/v1/traces`` forwarded by the proxy, needs no CORS). :class:`OtelExporter` hands
each span to the OpenTelemetry API as it opens and ends, under the span that was current when
the run started: without an SDK configured the API drops them, as it does every span.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .errors import AerixError
from .tracing import AttributeValue, Span

__all__ = ["OtelExporter", "OtlpExporter", "otlp_json"]

_KINDS = {"internal": 1, "client": 3}  # SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT
_CODES = {"unset": 0, "ok": 1, "error": 2}  # STATUS_CODE_UNSET, _OK, _ERROR


def _version() -> str:
    try:
        return version("aerix")
    except PackageNotFoundError:
        return "0"


def _value(value: AttributeValue) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(attributes: dict[str, AttributeValue]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in attributes.items()]


def otlp_json(spans: list[Span], service_name: str = "aerix") -> dict[str, Any]:
    """The OTLP/HTTP JSON body (``ExportTraceServiceRequest``) of finished ``spans``."""
    out = []
    for span in spans:
        encoded: dict[str, Any] = {
            "traceId": span.trace_id, "spanId": span.span_id, "name": span.name, "kind": _KINDS[span.kind],
            "startTimeUnixNano": str(span.start_ns), "endTimeUnixNano": str(span.end_ns if span.end_ns is not None else span.start_ns),
            "attributes": _attributes(span.attributes), "status": {"code": _CODES[span.status]},
        }
        if span.parent_id is not None:
            encoded["parentSpanId"] = span.parent_id
        if span.status_message:
            encoded["status"]["message"] = span.status_message
        out.append(encoded)
    resource = {"attributes": _attributes({"service.name": service_name, "telemetry.sdk.name": "aerix", "telemetry.sdk.language": "python"})}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "aerix", "version": _version()}, "spans": out}]}]}


class OtlpExporter:
    """Posts each finished run's spans to ``url`` (an OTLP/HTTP traces endpoint, ``.../v1/traces``)
    as JSON, with ``headers``. ``transport``: an ``aerix.engines.openai.transports`` transport
    (default: httpx on CPython, ``pip install 'aerix[openai]'``; the page's fetch in Pyodide). A
    network failure or an error status raises, which the tracer keeps in ``failures``."""

    def __init__(self, url: str, *, headers: dict[str, str] | None = None, transport: Any = None, service_name: str = "aerix") -> None:
        if not isinstance(url, str) or not url:
            raise AerixError("options", f"OtlpExporter needs the URL of an OTLP/HTTP traces endpoint, got {url!r}")
        self.url, self.headers, self.service_name = url, dict(headers or {}), service_name
        self._transport = transport

    def __repr__(self) -> str:
        return f"OtlpExporter({self.url!r})"

    async def export(self, spans: list[Span]) -> None:
        from .engines.openai.transports import Request, default_transport

        if self._transport is None:
            self._transport = default_transport()
        body = json.dumps(otlp_json(spans, self.service_name)).encode()
        response = await self._transport.send(Request("POST", self.url, {"content-type": "application/json", **self.headers}, body))
        try:
            # read the (short) answer before closing: in the page, closing an unread body aborts the fetch
            detail = (await response.aread(4096)).decode("utf-8", "replace")[:500]
            if response.status >= 300:
                raise AerixError("engine", f"the OTLP endpoint {self.url} answered {response.status} {response.reason}: {detail}")
        finally:
            await response.aclose()


class OtelExporter:
    """Hands spans to ``opentelemetry-api`` (``tracer_provider``: default, the global one) as
    they open and end; the OpenTelemetry SDK the application configured exports them. The run's
    span is a child of the span current when the run started. Needs ``pip install 'aerix[otel]'``."""

    def __init__(self, tracer_provider: Any = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise AerixError("options", "OtelExporter needs opentelemetry-api: pip install 'aerix[otel]'") from None
        self._api = trace
        self._tracer = trace.get_tracer("aerix", _version(), tracer_provider=tracer_provider)
        self._open: dict[str, Any] = {}  # our span id -> the OpenTelemetry span

    def on_start(self, span: Span) -> None:
        trace = self._api
        parent = self._open.get(span.parent_id or "")
        context = trace.set_span_in_context(parent) if parent is not None else None  # None: the current context
        kind = trace.SpanKind.CLIENT if span.kind == "client" else trace.SpanKind.INTERNAL
        self._open[span.span_id] = self._tracer.start_span(span.name, context=context, kind=kind, attributes=dict(span.attributes), start_time=span.start_ns)

    def on_end(self, span: Span) -> None:
        otel = self._open.get(span.span_id)
        if otel is None:
            return
        otel.set_attributes(dict(span.attributes))
        if span.status == "error":
            otel.set_status(self._api.Status(self._api.StatusCode.ERROR, span.status_message or None))
        elif span.status == "ok":
            otel.set_status(self._api.Status(self._api.StatusCode.OK))
        otel.end(end_time=span.end_ns)

    def export(self, spans: list[Span]) -> None:
        for span in spans:  # the trace is whole: its spans were handed on as they ended
            self._open.pop(span.span_id, None)
