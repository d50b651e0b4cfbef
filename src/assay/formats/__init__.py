"""Input/output formats (SPEC §2): detection, loading into one `EvalSet`, writing back.

Each format module exposes:

- `NAME`: the format name used by `--from` / `--to`;
- `detect(path: Path | None, data: Any) -> bool`: whether parsed `data` is this format;
- `load_data(data: Any, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet`;
- `dump(evalset: EvalSet) -> Any`: JSON-serialisable data (a dict, or a list of rows);
- `write(evalset: EvalSet, path: Path) -> None`: the file as the format's users write it.

Loading is strict and total: a file loads completely or raises `InputError` naming the
file, case id, JSON path and what was expected.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

from assay.core.cases import EvalSet
from assay.errors import InputError, UnknownFormatError
from assay.formats._common import gc_paused, read_structured

FORMAT_MODULES: dict[str, str] = {
    "adk": "assay.formats.adk",
    "adk-legacy": "assay.formats.adk_legacy",
    "adk-config": "assay.formats.adk_config",
    "vertex": "assay.formats.vertex",
    "mlflow": "assay.formats.mlflow",
    "ces": "assay.formats.ces",
    "trace": "assay.formats.traces",
    "otel": "assay.formats.otel",
    "mlflow-trace": "assay.formats.mlflow_traces",
}
# Order matters for detection: the most specific shapes first.
_DETECT_ORDER = ("otel", "mlflow-trace", "trace", "ces", "adk", "adk-legacy", "mlflow", "vertex")
EVAL_SET_FORMATS = tuple(f for f in FORMAT_MODULES if f != "adk-config")
# Formats assay reads but does not write (no `dump` / `write`): traces are inputs only.
READ_ONLY_FORMATS = ("otel", "mlflow-trace")


def format_module(name: str) -> ModuleType:
    try:
        module_name = FORMAT_MODULES[name]
    except KeyError:
        raise UnknownFormatError(
            f"unknown format {name!r}; valid formats are: {', '.join(FORMAT_MODULES)}"
        ) from None
    return importlib.import_module(module_name)


def detect_format(data: object, path: Path | None = None) -> str:
    """The name of the format `data` (parsed from `path`) is in; configs are `adk-config`."""
    for name in _DETECT_ORDER:
        if format_module(name).detect(path, data):
            return name
    # Checked last and reported as such so that `load` can say "pass it with --config".
    if format_module("adk-config").detect(path, data):
        return "adk-config"
    if isinstance(data, Mapping) and "assay_sidecar" in data:
        raise UnknownFormatError(
            f"this is the sidecar of {data.get('file')!r} (what its format cannot hold), "
            "not an eval set",
            file=str(path) if path else None,
            expected=f"the file it belongs to; `assay convert {data.get('file')} ...` reads it",
        )
    raise UnknownFormatError(
        "cannot tell the format of this data",
        file=str(path) if path else None,
        expected=f"one of {', '.join(EVAL_SET_FORMATS)}; pass --from FORMAT to choose",
    )


def load(
    path: str | Path, fmt: str | None = None, mapping: Mapping[str, str] | None = None
) -> EvalSet:
    """Load one file into an `EvalSet`, detecting the format unless `fmt` is given."""
    p = Path(path)
    if fmt is not None:
        format_module(fmt)  # an unknown --from is reported before the file is read
    if p.is_dir():
        raise InputError(
            "is a folder; load it with load_many (assay eval takes folders)", file=str(p)
        )
    # One pause from reading to the built set: between a parse and the conversion, the
    # collector would otherwise walk every parsed object that the conversion is about to
    # release (see `gc_paused`).
    if fmt is not None and hasattr(format_module(fmt), "load_file"):
        # A format with its own reader (OTLP JSON lines: a truncated line skips one
        # trace, it does not fail the file).
        loaded: EvalSet = format_module(fmt).load_file(p, mapping)
        return loaded
    with gc_paused():
        data = read_structured(p)
        name = fmt or detect_format(data, p)
        module = format_module(name)
        if name == "adk-config":
            raise UnknownFormatError(
                "adk-config is an evaluation config, not an eval set; pass it with --config",
                file=str(p),
            )
        try:
            # A format that reads files beside the data one (ADK legacy: the initial
            # session) exposes `load_path`.
            if hasattr(module, "load_path"):
                evalset: EvalSet = module.load_path(p, data, mapping)
            else:
                evalset = module.load_data(data, file=str(p), mapping=mapping)
        except InputError as exc:
            raise exc.located(file=str(p)) from None
    return evalset


def load_many(
    paths: Sequence[str | Path], fmt: str | None = None, mapping: Mapping[str, str] | None = None
) -> list[EvalSet]:
    """Load each file; a folder stands for the eval files under it (`expand_inputs`)."""
    from assay.formats.folders import expand_inputs

    return [load(p, fmt, mapping) for p in expand_inputs(paths, fmt)]


def load_rows(
    rows: object,
    fmt: str = "vertex",
    mapping: Mapping[str, str] | None = None,
    name: str = "dataset",
) -> EvalSet:
    """Load in-memory rows (a list of dicts or a pandas DataFrame) of a row format."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        rows = rows.to_dict(orient="records")
    if fmt not in ("vertex", "mlflow", "trace", "mlflow-trace"):
        raise UnknownFormatError(
            f"in-memory rows must be vertex, mlflow, trace or mlflow-trace, not {fmt!r}"
        )
    evalset: EvalSet = format_module(fmt).load_data(rows, file=None, mapping=mapping)
    if evalset.id in ("", None):
        evalset.id = name
    return evalset


def dump(evalset: EvalSet, fmt: str) -> object:
    return format_module(fmt).dump(evalset)


def save(evalset: EvalSet, path: str | Path, fmt: str) -> None:
    format_module(fmt).write(evalset, Path(path))


__all__ = [
    "EVAL_SET_FORMATS",
    "FORMAT_MODULES",
    "detect_format",
    "dump",
    "format_module",
    "load",
    "load_many",
    "load_rows",
    "save",
]
