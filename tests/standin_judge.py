"""The stand-in judge as `assay eval` and `assay serve` reach it in the judge tests.

The vendors' SDKs find the stand-in through their own environment variables
(`standin_judge`); the recorded-rows runs write their rows with `write_rows` and drive
`assay eval` with `eval_args` / `eval_report`. Imported by name: this folder is on
sys.path (see conftest.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from assay.cli import app
from assay.models.cost import reply_for_schema
from assay.testing.judge_server import JudgeServer, Script, StandinReply, StandinRequest

runner = CliRunner()

#: the token usage `schema_reply` reports for every call
INPUT_TOKENS, OUTPUT_TOKENS = 300, 40

#: what each vendor's SDK reads: (its API key's variable, its base URL's variable, the
#: stand-in's URL for it)
_VENDORS: dict[str, tuple[str, str, Callable[[JudgeServer], str]]] = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", lambda s: s.openai_base_url),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", lambda s: s.base_url),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", lambda s: s.base_url),
}

#: the variables that choose the google-genai SDK's key, backend (Gemini API or Vertex
#: AI), project and endpoints: a developer's own must not reach a test
GOOGLE_ENVIRONMENT = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
)


def clear_google_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in GOOGLE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def schema_reply(request: StandinRequest) -> StandinReply:
    """A reply that fits whatever schema the metric asked for, with fixed token usage."""
    return StandinReply(
        reply_for_schema(request.json_schema),
        input_tokens=INPUT_TOKENS,
        output_tokens=OUTPUT_TOKENS,
    )


@contextmanager
def standin_judge(
    monkeypatch: pytest.MonkeyPatch, script: Script, vendors: Iterable[str] = ("openai",)
) -> Iterator[JudgeServer]:
    """The stand-in judge answering with `script`, which the SDKs of `vendors` ("openai",
    "anthropic", "gemini") reach through their environment, with an unused API key."""
    with JudgeServer(script) as server:
        for vendor in vendors:
            key, base_url, url_of = _VENDORS[vendor]
            monkeypatch.setenv(key, "unused")
            monkeypatch.setenv(base_url, url_of(server))
        yield server


def arithmetic_rows(count: int = 3) -> list[dict[str, Any]]:
    """Rows every judged metric of recorded rows can score: guidelines and context too."""
    return [
        {
            "request": f"What is {i} plus {i}?",
            "response": f"It is {2 * i}.",
            "expected_response": str(2 * i),
            "guidelines": ["answer with the number"],
            "retrieved_context": [{"content": "adding numbers", "doc_uri": "doc"}],
        }
        for i in range(count)
    ]


def write_rows(tmp_path: Path, rows: list[dict[str, Any]], name: str = "rows.jsonl") -> Path:
    """`rows` as a JSON Lines file of MLflow rows in `tmp_path`."""
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def eval_args(
    rows: Path, judge: str, store: Path, out: Path, metrics: Iterable[str], *extra: str
) -> list[str]:
    """`assay eval` of the MLflow `rows` judged by `judge`, with a SQLite store at `store`."""
    return [
        "eval",
        str(rows),
        "--from",
        "mlflow",
        *[flag for metric in metrics for flag in ("-m", metric)],
        "--judge",
        judge,
        "--store",
        f"sqlite:///{store}",
        "--out",
        str(out),
        *extra,
    ]


def eval_report(
    tmp_path: Path, rows: Path, judge: str, metrics: Iterable[str], *extra: str
) -> tuple[Result, dict[str, Any]]:
    """Runs `eval_args` in process with the store tmp_path/assay.db: the CLI's result and
    the result document it wrote to tmp_path/out.json ({} when it wrote none)."""
    out = tmp_path / "out.json"
    out.unlink(missing_ok=True)
    args = eval_args(rows, judge, tmp_path / "assay.db", out, metrics, *extra)
    result = runner.invoke(app, args)
    document = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return result, document
