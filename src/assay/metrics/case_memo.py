"""What the metrics of one case may share while it is scored: call-diff explanations.

Scoring a case runs every metric on the same turns, and the five trajectory metrics
each explain a differing turn with the same call diff (`calldiff.explain_calls`) —
about a quarter of their time on recorded rows. Inside `case_scope()` (the engine
opens one around the metrics of each case) an explanation is computed once per pair
of turns and call matcher and reused; outside a scope nothing is kept, so a metric
called on its own always computes afresh. The memo lives in a context variable: cases
scored at once in threads or tasks never see each other's entries, and it ends with the
case, before anything could change the turns it describes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from assay.core.cases import ToolCall, Turn
from assay.metrics.calldiff import explain_calls

_MEMO: ContextVar[dict[tuple[Any, ...], str | None] | None] = ContextVar(
    "assay_case_memo", default=None
)


@contextmanager
def case_scope() -> Iterator[None]:
    """Share explanations between the metrics scored inside (one case's)."""
    token = open_scope()
    try:
        yield
    finally:
        close_scope(token)


def open_scope() -> Token[dict[tuple[object, ...], str | None] | None]:
    """`case_scope` without the context manager's generator, for the per-row path:
    pass the token to `close_scope` in a `finally`."""
    return _MEMO.set({})


def close_scope(token: Token[dict[tuple[object, ...], str | None] | None]) -> None:
    _MEMO.reset(token)


def explain_turn(
    expected_turn: Turn,
    actual_turn: Turn,
    want: Sequence[ToolCall],
    calls: Sequence[ToolCall],
    matches: Callable[[ToolCall, ToolCall], bool],
) -> str | None:
    """`explain_calls(want, calls, matches)`, where `want` and `calls` are the calls of
    the two turns; memoised per (turns, matcher) inside a `case_scope`.

    Matchers built from the same default options share one plain function, so their
    metrics share the entry; a configured matcher is a bound method of its own object,
    compared by identity, so it never takes another matcher's explanation.
    """
    memo = _MEMO.get()
    if memo is None:
        return explain_calls(want, calls, matches)
    # The turns are alive for the whole scope (the case holds them): ids are stable.
    key = (id(expected_turn), id(actual_turn), matches)
    if key in memo:
        return memo[key]
    text = memo[key] = explain_calls(want, calls, matches)
    return text
