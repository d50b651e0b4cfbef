"""`assay._malloc.keep_freed_memory`: where the C library is glibc, a buffer of tens of
megabytes freed and allocated again reuses the process's pages instead of faulting in
fresh ones each time (what a streamed run's batches do)."""

from __future__ import annotations

import subprocess
import sys

import pytest

_FAULTS = """
import resource, sys
from assay._malloc import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "keep" else None
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    buffer = bytearray(40 << 20)  # written whole: every page touched
    del buffer
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True
    )
    applied, faults = done.stdout.split()
    return applied, int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_buffers_are_reused_not_faulted_in_again() -> None:
    applied, kept = _faults("keep")
    assert applied == "True"
    _, default = _faults("default")
    pages = (40 << 20) // 4096
    # glibc's default maps a 40 MB buffer afresh each time: ~20 x 10,240 faults.
    assert default > 10 * pages
    # Kept: the first buffer's pages, then the same pages again.
    assert kept < 3 * pages


def test_elsewhere_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay import _malloc

    monkeypatch.setattr(_malloc.sys, "platform", "darwin")
    assert _malloc.keep_freed_memory() is False
