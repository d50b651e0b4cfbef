"""The two call matchers every trajectory metric uses by default (`argmatch.CallMatcher`):
same name and JSON-equal arguments, or same name. Plain functions in a module of their
own: they run for every pair of calls the trajectory metrics compare (the row kernel
repeats them in C: `assay._native.MIRRORS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.core.jsonvalue import same_json

if TYPE_CHECKING:
    from assay.core.cases import ToolCall


def match_exact(expected: ToolCall, actual: ToolCall) -> bool:
    # `same_json` inlined for the top-level object: this is the hottest path.
    if expected.name != actual.name:
        return False
    e, a = expected.args, actual.args
    if e != a:
        return False
    for k, v in e.items():
        t = type(v)
        if t is str or (t is int and type(a[k]) is not bool):
            continue
        if not same_json(v, a[k]):
            return False
    return True


def match_name(expected: ToolCall, actual: ToolCall) -> bool:
    return expected.name == actual.name
