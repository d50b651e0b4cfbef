"""OTLP traces in: the shipped exports (made by the real OpenTelemetry SDK around a real
ADK run) rebuild into the right conversations and trajectories; bad input skips one
trace with a named warning and loses nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.errors import InputError
from assay.formats import detect_format, load
from assay.formats.otel import TraceSkipped, load_text

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "examples" / "traces"
ADK_EXPORT = TRACES / "adk_weather.otlp.jsonl"
OPENINFERENCE = TRACES / "openinference.otlp.json"
WEATHER_SET = REPO / "examples" / "adk_weather" / "weather.evalset.json"


def _summary(path: Path, **mapping: str) -> dict[str, list[tuple[Any, ...]]]:
    evalset = load(path, "otel", mapping or None)
    return {
        case.id: [
            (
                turn.user_input.text,
                [(c.name, c.args) for c in turn.tool_calls()],
                [r.response for r in turn.tool_responses()],
                turn.final_response,
            )
            for turn in case.actual or []
        ]
        for case in evalset.cases
    }


WEATHER_CONVERSATIONS = {
    "weather_paris": [
        (
            "What's the weather like in Paris?",
            [("get_weather", {"city": "Paris"})],
            [{"city": "Paris", "condition": "sunny", "temperature_c": 21}],
            "It is sunny and 21°C in Paris.",
        )
    ],
    "london_follow_up": [
        (
            "How is the weather in London today?",
            [("get_weather", {"city": "London"})],
            [{"city": "London", "condition": "cloudy", "temperature_c": 15}],
            "It is cloudy and 15°C in London.",
        ),
        (
            "And which time zone is it there?",
            [("get_timezone", {"city": "London"})],
            [{"city": "London", "timezone": "Europe/London", "utc_offset": "+01:00"}],
            "London is in the Europe/London time zone (UTC+01:00).",
        ),
    ],
}


def test_adks_export_rebuilds_each_session_as_a_conversation() -> None:
    assert _summary(ADK_EXPORT) == WEATHER_CONVERSATIONS
    evalset = load(ADK_EXPORT, "otel")
    turn = evalset.cases[0].actual[0]  # type: ignore[index]
    assert turn.latency_s is not None and turn.latency_s > 0
    assert turn.usage is not None  # the stand-in model reports zero tokens, not none
    assert turn.tool_responses()[0].latency_s is not None


def test_the_export_is_what_the_opentelemetry_sdk_writes_for_an_adk_run(tmp_path: Path) -> None:
    # Re-made from scratch in a fresh process: ADK's telemetry, the SDK, the OTLP encoder.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "examples.traces.make_traces", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = tmp_path / "adk_weather.otlp.jsonl"
    first = json.loads(made.read_text().splitlines()[0])
    scope = first["resourceSpans"][0]["scopeSpans"][0]
    assert scope["scope"]["name"] == "gcp.vertex.agent"  # ADK's tracer wrote these spans
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in scope["spans"])
    assert _summary(made) == WEATHER_CONVERSATIONS
    assert _summary(tmp_path / "openinference.otlp.json") == _summary(OPENINFERENCE)


def test_openinference_spans_are_recognised() -> None:
    assert _summary(OPENINFERENCE) == {
        "paris_rome": [
            (
                "Find me a flight from Paris to Rome",
                [("find_flights", {"origin": "Paris", "destination": "Rome"})],
                [{"flights": [{"id": "PAR-ROM-1"}]}],
                "Flight PAR-ROM-1 goes from Paris to Rome.",
            )
        ]
    }
    usage = load(OPENINFERENCE, "otel").cases[0].actual[0].usage  # type: ignore[index]
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (103, 21)


def test_the_format_is_detected_without_from() -> None:
    assert detect_format(json.loads(OPENINFERENCE.read_text()), OPENINFERENCE) == "otel"
    assert load(ADK_EXPORT).cases[0].id == "weather_paris"  # JSONL, detected


def test_references_join_by_case_id_and_the_cli_scores_the_traces(tmp_path: Path) -> None:
    joined = load(ADK_EXPORT, "otel", {"reference": str(WEATHER_SET)})
    by_id = {c.id: c for c in joined.cases}
    assert len(by_id["london_follow_up"].reference or []) == 2
    result = CliRunner().invoke(
        app,
        [
            "eval", str(ADK_EXPORT), "--from", "otel", "--no-store",
            "--map", f"reference={WEATHER_SET}", "--out", str(tmp_path / "r.json"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Result: 2 passed, 0 failed" in result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["tool_trajectory_avg_score/mean"] == 1.0


def _lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ADK_EXPORT.read_text().splitlines()]


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def _load_warned(text: str) -> tuple[dict[str, int], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evalset = load_text(text, file="t.jsonl")
    messages = [str(w.message) for w in caught if issubclass(w.category, TraceSkipped)]
    return {c.id: len(c.actual or []) for c in evalset.cases}, messages


def test_a_span_whose_parent_is_missing_skips_its_trace_only() -> None:
    docs = _lines()
    spans = _spans(docs[2])  # the London follow-up's second turn
    root = next(s for s in spans if not s.get("parentSpanId"))
    spans.remove(root)
    child = next(s for s in spans if s.get("parentSpanId") == root["spanId"])
    turns, messages = _load_warned("\n".join(json.dumps(d) for d in docs))
    assert turns == {"weather_paris": 1, "london_follow_up": 1}
    (message,) = messages
    assert f"trace {root['traceId']}" in message and child["spanId"] in message
    assert "which is not in the file: trace skipped" in message


def test_unknown_attributes_are_ignored_and_unknown_spans_skip_with_a_reason() -> None:
    docs = _lines()
    for span in _spans(docs[0]):
        span["attributes"].append({"key": "vendor.custom", "value": {"stringValue": "x"}})
    stranger = json.loads(json.dumps(docs[1]))
    for span in _spans(stranger):
        span["traceId"] = "f" * 32
        span["attributes"] = [{"key": "http.method", "value": {"stringValue": "GET"}}]
    turns, messages = _load_warned("\n".join(json.dumps(d) for d in [*docs, stranger]))
    assert turns == {"weather_paris": 1, "london_follow_up": 2}
    (message,) = messages
    assert f"trace {'f' * 32}: no agent, model or tool span" in message


def test_a_truncated_line_is_skipped_with_a_warning_and_the_rest_loads() -> None:
    lines = ADK_EXPORT.read_text().splitlines()
    text = "\n".join([lines[0], lines[1], lines[2][: len(lines[2]) // 2]])
    turns, messages = _load_warned(text)
    assert turns == {"weather_paris": 1, "london_follow_up": 1}
    (message,) = messages
    assert message.startswith("t.jsonl: line 3 is not JSON") and "truncated?" in message


def test_the_cli_prints_a_skipped_trace_as_one_warning_line(tmp_path: Path) -> None:
    lines = ADK_EXPORT.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], lines[1][:100]]) + "\n")
    result = CliRunner().invoke(
        app, ["eval", str(broken), "--from", "otel", "--no-store", "--metric", "tool_call_count"]
    )
    # The console wraps at its width, wherever in the (temporary, any length) path.
    shown = "".join(result.output.split())
    assert "warning:" in shown and "".join(f"{broken}: line 2 is not JSON".split()) in shown
    assert "weather_paris" in shown and "Traceback" not in shown


@pytest.mark.parametrize(
    ("text", "mapping", "message"),
    [
        ('{"rows": []}', None, "no spans found"),
        ("", None, "no spans found"),
        (ADK_EXPORT.read_text(), {"prompt": "x"}, "--map prompt=... is not an OTLP option"),
    ],
)
def test_input_that_holds_no_trace_is_a_clear_error(
    tmp_path: Path, text: str, mapping: dict[str, str] | None, message: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load(path, "otel", mapping)
