"""Worker processes that die with their parent.

A pool worker waits for work on a pipe its siblings also hold open, so when the
parent is killed outright (kill -9, the OOM killer) the worker never sees the pipe
close and would live on, adopted by init. Three guards, each enough on its own where
it applies:

- Linux: `PR_SET_PDEATHSIG` (prctl through ctypes) asks the kernel to SIGKILL the
  worker when the thread that forked it ends. Set only when the parent's main thread
  forked it: the signal follows that thread, not the process, so a worker forked by a
  helper thread would be killed when that thread finished.
- Everywhere: a daemon thread that looks at the parent's process id every
  `WATCH_S` seconds and ends the worker once it changed (re-parented: the parent died).
- Between batches: `check_parent` before each batch, so a worker never starts work for
  a parent that is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading

#: how often the watch thread looks at the parent's process id
WATCH_S = 0.5

_PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0)
    return False


def check_parent(parent_pid: int) -> None:
    """End this worker at once if `parent_pid` is no longer its parent."""
    if os.getppid() != parent_pid:
        os._exit(1)  # nobody is left to hand a result to


def _watch(parent_pid: int) -> None:
    stop = threading.Event()
    while not stop.wait(WATCH_S):
        check_parent(parent_pid)


def die_with_parent(parent_pid: int, *, forked_by_main_thread: bool) -> None:
    """In a freshly forked worker: die when the parent `parent_pid` dies (see the
    module docstring)."""
    if forked_by_main_thread:
        _set_pdeathsig()
    # The parent may have died before the kernel was asked: look once now.
    check_parent(parent_pid)
    threading.Thread(target=_watch, args=(parent_pid,), name="assay-parent-watch",
                     daemon=True).start()  # fmt: skip
