"""How often the server's processes hand the GIL between threads.

A server process runs many threads (one per request in flight, plus the store writer's)
on few cores. CPython lets a thread keep the GIL for the switch interval
(`sys.getswitchinterval()`) before one waiting for it gets a turn, and a request thread
that took the store's write turn (`assay.store._write_queue`) needs the GIL back after
every SQLite call to finish its transaction: behind a dozen busy threads each such step waited
several intervals, and every writer queued behind it waited with it. Measured with
`bench/service_load.py`, the shorter interval set here lowered p99 over all requests
at the same CPU per request (bench/README.md).
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.001


def shorten_thread_turns() -> None:
    """Set this process's switch interval to `SWITCH_INTERVAL_S` (server processes only:
    a command-line run does not need it)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
