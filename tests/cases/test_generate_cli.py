"""`assay cases generate`: the command against the stand-in model, and hostile input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing.judge_server import JudgeServer, StandinReply

REPO = Path(__file__).resolve().parents[2]
HOME = str(REPO / "examples" / "home_automation" / "definition.json")
runner = CliRunner()


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


MINE = """{
    "eval_set_id": "mine",
    "reviewed_by": "ana",
    "eval_cases": [
        {
            "eval_id": "hand_written",
            "conversation": [
                {
                    "invocation_id": "i1",
                    "user_content": {"role": "user", "parts": [{"text": "Lights off"}]},
                    "final_response": {"role": "model", "parts": [{"text": "Done."}]}
                }
            ],
            "note": "kept as written"
        }
    ]
}
"""


def test_generated_cases_are_added_to_an_existing_set_without_churn(
    standin: JudgeServer, tmp_path: Path
) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    out = tmp_path / "mine.evalset.json"
    out.write_text(MINE, encoding="utf-8")
    result = runner.invoke(app, _generate(out))
    assert result.exit_code == 0, result.output
    last = result.output.splitlines()[-1]
    assert last.startswith(f"wrote {out}: added ") and "google-adk EvalSet" in last
    text = out.read_text("utf-8")
    # The hand-written case, the unknown fields and the 4-space layout are as they were.
    head = MINE[: MINE.index("\n    ]\n}")]
    assert text.startswith(head)
    data = json.loads(text)
    assert data["reviewed_by"] == "ana" and data["eval_cases"][0]["note"] == "kept as written"
    ids = [c["eval_id"] for c in data["eval_cases"]]
    assert ids[0] == "hand_written" and len(ids) == 7
    AdkEvalSet.model_validate_json(text)

    # The same ids again: refused, naming them, and nothing written.
    again = runner.invoke(app, _generate(out))
    assert again.exit_code == 2
    assert f"already has case(s) {', '.join(ids[1:])}" in " ".join(again.output.split())
    assert "--update" in again.output
    assert out.read_text("utf-8") == text

    # --update replaces them in place (the stand-in says the same: nothing changes).
    updated = runner.invoke(app, _generate(out, "--update"))
    assert updated.exit_code == 0, updated.output
    assert "unchanged" in updated.output.splitlines()[-1]
    assert out.read_text("utf-8") == text


def test_an_existing_file_keeps_its_format(standin: JudgeServer, tmp_path: Path) -> None:
    rows = tmp_path / "mine.jsonl"
    rows.write_text('{"id": "mine", "prompt": "Hi", "reference": "Hello"}\n', encoding="utf-8")
    wrong = runner.invoke(app, _generate(rows, "--format", "adk"))
    assert wrong.exit_code == 2 and f"{rows} is vertex" in " ".join(wrong.output.split())
    assert standin.requests == []
    result = runner.invoke(app, _generate(rows))
    assert result.exit_code == 0, result.output
    lines = rows.read_text("utf-8").splitlines()
    assert lines[0] == '{"id": "mine", "prompt": "Hi", "reference": "Hello"}'
    assert len(lines) == 7 and json.loads(lines[1])["prompt"].startswith("Could you list")


def test_a_ces_list_gets_the_rubric_resources_its_new_cases_refer_to(
    standin: JudgeServer, tmp_path: Path
) -> None:
    # Generated CES cases refer to rubric resources of the whole set
    # (`evaluationExpectations`): those the file lacks are added with the cases.
    from google.cloud import ces_v1beta

    ces = tmp_path / "mine.ces.json"
    ces.write_text('{\n  "evaluations": []\n}\n', encoding="utf-8")
    result = runner.invoke(app, _generate(ces))
    assert result.exit_code == 0, result.output
    assert "google-cloud-ces Evaluation" in result.output.splitlines()[-1]
    text = ces.read_text("utf-8")
    data = json.loads(text)
    assert len(data["evaluations"]) == 6
    held = {r["displayName"] for r in data["evaluationExpectations"]}
    referred = {n for e in data["evaluations"] for n in e["golden"]["evaluationExpectations"]}
    assert referred and referred <= held
    body = dict(data)
    body.pop("evaluationExpectations")
    ces_v1beta.ListEvaluationsResponse.from_json(json.dumps(body), ignore_unknown_fields=False)
    # The same cases again are refused (their ids), and the file stays as it was.
    again = runner.invoke(app, _generate(ces))
    assert again.exit_code == 2 and ces.read_text("utf-8") == text


def test_an_uneditable_existing_file_is_refused_before_any_call(
    standin: JudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "mine.evalset.json"
    out.write_text("{not json", encoding="utf-8")
    result = runner.invoke(app, _generate(out))
    assert result.exit_code == 2 and "mine.evalset.json" in result.output
    assert standin.requests == []
    both = runner.invoke(app, _generate(out, "--overwrite", "--update"))
    assert both.exit_code == 2 and "--overwrite" in both.output


def test_overwrite_replaces_an_existing_file(standin: JudgeServer, tmp_path: Path) -> None:
    out = tmp_path / "mine.evalset.json"
    out.write_text(MINE, encoding="utf-8")
    result = runner.invoke(app, _generate(out, "--overwrite"))
    assert result.exit_code == 0, result.output
    ids = [c["eval_id"] for c in json.loads(out.read_text("utf-8"))["eval_cases"]]
    assert len(ids) == 6 and "hand_written" not in ids


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
