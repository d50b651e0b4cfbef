"""The row kernel (`rows.kernel`, compiled at install) against the reference path it
stands in for (`rows.plan`, the ordinary reader, metrics and writers): on every row it
takes, the same case id, status, metric results and the same bytes of the store's
document, the report's case and row and the CSV line; every other row it leaves to the
reference path (None). Hypothesis-generated rows, edge rows and every metric
configuration, with metrics the kernel computes and metrics it leaves to their own
Python (per metric: the others stay on the kernel)."""

from __future__ import annotations

import json
import random
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.core.cases import EvalCase, Turn
from assay.core.results import Score
from assay.engine import build_metrics
from assay.engine.tally import Tally
from assay.formats.stream import RawBatch, batch_cases
from assay.metrics.base import Metric
from assay.rows.batch import BatchOutput, BatchSpec, _add_cases, _score_recorded
from assay.rows.plan import KernelKind, RowPlan
from compiled import kernel

RowKernel = kernel("assay.rows.kernel", "RowKernel", "the row kernel")

SET, RUN, FILE = "rows", "run-1", "rows.jsonl"
ALL = {
    "trajectory_exact_match": 1.0,
    "trajectory_in_order_match": 1.0,
    "trajectory_any_order_match": 1.0,
    "trajectory_precision": 0.5,
    "trajectory_recall": {"threshold": 0.7},
    "trajectory_single_tool_use": {"threshold": 1.0, "tool_name": "get_weather"},
    "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER"},
    "response_match_score": 0.6,
    "tool_call_count_v1": {},
    "inference_call_count_v1": {},
    "token_usage_v1": {},
    "invocation_duration_v1": {},
}
CONFIGS: dict[str, dict[str, Any]] = {
    "all": ALL,
    "ignore_args": {
        "trajectory_exact_match": {"threshold": 1.0, "ignore_args": True},
        "trajectory_recall": {"threshold": 1.0, "ignore_args": True},
        "trajectory_precision": 1.0,
        "response_match_score": 0.8,
    },
    "rules": {  # a matcher of per-argument rules: called on the calls themselves
        "trajectory_in_order_match": {
            "threshold": 1.0,
            "arg_match": {"args": {"city": "case_insensitive"}},
        },
        "trajectory_any_order_match": {
            "threshold": 1.0,
            "arg_match": {"mode": "ignore", "args": {}},
        },
    },
    "single_with_args": {
        "trajectory_single_tool_use": {
            "threshold": 1.0, "tool_name": "book_hotel", "tool_args": {"n": 2},
        },
    },
    "avg_exact": {"tool_trajectory_avg_score": 1.0},
    "avg_any": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "ANY_ORDER"}},
    "rouge_alone": {"response_match_score": 0.5},
    "informational_only": {"tool_call_count_v1": {}, "token_usage_v1": {}},
}  # fmt: skip
TOOLS = ["search_flights", "book_hotel", "get_weather"]
WORDS = ["the", "Flight", "to", "paris", "leaves", "at", "nine", "hotels", "running", "près",
         "東京", "it's", "A.B", "x1", "ünïcode", "caresses", "ponies", "relational"]  # fmt: skip


def _reference(metrics: list[Metric], raw: bytes, index: int) -> Any:
    """The row scored and written by the reference path (the ordinary reader, metrics
    and writers, as a streamed run's batch does for a row the kernel leaves)."""
    spec = BatchSpec(metrics=tuple(metrics), run_id=RUN, csv=True, eval_set_files={SET: FILE})
    cases, error = batch_cases(RawBatch(f"{SET}.jsonl", "jsonl", index, [(1, raw)]))
    if error is not None:
        return None
    out = BatchOutput(f"{SET}.jsonl", index, [], Tally(m.name for m in metrics))
    _add_cases(spec, out, cases)
    result = _score_recorded(cases[0], metrics, eval_set_id=SET)
    (shape, line, csv), *more = out.rows
    assert not more
    return (
        result.case_id,
        result.status,
        [_result(m) for m in result.metrics.values()],
        out.encoded[0],
        out.cases_json[0],
        (shape, line),
        csv,
    )


def _kernel(kernel: Any, raw: bytes, index: int) -> Any:
    done = kernel.row(raw, index, SET, RUN, FILE, True, True, True, True)
    if done is None:
        return None
    return (
        done.case_id,
        done.status,
        [_result(m.result) for m in done.metrics],
        done.stored,
        done.case_json,
        (done.shape, done.line),
        done.csv,
    )


def _result(result: Any) -> tuple[Any, ...]:
    per = [(s.value, s.explanation, s.details) for s in result.per_invocation]
    return (result.name, result.score, result.threshold, result.status, result.explanation,
            per, result.details, result.error_type)  # fmt: skip


class Pair:
    """The kernel of one configuration, and the reference path's metrics."""

    def __init__(self, criteria: dict[str, Any], *extra: Metric) -> None:
        self.metrics = [*build_metrics(None, criteria), *extra]
        plan = RowPlan.of(self.metrics)
        assert plan is not None
        self.plan = plan
        self.kernel = RowKernel.of(plan)
        self.taken = 0

    def check(self, raw: bytes, index: int = 0) -> None:
        done = _kernel(self.kernel, raw, index)
        if done is None:
            return  # the reference path takes it (and decides whether it is plain)
        self.taken += 1
        assert done == _reference(self.metrics, raw, index), raw


def _call(rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"n": rng.randint(1, 3), "city": rng.choice(["Paris", "paris", "Rome"])}
    if rng.random() < 0.15:
        args["filters"] = {"near": rng.choice(["Zürich", "東京", None]), "tags": [1, None, "ü"]}
    if rng.random() < 0.1:
        args["flag"] = rng.choice([True, False, 1, 0, 1.0, 2.5])
    if rng.random() < 0.1:
        del args["n"]
    return {"tool_name": rng.choice(TOOLS), "tool_input": args}


def _rows(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ref = [_call(rng) for _ in range(rng.randint(0, 4))]
        pred = list(ref)
        rng.shuffle(pred) if rng.random() < 0.3 else None
        if rng.random() < 0.3:
            pred.append(_call(rng))
        if pred and rng.random() < 0.2:
            pred.pop(rng.randrange(len(pred)))
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))
        row: dict[str, Any] = {
            "prompt": f"trip {i}",
            "response": text if rng.random() < 0.4 else " ".join(rng.sample(WORDS, 5)),
            "reference": text,
            "predicted_trajectory": pred,
            "reference_trajectory": ref,
        }
        if i % 5:
            row["id"] = f"case-{i}" if i % 3 else i
        for key in ("prompt", "response", "reference", "predicted_trajectory"):
            if rng.random() < 0.05:
                del row[key]
        out.append(json.dumps(row, ensure_ascii=rng.random() < 0.5).encode())
    return out


EDGE = [
    # JSON escapes in every text the documents write, and in the ids.
    {"id": 'q"\\\u2028\n\t\x00\x1f\x7f', "prompt": "tab\t nul\x00 \u2028 😀 </x> \\",
     "response": 'say "hi", then\r\nbye', "reference": "back\\slash, \"quoted\"",
     "predicted_trajectory": [{"tool_name": "x\x00y", "tool_input": {'k"': "v\n"}}],
     "reference_trajectory": [{"tool_name": "x\x00y", "tool_input": {'k"': "v\r"}}]},
    # CSV cells that must be quoted, and explanations that must be (commas, quotes).
    {"id": "a,b", "prompt": 'p"q', "response": "r\nr", "reference": "r,r",
     "predicted_trajectory": [{"tool_name": "t", "tool_input": {"s": 'x",y'}}],
     "reference_trajectory": [{"tool_name": "t", "tool_input": {"s": "x\ny"}}]},
    # The placeholder the kernel writes explanations over, in a real explanation.
    {"id": "p", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [
         {"tool_name": "t", "tool_input": {"s": "\u2063assay explanation\u2063"}}],
     "reference_trajectory": [{"tool_name": "t", "tool_input": {"s": "x"}}]},
    # No texts, no calls, only names, null arguments.
    {"prompt": None, "response": None, "reference": None,
     "predicted_trajectory": [], "reference_trajectory": []},
    {"id": 7, "response": "r", "predicted_trajectory": [{"tool_name": "a"}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": None}]},
    {"id": "no-reference", "prompt": "p", "response": "resp",
     "reference_trajectory": [{"tool_name": "get_weather"}]},
    {"id": "no-response", "prompt": "p", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_input": {"x": 1}}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": {"x": 2}}, {"tool_name": "b"}]},
    # Non-ASCII texts (ROUGE by the Python tokenizer) and a very long one.
    {"id": "cjk", "prompt": "p", "response": "東京 タワー au près", "reference": "東京 près",
     "predicted_trajectory": [], "reference_trajectory": []},
    {"id": "long", "prompt": "p", "response": " ".join(["caresses ponies"] * 800),
     "reference": " ".join(["pony relational"] * 700),
     "predicted_trajectory": [], "reference_trajectory": []},
    # More calls than the kernel's table: the reference path's.
    {"id": "many", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a"}] * 70,
     "reference_trajectory": [{"tool_name": "a"}]},
    # Not plain at all.
    {"id": "extra", "prompt": "p", "response": "r", "reference": "r", "note": 1},
    {"id": 1.5, "prompt": "p", "response": "r", "reference": "r"},
    {"id": "x", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "t", "tool_input": [1]}]},
]  # fmt: skip
ODD_LINES = [b"not json", b"[1, 2]", b'{"id": "a", "prompt": "\\ud800", "response": "r",'
             b' "reference": "r"}', b"{}"]  # fmt: skip


class WordCount(Metric):
    """A custom metric the kernel does not know: the share of the reference's words in
    the response, with details and an explanation that vary by row."""

    name = "word_share"
    default_threshold = 0.5

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if expected is None or not expected.final_response:
            return Score(None, "no reference text")
        want = set(expected.final_response.split())
        got = set((actual.final_response or "").split())
        share = len(want & got) / len(want)
        calls = len(actual.tool_calls())
        return Score(share, None if share == 1 else f"{len(want - got)} words missing",
                     details={"calls": calls})  # fmt: skip


class Broken(Metric):
    """A custom metric that fails on rows whose prompt says so: the reference path
    reports its error, so the kernel leaves such rows to it."""

    name = "broken_on_request"
    informational: ClassVar[bool] = True

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if actual.user_input.text == "fail":
            raise ValueError("asked to fail")
        return Score(1.0)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_kernel_writes_what_the_reference_path_writes(config: str) -> None:
    pair = Pair(CONFIGS[config])
    rows = _rows(1_500, seed=len(config))
    edge = [json.dumps(r, ensure_ascii=False).encode() for r in EDGE]
    for index, raw in enumerate(rows + edge + ODD_LINES):
        pair.check(raw, index)
    # The kernel took the plain rows, not only the odd ones.
    assert pair.taken >= len(rows) * 0.9


def test_a_metric_the_kernel_does_not_know_keeps_the_others_on_it() -> None:
    """A custom metric and a registry metric the kernel does not compute are scored by
    their own Python on the kernel's rows; every other metric stays on the kernel, and
    the bytes are the reference path's."""
    (kv,) = build_metrics(None, {"tool_parameter_kv_match": 0.5})
    pair = Pair(ALL, WordCount(), kv)
    assert pair.plan.in_python == ["word_share", "tool_parameter_kv_match"]
    assert pair.plan.in_kernel == list(ALL)
    assert KernelKind.PYTHON not in pair.plan.kinds[: len(ALL)]
    rows = _rows(800, seed=9)
    edge = [json.dumps(r, ensure_ascii=False).encode() for r in EDGE]
    for index, raw in enumerate(rows + edge + ODD_LINES):
        pair.check(raw, index)
    assert pair.taken >= len(rows) * 0.9
    # Each row the kernel took had its two Python metrics scored once, there.
    assert pair.kernel.python_rows == pair.taken


def test_a_row_a_python_metric_cannot_score_is_the_reference_paths() -> None:
    pair = Pair({"trajectory_exact_match": 1.0}, Broken())
    good = {"id": "a", "prompt": "fine", "response": "r", "reference": "r"}
    done = pair.kernel.row(json.dumps(good).encode(), 0, SET, RUN, FILE, True, True, True, True)
    assert done is not None and [m.result.name for m in done.metrics][-1] == "broken_on_request"
    bad = json.dumps({**good, "prompt": "fail"}).encode()
    assert pair.kernel.row(bad, 1, SET, RUN, FILE, True, True, True, True) is None
    reference = _reference(pair.metrics, bad, 1)
    assert reference is not None and b"asked to fail" in reference[4]


def test_rows_the_kernel_leaves_to_the_reference_path() -> None:
    pair = Pair(ALL)
    left = [
        {"id": "many", "prompt": "p", "response": "r", "reference": "r",
         "predicted_trajectory": [{"tool_name": "a"}] * 65},
        {"id": "extra", "prompt": "p", "response": "r", "reference": "r", "note": 1},
        {"id": True, "prompt": "p", "response": "r", "reference": "r"},
        {"id": "a", "prompt": "p", "response": "r"},  # no reference turn
        {"id": "a", "prompt": "p", "response": "r", "reference": "r",
         "predicted_trajectory": [{"tool_name": "t", "id": "c1"}]},
    ]  # fmt: skip
    for row in left:
        assert (
            pair.kernel.row(json.dumps(row).encode(), 0, SET, RUN, FILE, True, True, True, True)
            is None
        )
    lone = b'{"id": "a", "prompt": "\\ud800", "response": "r", "reference": "r"}'
    assert pair.kernel.row(lone, 0, SET, RUN, FILE, True, True, True, True) is None


@pytest.mark.parametrize(
    ("criterion", "kind"),
    [
        # A matcher that is no equivalence (subset arguments) needs a maximum matching
        # for any-order, precision and recall; per-argument rules are the matcher's own
        # code: the metric's own Python scores them.
        ({"trajectory_recall": {"threshold": 1.0, "arg_match": {"mode": "subset"}}},
         KernelKind.PYTHON),
        ({"trajectory_in_order_match": {"threshold": 1.0,
                                        "arg_match": {"args": {"city": "case_insensitive"}}}},
         KernelKind.PYTHON),
        ({"trajectory_recall": {"threshold": 1.0, "ignore_args": True}}, KernelKind.RECALL),
        ({"bleu": 0.5}, KernelKind.PYTHON),
        ({"response_match_score": 0.5}, KernelKind.ROUGE),
        ({"token_usage_v1": {}}, KernelKind.BY_COUNT),
    ],
)  # fmt: skip
def test_the_plan_names_the_kind_of_each_metric(criterion: dict[str, Any], kind: int) -> None:
    metrics = build_metrics(None, {"trajectory_exact_match": 1.0, **criterion})
    plan = RowPlan.of(metrics)
    assert plan is not None and plan.kinds == (KernelKind.EXACT, kind)
    assert RowKernel.of(plan) is not None  # never the whole run off the kernel


def test_runs_no_plan_takes() -> None:
    one = build_metrics(None, {"trajectory_exact_match": 1.0})
    assert RowPlan.of([]) is None
    assert RowPlan.of([*one, *build_metrics(None, {"trajectory_exact_match": 0.5})]) is None


def test_outputs_not_asked_for_are_not_written() -> None:
    pair = Pair(ALL)
    raw = _rows(1, seed=3)[0]
    done = pair.kernel.row(raw, 0, SET, RUN, FILE, False, False, False, False)
    assert done is not None
    assert (done.stored, done.case_json, done.line, done.csv) == (None, None, None, None)
    assert done.metrics and done.status is not None


_text = st.lists(
    st.sampled_from([*"ab ,\"\\\n\t\x00\x1f\u2028é東😀xyzRN-'.", *WORDS]), max_size=12
).map("".join)
_value = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.5, 1.0, -0.0]) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_call_st = st.fixed_dictionaries(
    {"tool_name": st.sampled_from([*TOOLS, "x\x00", 'q"'])},
    optional={"tool_input": st.none() | st.dictionaries(
        st.sampled_from(["n", "city", "k\"", "ü"]), _value, max_size=3)},
)  # fmt: skip
_row_st = st.fixed_dictionaries(
    {},
    optional={
        "id": st.none() | st.integers(-5, 5) | _text,
        "prompt": st.none() | _text,
        "response": st.none() | _text,
        "reference": st.none() | _text,
        "predicted_trajectory": st.none() | st.lists(_call_st, max_size=4),
        "reference_trajectory": st.none() | st.lists(_call_st, max_size=4),
    },
)
_PAIR: dict[str, Pair] = {}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    row=_row_st,
    ascii_only=st.booleans(),
    index=st.integers(0, 10**6),
    config=st.sampled_from(["all", "rules", "python"]),
)
def test_generated_rows(row: dict[str, Any], ascii_only: bool, index: int, config: str) -> None:
    """Hypothesis rows, kernel against the reference path: every metric the kernel
    computes, the per-argument rules (their own Python), and custom metrics beside."""
    if config not in _PAIR:
        extra = (WordCount(),) if config == "python" else ()
        _PAIR[config] = Pair(CONFIGS.get(config, ALL), *extra)
    _PAIR[config].check(json.dumps(row, ensure_ascii=ascii_only).encode(), index)
