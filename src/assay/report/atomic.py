"""Report files replaced whole or not at all.

Every report (`--out`, `--junit`, `--csv`, `--html`) is written to a temporary file
beside its target and renamed over it once complete, so an earlier report stays as it
was until the new one is whole: an interrupt (Ctrl-C, SIGTERM), a full disk or a kill
never leaves a cut or empty report in its place, and the temporary file is removed
when the write fails. A failed write is an `AssayError` naming the file and the
reason ("No space left on device"), never a traceback.

An interrupted run's reports hold the case runs it finished, but only where there was
no report yet: `keeps_earlier` says a report already at the target is left as it was
(the finished case runs are in the store; the same command resumes the run).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assay.errors import AssayError


def partial_path(target: Path, tag: str) -> Path:
    """The temporary file beside `target` a report is written to (hidden, named after it)."""
    return target.with_name(f".{target.name}.{tag}.partial")


def write_failed(what: str, target: Path, exc: OSError) -> AssayError:
    return AssayError(f"cannot write {what} {target}: {exc.strerror or exc}")


def remove_quietly(path: Path) -> None:
    """Remove a temporary file; a failure here must not hide the error being raised."""
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


@contextmanager
def replaced_whole(target: str | Path, what: str) -> Iterator[Path]:
    """The temporary path to write the report at `target` to; renamed over `target`
    when the block ends normally, removed when it raises (an `OSError` becomes an
    `AssayError` naming `what` and `target`)."""
    path = Path(target)
    tmp = partial_path(path, f"{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        remove_quietly(tmp)
        raise write_failed(what, path, exc) from None
    except BaseException:
        remove_quietly(tmp)
        raise


def keeps_earlier(target: str | Path | None, *, interrupted: bool) -> bool:
    """Whether an interrupted run leaves the report already at `target` as it was."""
    return interrupted and target is not None and Path(target).exists()
