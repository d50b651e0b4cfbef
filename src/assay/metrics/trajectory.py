"""Trajectory metrics (SPEC §4.1): the agent's tool calls against the reference calls.

Each invocation's actual calls (`Turn.tool_calls()`) are compared with the reference
turn's expected calls (`expected_tool_calls`: the turn's CES tool-call expectations
if it has any, else its tool-call steps). A missing reference turn gives no score.

- `tool_trajectory_avg_score` (ADK): 1.0 if the calls match under `match_type` —
  `EXACT` (same calls, same order, nothing extra; the default), `IN_ORDER` (the
  expected calls appear in order, extras allowed) or `ANY_ORDER` (every expected call
  appears, order free, each actual call standing for at most one expected call) —
  else 0.0. `match_type` is read case-, space- and hyphen-insensitively ("in order",
  "in-order") and as ADK's enum values 0/1/2. An empty reference passes EXACT only
  when the agent made no call, and always passes IN_ORDER and ANY_ORDER.
- `trajectory_exact_match`, `trajectory_in_order_match`, `trajectory_any_order_match`
  (Vertex): the same three checks as 1/0 scores.
- `trajectory_precision`: matched actual calls ÷ actual calls, `trajectory_recall`:
  matched reference calls ÷ reference calls, with a maximum one-to-one matching
  between the two lists. Both empty → 1.0; precision with no actual call but some
  reference calls → 0.0; recall with an empty reference → 1.0 (nothing was missed).
- `trajectory_single_tool_use` (Vertex): 1 iff some actual call is named `tool_name`
  (required); with `tool_args`, that call's arguments must also match them under
  `arg_match`. Needs no reference.

Every metric accepts `ignore_args` and `arg_match` (modes, per-tool overrides and
per-argument comparators; see `assay.metrics.argmatch`). The default threshold is
1.0 for every metric here, precision and recall included: a case passes when its
mean score is perfect; lower the threshold to tolerate extra or missing calls.

With equivalence-style matching (modes exact/ignore) any-order matching is ADK's
greedy first-fit, which is then optimal; with subset/superset modes or tolerant
comparators a call can match several others, and a maximum bipartite matching is used
so the verdict does not depend on the order of the calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, cast

from assay.core.cases import EvalCase, ToolCall, Turn
from assay.core.results import MetricResult, Score
from assay.errors import ConfigError, InputError
from assay.metrics.argmatch import CallMatcher
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.case_memo import explain_turn
from assay.metrics.registry import register
from assay.metrics.trajectory_options import MatchType as MatchType
from assay.metrics.trajectory_options import SingleToolUseOptions as SingleToolUseOptions
from assay.metrics.trajectory_options import ToolTrajectoryOptions as ToolTrajectoryOptions
from assay.metrics.trajectory_options import TrajectoryOptions as TrajectoryOptions
from assay.metrics.trajectory_options import parse_match_type as parse_match_type

# -- matching algorithms ------------------------------------------------------------------


def expected_tool_calls(turn: Turn) -> list[ToolCall]:
    """The calls a reference turn expects: its tool-call expectations, else its steps."""
    if turn.expectations:
        calls = [e.tool_call for e in turn.expectations if e.tool_call is not None]
        if calls:
            return calls
    return turn.tool_calls()


def _exact(matcher: CallMatcher, actual: list[ToolCall], expected: list[ToolCall]) -> bool:
    if len(actual) != len(expected):
        return False
    matches = matcher.matches
    for e, a in zip(expected, actual, strict=True):  # noqa: SIM110 - no generator on the hot path
        if not matches(e, a):
            return False
    return True


def _in_order(matcher: CallMatcher, actual: list[ToolCall], expected: list[ToolCall]) -> bool:
    # Greedy earliest matching is optimal for subsequence tests under any predicate.
    n = len(expected)
    if n == 0:
        return True
    if len(actual) < n:
        return False
    matches, i = matcher.matches, 0
    want = expected[0]
    for call in actual:
        if matches(want, call):
            i += 1
            if i == n:
                return True
            want = expected[i]
    return False


def _max_matching(adjacency: list[list[int]], n_right: int) -> int:
    """Size of a maximum bipartite matching (augmenting paths, iterative search)."""
    match_right = [-1] * n_right
    match_left = [-1] * len(adjacency)
    size = 0
    for root in range(len(adjacency)):
        reached_from: dict[int, int] = {}
        stack = [root]
        free = -1
        while stack and free < 0:
            left = stack.pop()
            for right in adjacency[left]:
                if right in reached_from:
                    continue
                reached_from[right] = left
                if match_right[right] < 0:
                    free = right
                    break
                stack.append(match_right[right])
        if free < 0:
            continue
        right = free
        while True:  # flip the augmenting path back to the root
            left = reached_from[right]
            previous = match_left[left]
            match_left[left], match_right[right] = right, left
            if left == root:
                break
            right = previous
        size += 1
    return size


def max_weight_assignment(weights: list[list[float]]) -> list[int]:
    """For each row a distinct column, maximising the total weight (rows ≤ columns).

    The Hungarian algorithm, O(rows² · columns); used to pair repeated calls of a tool.
    """
    n, m = len(weights), len(weights[0])
    inf = float("inf")
    u, v = [0.0] * (n + 1), [0.0] * (m + 1)
    owner, way = [0] * (m + 1), [0] * (m + 1)  # owner[j]: row holding column j (1-based)
    for row in range(1, n + 1):
        owner[0], col = row, 0
        slack, used = [inf] * (m + 1), [False] * (m + 1)
        while owner[col]:
            used[col] = True
            r, delta, nxt = owner[col], inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cost = -weights[r - 1][j - 1] - u[r] - v[j]
                    if cost < slack[j]:
                        slack[j], way[j] = cost, col
                    if slack[j] < delta:
                        delta, nxt = slack[j], j
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    slack[j] -= delta
            col = nxt
        while col:
            prev = way[col]
            owner[col] = owner[prev]
            col = prev
    result = [-1] * n
    for j in range(1, m + 1):
        if owner[j]:
            result[owner[j] - 1] = j - 1
    return result


def _count_matched(matcher: CallMatcher, actual: list[ToolCall], expected: list[ToolCall]) -> int:
    if not actual or not expected:
        return 0
    matches = matcher.matches
    if matcher.equivalence:
        # For an equivalence, first-fit pairing (ADK's ANY_ORDER loop) is maximum.
        remaining = list(actual)
        count = 0
        for e in expected:
            for i, a in enumerate(remaining):
                if matches(e, a):
                    del remaining[i]
                    count += 1
                    break
        return count
    adjacency = [[j for j, a in enumerate(actual) if matches(e, a)] for e in expected]
    return _max_matching(adjacency, len(actual))


def count_matched_calls(
    actual: Sequence[ToolCall], expected: Sequence[ToolCall], matcher: CallMatcher | None = None
) -> int:
    """How many calls a maximum one-to-one matching pairs between the two lists."""
    return _count_matched(matcher or CallMatcher(), list(actual), list(expected))


def _any_order(matcher: CallMatcher, actual: list[ToolCall], expected: list[ToolCall]) -> bool:
    n = len(expected)
    return n == 0 or (len(actual) >= n and _count_matched(matcher, actual, expected) == n)


_ALGORITHMS = {
    MatchType.EXACT: _exact,
    MatchType.IN_ORDER: _in_order,
    MatchType.ANY_ORDER: _any_order,
}


def match_trajectory(
    actual: Sequence[ToolCall],
    expected: Sequence[ToolCall],
    match_type: MatchType = MatchType.EXACT,
    matcher: CallMatcher | None = None,
) -> bool:
    """True if the actual calls match the expected ones under `match_type`."""
    check = _ALGORITHMS[match_type]
    return check(matcher or CallMatcher(), list(actual), list(expected))


# -- metrics ------------------------------------------------------------------------------


class TrajectoryMetric(Metric):
    """Base of the trajectory metrics: one invocation's tool calls against the reference.

    `score_calls(actual_calls, expected_calls)` is the whole computation; a caller
    scoring several trajectory metrics on the same turns may extract the calls once
    (`Turn.tool_calls()`, `expected_tool_calls(reference_turn)`) and call it on each.
    """

    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    #: 1.0 whenever the actual calls match the expected ones pairwise, in order (true
    #: of every match type and of precision and recall, under any matcher); a caller
    #: that has checked that (`match_trajectory`, EXACT) may skip `score_calls`
    perfect_when_exact: ClassVar[bool] = True

    options_model: ClassVar[type[MetricOptions]] = TrajectoryOptions
    needs: ClassVar[frozenset[str]] = frozenset({"reference"})
    default_threshold: ClassVar[float | None] = 1.0

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        if not isinstance(self.options, self.options_model) or not isinstance(
            self.options, TrajectoryOptions
        ):
            raise ConfigError(
                f"metric {self.name!r} takes {self.options_model.__name__}, "
                f"got {type(self.options).__name__}"
            )
        self.matcher = self.options.matcher()

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if expected is None:
            return Score(None, "no reference turn at this index to compare tool calls with")
        try:
            want = expected_tool_calls(expected) if expected.expectations else expected.tool_calls()
            calls = actual.tool_calls()
            matches = self.matcher.matches
            return self.score_call_lists(
                calls, want, lambda: explain_turn(expected, actual, want, calls, matches)
            )
        except InputError as exc:
            raise exc.located(case_id=case.id) from None

    def score_call_lists(
        self, calls: list[ToolCall], want: list[ToolCall], explain: Callable[[], str | None]
    ) -> Score:
        """The score of one invocation from its actual and expected calls; `explain()`
        (called only below 1.0) says which calls differ."""
        value = self.score_calls(calls, want)
        if value >= 1.0:
            return Score(value)
        # Below 1: say which calls differ (missing, extra, wrong argument, ...).
        return Score(value, explain())

    def result_from_invocations(self, per: list[Score]) -> MetricResult:
        result = super().result_from_invocations(per)
        if result.explanation is None and result.score is not None and result.score < 1.0:
            # The case's explanation names the differing calls of each imperfect turn.
            notes = [
                (f"turn {i + 1}: " if len(per) > 1 else "") + s.explanation
                for i, s in enumerate(per)
                if s.explanation and s.value is not None and s.value < 1.0
            ]
            result.explanation = "; ".join(notes) or None
        return result

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        """The score of one invocation's actual calls against the expected calls."""
        raise TypeError(f"metric {self.name} must implement score_calls")


@register
class ToolTrajectoryAvgScore(TrajectoryMetric):
    family: ClassVar[str] = "adk"
    name = "tool_trajectory_avg_score"
    description = "1.0 if the tool calls match the reference under match_type; case = mean"
    options_model = ToolTrajectoryOptions

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        self.check = _ALGORITHMS[cast(ToolTrajectoryOptions, self.options).match_type]

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        return 1.0 if self.check(self.matcher, actual, expected) else 0.0


@register
class TrajectoryExactMatch(TrajectoryMetric):
    name = "trajectory_exact_match"
    description = "1 iff the same calls in the same order, nothing extra"

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        return 1.0 if _exact(self.matcher, actual, expected) else 0.0


@register
class TrajectoryInOrderMatch(TrajectoryMetric):
    name = "trajectory_in_order_match"
    description = "1 iff the reference calls appear in order; extra calls allowed"

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        return 1.0 if _in_order(self.matcher, actual, expected) else 0.0


@register
class TrajectoryAnyOrderMatch(TrajectoryMetric):
    name = "trajectory_any_order_match"
    description = "1 iff every reference call appears, in any order; extra calls allowed"

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        return 1.0 if _any_order(self.matcher, actual, expected) else 0.0


@register
class TrajectoryPrecision(TrajectoryMetric):
    name = "trajectory_precision"
    description = "matched predicted calls / predicted calls (one-to-one)"

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        if not actual:
            return 0.0 if expected else 1.0
        return _count_matched(self.matcher, actual, expected) / len(actual)


@register
class TrajectoryRecall(TrajectoryMetric):
    name = "trajectory_recall"
    description = "matched reference calls / reference calls (one-to-one)"

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        if not expected:
            return 1.0
        return _count_matched(self.matcher, actual, expected) / len(expected)


@register
class TrajectorySingleToolUse(TrajectoryMetric):
    name = "trajectory_single_tool_use"
    description = "1 iff some predicted call uses the given tool_name"
    options_model = SingleToolUseOptions
    needs = frozenset()
    perfect_when_exact = False  # about one tool, not the reference

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        opts = cast(SingleToolUseOptions, self.options)  # type checked by the base
        self.wanted = ToolCall(name=opts.tool_name, args=opts.tool_args or {})
        self.check_args = opts.tool_args is not None

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        try:
            return Score(self.score_calls(actual.tool_calls(), []))
        except InputError as exc:
            raise exc.located(case_id=case.id) from None

    def score_call_lists(
        self, calls: list[ToolCall], want: list[ToolCall], explain: Callable[[], str | None]
    ) -> Score:
        # Needs no reference and explains nothing, as `score_invocation`.
        return Score(self.score_calls(calls, []))

    def score_calls(self, actual: list[ToolCall], expected: list[ToolCall]) -> float:
        name = self.wanted.name
        for call in actual:
            if call.name == name and (
                not self.check_args or self.matcher.matches(self.wanted, call)
            ):
                return 1.0
        return 0.0
