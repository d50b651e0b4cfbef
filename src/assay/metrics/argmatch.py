"""Tool-call argument matching: JSON-value equality, match modes and comparators.

Equality (SPEC §4.1). Two tool calls match when their names are equal and their
arguments are equal as JSON values: object key order is ignored, `1 == 1.0`,
`"1" != 1`, and — unlike Python's `==`, which ADK uses — `true` is not equal to `1`
(nor `false` to `0`), because JSON booleans are not numbers. `NaN` (not JSON, but
Python's `json` module reads it) equals nothing, not even `NaN`. Values that are not
JSON at all (possible only from Python callers; a tuple is not a list) compare with
Python's `==`. Call ids are ignored.

Matching options (the `arg_match` option of every trajectory metric)::

    "arg_match": {
      "mode": "subset",                        # exact (default) | ignore | subset | superset
      "args": {"query": "case_insensitive"},   # comparators for an argument of any tool
      "tools": {                               # per-tool overrides
        "get_weather": {
          "mode": "exact",
          "args": {"lat": {"type": "numeric", "abs_tol": 0.01}, "request_id": "ignore"}
        },
        "lookup": "ignore"                     # shorthand for {"mode": "ignore"}
      }
    }

`"arg_match": "subset"` is shorthand for `{"mode": "subset"}`; `ignore_args: true`
sets the default mode to `ignore`.

Modes: `exact` — same argument names, every value equal; `ignore` — names only;
`subset` — every expected argument is present in the actual call with a matching
value, extra actual arguments allowed; nested objects are compared the same way
(expected `{"a": {"b": 1}}` is contained in actual `{"a": {"b": 1, "c": 2}, "d": 3}`),
arrays must have the same length and are compared element-wise with the same rule;
`superset` — the mirror image: every actual argument is present in the expected call.

Comparators (a name or an object with `type`) replace the mode's comparison for one
argument: `exact` (JSON equality, even in subset mode), `ignore` (the argument is left
out on both sides), `case_insensitive` (strings compared case-folded, also inside
arrays and objects), `numeric` (`abs_tol`, default 0; `rel_tol`, default 1e-9; numbers
compared with `math.isclose`, also inside arrays and objects; booleans and numeric
strings are not numbers), `regex` (the actual value must be a string that fully
matches the pattern: `pattern` from the comparator, else the expected value itself;
`ignore_case` optional). An argument named under a tool overrides the same argument
named at the top level.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from assay.core.cases import ToolCall
from assay.core.jsonvalue import json_equal as json_equal
from assay.core.jsonvalue import same_json
from assay.errors import InputError
from assay.metrics.call_equal import match_exact as _match_exact
from assay.metrics.call_equal import match_name as _match_name


def json_contains(part: object, whole: object) -> bool:
    """True if `part` is contained in `whole`: objects recursively by key, arrays
    element-wise with equal length, everything else by JSON equality."""
    if isinstance(part, dict) and isinstance(whole, dict):
        return all(k in whole and json_contains(v, whole[k]) for k, v in part.items())
    if isinstance(part, list | tuple) and isinstance(whole, list | tuple):
        return len(part) == len(whole) and all(
            json_contains(p, w) for p, w in zip(part, whole, strict=True)
        )
    return json_equal(part, whole)


def _structural(leaf: Callable[[Any, Any], bool | None]) -> Callable[[Any, Any], bool]:
    """Equality with exact structure whose leaves use `leaf` (None: JSON equality)."""

    def compare(e: object, a: object) -> bool:
        if isinstance(e, dict) and isinstance(a, dict):
            return e.keys() == a.keys() and all(compare(v, a[k]) for k, v in e.items())
        if isinstance(e, list | tuple) and isinstance(a, list | tuple):
            return len(e) == len(a) and all(compare(x, y) for x, y in zip(e, a, strict=True))
        verdict = leaf(e, a)
        return json_equal(e, a) if verdict is None else verdict

    return compare


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class ArgMode(StrEnum):
    EXACT = "exact"
    IGNORE = "ignore"
    SUBSET = "subset"
    SUPERSET = "superset"


COMPARATORS = ("exact", "ignore", "case_insensitive", "numeric", "regex")
_STRICT = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


def _norm(word: str) -> str:
    return word.strip().lower().replace("-", "_").replace(" ", "_")


def _known_keys(value: object, model: type[BaseModel], what: str) -> None:
    """Reject unknown keys naming the valid ones (pydantic's message would not)."""
    if not isinstance(value, Mapping):
        return
    valid = {n for n in model.model_fields} | {to_camel(n) for n in model.model_fields}
    unknown = sorted(str(k) for k in value if k not in valid)
    if unknown:
        raise ValueError(
            f"unknown {what} key(s) {', '.join(unknown)}; valid keys are: "
            + ", ".join(sorted(model.model_fields))
        )


def parse_mode(value: object) -> Any:
    """Accept a mode name in any case, with spaces or hyphens; reject unknown names."""
    if isinstance(value, str):
        name = _norm(value)
        if name not in {m.value for m in ArgMode}:
            raise ValueError(
                f"unknown argument match mode {value!r}; valid modes are: "
                + ", ".join(m.value for m in ArgMode)
            )
        return ArgMode(name)
    return value


class Comparator(BaseModel):
    """How one argument's expected and actual values are compared."""

    model_config = _STRICT

    type: Literal["exact", "ignore", "case_insensitive", "numeric", "regex"]
    abs_tol: float | None = Field(default=None, ge=0)
    rel_tol: float | None = Field(default=None, ge=0)
    pattern: str | None = None
    ignore_case: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = {"type": value}
        if isinstance(value, Mapping) and isinstance(value.get("type"), str):
            name = _norm(value["type"])
            if name not in COMPARATORS:
                raise ValueError(
                    f"unknown comparator {value['type']!r}; valid comparators are: "
                    + ", ".join(COMPARATORS)
                )
            value = {**value, "type": name}
        _known_keys(value, cls, "comparator")
        return value

    @model_validator(mode="after")
    def _check(self) -> Comparator:
        if self.type != "numeric" and (self.abs_tol is not None or self.rel_tol is not None):
            raise ValueError("abs_tol and rel_tol apply only to the numeric comparator")
        if self.type != "regex" and (self.pattern is not None or self.ignore_case is not None):
            raise ValueError("pattern and ignore_case apply only to the regex comparator")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"invalid regex {self.pattern!r}: {exc}") from None
        return self

    def compile(self) -> Callable[[Any, Any], bool]:
        """The comparison function `(expected_value, actual_value) -> bool`."""
        if self.type == "case_insensitive":
            return _structural(
                lambda e, a: (
                    e.casefold() == a.casefold()
                    if isinstance(e, str) and isinstance(a, str)
                    else None
                )
            )
        if self.type == "numeric":
            abs_tol = self.abs_tol or 0.0
            rel_tol = 1e-9 if self.rel_tol is None else self.rel_tol
            return _structural(
                lambda e, a: (
                    math.isclose(e, a, rel_tol=rel_tol, abs_tol=abs_tol)
                    if _is_number(e) and _is_number(a)
                    else None
                )
            )
        if self.type == "regex":
            return self._regex()
        return json_equal  # "exact"; "ignore" never reaches a comparison

    def _regex(self) -> Callable[[Any, Any], bool]:
        flags = re.IGNORECASE if self.ignore_case else 0
        fixed = re.compile(self.pattern, flags) if self.pattern is not None else None

        def compare(e: object, a: object) -> bool:
            if fixed is not None:
                return isinstance(a, str) and fixed.fullmatch(a) is not None
            if not isinstance(e, str):
                raise InputError(
                    f"the regex comparator needs the expected value to be a pattern string, "
                    f"got {e!r}",
                    expected="a string, or a `pattern` in the comparator",
                )
            try:
                compiled = re.compile(e, flags)  # re caches compiled patterns
            except re.error as exc:
                raise InputError(
                    f"expected value {e!r} is not a valid regex: {exc}",
                    expected="a Python regular expression",
                ) from None
            return isinstance(a, str) and compiled.fullmatch(a) is not None

        return compare


class ToolArgMatch(BaseModel):
    """Argument matching for one tool: a mode and per-argument comparators."""

    model_config = _STRICT

    mode: ArgMode | None = None
    args: dict[str, Comparator] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"mode": parse_mode(value)}
        if isinstance(value, Mapping):
            _known_keys(value, cls, "arg_match" if cls is ArgMatch else "tool arg_match")
            if "mode" in value:
                value = {**value, "mode": parse_mode(value["mode"])}
            if isinstance(value.get("args"), str):
                raise ValueError(
                    "`args` maps argument names to comparators; set the tool's "
                    f'mode with "mode": {value["args"]!r}'
                )
        return value


class ArgMatch(ToolArgMatch):
    """The `arg_match` option: a default mode, comparators and per-tool overrides."""

    tools: dict[str, ToolArgMatch] = Field(default_factory=dict)


_Compare = Callable[[Any, Any], bool]


class _Rule:
    """The compiled matching rule of one tool (or the default for every tool)."""

    __slots__ = ("compare", "equivalence", "ignored", "mode")

    def __init__(self, mode: ArgMode, comparators: Mapping[str, Comparator]) -> None:
        self.mode = mode
        self.ignored = frozenset(n for n, c in comparators.items() if c.type == "ignore")
        self.compare: dict[str, _Compare] = {
            n: c.compile() for n, c in comparators.items() if c.type != "ignore"
        }
        # When matching is an equivalence relation, greedy first-fit pairing of calls
        # is as good as a maximum matching (and is what ADK does).
        self.equivalence = mode is ArgMode.IGNORE or (
            mode is ArgMode.EXACT
            and all(c.type in ("exact", "ignore", "case_insensitive") for c in comparators.values())
        )

    def match(self, expected: dict[str, Any], actual: dict[str, Any]) -> bool:
        mode = self.mode
        if mode is ArgMode.IGNORE:
            return True
        ignored, compare = self.ignored, self.compare
        if mode is ArgMode.EXACT and not ignored and not compare:
            return expected == actual and same_json(expected, actual)
        if mode is not ArgMode.SUPERSET:
            default: _Compare = json_equal if mode is ArgMode.EXACT else json_contains
            for k, v in expected.items():
                if k in ignored:
                    continue
                if k not in actual or not compare.get(k, default)(v, actual[k]):
                    return False
            if mode is ArgMode.EXACT:
                return all(k in expected or k in ignored for k in actual)
            return True
        for k, v in actual.items():
            if k in ignored:
                continue
            if k not in expected:
                return False
            cmp = compare.get(k)
            ok = cmp(expected[k], v) if cmp is not None else json_contains(v, expected[k])
            if not ok:
                return False
        return True


class CallMatcher:
    """Decides whether an actual tool call matches an expected one: `matches(e, a)`.

    `equivalence` is True when the relation is an equivalence (modes exact/ignore with
    exact, ignore or case-insensitive comparators); the trajectory algorithms then
    pair calls greedily, which is optimal for equivalences.
    """

    __slots__ = ("_default", "_tools", "equivalence", "matches")

    matches: Callable[[ToolCall, ToolCall], bool]

    def __init__(self, options: ArgMatch | None = None, *, ignore_args: bool = False) -> None:
        options = options or ArgMatch()
        mode = options.mode or (ArgMode.IGNORE if ignore_args else ArgMode.EXACT)
        self._default = _Rule(mode, options.args)
        self._tools = {
            name: _Rule(tool.mode or mode, {**options.args, **tool.args})
            for name, tool in options.tools.items()
        }
        self.equivalence = self._default.equivalence and all(
            r.equivalence for r in self._tools.values()
        )
        # The common configurations get a plain function (no per-call rule lookup):
        # this runs for every pair of calls of every row.
        if self._tools or self._default.compare or self._default.ignored:
            self.matches = self._match_with_rules
        elif mode is ArgMode.EXACT:
            self.matches = _match_exact
        elif mode is ArgMode.IGNORE:
            self.matches = _match_name
        else:
            self.matches = self._match_with_rules

    def _match_with_rules(self, expected: ToolCall, actual: ToolCall) -> bool:
        if expected.name != actual.name:
            return False
        rule = self._tools.get(expected.name, self._default)
        try:
            return rule.match(expected.args, actual.args)
        except InputError as exc:  # a regex taken from the data: say which call held it
            raise InputError(
                exc.detail,
                path=f"args of expected tool call {expected.name!r}",
                expected=exc.expected,
            ) from None
