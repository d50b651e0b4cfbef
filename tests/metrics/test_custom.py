"""Custom metrics: Vertex-style CustomMetric objects and ADK-style code_config functions."""

from __future__ import annotations

import asyncio
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.config import parse_config
from assay.core.cases import Chunk, EvalCase, Retrieval, Scenario, Step, ToolCall, Turn
from assay.core.results import Status
from assay.engine import score_case
from assay.engine.build import build_metrics
from assay.errors import ConfigError
from assay.metrics.custom import CustomMetric, custom_metric_factories, invocation_row
from assay.metrics.registry import build_metric

MODULE = "assay_test_custom_fns"
SOURCE = """
from google.adk.evaluation.evaluator import EvalStatus, EvaluationResult, PerInvocationResult

SEEN = {}


def tool_count(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    SEEN.update(
        metric=eval_metric,
        actual=actual_invocations,
        expected=expected_invocations,
        scenario=conversation_scenario,
    )
    per = [
        PerInvocationResult(
            actual_invocation=a, score=float(len(a.intermediate_data.tool_uses))
        )
        for a in actual_invocations
    ]
    return EvaluationResult(
        overall_score=sum(p.score for p in per) / len(per),
        overall_eval_status=EvalStatus.PASSED,
        per_invocation_results=per,
    )


async def async_half(eval_metric, actual_invocations, expected_invocations, scenario):
    return 0.5


def broken(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    raise ValueError("no luck today")


def row_len(row):
    return {"row_len": len(row["response"]), "explanation": "characters"}


def two_args(a, b):
    return 1.0


NOT_CALLABLE = 3
"""


@pytest.fixture(scope="module")
def user_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("usercode")
    (folder / f"{MODULE}.py").write_text(SOURCE, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        yield __import__(MODULE)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(MODULE, None)


def _config(**custom: str) -> Any:
    return parse_config(
        {
            "criteria": {name: 0.5 for name in custom},
            "custom_metrics": {
                name: {"code_config": {"name": path}} for name, path in custom.items()
            },
        },
        source="eval_config.json",
    )


def _row_case() -> EvalCase:
    return EvalCase(
        id="row1",
        expected_response="Paris",
        metadata={"category": "geo"},
        reference=[
            Turn(
                user_input="capital of France?",
                final_response="Paris",
                steps=[Step(tool_call=ToolCall(name="lookup", args={"country": "FR"}))],
            )
        ],
    )


def _actual() -> Turn:
    return Turn(
        user_input="capital of France?",
        final_response="It is Paris",
        latency_s=0.5,
        steps=[
            Step(tool_call=ToolCall(name="lookup", args={"country": "FR"})),
            Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="doc://fr", content="Paris")])),
        ],
    )


def _build(metric: CustomMetric) -> Any:
    return custom_metric_factories(parse_config({"criteria": {}}), [metric])[metric.name]()


# -- Vertex style ---------------------------------------------------------------------------


def test_the_row_holds_vertex_columns_and_case_fields() -> None:
    case = _row_case()
    assert case.reference is not None
    row = invocation_row(_actual(), case.reference[0], case, single_turn=True)
    assert row["prompt"] == "capital of France?"
    assert row["response"] == "It is Paris"
    assert row["reference"] == "Paris"
    assert row["predicted_trajectory"] == [{"tool_name": "lookup", "tool_input": {"country": "FR"}}]
    assert row["reference_trajectory"] == [{"tool_name": "lookup", "tool_input": {"country": "FR"}}]
    assert row["retrieved_context"] == [{"doc_uri": "doc://fr", "content": "Paris"}]
    assert row["latency_in_seconds"] == 0.5
    assert row["category"] == "geo"
    assert "expected_retrieved_context" not in row  # absent values are left out


def test_vertex_word_count_dict_result_becomes_score_explanation_and_columns() -> None:
    def word_count(row: dict[str, Any]) -> dict[str, Any]:
        words = len(row["response"].split(" "))
        return {"word_count": words, "explanation": f"{words} words", "long": words > 2}

    metric = _build(CustomMetric(name="word_count", metric_function=word_count))
    case = _row_case()
    result = metric.score_case(case, [_actual()], list(case.reference or []))
    assert result.score == 3.0
    score = result.per_invocation[0]
    assert metric.row_columns(score) == {
        "word_count/score": 3.0,
        "word_count/explanation": "3 words",
        "word_count/long": True,
    }


def test_a_bare_number_is_the_score_and_a_threshold_gates_it() -> None:
    metric = _build(CustomMetric("overlap", lambda row: 0.25, threshold=0.5))
    result = metric.score_case(_row_case(), [_actual()], [None])
    assert (result.score, result.status) == (0.25, Status.FAILED)


@pytest.mark.parametrize(
    ("returned", "reason"),
    [
        ({"other": 1.0}, "without key 'm'"),
        ("high", "returned str"),
        (None, "returned no score"),
        (math.nan, "NaN"),
    ],
)
def test_unusable_results_are_no_score_with_a_reason(returned: Any, reason: str) -> None:
    metric = _build(CustomMetric("m", lambda row: returned))
    result = metric.score_case(_row_case(), [_actual()], [None])
    assert result.score is None
    assert result.status is Status.NOT_EVALUATED
    assert reason in (result.per_invocation[0].explanation or "")


def test_a_raising_function_gives_no_score_and_other_metrics_still_run() -> None:
    def explode(row: dict[str, Any]) -> float:
        raise KeyError("reference_trajectory_x")

    metrics = build_metrics(
        names={"response_match_score": 0.1, "explode": None},
        custom=[CustomMetric("explode", explode)],
    )
    case = _row_case()
    result = score_case(case, [_actual()], metrics)
    assert result.metrics["response_match_score"].score == 0.5
    failed = result.metrics["explode"]
    assert failed.score is None
    assert failed.explanation == "custom metric 'explode' raised KeyError: 'reference_trajectory_x'"
    assert result.status is Status.NOT_EVALUATED


def test_async_functions_work_through_both_entry_points() -> None:
    async def shout(row: dict[str, Any]) -> float:
        await asyncio.sleep(0)
        return 1.0 if row["response"].isupper() else 0.0

    metric = _build(CustomMetric("shout", shout))
    assert metric.is_async
    case, turns = _row_case(), [Turn(final_response="YES"), Turn(final_response="no")]
    assert asyncio.run(metric.ascore_case(case, turns, [None, None])).score == 0.5
    assert metric.score_case(case, turns, [None, None]).score == 0.5


def test_assay_signature_gets_turn_objects() -> None:
    seen: list[tuple[Turn, Turn | None, EvalCase]] = []

    def calls(actual: Turn, expected: Turn | None, case: EvalCase) -> int:
        seen.append((actual, expected, case))
        return len(actual.tool_calls())

    metric = _build(CustomMetric("calls", calls))
    case = _row_case()
    result = metric.score_case(case, [_actual()], list(case.reference or []))
    assert result.score == 1.0
    assert seen[0][0].final_response == "It is Paris"
    assert seen[0][2] is case


# -- ADK style --------------------------------------------------------------------------------


def test_adk_code_config_function_gets_adk_invocations(user_module: Any) -> None:
    config = _config(tools=f"{MODULE}.tool_count")
    metric = build_metric("tools", config.criteria["tools"], custom=custom_metric_factories(config))
    case = _row_case()
    second = Turn(user_input="and Spain?", final_response="Madrid")
    result = asyncio.run(metric.ascore_case(case, [_actual(), second], [None, None]))
    assert result.score == 0.5
    assert result.threshold == 0.5
    assert result.status is Status.PASSED
    assert [s.value for s in result.per_invocation] == [1.0, 0.0]
    seen = user_module.SEEN
    assert seen["metric"].metric_name == "tools"
    assert seen["metric"].threshold is None
    assert seen["metric"].custom_function_path == f"{MODULE}.tool_count"
    first = seen["actual"][0]
    assert first.user_content.parts[0].text == "capital of France?"
    assert first.final_response.parts[0].text == "It is Paris"
    assert first.intermediate_data.tool_uses[0].name == "lookup"
    assert first.intermediate_data.tool_uses[0].args == {"country": "FR"}
    assert seen["expected"] is None  # not every turn has an expected one
    assert seen["scenario"] is None


def test_adk_function_sees_the_scenario_and_expected_invocations(user_module: Any) -> None:
    config = _config(tools=f"{MODULE}.tool_count")
    metric = custom_metric_factories(config)["tools"]()
    case = EvalCase(
        id="sc",
        scenario=Scenario(starting_prompt="hi", conversation_plan="ask for a refund"),
    )
    reference = Turn(user_input="hi", final_response="hello")
    metric.score_case(case, [Turn(user_input="hi", final_response="hey")], [reference])
    assert user_module.SEEN["scenario"].conversation_plan == "ask for a refund"
    assert user_module.SEEN["expected"][0].final_response.parts[0].text == "hello"


def test_adk_async_float_and_raising_functions(user_module: Any) -> None:
    config = _config(half=f"{MODULE}.async_half", broken=f"{MODULE}.broken")
    factories = custom_metric_factories(config)
    case, turns = _row_case(), [_actual()]
    half = asyncio.run(factories["half"]().ascore_case(case, turns, [None]))
    assert (half.score, half.per_invocation) == (0.5, [])
    broken = factories["broken"]().score_case(case, turns, [None])
    assert broken.score is None
    assert broken.explanation == "custom metric 'broken' raised ValueError: no luck today"


def test_code_config_may_name_a_row_function(user_module: Any) -> None:
    metric = custom_metric_factories(_config(row_len=f"{MODULE}.row_len"))["row_len"]()
    result = metric.score_case(_row_case(), [_actual()], [None])
    assert result.score == float(len("It is Paris"))
    assert result.per_invocation[0].explanation == "characters"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("assay_no_such_module_xyz.fn", "cannot import module 'assay_no_such_module_xyz'"),
        (f"{MODULE}.missing", f"module '{MODULE}' has no attribute 'missing'"),
        (f"{MODULE}.NOT_CALLABLE", "is a int, not a function"),
        ("nodots", "expected a dotted path"),
        (f"{MODULE}.two_args", "takes 2 required positional arguments"),
    ],
)
def test_bad_code_config_is_a_clear_config_error(user_module: Any, path: str, message: str) -> None:
    with pytest.raises(ConfigError, match="custom") as info:
        custom_metric_factories(_config(mine=path))
    assert message in str(info.value)
    if "dotted" in message or "import" in message or "attribute" in message:
        assert "eval_config.json: custom_metrics.mine.code_config.name" in str(info.value)


def test_custom_names_may_not_shadow_builtins_or_repeat(user_module: Any) -> None:
    with pytest.raises(ConfigError, match="built-in metric's name"):
        custom_metric_factories(parse_config({}), [CustomMetric("response_match_score", len)])
    with pytest.raises(ConfigError, match="declared twice"):
        custom_metric_factories(
            _config(row_len=f"{MODULE}.row_len"), [CustomMetric("row_len", len)]
        )


def test_objects_shaped_like_vertex_custom_metric_are_accepted() -> None:
    class VertexCustomMetric:  # the SDK's class has the same two attributes
        def __init__(self) -> None:
            self.name = "has_answer"
            self.metric_function = lambda row: {"has_answer": float("Paris" in row["response"])}

    metrics = build_metrics(names=["has_answer"], custom=[VertexCustomMetric()])
    result = score_case(_row_case(), [_actual()], metrics)
    assert result.metrics["has_answer"].score == 1.0


def test_realworld_style_config_file_with_custom_metric(user_module: Any, tmp_path: Path) -> None:
    path = tmp_path / "test_config.json"
    path.write_text(
        '{"criteria": {"row_len": {"threshold": 100}},'
        f' "customMetrics": {{"row_len": {{"codeConfig": {{"name": "{MODULE}.row_len"}}}}}}}}',
        encoding="utf-8",
    )
    from assay.config import load_config

    # The config's one criterion (ADK's efficiency metrics are appended after it).
    metric = build_metrics(load_config(path))[0]
    result = metric.score_case(_row_case(), [_actual()], [None])
    assert (result.score, result.status) == (11.0, Status.FAILED)


def test_adk_signature_without_google_adk_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    from assay.metrics import custom

    real_import = importlib.import_module

    def no_adk(name: str, package: str | None = None) -> Any:
        if name.startswith("google.adk"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, package)

    monkeypatch.setattr(custom.importlib, "import_module", no_adk)

    def adk_style(eval_metric: Any, actual: Any, expected: Any, scenario: Any) -> float:
        return 1.0

    with pytest.raises(ConfigError, match=r"need google-adk: pip install -e '\.\[adk\]'"):
        custom_metric_factories(parse_config({}), [CustomMetric("adk_style", adk_style)])


def test_custom_metric_code_beside_the_config_is_found_without_pythonpath(
    tmp_path: Path,
) -> None:
    # ADK puts the eval file's folder on sys.path; so does assay (no PYTHONPATH needed).
    from assay.config import load_config
    from assay.engine import build_metrics

    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "beside_metrics_pkg_x1.py").write_text(
        "def words(row):\n    return {'words': float(len(row['response'].split()))}\n"
    )
    config = folder / "test_config.json"
    config.write_text(
        json.dumps(
            {
                "criteria": {"words": 1.0},
                "custom_metrics": {
                    "words": {"code_config": {"name": "beside_metrics_pkg_x1.words"}}
                },
            }
        )
    )
    metrics = build_metrics(load_config(config))
    assert metrics[0].name == "words"


def test_declared_but_unused_custom_metric_code_is_never_imported(tmp_path: Path) -> None:
    # A config can be read, converted and used for its other criteria away from its repo.
    from assay.config import load_config
    from assay.engine import build_metrics

    config = tmp_path / "test_config.json"
    config.write_text(
        json.dumps(
            {
                "criteria": {"response_match_score": 0.5},
                "custom_metrics": {"gone": {"code_config": {"name": "no_such_pkg_q.mod.fn"}}},
            }
        )
    )
    names = [m.name for m in build_metrics(load_config(config))]
    assert names[0] == "response_match_score" and "gone" not in names


def test_unimportable_custom_metric_names_path_and_folders_tried(tmp_path: Path) -> None:
    from assay.config import load_config
    from assay.engine import build_metrics

    config = tmp_path / "test_config.json"
    config.write_text(
        json.dumps(
            {
                "criteria": {"gone": 0.5},
                "custom_metrics": {"gone": {"code_config": {"name": "no_such_pkg_q.mod.fn"}}},
            }
        )
    )
    with pytest.raises(ConfigError) as info:
        build_metrics(load_config(config))
    message = str(info.value)
    assert "custom_metrics.gone.code_config.name 'no_such_pkg_q.mod.fn'" in message
    assert str(tmp_path.resolve()) in message


def test_an_adk_invocation_that_cannot_be_built_is_the_metrics_note_and_a_bug_is_not(
    user_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Turning assay's turns into ADK's invocations may meet a turn ADK's models reject
    # (pydantic's ValidationError, a ValueError): that is the metric's explanation. Any
    # other exception there is a bug in assay and is raised, not swallowed (issue #34).
    import assay.metrics.custom as custom

    metric = custom_metric_factories(_config(tools=f"{MODULE}.tool_count"))["tools"]()
    case, turns = _row_case(), [_actual()]

    def rejected(turn: Turn) -> Any:
        raise ValueError("1 validation error for Invocation")

    monkeypatch.setattr(custom, "to_adk_invocation", rejected)
    for result in (
        metric.score_case(case, turns, [None]),
        asyncio.run(metric.ascore_case(case, turns, [None])),
    ):
        assert result.score is None
        assert "1 validation error for Invocation" in (result.explanation or "")

    def buggy(turn: Turn) -> Any:
        raise AttributeError("'Turn' object has no attribute 'invocation'")

    monkeypatch.setattr(custom, "to_adk_invocation", buggy)
    with pytest.raises(AttributeError):
        metric.score_case(case, turns, [None])
    with pytest.raises(AttributeError):
        asyncio.run(metric.ascore_case(case, turns, [None]))
