"""Prompt caching of judge calls (issue #38): the judge instructions every call of a
metric shares go first and unchanged (OpenAI caches such a prefix by itself), are marked
with ``cache_control`` for Anthropic, and the cached input tokens the vendor reports are
in the run summary and the judge line of `assay eval`.

Runs `assay eval` through the real openai and anthropic SDKs against the stand-in on
127.0.0.1 and reads the request bodies the stand-in received.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

runner = CliRunner()

ROWS = [
    {"request": "Capital of France?", "response": "Paris.", "expected_response": "Paris"},
    {"request": "Legs of a spider?", "response": "Eight.", "expected_response": "Eight"},
    {"request": "Boiling point of water?", "response": "100 C.", "expected_response": "100 C"},
]
CACHED = 700


def _cached_yes(request: StandinRequest) -> StandinReply:
    reply = json.dumps({"rationale": "matches", "rating": "yes"})
    return StandinReply(reply, input_tokens=900, cached_tokens=CACHED)


def _eval(tmp_path: Path, judge: str) -> tuple[Any, dict[str, Any]]:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    result = runner.invoke(
        app,
        [
            "eval", str(rows), "--from", "mlflow", "-m", "correctness", "--judge", judge,
            "--no-store", "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))["summary"]
    return result, summary


def test_anthropic_judge_instructions_are_marked_for_the_prompt_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused")
    with JudgeServer(_cached_yes) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        result, summary = _eval(tmp_path, "anthropic:stand-in")
    requests = server.requests
    assert len(requests) == len(ROWS)
    systems = [r.body["system"] for r in requests]
    for system in systems:
        assert isinstance(system, list) and len(system) == 1
        assert system[0]["cache_control"] == {"type": "ephemeral"}
        assert system[0]["text"].strip()
    assert len({s[0]["text"] for s in systems}) == 1  # one shared, cacheable prefix
    # the cases differ only after it
    assert len({json.dumps(r.body["messages"]) for r in requests}) == len(ROWS)
    assert summary["judge/cached_tokens"] == CACHED * len(ROWS)
    line = " ".join(result.output.split())
    # Anthropic counts cache reads apart from `input_tokens`: assay adds them up
    assert f"{(900 + CACHED) * len(ROWS):,} input ({CACHED * len(ROWS):,} cached) + " in line


def test_openai_judge_prompts_keep_the_shared_prefix_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    with JudgeServer(_cached_yes) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        _, summary = _eval(tmp_path, "openai:stand-in")
    requests = server.requests
    firsts = {json.dumps(r.body["messages"][0]) for r in requests}
    assert len(firsts) == 1  # the same system message opens every call
    assert requests[0].body["messages"][0]["role"] == "system"
    assert summary["judge/cached_tokens"] == CACHED * len(ROWS)
    assert summary["judge/input_tokens"] == 900 * len(ROWS)
