"""Checking an eval set's new text before it replaces the file.

Every write is read back by assay's reader of the format, then by the format's own
library when it is installed: google-adk's `EvalSet` model (extra `adk`), the CES
protos of google-cloud-ces (`Evaluation`, `ListEvaluationsResponse`; unknown fields
refused), and for Vertex the rows assay reads as the Vertex SDK does. The names of the
readers that accepted the text are returned (`WriteResult.validated_with`).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from typing import Any

from assay.cases.target import Target, parse_lines
from assay.errors import InputError
from assay.formats import format_module


def validate_text(target: Target, text: str) -> list[str]:
    """The readers that accepted `text` as `target`'s format (raises InputError)."""
    if target.is_lines:
        data: Any = parse_lines(text, target.file)
    else:
        data = json.loads(text)
    try:
        format_module(target.fmt).load_data(data, file=target.file, mapping=None)
    except InputError as exc:
        raise InputError(
            f"the edited file would not read back: {exc.detail}", file=target.file
        ) from None
    readers = [f"assay's {target.fmt} reader"]
    own = own_reader(target.fmt)
    if own is None:
        return readers
    name, check = own
    try:
        check(text, target.file)
    except InputError:
        try:
            check(target.text, target.file)
        except InputError:
            # The file as it was is refused too (google-adk reads no camelCase eval set,
            # say): the edit is not what that reader objects to.
            return [*readers, f"not {name}: it refuses the file as it was"]
        raise
    return [*readers, name]


def own_reader(fmt: str) -> tuple[str, Callable[[str, str], None]] | None:
    """The format's own library as `(name, check(text, file))`, when it is installed;
    `check` raises InputError naming the file. (Vertex has none: assay's reader reads
    the rows as the Vertex SDK does.)"""
    if fmt == "adk" and _installed("google.adk"):
        return "google-adk EvalSet", _adk
    if fmt == "ces" and _installed("google.cloud.ces_v1beta"):
        return "google-cloud-ces Evaluation", _ces
    return None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # no parent package; hidden (sys.modules None)
        return False


def _adk(text: str, file: str) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from pydantic import ValidationError

    try:
        AdkEvalSet.model_validate_json(text)
    except ValidationError as exc:
        reason = " ".join(str(exc).split())
        raise InputError(f"google-adk's EvalSet refuses the file: {reason}", file=file) from None


def _ces(text: str, file: str) -> None:
    from google.cloud import ces_v1beta
    from google.protobuf.json_format import ParseError

    data = json.loads(text)
    body = dict(data) if isinstance(data, dict) else {}
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
    except (ParseError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())
        raise InputError(f"the CES protos refuse the file: {reason}", file=file) from None
