"""Writing generated cases as a new ADK, CES or Vertex file, checked before it lands.

The cases are fitted to the format (`assay.formats.convert.fit`); a field the format has
no place for is refused, not dropped. The file is written beside the target first, read
back by assay's reader of the format (it must say exactly the fitted set) and by the
format's own library when installed (google-adk's `EvalSet`; the CES `Evaluation`
protos of google-cloud-ces, unknown fields refused), and only then moved into place.
An existing file is never overwritten unless asked (`overwrite=True`); to add generated
cases to an existing eval set, `assay.cases.write_cases(path, result.cases_as(fmt))`
edits it in place (what `assay cases generate` does when FILE exists). Both check with
one checker, `assay.cases.validate`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from assay.cases.validate import own_reader
from assay.core.cases import EvalCase, EvalSet
from assay.errors import InputError

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
            "the file exists; write_generated writes a new file",
            file=str(target),
            expected="a new file name, overwrite=True to replace it, or "
            "assay.cases.write_cases to add the cases to it",
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
    own = own_reader(fmt)
    # A CES YAML file has no JSON text for the protos to parse; assay's reader read it.
    if own is not None and not (fmt == "ces" and temp.suffix.lower() != ".json"):
        name, check = own
        check(temp.read_text(encoding="utf-8"), shown)
        readers.append(name)
    return readers
