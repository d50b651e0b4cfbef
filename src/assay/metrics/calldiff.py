"""How two lists of tool calls differ: the explanation behind a trajectory score.

`diff_calls(expected, actual)` names each difference — a missing call, an extra call,
a call to the wrong tool, a wrong argument (which one, both values) or calls in the
wrong order — so trajectory metrics can explain a score below 1 and the failure
analysis can count causes per tool and argument.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from assay.core.cases import ToolCall, Turn


class DiffKind(StrEnum):
    WRONG_TOOL = "wrong tool"
    WRONG_ARGUMENT = "wrong argument"
    MISSING_CALL = "missing call"
    EXTRA_CALL = "extra call"
    WRONG_ORDER = "wrong order"


@dataclass(frozen=True, slots=True)
class CallDifference:
    """One difference. For a wrong argument, `expected`/`actual` are the two values
    (None when absent); for a wrong tool, the two tool names."""

    kind: DiffKind
    text: str
    tool: str | None = None
    argument: str | None = None
    expected: Any = None
    actual: Any = None


# json.dumps(value, ensure_ascii=False, separators=(", ", ": ")) builds an encoder per
# call; this one is built once and encodes the same way.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))
_encode_string = json.encoder.encode_basestring


def format_value(value: Any) -> str:
    """A value as compact JSON (strings quoted); non-JSON values by repr."""
    # The usual argument values first, encoded as the JSON encoder encodes them.
    kind = type(value)
    if kind is str:
        return _encode_string(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError):
        return repr(value)


def format_call(call: ToolCall) -> str:
    """`name(key="value", n=22)`."""
    args = ", ".join([f"{k}={format_value(v)}" for k, v in call.args.items()])
    return f"{call.name}({args})"


def same_value(a: Any, b: Any) -> bool:
    """JSON equality: 22 == 22.0, but True is not 1 and "22" is not 22."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def same_call(expected: ToolCall, actual: ToolCall) -> bool:
    return expected.name == actual.name and same_value(expected.args, actual.args)


_ABSENT = object()


def _argument_differences(expected: ToolCall, actual: ToolCall) -> list[CallDifference]:
    found = []
    for key in dict.fromkeys([*expected.args, *actual.args]):
        want = expected.args.get(key, _ABSENT)
        got = actual.args.get(key, _ABSENT)
        if want is not _ABSENT and got is not _ABSENT and same_value(want, got):
            continue
        shown_want = "(absent)" if want is _ABSENT else format_value(want)
        shown_got = "(absent)" if got is _ABSENT else format_value(got)
        found.append(
            CallDifference(
                DiffKind.WRONG_ARGUMENT,
                f"wrong argument {expected.name}.{key}: expected {shown_want}, got {shown_got}",
                tool=expected.name,
                argument=key,
                expected=None if want is _ABSENT else want,
                actual=None if got is _ABSENT else got,
            )
        )
    return found


def pair_calls(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    matches: Callable[[ToolCall, ToolCall], bool] = same_call,
) -> tuple[dict[int, int], dict[int, int]]:
    """(matching pairs, same-tool pairs) as expected index -> actual index.

    Matching calls pair first, each actual call at most once; then calls of the same
    tool pair among the rest, in order.
    """
    # Plain loops, not `next(generator)`: this runs for every imperfect row's metrics.
    matched: dict[int, int] = {}
    used: set[int] = set()
    for i, want in enumerate(expected):
        for j, got in enumerate(actual):
            if j not in used and matches(want, got):
                matched[i] = j
                used.add(j)
                break
    same_tool: dict[int, int] = {}
    for i, want in enumerate(expected):
        if i in matched:
            continue
        for j, got in enumerate(actual):
            if j not in used and got.name == want.name:
                same_tool[i] = j
                used.add(j)
                break
    return matched, same_tool


def diff_calls(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    matches: Callable[[ToolCall, ToolCall], bool] = same_call,
) -> list[CallDifference]:
    """What differs between the expected and actual calls of one invocation.

    Matching calls (by `matches`, default JSON equality) pair first, anywhere in the
    lists; then calls of the same tool pair as wrong-argument differences; the rest pair
    by position as wrong tools, and what is left is a missing or an extra call. Paired
    calls in another relative order give one wrong-order difference.
    """
    matched, same_tool = pair_calls(expected, actual, matches)
    found: list[CallDifference] = []
    for i in sorted(same_tool):
        found.extend(_argument_differences(expected[i], actual[same_tool[i]]))
    pairs = {**matched, **same_tool}
    used = set(pairs.values())
    left_expected = [i for i in range(len(expected)) if i not in pairs]
    left_actual = [j for j in range(len(actual)) if j not in used]
    for i, j in zip(left_expected, left_actual, strict=False):
        want, got = expected[i], actual[j]
        found.append(
            CallDifference(
                DiffKind.WRONG_TOOL,
                f"wrong tool: expected {format_call(want)}, got {format_call(got)}",
                tool=want.name,
                expected=want.name,
                actual=got.name,
            )
        )
    paired = min(len(left_expected), len(left_actual))
    for i in left_expected[paired:]:
        found.append(
            CallDifference(
                DiffKind.MISSING_CALL, f"missing call {format_call(expected[i])}",
                tool=expected[i].name,
            )
        )  # fmt: skip
    for j in left_actual[paired:]:
        found.append(
            CallDifference(
                DiffKind.EXTRA_CALL, f"extra call {format_call(actual[j])}", tool=actual[j].name
            )
        )
    order = [pairs[i] for i in sorted(pairs)]
    if order != sorted(order):  # a paired call before one that should come first
        want_names = ", ".join([expected[i].name for i in sorted(pairs)])
        got_names = ", ".join([actual[j].name for j in sorted(order)])
        found.append(
            CallDifference(
                DiffKind.WRONG_ORDER,
                f"wrong order: expected {want_names}; got {got_names}",
                tool=expected[min(pairs)].name,
            )
        )
    return found


def explain_calls(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    matches: Callable[[ToolCall, ToolCall], bool] = same_call,
) -> str | None:
    """The differences as one `; `-joined line, None when there is none."""
    texts = [d.text for d in diff_calls(expected, actual, matches)]
    return "; ".join(texts) if texts else None


def expected_calls(turn: Turn) -> list[ToolCall]:
    """The calls a reference turn expects: its CES tool-call expectations, else its steps."""
    if turn.expectations:
        return [e.tool_call for e in turn.expectations if e.tool_call is not None]
    return turn.tool_calls()


def align_calls(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """Expected and actual calls side by side, for reports: one row per pair or leftover.

    Each row has `expected` and `actual` (`{name, args}` or None) and `mark`: `match`,
    `args` (same tool, `wrong_args` names the differing arguments), `tool` (another tool
    at that place), `missing` or `extra`; `out_of_order` is true for a paired call the
    agent made before one that should have come first. Rows follow the expected order,
    extra calls after the call they followed.
    """
    matched, same_tool = pair_calls(expected, actual)
    pairs = {**matched, **same_tool}
    used = set(pairs.values())
    left_expected = [i for i in range(len(expected)) if i not in pairs]
    left_actual = [j for j in range(len(actual)) if j not in used]
    wrong_tool = dict(zip(left_expected, left_actual, strict=False))
    pairs.update(wrong_tool)
    rows: list[tuple[float, dict[str, Any]]] = []
    highest = -1
    for i in range(len(expected)):
        j = pairs.get(i)
        want = expected[i].model_dump(include={"name", "args"})
        if j is None:
            rows.append((i, {"expected": want, "actual": None, "mark": "missing"}))
            continue
        got = actual[j].model_dump(include={"name", "args"})
        if i in matched:
            mark, wrong = "match", []
        elif i in same_tool:
            mark = "args"
            wrong = [d.argument for d in _argument_differences(expected[i], actual[j])]
        else:
            mark, wrong = "tool", []
        late = mark != "tool" and j < highest
        if mark != "tool":
            highest = max(highest, j)
        row = {"expected": want, "actual": got, "mark": mark, "wrong_args": wrong,
               "out_of_order": late}  # fmt: skip
        rows.append((i, row))
    position = {j: i for i, j in pairs.items()}
    for j in range(len(actual)):
        if j in used or j in wrong_tool.values():
            continue
        # An extra call goes after the expected call whose actual call came before it.
        before = [position[k] for k in position if k < j]
        rows.append(
            (max(before, default=-1) + 0.5,
             {"expected": None, "actual": actual[j].model_dump(include={"name", "args"}),
              "mark": "extra"})
        )  # fmt: skip
    rows.sort(key=lambda r: r[0])
    return [r for _, r in rows]
