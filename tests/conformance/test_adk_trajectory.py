"""Conformance of the trajectory metrics.

1. `tool_trajectory_avg_score` against google-adk's own `TrajectoryEvaluator` (ADK
   2.13 has `ignore_args`, so it is compared directly), case by case, for every match
   type with and without `ignore_args`, on seeded random multi-invocation cases with
   repeated tool names, nested, numeric and Unicode arguments and empty lists.
   ADK compares arguments with Python's `==`, where `True == 1`; assay follows JSON
   (`true != 1`). The generated data holds booleans and numbers side by side, so ADK
   is given booleans spelled as unique strings, which makes its `==` JSON equality;
   `test_documented_divergence_booleans_are_not_numbers` shows the one difference.
2. The `trajectory_*` metrics (and all match types) against a brute-force reference
   written here — exhaustive search over subsequences and one-to-one assignments, and
   an independent JSON equality — with random argument-matching options.
"""

from __future__ import annotations

import random
from fractions import Fraction
from functools import cache
from itertools import combinations
from typing import Any

import pytest

from assay.core.cases import EvalCase, Step, ToolCall, Turn
from assay.metrics.base import Metric
from assay.metrics.registry import build_metric

adk_types = pytest.importorskip("google.genai.types")
adk_case = pytest.importorskip("google.adk.evaluation.eval_case")
adk_metrics = pytest.importorskip("google.adk.evaluation.eval_metrics")
adk_trajectory = pytest.importorskip("google.adk.evaluation.trajectory_evaluator")

NAMES = ["t1", "t2", "t3", "búsqueda", "検索"]
KEYS = ["a", "b", "c", "ключ"]
STRINGS = ["x", "X", "", "Zürich", "東京", "🚀 go", "1"]
CASES = 1200

Case = tuple[list[list[ToolCall]], list[list[ToolCall]]]  # (actual turns, expected turns)


# -- random data ----------------------------------------------------------------------------


def rand_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth < 2 and kind < 0.12:
        return {rng.choice(KEYS): rand_value(rng, depth + 1) for _ in range(rng.randint(0, 2))}
    if depth < 2 and kind < 0.22:
        return [rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([0, 1, 2, 1.0, 2.5, -3, True, False, None, *STRINGS])


def rand_call(rng: random.Random) -> ToolCall:
    args = {rng.choice(KEYS): rand_value(rng) for _ in range(rng.randint(0, 3))}
    return ToolCall(name=rng.choice(NAMES), args=args)


def perturb(rng: random.Random, c: ToolCall) -> ToolCall:
    """A call equal to `c` as JSON (keys reordered, 1 as 1.0) or slightly different."""
    args = dict(reversed(list(c.args.items())))
    roll = rng.random()
    if roll < 0.35 or not args:
        args = {k: float(v) if type(v) is int else v for k, v in args.items()}
    elif roll < 0.5:
        args[rng.choice(KEYS)] = rand_value(rng)
    elif roll < 0.6:
        args.pop(rng.choice(list(args)))
    elif roll < 0.7:
        k = rng.choice(list(args))
        v = args[k]
        args[k] = v + 0.3 if type(v) in (int, float) else v.upper() if isinstance(v, str) else v
    elif roll < 0.8:
        args = {k: bool(v) if v in (0, 1) and type(v) is not bool else v for k, v in args.items()}
    return ToolCall(id=f"id-{rng.random()}", name=c.name, args=args)


def rand_turn_pair(rng: random.Random) -> tuple[list[ToolCall], list[ToolCall]]:
    expected = [rand_call(rng) for _ in range(rng.choice([0, 0, 1, 2, 3, 4]))]
    if expected and rng.random() < 0.3:
        expected.append(expected[0])  # repeated call
    actual = [perturb(rng, c) if rng.random() < 0.5 else c for c in expected if rng.random() < 0.85]
    for _ in range(rng.choice([0, 0, 1, 2])):
        actual.insert(rng.randint(0, len(actual)), rand_call(rng))
    if rng.random() < 0.4:
        rng.shuffle(actual)
    return actual, expected


def rand_case(rng: random.Random) -> Case:
    pairs = [rand_turn_pair(rng) for _ in range(rng.randint(1, 3))]
    return [a for a, _ in pairs], [e for _, e in pairs]


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    rng = random.Random(20240613)
    return [rand_case(rng) for _ in range(CASES)]


def turn(calls: list[ToolCall]) -> Turn:
    return Turn(steps=[Step(tool_call=c) for c in calls])


def assay_scores(metric: Metric, case: Case) -> tuple[float | None, list[float | None]]:
    actual, expected = case
    result = metric.score_case(
        EvalCase(id="c"), [turn(a) for a in actual], [turn(e) for e in expected]
    )
    return result.score, [s.value for s in result.per_invocation]


# -- 1. against google-adk ----------------------------------------------------------------------


def spell_booleans(value: Any) -> Any:
    if isinstance(value, bool):
        return f"\x00json-{str(value).lower()}"
    if isinstance(value, dict):
        return {k: spell_booleans(v) for k, v in value.items()}
    if isinstance(value, list):
        return [spell_booleans(v) for v in value]
    return value


def adk_invocation(calls: list[ToolCall], rng: random.Random, *, raw: bool = False) -> Any:
    fcs = [
        adk_types.FunctionCall(id=c.id, name=c.name, args=c.args if raw else spell_booleans(c.args))
        for c in calls
    ]
    user = adk_types.Content(role="user", parts=[adk_types.Part(text="hi")])
    if rng.random() < 0.5:
        data: Any = adk_case.IntermediateData(tool_uses=fcs)
    else:  # the newer event-list shape, one function call per event
        data = adk_case.InvocationEvents(
            invocation_events=[
                adk_case.InvocationEvent(
                    author="agent",
                    content=adk_types.Content(
                        role="model", parts=[adk_types.Part(function_call=f)]
                    ),
                )
                for f in fcs
            ]
        )
    return adk_case.Invocation(user_content=user, intermediate_data=data)


def adk_evaluator(match_type: str, ignore_args: bool) -> Any:
    criterion = adk_metrics.ToolTrajectoryCriterion(
        threshold=1.0,
        match_type=adk_metrics.ToolTrajectoryCriterion.MatchType[match_type],
        ignore_args=ignore_args,
    )
    metric = adk_metrics.EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
    return adk_trajectory.TrajectoryEvaluator(eval_metric=metric)


@pytest.fixture(scope="module")
def adk_cases(cases: list[Case]) -> list[tuple[list[Any], list[Any]]]:
    rng = random.Random(7)
    return [
        ([adk_invocation(a, rng) for a in actual], [adk_invocation(e, rng) for e in expected])
        for actual, expected in cases
    ]


@pytest.mark.parametrize("ignore_args", [False, True])
@pytest.mark.parametrize("match_type", ["EXACT", "IN_ORDER", "ANY_ORDER"])
def test_tool_trajectory_avg_score_matches_adk(
    cases: list[Case], adk_cases: list[Any], match_type: str, ignore_args: bool
) -> None:
    ours = build_metric(
        "tool_trajectory_avg_score", {"match_type": match_type, "ignore_args": ignore_args}
    )
    theirs = adk_evaluator(match_type, ignore_args)
    outcomes: list[float] = []
    for case, (adk_actual, adk_expected) in zip(cases, adk_cases, strict=True):
        reference = theirs.evaluate_invocations(adk_actual, adk_expected)
        expected_per = [r.score for r in reference.per_invocation_results]
        assert assay_scores(ours, case) == (reference.overall_score, expected_per), case
        outcomes += expected_per
    # both outcomes occur in quantity, so agreeing means something
    assert 0.2 < sum(outcomes) / len(outcomes) < 0.9, sum(outcomes) / len(outcomes)


def test_documented_divergence_booleans_are_not_numbers() -> None:
    rng = random.Random(1)
    actual, expected = [ToolCall(name="f", args={"on": True})], [ToolCall(name="f", args={"on": 1})]
    adk_result = adk_evaluator("EXACT", False).evaluate_invocations(
        [adk_invocation(actual, rng, raw=True)], [adk_invocation(expected, rng, raw=True)]
    )
    assert adk_result.overall_score == 1.0  # Python: True == 1
    ours = build_metric("tool_trajectory_avg_score")
    assert assay_scores(ours, ([actual], [expected]))[0] == 0.0  # JSON: true != 1


# -- 2. against a brute-force reference -----------------------------------------------------------


def tag(v: Any) -> Any:
    """An independent JSON-value identity: exact numbers, booleans apart from numbers."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        return ("num", Fraction(v))
    if isinstance(v, str):
        return ("str", v)
    if v is None:
        return ("null",)
    if isinstance(v, list):
        return ("arr", tuple(tag(x) for x in v))
    return ("obj", frozenset((k, tag(x)) for k, x in v.items()))


def contained(part: Any, whole: Any) -> bool:
    if isinstance(part, dict) and isinstance(whole, dict):
        return all(k in whole and contained(v, whole[k]) for k, v in part.items())
    if isinstance(part, list) and isinstance(whole, list):
        return len(part) == len(whole) and all(map(contained, part, whole))
    return tag(part) == tag(whole)


def leafwise(e: Any, a: Any, leaf: Any) -> bool:
    if isinstance(e, dict) and isinstance(a, dict):
        return set(e) == set(a) and all(leafwise(e[k], a[k], leaf) for k in e)
    if isinstance(e, list) and isinstance(a, list):
        return len(e) == len(a) and all(leafwise(x, y, leaf) for x, y in zip(e, a, strict=True))
    verdict = leaf(e, a)
    return tag(e) == tag(a) if verdict is None else verdict


def numeric(tol: float) -> Any:
    def leaf(e: Any, a: Any) -> bool | None:
        nums = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (e, a))
        return abs(e - a) <= tol if nums else None

    return lambda e, a: leafwise(e, a, leaf)


def folded(e: Any, a: Any) -> bool:
    return leafwise(
        e,
        a,
        lambda x, y: (
            x.casefold() == y.casefold() if isinstance(x, str) and isinstance(y, str) else None
        ),
    )


# (assay arg_match option, reference rule: tool name -> (mode, {arg: comparator}))
SPECS: list[tuple[Any, Any]] = [
    (None, lambda tool: ("exact", {})),
    ("ignore", lambda tool: ("ignore", {})),
    ("subset", lambda tool: ("subset", {})),
    ("superset", lambda tool: ("superset", {})),
    (
        {"args": {"a": {"type": "numeric", "abs_tol": 0.5}}},
        lambda tool: ("exact", {"a": numeric(0.5)}),
    ),
    (
        {"args": {"b": "case_insensitive", "c": "ignore"}},
        lambda tool: ("exact", {"b": folded, "c": None}),
    ),
    (
        {"mode": "subset", "tools": {"t1": "exact", "検索": {"mode": "ignore"}}},
        lambda tool: ("exact" if tool == "t1" else "ignore" if tool == "検索" else "subset", {}),
    ),
    (
        {"mode": "superset", "args": {"a": "ignore"}, "tools": {"t2": {"args": {"a": "exact"}}}},
        lambda tool: ("superset", {"a": (lambda e, a: tag(e) == tag(a)) if tool == "t2" else None}),
    ),
]


def ref_match(spec: Any, e: ToolCall, a: ToolCall) -> bool:
    if e.name != a.name:
        return False
    mode, comparators = spec(e.name)
    if mode == "ignore":
        return True
    ea = {k: v for k, v in e.args.items() if comparators.get(k, 0) is not None}
    aa = {k: v for k, v in a.args.items() if comparators.get(k, 0) is not None}
    small, big = (aa, ea) if mode == "superset" else (ea, aa)
    if mode == "exact" and set(ea) != set(aa):
        return False
    if not set(small) <= set(big):
        return False
    for k in small:
        cmp = comparators.get(k)
        if cmp is not None:
            ok = cmp(ea[k], aa[k])
        elif mode == "exact":
            ok = tag(ea[k]) == tag(aa[k])
        else:
            ok = contained(small[k], big[k])
        if not ok:
            return False
    return True


def ref_scores(spec: Any, actual: list[ToolCall], expected: list[ToolCall]) -> dict[str, float]:
    ok = [[ref_match(spec, e, a) for a in actual] for e in expected]
    n, m = len(expected), len(actual)

    @cache
    def best(i: int, used: frozenset[int]) -> int:  # maximum one-to-one matching
        if i == n:
            return 0
        options = [best(i + 1, used)]
        options += [1 + best(i + 1, used | {j}) for j in range(m) if j not in used and ok[i][j]]
        return max(options)

    matched = best(0, frozenset())
    exact = n == m and all(ok[i][i] for i in range(n))
    in_order = any(all(ok[i][j] for i, j in enumerate(idx)) for idx in combinations(range(m), n))
    return {
        "trajectory_exact_match": float(exact),
        "trajectory_in_order_match": float(in_order),
        "trajectory_any_order_match": float(matched == n),
        "trajectory_precision": (matched / m) if m else (0.0 if n else 1.0),
        "trajectory_recall": (matched / n) if n else 1.0,
    }


ALIASES = {
    "EXACT": "trajectory_exact_match",
    "IN_ORDER": "trajectory_in_order_match",
    "ANY_ORDER": "trajectory_any_order_match",
}


def test_trajectory_metrics_match_a_brute_force_reference(cases: list[Case]) -> None:
    rng = random.Random(99)
    names = list(ref_scores(SPECS[0][1], [], []))
    built = [
        (
            {n: build_metric(n, {} if opt is None else {"arg_match": opt}) for n in names},
            {
                t: build_metric(
                    "tool_trajectory_avg_score",
                    {"match_type": t, **({} if opt is None else {"arg_match": opt})},
                )
                for t in ALIASES
            },
            spec,
        )
        for opt, spec in SPECS
    ]
    seen: dict[str, set[float]] = {n: set() for n in names}
    turns = 0
    for actual_turns, expected_turns in cases:
        for actual, expected in zip(actual_turns, expected_turns, strict=True):
            metrics, adk_style, spec = rng.choice(built)
            want = ref_scores(spec, actual, expected)
            act, ref = turn(actual), turn(expected)
            for name, metric in metrics.items():
                got = metric.score_invocation(act, ref, EvalCase(id="c")).value
                assert got == pytest.approx(want[name]), (name, actual, expected)
                seen[name].add(round(want[name], 3))
            for match_type, metric in adk_style.items():
                got = metric.score_invocation(act, ref, EvalCase(id="c")).value
                assert got == want[ALIASES[match_type]], (match_type, actual, expected)
            turns += 1
    assert turns >= 2 * CASES - 200
    for name in names:  # both outcomes (and partial scores) occur
        assert {0.0, 1.0} <= seen[name]
    assert len(seen["trajectory_precision"]) > 4 and len(seen["trajectory_recall"]) > 4
