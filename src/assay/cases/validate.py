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
from typing import TYPE_CHECKING, Any

from assay.errors import InputError
from assay.formats import format_module

if TYPE_CHECKING:
    from assay.cases.target import Target


def validate_text(target: Target, text: str) -> list[str]:
    """The readers that accepted `text` as `target`'s format (raises InputError)."""
    if target.is_lines:
        data: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        data = json.loads(text)
    try:
        format_module(target.fmt).load_data(data, file=target.file, mapping=None)
    except InputError as exc:
        raise InputError(
            f"the edited file would not read back: {exc.detail}", file=target.file
        ) from None
    readers = [f"assay's {target.fmt} reader"]
    if target.fmt == "adk" and importlib.util.find_spec("google.adk") is not None:
        readers.append(_adk(text, target.file))
    elif target.fmt == "ces" and importlib.util.find_spec("google.cloud.ces_v1beta") is not None:
        readers.append(_ces(data, target.file))
    return readers


def _adk(text: str, file: str) -> str:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from pydantic import ValidationError

    try:
        AdkEvalSet.model_validate_json(text)
    except ValidationError as exc:
        raise InputError(
            f"google-adk's EvalSet refuses the edited file: {exc}", file=file
        ) from None
    return "google-adk EvalSet"


def _ces(data: Any, file: str) -> str:
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
        raise InputError(f"the CES protos refuse the edited file: {exc}", file=file) from None
    return "google-cloud-ces Evaluation"
