"""Folders as input: `assay eval evals/` loads every eval file under the folder.

As `adk eval` and ADK's `AgentEvaluator` take a folder: every file under it (sorted,
recursively; hidden files and folders skipped) that holds an eval set of any format
assay reads — ADK `*.evalset.json` and `*.test.json` by name, any other JSON, JSONL,
YAML or CSV file when its content is detected as one (CES Evaluation resources, Vertex
or MLflow rows, recorded traces). Evaluation configs (`test_config.json`,
`eval_config.json`, anything detected as `adk-config`) and ADK's initial-session files
(`*.session.json`) are not eval sets and are left out; a data file of no known format
is left out with a warning naming it, so a stray file never stops a run silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from assay.errors import AssayError, InputError, UnknownFormatError, warn

_BY_NAME = (".evalset.json", ".test.json")
_DATA_SUFFIXES = frozenset({".json", ".jsonl", ".yaml", ".yml", ".csv", ".parquet", ".pq"})
_CONFIG_NAMES = frozenset({"test_config.json", "eval_config.json"})


def expand_inputs(paths: Sequence[str | Path], fmt: str | None = None) -> list[Path]:
    """`paths` with each folder replaced by the eval files under it (files kept as given).

    `fmt` (`--from`) takes every data file of a folder as that format. A folder holding
    no eval file is an `InputError` naming it.
    """
    expanded: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            expanded.append(path)
            continue
        found = list(_eval_files(path, fmt))
        if not found:
            raise InputError(
                "holds no eval file",
                file=str(path),
                expected="*.evalset.json, *.test.json, CES evaluations (JSON/YAML) or "
                "Vertex / MLflow / trace rows files under the folder",
            )
        expanded.extend(found)
    return expanded


def _eval_files(folder: Path, fmt: str | None) -> Iterable[Path]:
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith((".", "__")) for part in relative.parts) or not path.is_file():
            continue
        name = path.name.lower()
        if name in _CONFIG_NAMES or name.endswith(".session.json"):
            continue
        if name.endswith(_BY_NAME) or (
            path.suffix.lower() in _DATA_SUFFIXES and (fmt is not None or _is_eval_file(path))
        ):
            yield path


def _is_eval_file(path: Path) -> bool:
    """Whether `path`'s content is detected as an eval set (configs are not)."""
    from assay.formats import detect_format
    from assay.formats._common import read_structured
    from assay.formats.parquet import head_rows, is_parquet

    try:
        # A Parquet file can be millions of rows: its first rows tell the format.
        data = head_rows(path) if is_parquet(path) else read_structured(path)
        found = detect_format(data, path)
    except UnknownFormatError:
        warn(f"{path}: left out of the folder's eval files (not a format assay reads)")
        return False
    except AssayError as exc:
        warn(f"{path}: left out of the folder's eval files ({exc})")
        return False
    return found != "adk-config"
