"""`AgentEvaluator` with google-adk's signatures, run by assay's sessions and metrics.

An ADK pytest suite switches by changing one import
(`from assay.adk import AgentEvaluator`): `evaluate(agent_module, path_or_dir,
num_runs=2, ...)` and `evaluate_eval_set(agent_module, eval_set, ...)` load the agent
the way ADK does (`<module>.agent.root_agent`, or `get_agent_async`), read the
`test_config.json` beside each `*.test.json` / eval set file, run every case
`num_runs` times, and raise `AssertionError` with ADK's message when a criterion's
mean score misses its threshold — followed by the expected and actual tool calls and
responses of the invocation that missed. The metrics are assay's (same names, same
numbers as ADK's), so every criterion assay knows can be used, not only ADK's four.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.config import EvalConfig, load_config, parse_config
from assay.core.cases import EvalSet
from assay.core.results import CaseResult, EvalResult
from assay.errors import AgentError
from assay.interop import adk_verdicts

NUM_RUNS = 2  # ADK's default number of runs per case


def _import_agent_module(agent_module: str) -> object:
    try:
        module = importlib.import_module(agent_module)
    except ModuleNotFoundError as exc:
        raise AgentError(
            f"agent_module {agent_module!r}: cannot import it ({exc}); name an importable"
            " module whose `agent` member defines root_agent"
        ) from None
    if not (hasattr(module, "agent") or agent_module.endswith(".agent")):
        raise ValueError(
            f"Module {agent_module} does not have a member named `agent` or the name should"
            " endwith `.agent`."
        )
    return getattr(module, "agent", module)


async def load_agent_module(
    agent_module: str, agent_name: str | None = None, app_name: str | None = None
) -> Any:
    """The assay adapter for ADK's agent-module convention (root_agent / get_agent_async)."""
    from assay.agents.adk import AdkAgent, is_adk_agent

    holder = _import_agent_module(agent_module)
    root = getattr(holder, "root_agent", None)
    if root is None:
        factory = getattr(holder, "get_agent_async", None)
        if not callable(factory):
            raise ValueError(
                f"Module {agent_module} does not have a root_agent or get_agent_async method."
            )
        root, _ = await factory()
    if not is_adk_agent(root):
        raise AgentError(f"{agent_module}: root_agent is a {type(root).__name__}, not an ADK agent")
    app = getattr(holder, "app", None)
    if agent_name:
        found = root.find_agent(agent_name)
        if found is None:
            raise ValueError(f"Sub-Agent {agent_name!r} not found.")
        return AdkAgent(found, app_name=app_name)
    if app is not None and is_adk_agent(app):
        return AdkAgent(app, app_name=app_name)
    return AdkAgent(root, app_name=app_name)


def _as_config(eval_config: object, criteria: Mapping[str, float] | None) -> EvalConfig:
    if criteria:
        return parse_config({"criteria": dict(criteria)}, source="criteria")
    if eval_config is None:
        raise ValueError("`eval_config` is required.")
    if isinstance(eval_config, EvalConfig):
        return eval_config
    if hasattr(eval_config, "model_dump"):  # google-adk's own EvalConfig
        return parse_config(eval_config.model_dump(mode="json", exclude_none=True))
    return parse_config(eval_config, source="eval_config")


def _as_evalset(eval_set: object) -> EvalSet:
    if isinstance(eval_set, EvalSet):
        return eval_set
    from assay.formats import adk

    if hasattr(eval_set, "model_dump"):  # google-adk's own EvalSet
        eval_set = eval_set.model_dump(mode="json", exclude_none=True)
    return adk.load_data(eval_set, file=None)


class AgentEvaluator:
    """ADK's `AgentEvaluator`, on assay: the same calls, the same failures, assay's metrics."""

    @staticmethod
    def find_config_for_test_file(test_file: str) -> EvalConfig:
        """The `test_config.json` beside `test_file`, else ADK's default criteria."""
        path = Path(test_file).parent / "test_config.json"
        return load_config(path) if path.is_file() else EvalConfig()

    @staticmethod
    async def evaluate_eval_set(
        agent_module: str,
        eval_set: object,
        criteria: dict[str, float] | None = None,
        eval_config: object = None,
        num_runs: int = NUM_RUNS,
        agent_name: str | None = None,
        print_detailed_results: bool = True,
        artifact_service: object = None,
        output_file: str | None = None,
        app_name: str | None = None,
        eval_set_results_manager: object = None,
    ) -> None:
        """Run every case of `eval_set` `num_runs` times; AssertionError on a missed criterion.

        `eval_set` is an ADK `EvalSet` (or its dict, or an assay `EvalSet`);
        `eval_config` an ADK or assay `EvalConfig` (or its dict); `criteria` the
        deprecated `{metric: threshold}` form. With `eval_set_results_manager` (and
        `app_name`) the results are saved through it, as ADK does.
        """
        if num_runs < 1:
            raise ValueError(f"`num_runs` must be at least 1, got {num_runs}.")
        if eval_set_results_manager is not None and not app_name:
            raise ValueError("app_name is required when eval_set_results_manager is provided.")
        evalset = _as_evalset(eval_set) if eval_set is not None else None
        if evalset is None or not evalset.cases:
            raise ValueError(
                "No eval cases were evaluated, so there is nothing to report a pass or a"
                " failure for. This happens when `eval_set` has no eval cases."
            )
        config = _as_config(eval_config, criteria)
        agent = await load_agent_module(agent_module, agent_name, app_name)
        if artifact_service is not None:
            agent.artifact_service = artifact_service
        result = await _run(evalset, config, agent, num_runs)
        _conclude(
            result,
            evalset,
            agent_module,
            print_detailed_results=print_detailed_results,
            output_file=output_file,
            app_name=app_name,
            manager=eval_set_results_manager,
        )

    @staticmethod
    async def evaluate(
        agent_module: str,
        eval_dataset_file_path_or_dir: str,
        num_runs: int = NUM_RUNS,
        agent_name: str | None = None,
        initial_session_file: str | None = None,
        print_detailed_results: bool = True,
        artifact_service: object = None,
        output_file: str | None = None,
        app_name: str | None = None,
        eval_set_results_manager: object = None,
    ) -> None:
        """Evaluate a file, or every `*.test.json` under a folder, each with its own config."""
        if num_runs < 1:
            raise ValueError(f"`num_runs` must be at least 1, got {num_runs}.")
        if eval_set_results_manager is not None and not app_name:
            raise ValueError("app_name is required when eval_set_results_manager is provided.")
        target = Path(eval_dataset_file_path_or_dir)
        files = sorted(target.rglob("*.test.json")) if target.is_dir() else [target]
        if not files:
            raise ValueError(
                f"No `*.test.json` eval files found in {eval_dataset_file_path_or_dir}, so"
                " there is nothing to evaluate."
            )
        for test_file in files:
            config = AgentEvaluator.find_config_for_test_file(str(test_file))
            evalset = _load_file(test_file, initial_session_file)
            await AgentEvaluator.evaluate_eval_set(
                agent_module=agent_module,
                eval_set=evalset,
                eval_config=config,
                num_runs=num_runs,
                agent_name=agent_name,
                print_detailed_results=print_detailed_results,
                artifact_service=artifact_service,
                output_file=output_file,
                app_name=app_name,
                eval_set_results_manager=eval_set_results_manager,
            )


def _load_file(path: Path, initial_session_file: str | None) -> EvalSet:
    from assay import formats
    from assay.formats import adk_legacy

    if initial_session_file is not None:
        return adk_legacy.load_with_session(path, Path(initial_session_file))
    return formats.load(path)


async def _run(evalset: EvalSet, config: EvalConfig, agent: Any, num_runs: int) -> EvalResult:
    """The cases in a `RunSession`, the life every run has. ADK's evaluator keeps no
    run store (its results go to `eval_set_results_manager` / `output_file`), so the
    session records nothing: no run in `assay runs`, nothing to resume."""
    from assay.engine import RunOptions, build_metrics
    from assay.session.run_session import RunSession

    metrics = build_metrics(config, None)
    session = RunSession([evalset], metrics, agent=agent, options=RunOptions(runs=num_runs))
    return await session.arun()


def _conclude(
    result: EvalResult,
    evalset: EvalSet,
    agent_module: str,
    *,
    print_detailed_results: bool,
    output_file: str | None,
    app_name: str | None,
    manager: object,
) -> None:
    __tracebackhide__ = True  # pytest shows the failure message, not this frame
    by_case: dict[str, list[CaseResult]] = {}
    for case in result.cases:
        by_case.setdefault(case.case_id, []).append(case)
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    for eval_id, runs in by_case.items():
        problems += adk_verdicts.failures(eval_id, runs, agent_module)
        if print_detailed_results:
            print(f"Eval case {eval_id} ({len(runs)} runs):")
            print("\n".join(adk_verdicts.summary_lines(runs)), end="\n\n")
        if output_file:
            rows += adk_verdicts.csv_rows(evalset.id, eval_id, runs)
    if output_file:
        adk_verdicts.append_csv(rows, output_file)
    if manager is not None and app_name:
        _save_with_manager(manager, app_name, evalset.id, result.cases)
    message = "Following are all the test failures."
    if not print_detailed_results:
        message += (
            " If you looking to get more details on the failures, then please re-run this"
            " test with `print_detailed_results` set to `True`."
        )
    if problems:
        # Raised, not asserted: pytest rewrites asserts in a plugin's package (assay is
        # one) and would reformat the message ADK users read.
        raise AssertionError(message + "\n" + "\n".join(problems))


def _save_with_manager(
    manager: Any, app_name: str, eval_set_id: str, cases: list[CaseResult]
) -> None:
    """Save through an ADK `EvalSetResultsManager`, as ADK's evaluator does."""
    from google.adk.evaluation.eval_result import EvalCaseResult

    from assay.interop.adk_history import adk_case_result

    results = [
        EvalCaseResult.model_validate(json.loads(json.dumps(adk_case_result(c)))) for c in cases
    ]
    manager.save_eval_set_result(app_name, eval_set_id, results)


__all__ = ["NUM_RUNS", "AgentEvaluator", "load_agent_module"]
