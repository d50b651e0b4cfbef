"""Converting an eval set between formats without silent loss (`assay convert`).

`fit(evalset, fmt)` gives the set as `fmt` holds it and the `Loss`es: fields `fmt` has
no place for. `convert_file` refuses a conversion with losses unless `lossy=True` (drop
them) or `sidecar=True` (keep them in `OUT.assay-sidecar.json`, `assay.formats._sidecar`),
writes the fitted set, and reads the written file back — detecting its format as any
user's run would — to check it says exactly the fitted set. A source with a sidecar
beside it is read with it. The contract for every pair of formats is docs/convert.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assay.core.cases import EvalSet
from assay.errors import ConversionLossError, InputError
from assay.formats import _sidecar as sidecars
from assay.formats import detect_format, format_module, load
from assay.formats._common import read_structured
from assay.formats._loss import Loss, refuse
from assay.formats._sidecar import Restored

WRITABLE = ("adk", "ces", "vertex", "mlflow", "trace")
# The file kinds each format is written as (by the target's extension).
_ROWS = (".json", ".jsonl", ".ndjson", ".csv")
SUFFIXES = {
    "adk": (".json",),
    "ces": (".json", ".yaml", ".yml"),
    "vertex": _ROWS,
    "mlflow": _ROWS,
    "trace": (".json", ".jsonl", ".ndjson"),
}
_NAMES = {
    "adk": "an ADK eval set",
    "ces": "a CES Evaluation",
    "vertex": "a Vertex dataset",
    "mlflow": "an MLflow dataset",
    "trace": "a trace file",
}


@dataclass
class Converted:
    """What `convert_file` wrote: the fitted set, what was dropped (`lossy`) or kept in
    the sidecar (`sidecar`, then `kept_in` is its path), and what the source's own
    sidecar gave back (`restored_from`)."""

    evalset: EvalSet
    source_format: str
    dropped: list[Loss] = field(default_factory=list)
    kept: list[Loss] = field(default_factory=list)
    kept_in: Path | None = None
    restored_from: Restored | None = None


def fit(evalset: EvalSet, fmt: str, path: Path | None = None) -> tuple[EvalSet, list[Loss]]:
    """`evalset` as `fmt` holds it, and the fields `fmt` cannot hold; with `path`, as a
    file of that name holds it (Vertex JSONL / CSV rows have no place for the set's
    name, a CSV cell holds text)."""
    module = format_module(fmt)
    if path is not None and hasattr(module, "fit_file"):
        fitted: EvalSet
        losses: list[Loss]
        fitted, losses = module.fit_file(evalset, path)
        return fitted, losses
    if hasattr(module, "fit"):
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
    sidecar: bool = False,
) -> Converted:
    """Convert `source` into `target` in format `to` (see the module doc)."""
    if to not in WRITABLE:
        raise InputError(f"cannot write format {to!r}", expected=f"one of {', '.join(WRITABLE)}")
    if target.suffix.lower() not in SUFFIXES[to]:
        raise InputError(
            f"{_NAMES[to]} cannot be written as a {target.suffix or 'file without an extension'}",
            file=str(target),
            expected=f"a file name ending in {' or '.join(SUFFIXES[to])}",
        )
    evalset = load(source, from_format, mapping)
    fmt = from_format or detect_format(read_structured(source), source)
    restored = _with_sidecar(evalset, source, fmt)
    if restored is not None:
        evalset = restored.evalset
    fitted, losses = fit(evalset, to, target)
    if losses and not (lossy or sidecar):
        error = refuse(losses, _NAMES[to])
        raise ConversionLossError(
            error.detail,
            losses=error.losses,
            file=str(source),
            case_id=error.case_id,
            expected=f"data {to} can hold; pass --sidecar to keep the rest in "
            f"{target.name}{sidecars.SUFFIX} (read back when converting it again), "
            "or --lossy to drop it",
        )
    if not fitted.cases and (evalset.cases or to in ("vertex", "mlflow")):
        what = f"none of its {len(evalset.cases)} cases" if evalset.cases else "it has no cases:"
        raise InputError(
            f"{what} can be written as {_NAMES[to]}{_whole_case_reasons(losses)}",
            file=str(source),
            expected=f"cases {to} can hold (docs/convert.md); nothing was written",
        )
    # Written beside the target first and moved into place only once it reads back
    # as what was meant: a failed check leaves no half-right file behind.
    temp = target.with_name(f".{target.stem}.assay-tmp{target.suffix}")
    side = sidecars.sidecar_path(target)
    side_temp = side.with_name(f".{side.name}.assay-tmp")
    keep = bool(losses) and sidecar
    try:
        format_module(to).write(fitted, temp)
        _check_readback(fitted, temp, to)
        if keep:
            side_temp.write_text(sidecars.dump(evalset, target, to, losses), encoding="utf-8")
            _check_restores(evalset, fitted, temp, to, side_temp, target)
            os.replace(side_temp, side)
        elif side.is_file():
            side.unlink()  # a stale sidecar of an earlier conversion to this path
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
        side_temp.unlink(missing_ok=True)
    if keep:
        return Converted(fitted, fmt, kept=losses, kept_in=side, restored_from=restored)
    return Converted(fitted, fmt, dropped=losses, restored_from=restored)


def _whole_case_reasons(losses: list[Loss], limit: int = 20) -> str:
    """Why each case was left out whole, one case a line (the first `limit`)."""
    reasons = [
        f"\n  case {loss.case_id!r}: {loss.field.removeprefix('the case (').removesuffix(')')}"
        for loss in losses
        if loss.case_id is not None and loss.field.startswith("the case")
    ]
    more = f"\n  and {len(reasons) - limit} more" if len(reasons) > limit else ""
    return ("".join(reasons[:limit]) + more) if reasons else ""


def _with_sidecar(evalset: EvalSet, source: Path, fmt: str) -> sidecars.Restored | None:
    """`evalset` merged with the sidecar beside `source`, if there is one."""
    side = sidecars.sidecar_path(source)
    if not side.is_file():
        return None
    original = sidecars.read(side, source, fmt)
    return sidecars.restore(evalset, original, fit(original, fmt, source)[0], side)


def _check_restores(
    evalset: EvalSet, fitted: EvalSet, written: Path, to: str, side: Path, target: Path
) -> None:
    """The written file and its sidecar give the source set back."""
    back = sidecars.restore(load(written, to), sidecars.read(side, target, to), fitted, side)
    problem = difference(evalset, back.evalset)
    if problem is not None or back.evalset.cases != evalset.cases:
        raise InputError(
            f"the written file and its sidecar read back differently ({problem}); "
            "nothing was written",
            expected="a conversion assay can read back (please report this)",
        )


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
