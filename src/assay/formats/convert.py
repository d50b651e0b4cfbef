"""Converting an eval set between formats without silent loss (`assay convert`).

`fit(evalset, fmt)` gives the set as `fmt` holds it and the `Loss`es: fields `fmt` has
no place for. `convert_file` refuses a conversion with losses unless `lossy=True`,
writes the fitted set, and reads the written file back — detecting its format as any
user's run would — to check it says exactly the fitted set. The contract for every
pair of formats is docs/convert.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import InputError
from assay.formats import detect_format, format_module, load
from assay.formats._common import read_structured
from assay.formats._loss import Loss, refuse
from assay.model.core import EvalSet

WRITABLE = ("adk", "ces", "vertex", "mlflow", "trace")
_NAMES = {
    "adk": "an ADK eval set",
    "ces": "a CES Evaluation",
    "vertex": "a Vertex dataset",
    "mlflow": "an MLflow dataset",
    "trace": "a trace file",
}


@dataclass
class Converted:
    """What `convert_file` wrote: the fitted set and what was dropped (`lossy` only)."""

    evalset: EvalSet
    source_format: str
    dropped: list[Loss] = field(default_factory=list)


def fit(evalset: EvalSet, fmt: str) -> tuple[EvalSet, list[Loss]]:
    """`evalset` as `fmt` holds it, and the fields `fmt` cannot hold."""
    module = format_module(fmt)
    if hasattr(module, "fit"):
        fitted: EvalSet
        losses: list[Loss]
        fitted, losses = module.fit(evalset)
        return fitted, losses
    return evalset, []


def convert_file(
    source: Path,
    target: Path,
    to: str,
    *,
    from_format: str | None = None,
    mapping: Mapping[str, str] | None = None,
    lossy: bool = False,
) -> Converted:
    """Convert `source` into `target` in format `to` (see the module doc)."""
    if to not in WRITABLE:
        raise InputError(f"cannot write format {to!r}", expected=f"one of {', '.join(WRITABLE)}")
    evalset = load(source, from_format, mapping)
    fmt = from_format or detect_format(read_structured(source), source)
    fitted, losses = fit(evalset, to)
    if losses and not lossy:
        raise refuse(losses, _NAMES[to]).located(file=str(source))
    if not fitted.cases and (evalset.cases or to in ("vertex", "mlflow")):
        what = f"none of its {len(evalset.cases)} cases" if evalset.cases else "it has no cases:"
        raise InputError(
            f"{what} can be written as {_NAMES[to]}",
            file=str(source),
            expected=f"cases {to} can hold (docs/convert.md); nothing was written",
        )
    # Written beside the target first and moved into place only once it reads back
    # as what was meant: a failed check leaves no half-right file behind.
    temp = target.with_name(f".{target.stem}.assay-tmp{target.suffix}")
    try:
        format_module(to).write(fitted, temp)
        _check_readback(fitted, temp, to)
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return Converted(fitted, fmt, losses)


def _check_readback(fitted: EvalSet, path: Path, to: str) -> None:
    detected = detect_format(read_structured(path), path)
    if detected != to:
        raise InputError(
            f"the written file reads back as {detected}, not {to}; nothing was written",
            expected="a conversion assay can read back (please report this)",
        )
    back = load(path, to)
    problem = difference(fitted, back)
    if problem is not None:
        raise InputError(
            f"the written file reads back differently ({problem}); nothing was written",
            expected="a conversion assay can read back (please report this)",
        )


def difference(want: EvalSet, got: EvalSet) -> str | None:
    """Where `got` differs from `want` (set ids aside: some formats take the file name)."""
    for name in ("name", "description", "metadata"):
        if getattr(want, name) != getattr(got, name):
            return f"the set's {name}"
    if [c.id for c in want.cases] != [c.id for c in got.cases]:
        return "the case ids"
    for a, b in zip(want.cases, got.cases, strict=True):
        if a != b:
            fields = [f for f in type(a).model_fields if getattr(a, f) != getattr(b, f)]
            return f"case {a.id!r}: {', '.join(fields)}"
    return None
