"""Helpers of the conversion tests: file suffixes per format, and whether a reported
loss names a field the eval set really has."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from assay.core.cases import EvalSet
from assay.formats._loss import Loss

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


def accepted_by_own_tools(path: Path, fmt: str) -> None:
    """The written file is accepted by the target format's own library.

    ADK: google-adk's `EvalSet` validates it and its `LocalEvalSetsManager` loads it
    (from a copy at `AGENTS/app/ID.evalset.json`, where ADK looks). CES: google-cloud-ces
    parses it as an `Evaluation` (several: a `ListEvaluationsResponse` plus the
    `EvaluationExpectation` resources), unknown fields rejected. Row formats are checked
    through pandas by `own_tools_rows`.
    """
    if fmt == "adk":
        from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
        from google.adk.evaluation.local_eval_sets_manager import LocalEvalSetsManager

        text = path.read_text(encoding="utf-8")
        adk_set = AdkEvalSet.model_validate_json(text)
        agents = path.parent / f"{path.stem}.agents"
        home = agents / "app" / f"{adk_set.eval_set_id}.evalset.json"
        home.parent.mkdir(parents=True)
        home.write_text(text, encoding="utf-8")
        loaded = LocalEvalSetsManager(str(agents)).get_eval_set("app", adk_set.eval_set_id)
        assert loaded is not None and loaded.eval_cases == adk_set.eval_cases
    elif fmt == "ces":
        from google.cloud import ces_v1beta

        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "evaluations" in data:
            resources = data.pop("evaluationExpectations", [])
            ces_v1beta.ListEvaluationsResponse.from_json(
                json.dumps(data), ignore_unknown_fields=False
            )
            for item in resources:
                ces_v1beta.EvaluationExpectation.from_json(
                    json.dumps(item), ignore_unknown_fields=False
                )
        elif isinstance(data, dict) and "llmCriteria" in data:  # a set of one rubric only
            ces_v1beta.EvaluationExpectation.from_json(
                json.dumps(data), ignore_unknown_fields=False
            )
        else:
            ces_v1beta.Evaluation.from_json(json.dumps(data), ignore_unknown_fields=False)
