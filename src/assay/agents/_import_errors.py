"""Where importing an agent's module failed: the file and line of the user's code.

`importing 'boom_agent' raised KeyError: 'MY_SERVICE_API_KEY'` says what, not where.
`raised_at(exc)` finds the line from the exception's traceback: its last frame in the
user's code (not importlib's frozen frames, the standard library, installed packages or
assay), else its last frame in a real file.
"""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

_ASSAY = Path(__file__).resolve().parents[1]


def _library_roots() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return (*(Path(root).resolve() for root in roots), _ASSAY)


def _in_file(frame: traceback.FrameSummary) -> bool:
    return not frame.filename.startswith("<") and Path(frame.filename).is_file()


def _is_users(frame: traceback.FrameSummary, libraries: tuple[Path, ...]) -> bool:
    path = Path(frame.filename).resolve()
    return not any(path.is_relative_to(root) for root in libraries)


def raised_at(exc: BaseException) -> str:
    """` at FILE, line N (SOURCE)` for the line of the user's code that raised `exc`,
    or "" when its traceback has no frame in a file."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _in_file(f)]
    if not frames:
        return ""
    libraries = _library_roots()
    users = [f for f in frames if _is_users(f, libraries)]
    frame = (users or frames)[-1]
    source = f" ({frame.line.strip()})" if frame.line and frame.line.strip() else ""
    return f" at {frame.filename}, line {frame.lineno}{source}"
