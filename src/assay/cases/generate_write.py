"""Writing generated cases as a new ADK, CES or Vertex file, checked before it lands.

The cases are fitted to the format (`assay.formats.convert.fit`); a field the format has
no place for is refused, not dropped. The file is written beside the target first, read
back by assay's reader of the format (it must say exactly the fitted set) and by the
format's own library when installed (google-adk's `EvalSet`; the CES `Evaluation`
protos of google-cloud-ces, unknown fields refused), and only then moved into place.
An existing file is never overwritten unless asked (`overwrite=True`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.errors import InputError
from assay.model.core import EvalCase, EvalSet

FORMATS = ("adk", "ces", "vertex")
_NAMES = {"adk": "an ADK eval set", "ces": "a CES evaluation", "vertex": "a Vertex dataset"}
_SET_ID = re.compile(r"[^A-Za-z0-9_]+")


def set_id(path: Path) -> str:
    """An eval set id from the file name (`home.evalset.json` -> `home`)."""
    stem = path.name.split(".")[0]
    return _SET_ID.sub("_", stem).strip("_") or "generated"


def write_generated(
    cases: Sequence[EvalCase],
    path: str | Path,
    fmt: str = "adk",
    *,
    name: str | None = None,
    description: str | None = None,
    overwrite: bool = False,
) -> list[str]:
    """Write `cases` to `path` as `fmt`; returns the readers that accepted the file."""
    from assay.formats import format_module
    from assay.formats._loss import refuse
    from assay.formats.convert import SUFFIXES, fit

    target = Path(path)
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r}", expected=f"one of {', '.join(FORMATS)}")
    if target.suffix.lower() not in SUFFIXES[fmt]:
        raise InputError(
            f"{_NAMES[fmt]} cannot be written as a {target.suffix or 'file without an extension'}",
            file=str(target),
            expected=f"a file name ending in {' or '.join(SUFFIXES[fmt])}",
        )
    if target.exists() and not overwrite:
        raise InputError(
            "the file exists; generated cases are written to a new file",
            file=str(target),
            expected="a new file name, or --overwrite to replace it",
        )
    if not cases:
        raise InputError("no case was kept, so nothing was written", file=str(target))
    evalset = EvalSet(id=set_id(target), name=name, description=description, cases=list(cases))
    fitted, losses = fit(evalset, fmt, target)
    if losses:
        error = refuse(losses, _NAMES[fmt])
        raise InputError(f"{error.detail}; nothing was written", file=str(target))
    temp = target.with_name(f".{target.stem}.assay-tmp{target.suffix}")
    try:
        format_module(fmt).write(fitted, temp)
        readers = _check(fitted, temp, fmt, str(target))
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return readers


def _check(fitted: EvalSet, temp: Path, fmt: str, shown: str) -> list[str]:
    from assay.formats import load
    from assay.formats.convert import difference

    back = load(temp, fmt)
    problem = difference(fitted, back)
    if problem is not None:
        raise InputError(
            f"the written file reads back differently ({problem}); nothing was written",
            file=shown,
        )
    readers = [f"assay's {fmt} reader"]
    text = temp.read_text(encoding="utf-8")
    if fmt == "adk" and _installed("google.adk"):
        readers.append(_adk(text, shown))
    if fmt == "ces" and temp.suffix.lower() == ".json" and _installed("google.cloud.ces_v1beta"):
        readers.append(_ces(json.loads(text), shown))
    return readers


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # no parent package; hidden (sys.modules None)
        return False


def _adk(text: str, shown: str) -> str:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from pydantic import ValidationError

    try:
        AdkEvalSet.model_validate_json(text)
    except ValidationError as exc:
        raise InputError(f"google-adk's EvalSet refuses the file: {exc}", file=shown) from None
    return "google-adk EvalSet"


def _ces(data: Any, shown: str) -> str:
    from google.cloud import ces_v1beta

    body = dict(data)
    try:
        if "evaluations" in body:
            for item in body.pop("evaluationExpectations", []):
                ces_v1beta.EvaluationExpectation.from_json(
                    json.dumps(item), ignore_unknown_fields=False
                )
            ces_v1beta.ListEvaluationsResponse.from_json(
                json.dumps(body), ignore_unknown_fields=False
            )
        else:
            ces_v1beta.Evaluation.from_json(json.dumps(body), ignore_unknown_fields=False)
    except (ValueError, TypeError) as exc:  # json_format.ParseError is a ValueError
        raise InputError(f"the CES protos refuse the file: {exc}", file=shown) from None
    return "google-cloud-ces Evaluation"
