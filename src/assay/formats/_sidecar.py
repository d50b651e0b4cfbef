"""Round-trip-only data beside a converted file: `OUT.assay-sidecar.json`.

`assay convert IN OUT --to FMT --sidecar` writes OUT as FMT holds the set (valid for
FMT's own tools, nothing foreign inside it) and, when FMT cannot hold everything, the
whole source set as assay's model beside it. Converting OUT again reads the sidecar
back: every case of OUT that is still what the conversion wrote is replaced by the
source case it came from, so IN -> OUT -> IN comes back equal. A case edited in OUT
since (or added to it) is taken as OUT says, and named; a case deleted from OUT stays
deleted; a case FMT could not hold at all comes back from the sidecar.

A sidecar is only ever read through the file it sits beside; it carries the name of
that file and its format, and one written for another format or file is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.core.cases import EvalSet
from assay.errors import InputError
from assay.formats._loss import Loss

SUFFIX = ".assay-sidecar.json"
MARKER = "assay_sidecar"
VERSION = 1


def sidecar_path(target: Path) -> Path:
    """Where the sidecar of `target` lives: `TARGET.assay-sidecar.json` beside it."""
    return target.with_name(target.name + SUFFIX)


def dump(source: EvalSet, target: Path, fmt: str, kept: list[Loss]) -> str:
    """The sidecar text for `target` (written as `fmt`) of the set `source`."""
    doc: dict[str, Any] = {
        MARKER: VERSION,
        "file": target.name,
        "format": fmt,
        # What `fmt` cannot hold, for people reading the file; the data is `evalset`.
        "kept": [{"case_id": loss.case_id, "field": loss.field} for loss in kept],
        "evalset": source.model_dump(mode="json", exclude_defaults=True),
    }
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


@dataclass
class Restored:
    """A set read back with its sidecar: `restored` cases came back whole, `edited`
    cases were changed in the file since the conversion and are taken as it says."""

    evalset: EvalSet
    sidecar: Path
    restored: int = 0
    edited: list[str] = field(default_factory=list)


def read(path: Path, source: Path, fmt: str) -> EvalSet:
    """The source set a sidecar holds; a clear error when it is not `source`'s."""
    where = str(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"unreadable sidecar ({exc})", file=where, expected=_EXPECTED) from None
    if not isinstance(doc, dict) or doc.get(MARKER) != VERSION:
        raise InputError(
            f"not an assay sidecar (no {MARKER!r}: {VERSION})", file=where, expected=_EXPECTED
        )
    if doc.get("file") != source.name or doc.get("format") != fmt:
        raise InputError(
            f"this sidecar was written for {doc.get('file')!r} as {doc.get('format')}, "
            f"not for {source.name!r} as {fmt}",
            file=where,
            expected="the sidecar written with this file; move or delete a stale one",
        )
    try:
        return EvalSet.model_validate(doc.get("evalset"))
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise InputError(
            f"the sidecar's eval set is invalid at {loc}: {first['msg']}",
            file=where,
            path=f"$.evalset.{loc}",
            expected=_EXPECTED,
        ) from None


_EXPECTED = "the sidecar `assay convert --sidecar` wrote beside this file, unchanged"


def restore(read_back: EvalSet, source: EvalSet, as_written: EvalSet, sidecar: Path) -> Restored:
    """Merge what a file says now (`read_back`) with the set it was converted from.

    `as_written` is `source` fitted to the file's format: what the file said when it was
    written. A case still equal to it is the source case again.
    """
    now = {c.id: c for c in read_back.cases}
    then = {c.id: c for c in as_written.cases}
    out = Restored(read_back, sidecar)
    cases = []
    for case in source.cases:
        if case.id not in then:
            cases.append(case)  # the format could not hold it at all
            out.restored += 1
        elif case.id in now:
            if now[case.id] == then[case.id]:
                cases.append(case)
                out.restored += 1
            else:
                cases.append(now[case.id])
                out.edited.append(case.id)
    known = {c.id for c in source.cases}
    for case in read_back.cases:
        if case.id not in known:
            cases.append(case)
            out.edited.append(case.id)
    same_set = all(
        getattr(read_back, name) == getattr(as_written, name)
        for name in ("name", "description", "metadata")
    )
    top = source if same_set else read_back
    out.evalset = top.model_copy(update={"cases": cases})
    return out
