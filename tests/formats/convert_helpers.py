"""Helpers of the conversion tests: file suffixes per format, and whether a reported
loss names a field the eval set really has."""

from __future__ import annotations

import re
from typing import Any

from assay.formats._loss import Loss
from assay.model.core import EvalSet

SUFFIX = {"adk": ".evalset.json", "ces": ".json", "vertex": ".json", "mlflow": ".jsonl"}


def present(evalset: EvalSet, loss: Loss) -> bool:
    """Whether the field a loss names has a value in `evalset` (a list or object field
    that defaults to empty must be non-empty; an optional one must not be None)."""
    path = re.sub(r" \(.*\)$", "", loss.field)
    if path.startswith("the case"):
        return any(c.id == loss.case_id for c in evalset.cases)
    root: Any = evalset
    if loss.case_id is not None:
        root = next(c for c in evalset.cases if c.id == loss.case_id)
    values = [root]
    for part in path.split("."):
        key = part.removesuffix("[]")
        nxt: list[Any] = []
        for v in values:
            if isinstance(v, dict):
                item, optional = v.get(key), True
            else:
                info = type(v).model_fields.get(key)
                item = getattr(v, key, None)
                optional = info is not None and info.default is None
            if part.endswith("[]"):
                nxt.extend(item or [])
            elif item is not None and (optional or item not in ([], {})):
                nxt.append(item)
        values = nxt
    return bool(values)
