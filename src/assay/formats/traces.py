"""Recorded traces (SPEC §2.8): finished conversations in assay's own model.

A JSONL file (or a JSON list) with one case per line:
`{"id", "turns": [Turn], "reference"?: [Turn], "tags"?, ...other EvalCase fields}`,
where a Turn is `assay.core.cases.Turn` as `model_dump` writes it (`user_input`,
`steps`, `final_response`, `latency_s`, `usage`, `error`, ...). `turns` become
`EvalCase.actual`: what the agent already did, scored without running it again. Every
field is validated against the model; `id` is required. Writing produces the same
shape, leaving out fields at their defaults.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.core.cases import EvalCase, EvalSet
from assay.errors import InputError
from assay.formats._build import eval_set
from assay.formats._common import check_unique_ids, gc_paused, type_name
from assay.formats._loss import Loss

NAME = "trace"

_TURN_KEYS = frozenset({"user_input", "steps", "final_response"})
_EXPECTED = "a trace row {id, turns: [Turn], ...EvalCase fields} (see assay.core.cases)"


def detect(path: Path | None, data: object) -> bool:
    if not isinstance(data, list) or not data:
        return False
    sample = data[:20]
    if not all(isinstance(r, Mapping) and isinstance(r.get("turns"), list) for r in sample):
        return False
    turns = [t for r in sample for t in r["turns"]]
    return bool(turns) and all(isinstance(t, Mapping) and t.keys() & _TURN_KEYS for t in turns)


def load_data(data: object, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet:
    """Load trace rows into an `EvalSet` whose cases hold the recorded turns as `actual`."""
    if mapping:
        raise InputError(
            "trace rows take no column mapping", file=file, expected="no --map for --from trace"
        )
    if not isinstance(data, list):
        raise InputError(
            f"got {type_name(data)}",
            file=file,
            path="$",
            expected="a list (JSON) or lines (JSONL) of trace rows",
        )
    with gc_paused():
        cases = [_case(i, row, file) for i, row in enumerate(data)]
    check_unique_ids([c.id for c in cases], file)
    return eval_set(Path(file).stem if file else "", cases)


def _case(index: int, row: object, file: str | None) -> EvalCase:
    where = f"$[{index}]"
    if not isinstance(row, Mapping):
        raise InputError(f"got {type_name(row)}", file=file, path=where, expected=_EXPECTED)
    case_id = row.get("id")
    if not isinstance(case_id, str) or not case_id:
        raise InputError(
            "missing or non-string id", file=file, path=f"{where}.id", expected="a string case id"
        )
    if not isinstance(row.get("turns"), list):
        raise InputError(
            f"turns: got {type_name(row.get('turns'))}",
            file=file,
            case_id=case_id,
            path=f"{where}.turns",
            expected="a list of turns",
        )
    if "actual" in row:
        raise InputError(
            "both 'turns' and 'actual'",
            file=file,
            case_id=case_id,
            path=f"{where}.actual",
            expected="the recorded turns under 'turns' only",
        )
    fields = {k: v for k, v in row.items() if k != "turns"}
    fields["actual"] = row["turns"]
    try:
        return EvalCase.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = where
        for i, part in enumerate(err["loc"]):
            if isinstance(part, int):
                path += f"[{part}]"
            else:
                path += f".{'turns' if i == 0 and part == 'actual' else part}"
        raise InputError(
            err["msg"], file=file, case_id=case_id, path=path, expected=_EXPECTED
        ) from None


def fit(evalset: EvalSet) -> tuple[EvalSet, list[Loss]]:
    """The set as a trace file holds it: the cases with recorded (`actual`) turns; a
    case without is a loss (`the case (it has no recorded turns)`)."""
    kept = [c for c in evalset.cases if c.actual is not None]
    losses = [
        Loss(c.id, "the case (it has no recorded turns)") for c in evalset.cases if c.actual is None
    ]
    return evalset.model_copy(update={"cases": kept}), losses


def dump(evalset: EvalSet) -> list[dict[str, object]]:
    """One trace row per case; every case needs recorded (`actual`) turns."""
    rows = []
    for case in evalset.cases:
        if case.actual is None:
            raise InputError(
                "cannot be written as a trace: the case has no recorded turns",
                case_id=case.id,
                expected="cases with actual turns (run them first)",
            )
        row: dict[str, Any] = {
            "id": case.id,
            "turns": [t.model_dump(mode="json", exclude_defaults=True) for t in case.actual],
        }
        row.update(case.model_dump(mode="json", exclude_defaults=True, exclude={"id", "actual"}))
        rows.append(row)
    return rows


def write(evalset: EvalSet, path: Path) -> None:
    rows = dump(evalset)
    if path.suffix.lower() == ".json":
        text = json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
