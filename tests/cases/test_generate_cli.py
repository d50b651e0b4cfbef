"""`assay cases generate`: the command against the stand-in model, and hostile input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing.judge_server import JudgeServer, StandinReply
from assay.testing.standin_generator import script

REPO = Path(__file__).resolve().parents[2]
HOME = str(REPO / "examples" / "home_automation" / "definition.json")
runner = CliRunner()


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with JudgeServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
        yield server


def _generate(out: Path, *extra: str) -> list[str]:
    return ["cases", "generate", str(out), "--agent", HOME, "--model", "openai:stand-in",
            "--count", "6", *extra]  # fmt: skip


def test_generate_prints_refusals_and_coverage_and_writes(
    standin: JudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "gen.evalset.json"
    result = runner.invoke(app, _generate(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "openai:stand-in: 10 cases proposed in 1 request, 6 kept, 4 refused"
    refused = [line.strip() for line in lines[lines.index("refused:") + 1 :][:4]]
    assert [line.split(": ")[:2] for line in refused] == [
        ["invented_tool", "invented tool"],
        ["broken_arguments", "invalid arguments"],
        ["near_duplicate_1", "near-duplicate"],
        ["near_duplicate_2", "near-duplicate"],
    ]
    assert "  tool     set_temperature   1" in lines
    assert "never touched" not in result.output
    assert lines[-1] == (
        f"wrote {out} (6 cases, adk; read back by assay's adk reader, google-adk EvalSet)"
    )
    assert len(json.loads(out.read_text("utf-8"))["eval_cases"]) == 6


def test_formats_ces_and_vertex(standin: JudgeServer, tmp_path: Path) -> None:
    ces = tmp_path / "gen.ces.json"
    result = runner.invoke(app, _generate(ces, "--format", "ces"))
    assert result.exit_code == 0, result.output
    assert "google-cloud-ces Evaluation" in result.output
    assert len(json.loads(ces.read_text("utf-8"))["evaluations"]) == 6
    vertex = tmp_path / "gen.jsonl"
    result = runner.invoke(app, _generate(vertex, "--format", "vertex"))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in vertex.read_text("utf-8").splitlines()]
    assert len(rows) == 6 and rows[0]["prompt"].startswith("Could you list devices")


def test_scenarios_cannot_be_vertex_rows(standin: JudgeServer, tmp_path: Path) -> None:
    out = tmp_path / "gen.jsonl"
    result = runner.invoke(app, _generate(out, "--scenarios", "--format", "vertex"))
    assert result.exit_code == 2
    assert "a Vertex dataset cannot hold" in result.output and "it is a scenario" in result.output
    assert not out.exists()


def test_dry_run_prints_the_prompt_and_calls_nothing(standin: JudgeServer, tmp_path: Path) -> None:
    out = tmp_path / "gen.evalset.json"
    args = ["cases", "generate", str(out), "--agent", HOME, "--model", "openai:gpt-4o-mini",
            "--count", "25", "--dry-run", "--focus", "thermostats"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "--- system ---" in result.output and "FOCUS: thermostats" in result.output
    assert "estimate: 3 requests, ~" in result.output
    assert "(the first of 3 requests shown)" in result.output
    assert result.output.rstrip().endswith("dry run: nothing was called or written")
    assert standin.requests == [] and not out.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--count", "0"], "--count must be at least 1, got 0"),
        (["--format", "xml"], "--format 'xml': expected one of adk, ces, vertex"),
        (["--model", "gpt-4o"], "--model 'gpt-4o' is not a model string; valid forms are"),
        (["--model", "gpt-4o", "--dry-run"], "--model 'gpt-4o' is not a model string"),
    ],
)
def test_bad_options_exit_2_before_any_call(
    standin: JudgeServer, tmp_path: Path, extra: list[str], message: str
) -> None:
    result = runner.invoke(app, _generate(tmp_path / "x.json", *extra))
    assert result.exit_code == 2 and message in result.output
    assert standin.requests == []


def test_an_existing_file_is_not_overwritten(standin: JudgeServer, tmp_path: Path) -> None:
    out = tmp_path / "mine.evalset.json"
    out.write_text('{"eval_set_id": "mine", "eval_cases": []}\n', encoding="utf-8")
    result = runner.invoke(app, _generate(out))
    assert result.exit_code == 2 and "--overwrite" in result.output
    assert standin.requests == []
    assert out.read_text("utf-8") == '{"eval_set_id": "mine", "eval_cases": []}\n'
    result = runner.invoke(app, _generate(out, "--overwrite"))
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text("utf-8"))["eval_cases"]) == 6


def test_wrong_suffix_for_the_format(standin: JudgeServer, tmp_path: Path) -> None:
    result = runner.invoke(app, _generate(tmp_path / "gen.csv"))
    assert result.exit_code == 2
    assert "an ADK eval set cannot be written as a .csv" in result.output


def test_nothing_kept_writes_nothing(standin: JudgeServer, tmp_path: Path) -> None:
    standin.set_script(StandinReply("I cannot help with that."))
    out = tmp_path / "gen.evalset.json"
    result = runner.invoke(app, _generate(out))
    assert result.exit_code == 2
    assert "batch 1: malformed: unreadable reply" in result.output
    assert "no case was kept, so nothing was written" in result.output
    assert not out.exists()


def test_a_model_error_exits_2_with_its_text(standin: JudgeServer, tmp_path: Path) -> None:
    standin.set_script(StandinReply(text="model not found", status=404))
    out = tmp_path / "gen.evalset.json"
    result = runner.invoke(app, _generate(out))
    assert result.exit_code == 2, result.output
    assert "model not found" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_a_broken_definition_exits_2_naming_the_tool(tmp_path: Path) -> None:
    bad = tmp_path / "agent.json"
    bad.write_text(
        '{"tools": [{"name": "ok"}, {"name": "t", "parameters": {"type": "nope"}}]}',
        encoding="utf-8",
    )
    args = ["cases", "generate", str(tmp_path / "o.json"), "--agent", str(bad), "--model",
            "openai:x", "--dry-run"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "tools[1] (t): parameters: not a valid JSON schema" in result.output


def test_a_broken_personas_file_exits_2(standin: JudgeServer, tmp_path: Path) -> None:
    personas = tmp_path / "personas.json"
    personas.write_text('[{"displayName": "no id"}]', encoding="utf-8")
    out = tmp_path / "gen.evalset.json"
    result = runner.invoke(app, _generate(out, "--scenarios", "--personas", str(personas)))
    assert result.exit_code == 2, result.output
    assert "personas.json" in result.output and "Traceback" not in result.output
    assert standin.requests == [] and not out.exists()


def test_embeddings_endpoint_is_asked(standin: JudgeServer, tmp_path: Path) -> None:
    out = tmp_path / "gen.evalset.json"
    args = _generate(out, "--embeddings", standin.openai_base_url, "--embedding-model", "emb")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (request,) = standin.embedding_requests
    assert request["model"] == "emb"
    assert "Could you list devices for location Living Room?" in request["input"]


def test_an_unreachable_embeddings_endpoint_exits_2(standin: JudgeServer, tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    out = tmp_path / "gen.evalset.json"
    result = runner.invoke(app, _generate(out, "--embeddings", dead))
    assert result.exit_code == 2, result.output
    assert "--embeddings: embeddings endpoint" in result.output and "failed" in result.output
    assert not out.exists()


def test_scenarios_coverage_names_unused_personas(tmp_path: Path) -> None:
    from examples.home_automation.standin_generate import script as home_script

    personas = tmp_path / "personas.yaml"
    personas.write_text(
        "".join(f"- id: p{i}\n  description: Persona {i}.\n  behaviors: []\n" for i in range(1, 7)),
        encoding="utf-8",
    )
    out = tmp_path / "scenarios.evalset.json"
    with JudgeServer(home_script) as server:
        args = ["cases", "generate", str(out), "--agent", HOME, "--model", "openai:stand-in",
                "--count", "5", "--scenarios", "--personas", str(personas)]  # fmt: skip
        result = runner.invoke(
            app, args, env={"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "k"}
        )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # five kept cases, personas handed out in turn: p1..p5 once each, p6 never
    assert [line.split() for line in lines if line.startswith("  persona ")] == [
        ["persona", f"p{i}", "1" if i < 6 else "0"] for i in range(1, 7)
    ]
    assert "personas unused: p6" in lines
    assert "never touched: get_energy_report" in lines
    doc = json.loads(out.read_text("utf-8"))
    assert doc["eval_cases"][0]["conversation_scenario"]["user_persona"]["id"] == "p1"
