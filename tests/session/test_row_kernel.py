"""The row kernel (`session.row_kernel`, compiled at install) against the lean row path it
stands in for: on every row it takes, the same case id, status, metric results and the
same bytes of the store's document, the report's case and row and the CSV line; every
other row it leaves to the lean path (None). Generated rows (hypothesis), edge rows and
every metric configuration the kernel knows."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.engine import build_metrics
from assay.session.lean_encode import (
    encoded_calls,
    report_case,
    report_csv_line,
    report_row,
    store_row,
)
from assay.session.lean_rows import plain_row
from assay.session.lean_score import LeanPlan
from compiled import kernel

RowKernel = kernel("assay.session.row_kernel", "RowKernel", "the row kernel")

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


def _lean(plan: LeanPlan, raw: bytes, index: int) -> Any:
    row = plain_row(orjson.loads(raw), index, {})
    if row is None:
        return None
    plan.score(row)
    calls = encoded_calls(row)
    return (
        row.case_id,
        row.status,
        [_result(m.result) for m in row.metrics],
        store_row(row, SET, calls),
        report_case(row, SET, RUN, FILE, calls),
        report_row(row, SET),
        report_csv_line(row, SET),
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
    """The lean path and the kernel of one configuration, each with its own plan."""

    def __init__(self, criteria: dict[str, Any]) -> None:
        metrics = build_metrics(None, criteria)
        plan = LeanPlan.of(metrics)
        assert plan is not None
        self.plan = plan
        self.kernel = RowKernel.of(LeanPlan.of(metrics))
        assert self.kernel is not None, criteria
        self.taken = 0

    def check(self, raw: bytes, index: int = 0) -> None:
        done = _kernel(self.kernel, raw, index)
        if done is None:
            return  # the lean path takes it (and decides whether it is plain)
        self.taken += 1
        assert done == _lean(self.plan, raw, index), raw


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
    # More calls than the kernel's table: the lean path's.
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


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_kernel_writes_what_the_lean_path_writes(config: str) -> None:
    pair = Pair(CONFIGS[config])
    rows = _rows(1_500, seed=len(config))
    edge = [json.dumps(r, ensure_ascii=False).encode() for r in EDGE]
    for index, raw in enumerate(rows + edge + ODD_LINES):
        pair.check(raw, index)
    # The kernel took the plain rows, not only the odd ones.
    assert pair.taken >= len(rows) * 0.9


def test_rows_the_kernel_leaves_to_the_lean_path() -> None:
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


def test_a_run_the_kernel_does_not_know_is_the_lean_paths() -> None:
    """A matcher that is no equivalence (subset arguments) needs a maximum matching for
    any-order, precision and recall: the kernel leaves such a run to the lean path."""
    metrics = build_metrics(
        None, {"trajectory_recall": {"threshold": 1.0, "arg_match": {"mode": "subset"}}}
    )
    plan = LeanPlan.of(metrics)
    assert plan is not None
    assert RowKernel.of(plan) is None


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
@given(row=_row_st, ascii_only=st.booleans(), index=st.integers(0, 10**6))
def test_generated_rows(row: dict[str, Any], ascii_only: bool, index: int) -> None:
    pair = _PAIR.setdefault("all", Pair(ALL))
    pair.check(json.dumps(row, ensure_ascii=ascii_only).encode(), index)
