"""CES golden-turn checks (SPEC §4.2), one score per turn of a replayed golden conversation.

A reference turn's expected tool calls are its CES tool-call expectations
(`Turn.expectations[].tool_call`); a turn without any (an ADK invocation, say) uses its
tool-call steps instead. A turn expecting no tool call gets no score from the tool
metrics (never 1.0), and a missing reference turn gives no score.

Expected and actual calls are paired one-to-one by tool name; among calls of the same
tool the pairing maximises the total parameter correctness, so the order of repeated
calls does not matter. Values are compared as JSON values (`assay.metrics.argmatch`).

- `parameter_correctness_score`: per expected call, the share of its parameters (key
  and value) present in the paired actual call — 1.0 for a call without parameters,
  0.0 for a call that was not made; turn score = mean over the expected calls; PASS iff
  ≥ `tool_invocation_parameter_correctness_threshold` (default 1.0). The per-call
  scores and outcomes are in `details["tool_calls"]`.
- `tool_invocation_score`: share of the expected calls that were invoked (a call of
  that tool); PASS iff ≥ `overall_tool_invocation_correctness_threshold` (default 1.0).
- `tool_ordered_invocation_score`: share of the expected calls invoked in the expected
  order (longest common subsequence of the tool names ÷ expected calls); default
  threshold 1.0.
- `extra_tool_call_behavior` (both invocation scores): `FAIL` (default) — an actual
  call left unpaired (a tool not expected, or called more often than expected) sets the
  turn's score to 0 with an explanation; `ALLOW` — such calls are ignored. ADK's
  `transfer_to_agent` calls are transfers, not tool calls: they are left out unless the
  golden turn expects that call itself.
- `golden_expectations`: the other expectations of the turn — expected tool responses
  (some response of that tool equals the expected one), agent transfers (a transfer
  step, or ADK's `transfer_to_agent` tool call, to the expected agent) and variable
  updates (each expected variable was set, in the turn's `variables_update` steps, to
  the expected value; the last update wins). Score = passed ÷ checked expectations,
  default threshold 1.0. With `value_match: subset` expected responses and variable
  values need only be contained in the observed ones (objects recursively), as in CES
  exports that list a few keys of a nested variable. Each expectation's outcome and
  observed value are in `details["expectations"]`. Expected agent responses are
  judged by `semantic_similarity` (an LLM judge) and reported here as NOT_EVALUATED;
  tool-call expectations are scored by the tool metrics above and not repeated.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import Any, ClassVar, Literal, cast

from pydantic import Field, field_validator, model_validator

from assay.core.cases import EvalCase, Expectation, ToolCall, Turn
from assay.core.results import Score
from assay.errors import ConfigError
from assay.metrics.argmatch import json_contains, json_equal
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.registry import register
from assay.metrics.stats import mean
from assay.metrics.trajectory import max_weight_assignment

TRANSFER_TOOL = "transfer_to_agent"
"""The tool call by which an ADK agent hands the conversation to another agent."""

PASS, FAIL, NOT_EVALUATED = "PASS", "FAIL", "NOT_EVALUATED"


def golden_tool_calls(turn: Turn) -> list[tuple[ToolCall, str | None]]:
    """The expected calls of a reference turn with their notes (expectations, else steps)."""
    from_expectations = [
        (e.tool_call, e.note) for e in turn.expectations if e.tool_call is not None
    ]
    return from_expectations or [(c, None) for c in turn.tool_calls()]


def parameter_matches(expected: ToolCall, actual: ToolCall) -> list[bool]:
    """For each expected parameter: is it present in `actual` with an equal value?"""
    args = actual.args
    return [k in args and json_equal(v, args[k]) for k, v in expected.args.items()]


def _share(expected: ToolCall, actual: ToolCall | None) -> float:
    if actual is None:
        return 0.0
    hits = parameter_matches(expected, actual)
    return sum(hits) / len(hits) if hits else 1.0


def pair_calls(expected: list[ToolCall], actual: list[ToolCall]) -> list[int | None]:
    """For each expected call, the index of its paired actual call (None: not invoked)."""
    pairs: list[int | None] = [None] * len(expected)
    groups: dict[str, tuple[list[int], list[int]]] = {}
    for i, call in enumerate(expected):
        groups.setdefault(call.name, ([], []))[0].append(i)
    for j, call in enumerate(actual):
        if call.name in groups:
            groups[call.name][1].append(j)
    for want, have in groups.values():
        if not have:
            continue
        if len(want) == 1:
            shares = [_share(expected[want[0]], actual[j]) for j in have]
            pairs[want[0]] = have[shares.index(max(shares))]
            continue
        weights = [[_share(expected[i], actual[j]) for j in have] for i in want]
        if len(want) <= len(have):
            for i, col in zip(want, max_weight_assignment(weights), strict=True):
                pairs[i] = have[col]
        else:
            transposed = [list(col) for col in zip(*weights, strict=True)]
            for j, row in zip(have, max_weight_assignment(transposed), strict=True):
                pairs[want[row]] = j
    return pairs


def _call_json(call: ToolCall | None) -> dict[str, object] | None:
    return None if call is None else {"name": call.name, "args": call.args}


# -- options ------------------------------------------------------------------------------


class ExtraToolCallBehavior(StrEnum):
    FAIL = "FAIL"
    ALLOW = "ALLOW"


class _CesThresholdOptions(MetricOptions):
    """Options that also accept the threshold under its CES name (`_ces_name`)."""

    _ces_name: ClassVar[str]

    @property
    def ces_threshold(self) -> float | None:
        value: float | None = getattr(self, self._ces_name)
        return value

    @model_validator(mode="after")
    def _one_threshold(self) -> _CesThresholdOptions:
        ces = self.ces_threshold
        if ces is not None and self.threshold is not None and ces != self.threshold:
            raise ValueError(
                f"threshold {self.threshold} and {self._ces_name} {ces} disagree; give one"
            )
        return self


class ParameterCorrectnessOptions(_CesThresholdOptions):
    _ces_name = "tool_invocation_parameter_correctness_threshold"
    tool_invocation_parameter_correctness_threshold: float | None = Field(default=None, ge=0, le=1)


class _ExtraCallOptions(MetricOptions):
    extra_tool_call_behavior: ExtraToolCallBehavior = ExtraToolCallBehavior.FAIL

    @field_validator("extra_tool_call_behavior", mode="before")
    @classmethod
    def _behavior(cls, value: object) -> object:
        if isinstance(value, str):
            name = value.strip().upper()
            if name not in ExtraToolCallBehavior.__members__:
                raise ValueError(
                    f"unknown extra_tool_call_behavior {value!r}; valid values are: FAIL, ALLOW"
                )
            return ExtraToolCallBehavior[name]
        return value


class ToolInvocationOptions(_ExtraCallOptions, _CesThresholdOptions):
    _ces_name = "overall_tool_invocation_correctness_threshold"
    overall_tool_invocation_correctness_threshold: float | None = Field(default=None, ge=0, le=1)


class ToolOrderedInvocationOptions(_ExtraCallOptions):
    pass


class GoldenExpectationsOptions(MetricOptions):
    value_match: Literal["exact", "subset"] = "exact"

    @field_validator("value_match", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


# -- metrics ------------------------------------------------------------------------------


class _GoldenMetric(Metric):
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    needs: ClassVar[frozenset[str]] = frozenset({"reference"})
    default_threshold: ClassVar[float | None] = 1.0
    family: ClassVar[str] = "ces"

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        if not isinstance(self.options, self.options_model):
            raise ConfigError(
                f"metric {self.name!r} takes {self.options_model.__name__}, "
                f"got {type(self.options).__name__}"
            )
        if isinstance(self.options, _CesThresholdOptions):
            ces = self.options.ces_threshold
            self.threshold = ces if ces is not None else self.threshold

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if expected is None:
            return Score(None, "no golden turn at this index")
        calls = golden_tool_calls(expected)
        if not calls:
            return Score(None, "the golden turn expects no tool call")
        observed = actual.tool_calls()
        if not any(c.name == TRANSFER_TOOL for c, _ in calls):
            # ADK records a transfer as a `transfer_to_agent` call; CES checks transfers as
            # transfer expectations (golden_expectations), never as extra tool calls.
            observed = [c for c in observed if c.name != TRANSFER_TOOL]
        return self._score_calls(calls, observed)

    def _score_calls(
        self, expected: list[tuple[ToolCall, str | None]], actual: list[ToolCall]
    ) -> Score:
        raise TypeError(f"metric {self.name} must implement _score_calls")


@register
class ParameterCorrectnessScore(_GoldenMetric):
    name = "parameter_correctness_score"
    description = "share of each expected tool call's parameters present in the actual call"
    options_model = ParameterCorrectnessOptions

    def _score_calls(
        self, expected: list[tuple[ToolCall, str | None]], actual: list[ToolCall]
    ) -> Score:
        pairs = pair_calls([c for c, _ in expected], actual)
        per_call: list[dict[str, Any]] = []
        problems: list[str] = []
        for (call, note), j in zip(expected, pairs, strict=True):
            observed = None if j is None else actual[j]
            hits = (
                parameter_matches(call, observed)
                if observed is not None
                else [False] * len(call.args)
            )
            # a call without parameters is fully correct once it is made
            share = sum(hits) / len(hits) if hits else float(observed is not None)
            wrong = [k for k, ok in zip(call.args, hits, strict=True) if not ok]
            passed = self.threshold is None or share >= self.threshold
            per_call.append(
                {
                    "tool": call.name,
                    "note": note,
                    "parameter_correctness_score": share,
                    "outcome": PASS if passed else FAIL,
                    "observed_tool_call": _call_json(observed),
                    "missing_or_different": wrong,
                }
            )
            label = note or call.name
            if observed is None:
                problems.append(f"{label}: {call.name} was not called")
            elif wrong:
                problems.append(f"{label}: parameters missing or different: {', '.join(wrong)}")
        score = mean([p["parameter_correctness_score"] for p in per_call])
        return Score(score, "; ".join(problems) or None, {"tool_calls": per_call})


class _InvocationMetric(_GoldenMetric):
    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        behavior = cast(_ExtraCallOptions, self.options).extra_tool_call_behavior
        self.allow_extra = behavior is ExtraToolCallBehavior.ALLOW

    def invoked(self, expected: list[str], actual: list[str]) -> int:
        raise TypeError(f"metric {self.name} must implement invoked")

    def _score_calls(
        self, expected: list[tuple[ToolCall, str | None]], actual: list[ToolCall]
    ) -> Score:
        calls = [c for c, _ in expected]
        names = [c.name for c in calls]
        hits = self.invoked(names, [c.name for c in actual])
        missing = list((Counter(names) - Counter(c.name for c in actual)).elements())
        budget, extra = Counter(names), []
        for c in actual:  # calls beyond a tool's expected count are extra
            budget[c.name] -= 1
            if budget[c.name] < 0:
                extra.append(c.name)
        details: dict[str, Any] = {
            "expected_tools": names,
            "invoked": hits,
            "missing_tools": missing,
            "extra_tools": extra,
        }
        if extra and not self.allow_extra:
            return Score(
                0.0,
                f"tool calls matching no expectation: {', '.join(extra)} "
                "(extra_tool_call_behavior FAIL)",
                details,
            )
        explanation = f"not called: {', '.join(missing)}" if missing else None
        return Score(hits / len(names), explanation, details)


@register
class ToolInvocationScore(_InvocationMetric):
    name = "tool_invocation_score"
    description = "share of the turn's expected tool calls that were invoked"
    options_model = ToolInvocationOptions

    def invoked(self, expected: list[str], actual: list[str]) -> int:
        return sum((Counter(expected) & Counter(actual)).values())


@register
class ToolOrderedInvocationScore(_InvocationMetric):
    name = "tool_ordered_invocation_score"
    description = "share of the turn's expected tool calls invoked in the expected order"
    options_model = ToolOrderedInvocationOptions

    def invoked(self, expected: list[str], actual: list[str]) -> int:
        # Longest common subsequence of the tool names, one row at a time.
        row = [0] * (len(actual) + 1)
        for name in expected:
            prev_diag = 0
            for j, other in enumerate(actual, start=1):
                keep = row[j]
                row[j] = prev_diag + 1 if name == other else max(row[j], row[j - 1])
                prev_diag = keep
        return row[-1]


def _observed_transfers(turn: Turn) -> list[str]:
    targets: list[str] = []
    for step in turn.steps:
        if step.agent_transfer is not None:
            targets.append(step.agent_transfer.target_agent)
        elif step.tool_call is not None and step.tool_call.name == TRANSFER_TOOL:
            agent = step.tool_call.args.get("agent_name")
            if isinstance(agent, str):
                targets.append(agent)
    return targets


def _observed_variables(turn: Turn) -> dict[str, object]:
    merged: dict[str, Any] = {}
    for step in turn.steps:
        if step.variables_update is not None:
            merged.update(step.variables_update)
    return merged


@register
class GoldenExpectations(_GoldenMetric):
    name = "golden_expectations"
    description = "expected tool responses, agent transfers and variable updates of a turn"
    options_model = GoldenExpectationsOptions

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        subset = cast(GoldenExpectationsOptions, self.options).value_match == "subset"
        self.same = json_contains if subset else json_equal

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if expected is None:
            return Score(None, "no golden turn at this index")
        outcomes: list[dict[str, Any]] = []
        for exp in expected.expectations:
            outcome = self._check(exp, actual)
            if outcome is not None:
                outcomes.append({"note": exp.note, **outcome} if exp.note else outcome)
        judged = [o for o in outcomes if o["outcome"] != NOT_EVALUATED]
        details = {"expectations": outcomes}
        if not judged:
            reason = (
                "expected agent responses are judged by semantic_similarity, not here"
                if outcomes
                else "the golden turn has no tool response, transfer or variable expectation"
            )
            return Score(None, reason, details)
        failed = [o for o in judged if o["outcome"] == FAIL]
        explanation = "; ".join(
            f"{o.get('note') or o['kind']}: expected {o['expected']!r}, observed {o['observed']!r}"
            for o in failed
        )
        return Score((len(judged) - len(failed)) / len(judged), explanation or None, details)

    def _check(self, exp: Expectation, actual: Turn) -> dict[str, object] | None:
        if exp.tool_response is not None:
            name, want = exp.tool_response.name, exp.tool_response.response
            responses = [r.response for r in actual.tool_responses() if r.name == name]
            ok = any(self.same(want, r) for r in responses)
            return _outcome("tool_response", {"name": name, "response": want}, responses, ok)
        if exp.agent_transfer is not None:
            targets = _observed_transfers(actual)
            return _outcome(
                "agent_transfer", exp.agent_transfer, targets, exp.agent_transfer in targets
            )
        if exp.updated_variables is not None:
            state = _observed_variables(actual)
            wanted = exp.updated_variables
            values = {k: state[k] for k in wanted if k in state}
            ok = all(k in state and self.same(v, state[k]) for k, v in wanted.items())
            return _outcome("updated_variables", wanted, values, ok)
        if exp.agent_response is not None:
            return {
                "kind": "agent_response",
                "expected": exp.agent_response,
                "observed": actual.final_response,
                "outcome": NOT_EVALUATED,
                "reason": "agent responses are judged by semantic_similarity",
            }
        return None  # tool calls (the tool metrics) and mock tool responses (inputs)


def _outcome(kind: str, expected: object, observed: object, ok: bool) -> dict[str, object]:
    return {
        "kind": kind,
        "expected": expected,
        "observed": observed,
        "outcome": PASS if ok else FAIL,
    }
