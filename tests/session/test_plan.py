"""`session.plan`: one rule decides whether a run streams, for `assay eval`,
`evaluate`/`aevaluate` and the service (issue #34).

The table pins the rule over its inputs; the tests after it check that each caller
follows it (the CLI's lines, `evaluate`'s driver, the service's loaded run).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.engine import build_metrics
from assay.formats.stream import RowFile
from assay.session.plan import Driver, RunFacts, RunPlan, plan_run, row_files

runner = CliRunner()

ROWS = [RowFile(Path("a.jsonl"), "jsonl"), RowFile(Path("b.csv"), "csv")]
CLASH = [RowFile(Path("x/a.jsonl"), "jsonl"), RowFile(Path("y/a.jsonl"), "jsonl")]
PLAIN = build_metrics(names={"response_match_score": 0.8})
JUDGED = build_metrics(names={"response_match_score": 0.8, "correctness": 0.5})

# (facts beyond the streamable base, driver, reason fragment or None, said)
TABLE: list[tuple[dict[str, Any], Driver, str | None, bool]] = [
    ({}, Driver.ROWS, None, False),
    ({"agent": True}, Driver.AGENT_ROWS, None, False),
    ({"runs": 1}, Driver.ROWS, None, False),
    ({"agent": True, "observers": True, "whole_result": True}, Driver.AGENT_ROWS, None, False),
    # Reasons no option of the user's caused: said in verbose output only.
    ({"local": False}, Driver.SESSION, "another executor", False),
    ({"local": False, "agent": True}, Driver.SESSION, "another executor", False),
    ({"files": None}, Driver.SESSION, "not row files", False),
    ({"files": CLASH}, Driver.SESSION, "'a'", False),
    ({"metrics": None}, Driver.SESSION, "default criteria", False),
    ({"whole_result": True}, Driver.SESSION, "every case result", False),
    ({"observers": True}, Driver.SESSION, "observers", False),
    # Options the user gave over row files: said in one line.
    ({"html_without_store": True}, Driver.SESSION, "--html", True),
    ({"mlflow": True, "agent": True}, Driver.SESSION, "--mlflow", True),
    ({"selection": True}, Driver.SESSION, "case selection", True),
    ({"runs": 2, "agent": True}, Driver.SESSION, "--runs above 1", True),
    ({"runs": 3}, Driver.SESSION, "--runs above 1", True),
    ({"adk_history": True, "agent": True}, Driver.SESSION, "ADK's eval history", True),
    ({"metrics": JUDGED}, Driver.SESSION, "correctness is judged", True),
    ({"metrics": JUDGED, "agent": True}, Driver.SESSION, "correctness is judged", True),
    # The first reason wins, in the order above.
    ({"local": False, "files": None, "runs": 2}, Driver.SESSION, "another executor", False),
    ({"metrics": None, "html_without_store": True}, Driver.SESSION, "default criteria", False),
    ({"runs": 2, "metrics": JUDGED}, Driver.SESSION, "--runs above 1", True),
    ({"metrics": JUDGED, "adk_history": True, "agent": True}, Driver.SESSION, "judged", True),
]


@pytest.mark.parametrize(("changes", "driver", "reason", "said"), TABLE)
def test_the_one_rule(
    changes: dict[str, Any], driver: Driver, reason: str | None, said: bool
) -> None:
    facts = {"files": ROWS, "metrics": PLAIN, **changes}
    plan = plan_run(RunFacts(**facts))
    assert plan.driver is driver
    assert plan.streams is (driver is not Driver.SESSION)
    assert plan.said is said
    if reason is None:
        assert plan.reason is None and plan.notice() is None
    else:
        assert plan.reason is not None and reason in plan.reason
        notice = plan.notice()
        assert notice is not None and notice.startswith("rows loaded whole, not streamed: ")


def test_row_files_are_paths_to_vertex_rows_only(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "hi", "response": "hello"}) + "\n")
    other = tmp_path / "set.json"
    other.write_text("{}")
    assert [f.path for f in row_files(rows, None) or []] == [rows]
    assert [f.path for f in row_files([str(rows)], "vertex") or []] == [rows]
    assert row_files([rows, other], None) is None  # one not a row file: all loaded
    assert row_files(rows, "mlflow") is None
    assert row_files([], None) is None
    assert row_files(str(rows).encode(), None) is None
    assert row_files([{"prompt": "hi"}], None) is None  # row dicts are loaded


def _rows(path: Path, n: int) -> Path:
    lines = [{"prompt": f"q{i}", "response": f"a{i}", "reference": f"a{i}"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_the_cli_says_a_judged_recorded_run_is_loaded(tmp_path: Path) -> None:
    """The rule the CLI once kept for agent runs only: a judged metric over recorded
    row files says why the rows are loaded, as it does with an agent."""
    data = _rows(tmp_path / "rows.jsonl", 4)
    result = runner.invoke(app, ["eval", str(data), "--metric", "correctness", "--no-store"])
    notes = [line for line in result.stderr.splitlines() if "not streamed" in line]
    assert len(notes) == 1 and "correctness is judged" in notes[0], result.stderr


def test_verbose_says_the_reasons_no_option_caused(tmp_path: Path) -> None:
    data = _rows(tmp_path / "rows.jsonl", 4)
    args = ["eval", str(data), "--no-store"]
    plain = runner.invoke(app, args)  # default criteria: loaded, said only with --verbose
    assert plain.exit_code in (0, 1), plain.output
    assert "not streamed" not in plain.stderr
    verbose = runner.invoke(app, [*args, "--verbose"])
    notes = [line for line in verbose.stderr.splitlines() if "not streamed" in line]
    assert len(notes) == 1 and "default criteria" in notes[0], verbose.stderr
    named = runner.invoke(app, [*args, "--metric", "response_match_score", "--verbose"])
    assert named.exit_code == 0, named.output
    assert "not streamed" not in named.stderr  # streamed: nothing to say
    evalset = tmp_path / "set.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "s", "eval_cases": []}))
    other = runner.invoke(app, ["eval", str(evalset), "--no-store", "--verbose"])
    assert "not streamed" not in other.stderr  # no rows: nothing to say of them


def _driver_of(monkeypatch: pytest.MonkeyPatch, **call: Any) -> list[Driver]:
    """`evaluate(**call)`'s driver, as `plan_run` returned it to the API."""
    import assay

    seen = _spy(monkeypatch)
    assay.evaluate(**call)
    return [plan.driver for plan in seen]


def _spy(monkeypatch: pytest.MonkeyPatch, home: Any = None) -> list[RunPlan]:
    """Every plan `plan_run` returns from now on, as `home` (a module) calls it: by
    default `session.plan` itself, for callers that import it at call time."""
    from assay.session import plan as plan_module

    home = home or plan_module
    seen: list[RunPlan] = []
    original = plan_run

    def spy(facts: RunFacts) -> RunPlan:
        plan = original(facts)
        seen.append(plan)
        return plan

    monkeypatch.setattr(home, "plan_run", spy)
    return seen


def test_evaluate_follows_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.engine.executors import LocalExecutor

    data = _rows(tmp_path / "rows.jsonl", 5)
    metric = {"response_match_score": 0.8}
    assert _driver_of(monkeypatch, dataset=data, metrics=metric, keep_cases=2) == [Driver.ROWS]
    assert _driver_of(monkeypatch, dataset=data, metrics=metric) == [Driver.SESSION]
    assert _driver_of(monkeypatch, dataset=data, keep_cases=2) == [Driver.SESSION]
    echo = lambda prompt: prompt  # noqa: E731
    streamed = _driver_of(monkeypatch, dataset=data, metrics=metric, agent=echo)
    assert streamed == [Driver.AGENT_ROWS]
    # An `Executor` that runs here is local, as `assay eval --executor local` is.
    local = _driver_of(
        monkeypatch, dataset=data, metrics=metric, agent=echo, executor=LocalExecutor()
    )
    assert local == [Driver.AGENT_ROWS]
    twice = _driver_of(monkeypatch, dataset=data, metrics=metric, agent=echo, runs=2)
    assert twice == [Driver.SESSION]


def test_a_simulated_user_option_keeps_an_agent_run_of_rows_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row files hold no scenarios: `user_model` has no case to simulate, so the rows
    stream (as `assay eval --user-model` streams them), resumable by the loaded run."""
    from assay.store import Store

    data = _rows(tmp_path / "rows.jsonl", 5)
    url = f"sqlite:///{tmp_path / 'a.db'}"
    echo = lambda prompt: prompt  # noqa: E731
    call = {"dataset": data, "metrics": {"response_match_score": 0.8}, "agent": echo}
    streamed = _driver_of(monkeypatch, **call, user_model="openai:u", store=url)
    assert streamed == [Driver.AGENT_ROWS]
    with Store.open(url) as db:
        (info,) = db.list_runs()
        assert info.status == "COMPLETED" and len(db.case_results(info.id)) == 5


def test_evaluate_has_aevaluate_s_parameters() -> None:
    import assay

    sync, awaited = inspect.signature(assay.evaluate), inspect.signature(assay.aevaluate)
    assert list(sync.parameters.values()) == list(awaited.parameters.values())
    assert list(sync.parameters)[:4] == ["dataset", "metrics", "agent", "config"]
    assert sync.parameters["keep_cases"].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError, match="no_such_option"):
        assay.evaluate([], no_such_option=1)
    with pytest.raises(TypeError):
        assay.evaluate([], None, None, None, 3)  # `runs` is keyword-only


def test_the_service_plans_its_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service run's evaluations are held in the store: planned, and loaded."""
    from types import SimpleNamespace

    from assay.service import _run_session
    from assay.service.settings import ServiceRunSettings
    from assay.session.run_session import RunSession
    from assay.store import Store

    seen = _spy(monkeypatch, _run_session)
    settings = ServiceRunSettings(metrics=["response_match_score"], runCount=2)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as db:
        run: Any = SimpleNamespace(id="r1")
        session = _run_session.run_session(db, run, settings, lambda p: p, lambda ids: None)
    assert isinstance(session, RunSession)
    assert [plan.driver for plan in seen] == [Driver.SESSION]
    assert seen[0].reason is not None and "not row files" in seen[0].reason


def test_an_adk_agent_s_history_loads_its_rows_unless_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ADK fact, known only once the agent is loaded: `assay eval` loads the agent to
    plan, and says why its rows are loaded; `--no-adk-history` streams them."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "agents"))
    from adk_fixtures.scripted import script
    from adk_fixtures.travel_agent import agent as travel

    folder = tmp_path / "plan_travel"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(
        "from adk_fixtures.travel_agent.agent import root_agent\n\n__all__ = ['root_agent']\n"
    )
    data = _rows(tmp_path / "rows.jsonl", 2)
    args = ["eval", str(data), "--agent", str(folder), "--metric", "response_match_score"]
    with script(travel.MODEL, travel.travel_rule):
        kept = runner.invoke(app, [*args, "--no-store"])
        streamed = runner.invoke(app, [*args, "--no-store", "--no-adk-history"])
    assert kept.exit_code in (0, 1), kept.output
    notes = [line for line in kept.stderr.splitlines() if "not streamed" in line]
    assert len(notes) == 1 and "ADK's eval history" in notes[0], kept.stderr
    assert streamed.exit_code in (0, 1), streamed.output
    assert "not streamed" not in streamed.stderr
