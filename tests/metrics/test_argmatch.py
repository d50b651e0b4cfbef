"""Argument matching: JSON equality, containment, modes, per-tool overrides, comparators."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from assay.core.cases import ToolCall
from assay.errors import InputError
from assay.metrics.argmatch import (
    ArgMatch,
    ArgMode,
    CallMatcher,
    Comparator,
    json_contains,
    json_equal,
)


def call(tool: str, /, **args: Any) -> ToolCall:
    return ToolCall(name=tool, args=args)


def matcher(spec: Any = None, *, ignore_args: bool = False) -> CallMatcher:
    options = None if spec is None else ArgMatch.model_validate(spec)
    return CallMatcher(options, ignore_args=ignore_args)


# -- JSON equality ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ({"x": 1, "y": "a"}, {"y": "a", "x": 1}, True),  # key order ignored
        (1, 1.0, True),
        ({"n": [1, 2.0]}, {"n": [1.0, 2]}, True),
        ("1", 1, False),
        (True, 1, False),  # JSON booleans are not numbers (Python would say equal)
        (False, 0, False),
        (True, 1.0, False),
        ({"flags": [True, 1]}, {"flags": [1, True]}, False),
        ({"deep": {"b": False}}, {"deep": {"b": 0}}, False),
        (True, True, True),
        (None, None, True),
        (None, 0, False),
        ([1, 2], [2, 1], False),  # arrays are ordered
        ({"a": {}}, {"a": []}, False),
        ("Zürich 東京 🚀", "Zürich 東京 🚀", True),
        ("\u00e9", "e\u0301", False),  # no Unicode normalisation: NFC vs NFD differ
        ({"big": 10**20}, {"big": 1e20}, True),  # Python's exact int/float comparison
        ({"big": 10**20 + 1}, {"big": 1e20}, False),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_nan_equals_nothing_not_even_itself() -> None:
    nan = float("nan")
    assert not json_equal(nan, nan)
    assert not json_equal({"x": nan}, {"x": nan})  # Python's dict == says True here
    assert not json_equal([nan], [nan])


def test_json_contains_is_recursive_for_objects_and_elementwise_for_arrays() -> None:
    whole = {"a": {"b": 1, "c": 2}, "d": 3, "items": [{"id": 1, "x": 0}, {"id": 2}]}
    assert json_contains({"a": {"b": 1}}, whole)
    assert json_contains({"items": [{"id": 1}, {"id": 2}]}, whole)
    assert json_contains({}, whole)
    assert not json_contains({"items": [{"id": 1}]}, whole)  # arrays keep their length
    assert not json_contains({"a": {"b": True}}, {"a": {"b": 1}})
    assert not json_contains({"a": {"z": 1}}, whole)
    assert not json_contains({"a": 1}, {"a": {"b": 1}})


# -- modes -------------------------------------------------------------------------------


def test_exact_mode_requires_same_argument_names_and_values() -> None:
    m = matcher()
    assert m.equivalence
    assert m.matches(call("f", a=1, b="x"), call("f", b="x", a=1.0))
    assert not m.matches(call("f", a=1), call("f", a=1, b=2))
    assert not m.matches(call("f", a=1, b=2), call("f", a=1))
    assert not m.matches(call("f", a=1), call("g", a=1))
    assert not m.matches(call("f", on=True), call("f", on=1))
    assert m.matches(ToolCall(id="1", name="f"), ToolCall(id="2", name="f"))  # ids ignored


def test_ignore_mode_and_ignore_args_compare_names_only() -> None:
    for m in (matcher("ignore"), matcher(ignore_args=True), matcher({"mode": "IGNORE"})):
        assert m.equivalence
        assert m.matches(call("f", a=1), call("f", b=2))
        assert not m.matches(call("f"), call("g"))


def test_subset_mode_allows_extra_actual_arguments_recursively() -> None:
    m = matcher("subset")
    assert not m.equivalence
    assert m.matches(call("f", q="x"), call("f", q="x", limit=10))
    assert m.matches(call("f", opts={"a": 1}), call("f", opts={"a": 1, "b": 2}))
    assert m.matches(call("f"), call("f", anything=1))
    assert not m.matches(call("f", q="x", limit=10), call("f", q="x"))
    assert not m.matches(call("f", opts={"a": 1, "b": 2}), call("f", opts={"a": 1}))


def test_superset_mode_allows_missing_actual_arguments_but_no_extra() -> None:
    m = matcher("superset")
    assert m.matches(call("f", q="x", limit=10), call("f", q="x"))
    assert m.matches(call("f", opts={"a": 1, "b": 2}), call("f", opts={"a": 1}))
    assert not m.matches(call("f", q="x"), call("f", q="x", limit=10))
    assert not m.matches(call("f", q="x"), call("f", q="y"))


def test_per_tool_overrides_change_mode_and_comparators_for_that_tool_only() -> None:
    m = matcher(
        {
            "mode": "exact",
            "args": {"query": "case_insensitive"},
            "tools": {
                "search": {"mode": "subset"},
                "lookup": "ignore",
                "weather": {"args": {"query": "exact", "lat": {"type": "numeric", "absTol": 0.1}}},
            },
        }
    )
    assert m.matches(call("search", query="Rome"), call("search", query="ROME", page=2))
    assert not m.matches(call("other", query="Rome"), call("other", query="ROME", page=2))
    assert m.matches(call("other", query="Rome"), call("other", query="rome"))
    assert m.matches(call("lookup", id=1), call("lookup", id=2))
    # the tool's own comparator for `query` replaces the top-level one
    assert not m.matches(
        call("weather", query="Rome", lat=1.0), call("weather", query="rome", lat=1.0)
    )
    assert m.matches(
        call("weather", query="Rome", lat=1.0), call("weather", query="Rome", lat=1.05)
    )
    assert not m.matches(
        call("weather", query="Rome", lat=1.0), call("weather", query="Rome", lat=1.2)
    )


def test_modes_are_read_in_any_case_with_spaces_or_hyphens() -> None:
    assert ArgMatch.model_validate(" Subset ").mode is ArgMode.SUBSET
    assert ArgMatch.model_validate({"mode": "SUPERSET"}).mode is ArgMode.SUPERSET
    with pytest.raises(ValidationError, match="valid modes are: exact, ignore, subset, superset"):
        ArgMatch.model_validate("subsett")


# -- comparators -------------------------------------------------------------------------


def test_numeric_comparator_absolute_and_relative_tolerance_also_nested() -> None:
    m = matcher(
        {
            "args": {
                "t": {"type": "numeric", "abs_tol": 0.5},
                "r": {"type": "numeric", "rel_tol": 0.01},
            }
        }
    )
    assert m.matches(call("f", t=20, r=100), call("f", t=20.4, r=100.9))
    assert not m.matches(call("f", t=20, r=100), call("f", t=20.6, r=100))
    assert not m.matches(call("f", t=20, r=100), call("f", t=20, r=102))
    assert m.matches(call("f", t=[1, {"x": 2}], r=1), call("f", t=[1.2, {"x": 2.3}], r=1))
    assert not m.matches(call("f", t=[1, 2], r=1), call("f", t=[1], r=1))
    assert not m.matches(call("f", t=1, r=1), call("f", t=True, r=1))  # booleans are not numbers
    assert not m.matches(call("f", t=1, r=1), call("f", t="1", r=1))  # nor numeric strings
    default = matcher({"args": {"t": "numeric"}})
    assert default.matches(call("f", t=0.1 + 0.2), call("f", t=0.3))  # rel_tol 1e-9 by default
    assert not default.matches(call("f", t=0.0), call("f", t=1e-12))  # abs_tol 0 by default


def test_case_insensitive_comparator_casefolds_strings_inside_structures() -> None:
    m = matcher({"args": {"city": "case-insensitive"}})
    assert m.equivalence
    assert m.matches(call("f", city="STRASSE"), call("f", city="straße"))
    assert m.matches(
        call("f", city=["Rome", {"n": "PARIS"}]), call("f", city=["rome", {"n": "paris"}])
    )
    assert not m.matches(call("f", city={"N": "x"}), call("f", city={"n": "x"}))  # keys exact
    assert not m.matches(call("f", city="Rome"), call("f", city="Roma"))


def test_regex_comparator_full_matches_actual_against_expected_pattern() -> None:
    m = matcher({"args": {"id": "regex"}})
    assert not m.equivalence
    assert m.matches(call("f", id=r"ord-\d+"), call("f", id="ord-42"))
    assert not m.matches(call("f", id=r"ord-\d+"), call("f", id="ord-42x"))  # full match
    assert not m.matches(call("f", id=r"\d+"), call("f", id=42))  # non-string actual
    fixed = matcher({"args": {"id": {"type": "regex", "pattern": "ABC.*", "ignore_case": True}}})
    assert fixed.matches(call("f", id="whatever"), call("f", id="abcdef"))
    assert not fixed.matches(call("f", id="abcdef"), call("f", id="xabc"))


def test_regex_from_data_that_is_not_a_valid_pattern_is_an_input_error() -> None:
    m = matcher({"args": {"id": "regex"}})
    with pytest.raises(InputError, match="not a valid regex"):
        m.matches(call("f", id="("), call("f", id="x"))
    with pytest.raises(InputError, match="pattern string"):
        m.matches(call("f", id=5), call("f", id="5"))


def test_ignore_comparator_drops_the_argument_on_both_sides() -> None:
    for spec in ({"args": {"ts": "ignore"}}, {"mode": "superset", "args": {"ts": "ignore"}}):
        m = matcher(spec)
        assert m.matches(call("f", q=1, ts=1), call("f", q=1, ts=2))
        assert m.matches(call("f", q=1), call("f", q=1, ts=2))
        assert m.matches(call("f", q=1, ts=1), call("f", q=1))
    assert matcher({"args": {"ts": "ignore"}}).equivalence


def test_explicit_exact_comparator_is_strict_even_in_subset_mode() -> None:
    m = matcher({"mode": "subset", "args": {"filters": "exact"}})
    assert m.matches(call("f", filters={"a": 1}), call("f", filters={"a": 1}, extra=1))
    assert not m.matches(call("f", filters={"a": 1}), call("f", filters={"a": 1, "b": 2}))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "fuzzy",
            "unknown comparator 'fuzzy'; valid comparators are: exact, ignore, "
            "case_insensitive, numeric, regex",
        ),
        ({"type": "regex", "pattern": "("}, "invalid regex"),
        ({"type": "numeric", "abs_tol": -1}, "greater than or equal to 0"),
        ({"type": "exact", "abs_tol": 1}, "apply only to the numeric comparator"),
        ({"type": "numeric", "pattern": "x"}, "apply only to the regex comparator"),
        ({"type": "numeric", "tol": 1}, "unknown comparator key"),
    ],
)
def test_bad_comparators_are_rejected_with_the_valid_values(spec: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Comparator.model_validate(spec)


def test_bad_arg_match_shapes_name_the_valid_keys() -> None:
    with pytest.raises(ValidationError, match="valid keys are: args, mode, tools"):
        ArgMatch.model_validate({"modes": "subset"})
    with pytest.raises(ValidationError, match="valid keys are: args, mode"):
        ArgMatch.model_validate({"tools": {"s": {"mode": "subset", "tools": {}}}})
    with pytest.raises(ValidationError, match='set the tool\'s mode with "mode"'):
        ArgMatch.model_validate({"tools": {"s": {"args": "subset"}}})
