"""Produce the example trace exports offline, with the real OpenTelemetry SDK.

`python -m examples.traces.make_traces [OUT_DIR]` runs the weather ADK agent
(examples/adk_weather, on its rule-based stand-in model) through ADK's own `Runner`
with an OpenTelemetry `TracerProvider` installed, so ADK's telemetry writes its spans
(GenAI semantic conventions and ADK's `gcp.vertex.agent.*` attributes). The finished
spans are encoded by the OTLP exporter's own encoder and written as OTLP JSON, one
`{"resourceSpans": [...]}` document per line, as the OpenTelemetry Collector's file
exporter writes them (trace and span ids in hex). Two sessions: a one-turn weather
question and a two-turn conversation (weather, then the time zone "there").

Needs `pip install opentelemetry-exporter-otlp-proto-common` and google-adk.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

SESSIONS = {
    "weather_paris": ["What's the weather like in Paris?"],
    "london_follow_up": ["How is the weather in London today?", "And which time zone is it there?"],
}


def _hex_ids(value: Any) -> Any:
    """OTLP JSON writes trace and span ids as hex; protobuf's JSON mapping as base64."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str):
                out[key] = base64.b64decode(item).hex()
            else:
                out[key] = _hex_ids(item)
        return out
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


async def _run_sessions() -> None:
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from examples.adk_weather.agent import root_agent

    runner = InMemoryRunner(agent=root_agent, app_name="adk_weather")
    for session_id, messages in SESSIONS.items():
        await runner.session_service.create_session(
            app_name="adk_weather", user_id="traveller", session_id=session_id
        )
        for text in messages:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(
                user_id="traveller", session_id=session_id, new_message=message
            ):
                pass
    await runner.close()


def _openinference_spans(tracer: Any) -> None:
    """A flight search traced the way OpenInference instrumentations (Phoenix) write it."""
    question = "Find me a flight from Paris to Rome"
    with tracer.start_as_current_span("agent") as agent:
        agent.set_attribute("openinference.span.kind", "AGENT")
        agent.set_attribute("session.id", "paris_rome")
        agent.set_attribute("input.value", question)
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.input_messages.0.message.role", "user")
            llm.set_attribute("llm.input_messages.0.message.content", question)
            llm.set_attribute("llm.token_count.prompt", 42)
            llm.set_attribute("llm.token_count.completion", 9)
        with tracer.start_as_current_span("find_flights") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("tool.name", "find_flights")
            tool.set_attribute(
                "input.value", json.dumps({"origin": "Paris", "destination": "Rome"})
            )
            tool.set_attribute("output.value", json.dumps({"flights": [{"id": "PAR-ROM-1"}]}))
        answer = "Flight PAR-ROM-1 goes from Paris to Rome."
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.output_messages.0.message.role", "assistant")
            llm.set_attribute("llm.output_messages.0.message.content", answer)
            llm.set_attribute("llm.token_count.prompt", 61)
            llm.set_attribute("llm.token_count.completion", 12)
        agent.set_attribute("output.value", answer)


def make(out_dir: Path) -> Path:
    """Run the sessions and write `adk_weather.otlp.jsonl` (and an OpenInference-shaped
    `openinference.otlp.json`) into `out_dir`."""
    os.environ.setdefault("ASSAY_EXAMPLE_MODEL", "scripted-weather")
    # ADK records message contents on spans (GenAI semconv) only when asked to.
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from google.protobuf.json_format import MessageToDict
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "adk_weather"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    asyncio.run(_run_sessions())
    provider.force_flush()
    spans = memory.get_finished_spans()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "adk_weather.otlp.jsonl"
    with target.open("w", encoding="utf-8") as handle:
        # One document per trace, as a collector flushing batch by batch would write.
        by_trace: dict[int, list[Any]] = {}
        for span in spans:
            by_trace.setdefault(span.context.trace_id, []).append(span)
        for batch in by_trace.values():
            request = MessageToDict(encode_spans(batch), use_integers_for_enums=True)
            handle.write(json.dumps(_hex_ids(request), separators=(",", ":")) + "\n")
    memory.clear()
    _openinference_spans(provider.get_tracer("openinference.example"))
    provider.force_flush()
    request = MessageToDict(encode_spans(memory.get_finished_spans()), use_integers_for_enums=True)
    (out_dir / "openinference.otlp.json").write_text(
        json.dumps([_hex_ids(request)], indent=1) + "\n", encoding="utf-8"
    )
    return target


if __name__ == "__main__":
    written = make(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
    print(f"wrote {written}")
