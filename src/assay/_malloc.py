"""Keep freed memory in the process for the next batch, where the C library is glibc.

A streamed run allocates and frees buffers of a few megabytes per batch (a batch's
report cases; its rows; the next batch's lines). glibc serves blocks that large with
`mmap` and unmaps them when freed, or trims the top of its heap, so each batch's
buffers are fresh pages again: a page fault for every page touched, paid in system
time by every worker. Raising the thresholds keeps them, with the same peak RSS (the
page faults before and after: bench/README.md).
"""

from __future__ import annotations

import sys

# glibc's `mallopt` parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 64 << 20
"""Blocks below this come from the heap, not `mmap` (glibc: 128 KiB, rising to at most
32 MiB as blocks are freed)."""
TRIM_THRESHOLD = 256 << 20
"""Free memory at the top of the heap kept up to this much (glibc: 128 KiB, rising)."""
TOP_PAD = 64 << 20
"""How much more than asked the heap grows by at a time (glibc: 128 KiB)."""


def keep_freed_memory() -> bool:
    """Set glibc's thresholds for the rest of this process (and the processes it forks
    after); False where there is no glibc `mallopt` (macOS, Windows) or it refused.

    For processes of assay's own (the `assay` program, its workers): the settings
    cannot be put back, so a user's process calling the Python API is left as it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(
        mallopt(parameter, value) == 1
        for parameter, value in (
            (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
            (_M_TOP_PAD, TOP_PAD),
        )
    )
