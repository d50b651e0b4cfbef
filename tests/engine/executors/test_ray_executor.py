"""`executor="ray"` on a real local Ray cluster (`ray.init(num_cpus=2)`, one per module):
the same results, scores and stored documents as the local executor for recorded rows,
a Python callable agent, a simulated-user scenario and a judged metric (judged on the
driver through the run's cache); a crashed task fails its case, not the run."""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay import evaluate
from assay.agents.tools import ToolHook
from assay.core import EvalCase, EvalSet, Step, ToolCall, ToolResponse, Turn
from assay.core.cases import Scenario
from assay.core.error_types import ErrorType
from assay.engine import build_metrics
from assay.simulation import SimulatorOptions
from assay.store import Store
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest
from assay.testing.standin_schema import instance_of

ray = pytest.importorskip("ray")

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Ray's local cluster")


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    """One local cluster for the module; the agents of this module travel by value
    (the workers cannot import a pytest test module by name)."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    try:
        yield
    finally:
        ray.shutdown()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _stable(value: Any) -> Any:
    """A stored document without what legitimately differs between two runs: timings
    (`latency_s`, the summary's `latency_in_seconds/mean`, ...) and the tool call ids
    ADK draws at random for each call (`adk-<uuid4>`)."""
    if isinstance(value, dict):
        return {
            k: "adk-<random>" if k == "id" and str(v).startswith("adk-") else _stable(v)
            for k, v in value.items()
            if "latency" not in k
        }
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _untimed(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in _stable(summary).items() if not k.startswith("judge/")}


def _stored(url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The newest run's summary and case documents, in case order."""
    with Store.open(url) as store:
        run = store.list_runs()[0]
        assert run.status == "COMPLETED"
        docs = store.case_results(run.id)
        summary = dict(run.summary)
    docs.sort(key=lambda d: (d["eval_set_id"] or "", d["case_id"], d["run_index"]))
    return summary, [_stable(d) for d in docs]


def _both(tmp_path: Path, executor: Any = "ray", **kwargs: Any) -> tuple[Any, Any]:
    """The same evaluation with the local and the Ray executor, each in its own store;
    asserts the stored documents and summaries are the same and returns both results."""
    local_url = f"sqlite:///{tmp_path / 'local.db'}"
    ray_url = f"sqlite:///{tmp_path / 'ray.db'}"
    local = evaluate(**kwargs, store=local_url)
    on_ray = evaluate(**kwargs, store=ray_url, executor=executor)
    local_summary, local_docs = _stored(local_url)
    ray_summary, ray_docs = _stored(ray_url)
    assert len(ray_docs) == len(local_docs) > 0
    for mine, theirs in zip(ray_docs, local_docs, strict=True):
        assert mine == theirs, mine["case_id"]
    # Judge counters depend on timing (two identical prompts in flight at once are two
    # calls, one after the other a cache hit); test_judged_metric_... counts them.
    assert _untimed(ray_summary) == _untimed(local_summary)
    assert [c.metrics for c in sorted(on_ray.cases, key=lambda c: (c.case_id, c.run_index))] == [
        c.metrics for c in sorted(local.cases, key=lambda c: (c.case_id, c.run_index))
    ]
    return local, on_ray


def _rows(n: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    tools = ["search_flights", "book_hotel", "get_weather"]
    words = ["the", "trip", "to", "rome", "is", "booked", "for", "two", "nights"]
    rows = []
    for i in range(n):
        ref = [
            {"tool_name": rng.choice(tools), "tool_input": {"n": rng.randint(1, 3)}}
            for _ in range(rng.randint(1, 3))
        ]
        predicted = ref if i % 3 else ref[::-1]
        rows.append(
            {
                "id": f"row{i}",
                "prompt": f"plan trip {i}",
                "response": " ".join(rng.choices(words, k=6)),
                "reference": " ".join(rng.choices(words, k=6)),
                "predicted_trajectory": predicted,
                "reference_trajectory": ref,
            }
        )
    return rows


def test_recorded_rows_with_trajectory_metrics_and_rouge(tmp_path: Path) -> None:
    metrics = [
        "trajectory_exact_match",
        "trajectory_in_order_match",
        "trajectory_precision",
        "tool_trajectory_avg_score",
        "rouge_1",
        "rouge_l_sum",
    ]
    # 60 rows at concurrency 4: batches of 4 rows, 15 Ray tasks
    local, on_ray = _both(tmp_path, dataset=_rows(60), metrics=metrics)
    assert len(on_ray.cases) == 60
    assert on_ray.summary["passed"] == local.summary["passed"] > 0
    assert {c.status for c in on_ray.cases} == {c.status for c in local.cases}
    assert any(c.metrics["rouge_1"].score not in (0.0, 1.0) for c in on_ray.cases)


def _shout(prompt: str) -> dict[str, Any]:
    """A Python callable agent: a computed reply and a tool trajectory."""
    digest = sum(ord(ch) for ch in prompt) % 97
    return {
        "response": f"{prompt.upper()} #{digest}",
        "predicted_trajectory": [{"tool_name": "lookup", "tool_input": {"q": prompt}}],
    }


def test_python_callable_agent(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"q{i}",
            "prompt": f"question {i}",
            "reference": f"QUESTION {i} #{sum(ord(c) for c in f'question {i}') % 97}",
            "reference_trajectory": [{"tool_name": "lookup", "tool_input": {"q": f"question {i}"}}],
        }
        for i in range(8)
    ]
    rows[3]["reference"] = "something else entirely"
    local, on_ray = _both(
        tmp_path,
        dataset=rows,
        metrics=["response_match_score", "trajectory_exact_match"],
        agent=_shout,
    )
    assert on_ray.summary["passed"] == 7 and local.summary["passed"] == 7
    failed = next(c for c in on_ray.cases if c.case_id == "q3")
    assert failed.metrics["response_match_score"].score is not None
    assert failed.metrics["trajectory_exact_match"].score == 1.0


def test_adk_agent_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A real google-adk agent loaded from its folder (which the loader put on this
    process's path) runs on the workers; its offline stand-in model is chosen by an
    environment variable the workers get through the executor's runtime_env."""
    pytest.importorskip("google.adk")
    from assay.engine.executors.ray import RayExecutor

    env = {"ASSAY_EXAMPLE_MODEL": "scripted-weather"}
    monkeypatch.setenv("ASSAY_EXAMPLE_MODEL", "scripted-weather")
    # The example reads its model when imported: a copy another test of this worker
    # imported without the variable (reading its definition, say) would be reused.
    folder = str(REPO / "examples" / "adk_weather")
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(folder):
            monkeypatch.delitem(sys.modules, name)
    _, on_ray = _both(
        tmp_path,
        executor=RayExecutor(runtime_env={"env_vars": env}),
        dataset=str(REPO / "examples/adk_weather/weather.evalset.json"),
        agent=str(REPO / "examples/adk_weather"),
        metrics=["tool_trajectory_avg_score", "response_match_score"],
    )
    assert len(on_ray.cases) == 4
    assert all(c.status.value == "PASSED" and c.error is None for c in on_ray.cases), [
        (c.case_id, c.error) for c in on_ray.cases
    ]


def test_the_agent_runs_in_ray_workers() -> None:
    """The case runs happen in Ray's worker processes, not in this one."""
    from assay.agents import CallableAgent
    from assay.core import Score
    from assay.engine import RunOptions, run
    from assay.engine.executors.ray import RayExecutor
    from assay.metrics.base import Metric

    class _Pid(Metric):
        name = "worker_pid"

        def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
            return Score(1.0, explanation=str(os.getpid()))

    cases = [EvalCase(id=f"c{i}", reference=[Turn(user_input={"text": f"c{i}"})]) for i in range(4)]
    result = run(
        [EvalSet(id="s", cases=cases)],
        [_Pid()],
        agent=CallableAgent(lambda prompt: prompt, name="echo"),
        options=RunOptions(concurrency=2),
        executor=RayExecutor(),
    )
    pids = {c.metrics["worker_pid"].explanation for c in result.cases}
    assert pids and str(os.getpid()) not in pids


# -- a scenario with the stand-in user ----------------------------------------------------


def _user_and_judge(request: StandinRequest) -> str:
    """Stateless (conversations run at once in several processes): the user asks once,
    then stops when the agent answered; judges get the first instance of their schema."""
    if "You play a human user" not in request.messages[0]["content"]:
        assert request.json_schema is not None
        return json.dumps(instance_of(request.json_schema))
    answered = "events@bellanotte.com" in request.messages[-1]["content"]
    return "</finished>" if answered else "Hi, a table for 12 people tonight please."


async def _maitre(prompt: str, tools: ToolHook) -> Turn:
    if "12" not in prompt:
        return Turn(final_response="Welcome to Bella Notte! How many guests?")
    call = ToolCall(id="p1", name="set_party_size", args={"size": 12})
    payload, _ = await tools.execute(call, lambda: {"stored": 12})
    return Turn(
        steps=[
            Step(tool_call=call),
            Step(tool_response=ToolResponse(id="p1", name="set_party_size", response=payload)),
        ],
        final_response="We seat parties of 1-8; for 12 please write to events@bellanotte.com.",
    )


def test_scenario_with_the_standin_user_and_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.agents import CallableAgent

    cases = [
        EvalCase(id=f"s{i}", scenario=Scenario(task="Book a table for 12.", max_turns=3))
        for i in range(2)
    ]
    with JudgeServer(_user_and_judge) as server:
        # the judge runs on the driver (this process); the simulated user on the workers
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        simulator = SimulatorOptions(
            model="openai:user-sim", base_url=server.openai_base_url, max_retries=0
        )
        _, on_ray = _both(
            tmp_path,
            dataset=EvalSet(id="bella", cases=cases),
            metrics=build_metrics(names=["scenario_expectations", "task_completed"]),
            agent=CallableAgent(_maitre, name="maitre"),
            simulator=simulator,
            runs=2,
            judge="openai:stand-in",
        )
        users = [r for r in server.requests if "You play a human user" in r.messages[0]["content"]]
        # each conversation: the user's message, then the stop signal; 4 per executor
        assert len(users) == 2 * 2 * 2 * 2 and not server.errors
        assert len(server.requests) > len(users)  # and the judge was asked
    assert len(on_ray.cases) == 4
    for case in on_ray.cases:
        assert case.error is None, case.error
        assert case.metrics["task_completed"].score is not None, case.metrics
        assert case.conversation is not None and case.conversation["stopped_by"] == "stop_signal"
        assert case.invocations[0].actual is not None
        assert case.invocations[0].actual.tool_responses()[0].response == {"stored": 12}


# -- a judged metric: judged on the driver, through the store's cache ---------------------


def _yes(request: StandinRequest) -> StandinReply:
    verdict = "yes" if "Paris" in request.messages[-1]["content"] else "no"
    return StandinReply(json.dumps({"rationale": "compared", "rating": verdict}))


def test_judged_metric_goes_through_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"request": "Capital of France?", "response": "Paris.", "expected_response": "Paris"},
        {"request": "Legs of a spider?", "response": "Six.", "expected_response": "Eight"},
        {"request": "Largest planet?", "response": "Jupiter.", "expected_response": "Jupiter"},
    ]
    common = {
        "dataset": rows,
        "format": "mlflow",
        "metrics": ["correctness"],
        "judge": "openai:stand-in",
    }
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    with JudgeServer(_yes) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        local, on_ray = _both(tmp_path, **common)
        assert len(server.requests) == 6  # 3 judge calls per run, each run its own store
        assert on_ray.summary["judge/calls"] == 3
        assert [c.status.value for c in sorted(on_ray.cases, key=lambda c: c.case_id)] == [
            c.status.value for c in sorted(local.cases, key=lambda c: c.case_id)
        ]
        # Again on Ray in the same store: every judge reply comes from the cache.
        again = evaluate(
            **common, store=f"sqlite:///{tmp_path / 'ray.db'}", executor="ray", fresh=True
        )
        assert len(server.requests) == 6
        assert again.summary["judge/cache_hits"] == 3 and again.summary["judge/calls"] == 0
        assert [c.metrics for c in again.cases] == [c.metrics for c in on_ray.cases]


# -- failures -----------------------------------------------------------------------------


class _Fatal(BaseException):
    """Not an Exception: the agent guard lets it through, so the Ray task itself raises."""


def _crash_on_boom(prompt: str) -> str:
    if prompt == "boom":
        os._exit(3)  # the worker process dies mid-task
    if prompt == "raise":
        raise ValueError("the agent broke")
    if prompt == "fatal":
        raise _Fatal("out of cards")
    return prompt.upper()


def test_a_dead_task_fails_its_case_not_the_run(tmp_path: Path) -> None:
    from assay.engine.executors.ray import RayExecutor

    rows = [
        {"id": "fine", "prompt": "fine", "reference": "FINE"},
        {"id": "boom", "prompt": "boom", "reference": "BOOM"},
        {"id": "raise", "prompt": "raise", "reference": "RAISE"},
        {"id": "fatal", "prompt": "fatal", "reference": "FATAL"},
        {"id": "also_fine", "prompt": "also fine", "reference": "ALSO FINE"},
    ]
    url = f"sqlite:///{tmp_path / 'ray.db'}"
    result = evaluate(
        rows,
        metrics=["response_match_score"],
        agent=_crash_on_boom,
        store=url,
        # no retries: the worker dies the same way each time
        executor=RayExecutor(max_retries=0),
    )
    by_id = {c.case_id: c for c in result.cases}
    assert by_id["fine"].status.value == "PASSED" and by_id["also_fine"].status.value == "PASSED"
    dead = by_id["boom"]
    assert dead.failure and dead.error_type == ErrorType.RUNTIME_FAILURE
    assert dead.error is not None and dead.error.startswith("the case run's task failed: ")
    assert "Worker" in dead.error or "died" in dead.error, dead.error
    # a task that raises fails its own case, with what it raised
    fatal = by_id["fatal"]
    assert fatal.error == "the case run's task failed: _Fatal: out of cards", fatal.error
    assert fatal.failure and fatal.status.value != "PASSED"
    # an agent exception is reported as a local run reports it
    assert by_id["raise"].error == "agent raised ValueError: the agent broke"
    # and its traceback comes back from the worker process: the agent's own frame
    raised_tb = by_id["raise"].traceback or ""
    assert "in _crash_on_boom" in raised_tb and "test_ray_executor.py" in raised_tb, raised_tb
    assert raised_tb.rstrip().endswith("ValueError: the agent broke")
    assert "assay/engine" not in raised_tb
    with Store.open(url) as store:
        run = store.list_runs()[0]
        assert run.status == "COMPLETED"
        stored = {d["case_id"]: d for d in store.case_results(run.id)}
    assert stored["raise"]["traceback"] == raised_tb
    assert stored["boom"]["error"] == dead.error and stored["boom"]["failure"] is True


def test_an_agent_that_does_not_pickle_is_a_clear_error() -> None:
    import threading

    from assay.errors import ConfigError

    lock = threading.Lock()

    def holds_a_lock(prompt: str) -> str:
        with lock:
            return prompt

    with pytest.raises(ConfigError, match="cannot be sent to Ray workers"):
        evaluate(
            [{"prompt": "hi", "reference": "hi"}],
            metrics=["response_match_score"],
            agent=holds_a_lock,
            executor="ray",
        )


def test_cached_user_replies_are_for_the_local_executor() -> None:
    from assay.errors import ConfigError

    simulator = SimulatorOptions(model="openai:user-sim", cache_replies=True)
    with pytest.raises(ConfigError, match="drop --cache-user-replies"):
        evaluate(
            EvalSet(id="s", cases=[EvalCase(id="c", scenario=Scenario(task="Book."))]),
            metrics=["scenario_expectations"],
            agent=lambda prompt: "ok",
            simulator=simulator,
            executor="ray",
        )


def test_evaluate_refuses_an_unknown_executor() -> None:
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match=r"unknown executor 'dask'; use one of local, ray"):
        evaluate([{"prompt": "hi", "reference": "hi"}], executor="dask")
    with pytest.raises(ConfigError, match="--ray-address is for --executor ray"):
        evaluate([{"prompt": "hi", "reference": "hi"}], ray_address="127.0.0.1:6379")
