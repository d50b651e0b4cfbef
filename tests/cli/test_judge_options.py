"""The `assay judge` commands read their shared options through one place
(`assay.cli.judge_options`): a bad `--criterion` or call limit is the same exit 2,
naming the option, in calibrate, align, stability and probe, before any judge call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app

runner = CliRunner()


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"id": "a", "prompt": "p", "response": "r",
                                "reference": "r", "label": "pass"}) + "\n")  # fmt: skip
    base = ["--judge", "openai:j", "--metric", "final_response_match_v2", "--no-store"]
    return {
        "calibrate": ["judge", "calibrate", str(data), *base],
        "align": ["judge", "align", str(data), *base[:4], "--no-save"],
        "stability": ["judge", "stability", str(data), *base],
        "probe": ["judge", "probe", str(data), *base, "--bias", "verbosity"],
    }


@pytest.mark.parametrize("command", ["calibrate", "align", "stability", "probe"])
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--criterion", "[1]"], "--criterion must be a JSON object of the metric's options"),
        (["--criterion", "{"], "--criterion is not valid JSON"),
        (["--criterion", "[" * 100_000], "--criterion is nested too deeply to read"),
        (["--judge-concurrency", "0"], "--judge-concurrency must be at least 1, got 0"),
        (["--judge-timeout", "0"], "--judge-timeout must be positive, got 0.0"),
    ],
)
def test_shared_options_are_refused_alike(
    command: str, extra: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing is called
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    result = runner.invoke(app, [*_commands(tmp_path)[command], *extra])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
