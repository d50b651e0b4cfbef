"""JSON-value equality: what "equal arguments" means everywhere in assay (SPEC §4.1).

Object key order is ignored, `1 == 1.0`, `"1" != 1`, and, unlike Python's `==`, `true`
is not equal to `1` (nor `false` to `0`), because JSON booleans are not numbers. `NaN`
equals nothing, not even `NaN`. Values that are not JSON at all (possible only from
Python callers; a tuple is not a list) compare with Python's `==`. The trajectory
metrics (`assay.metrics.argmatch`) and tool mocking (`assay.agents.tools`) share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def same_json(x: Any, y: Any) -> bool:
    """Given `x == y` in Python, whether they are also equal as JSON values.

    Python's `==` already ignores key order and equates 1 with 1.0; it differs from
    JSON equality only for booleans (`True == 1`) and NaN (equal to itself by identity
    inside containers), which this walk rejects.
    """
    tx, ty = type(x), type(y)
    if tx is dict:
        for k, v in x.items():
            t = type(v)
            if t is str or v is None or (t is int and type(y[k]) is not bool):
                continue
            if not same_json(v, y[k]):
                return False
        return True
    if tx is str or x is None:
        return True
    if tx is bool or ty is bool:
        return tx is ty
    if tx is int:
        return True
    if tx is float:
        return bool(x == x)  # False only for NaN
    if tx is list or tx is tuple:
        for v, w in zip(x, y, strict=True):
            if type(v) is not str and not same_json(v, w):
                return False
        return True
    return _same_json_other(x, y)


def _same_json_other(x: Any, y: Any) -> bool:
    # Subclasses (str/int enums, OrderedDict, ...) reach here. Values that are not
    # JSON at all can only come from Python callers; for them Python's == (already
    # true here) decides.
    if isinstance(x, bool) or isinstance(y, bool):
        return isinstance(x, bool) and isinstance(y, bool)
    if isinstance(x, float):
        return bool(x == x)
    if isinstance(x, Mapping):
        return all(same_json(v, y[k]) for k, v in x.items())
    if isinstance(x, list | tuple):
        return all(same_json(v, w) for v, w in zip(x, y, strict=True))
    return True


def json_equal(a: Any, b: Any) -> bool:
    """JSON-value equality (see the module docstring)."""
    return bool(a == b) and same_json(a, b)
