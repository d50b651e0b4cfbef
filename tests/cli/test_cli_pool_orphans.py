"""A streamed `assay eval rows.jsonl` killed outright (SIGKILL) takes its pool's worker
processes with it: none outlives the parent by more than a few seconds (Linux's
PR_SET_PDEATHSIG, and a parent-liveness watch everywhere: `session.parent_watch`).
SIGTERM too: the parent stops as on Ctrl-C, and its workers go with it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from assay.session.parent_watch import check_parent

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"  # a zombie has exited


def _setup(tmp_path: Path) -> list[str]:
    rows = tmp_path / "rows.jsonl"
    with rows.open("w", encoding="utf-8") as f:
        for i in range(60_000):
            f.write(json.dumps({"id": f"r{i}", "response": f"a {i}", "reference": f"a {i}"}))
            f.write("\n")
    return [
        sys.executable, "-m", "assay", "eval", str(rows), "--metric", "response_match_score",
        "--workers", "2", "--store", f"sqlite:///{tmp_path / 'assay.db'}", "--quiet",
        "--out", "results.json",
    ]  # fmt: skip


@contextmanager
def _store_turn_held(tmp_path: Path) -> Iterator[None]:
    """Hold the store's write turn (`store/_write_queue.py`): the workers wait for it
    with their first batches, so the run is still going when its parent is killed."""
    import fcntl  # POSIX only, as this file is

    fd = os.open(tmp_path / "assay.db-wlock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "term"])
def test_pool_workers_die_with_their_killed_parent(tmp_path: Path, sig: int) -> None:
    parent = subprocess.Popen(_setup(tmp_path), cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    workers: set[int] = set()
    held = contextlib.ExitStack()
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2:
            assert parent.poll() is None, "the run ended before its workers started"
            assert time.monotonic() < deadline, "the pool's workers never started"
            workers = _children(parent.pid)
            time.sleep(0.02)
        held.enter_context(_store_turn_held(tmp_path))
        assert parent.poll() is None, "the run ended before its parent could be killed"
        parent.send_signal(sig)
        if sig != signal.SIGKILL:
            held.close()  # stopping cleanly, the parent marks its run in the store
        parent.wait(timeout=120)
        deadline = time.monotonic() + 10  # "a few seconds"
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = {w for w in workers if _alive(w)}
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
        held.close()
    assert not survivors, f"pool workers {sorted(survivors)} outlived their parent"


def test_check_parent_ends_an_orphan_at_once() -> None:
    # A grandchild whose parent exits: it is re-parented and `check_parent` ends it.
    code = (
        "import os, sys, time\n"
        "from assay.session.parent_watch import check_parent\n"
        "parent = os.getpid()\n"
        "if os.fork():\n"
        "    os._exit(0)\n"
        "time.sleep(0.3)\n"
        "check_parent(parent)\n"
        "print('still here', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    time.sleep(1.0)  # the grandchild had its chance to print
    assert "still here" not in done.stdout
    check_parent(os.getppid())  # the live parent: nothing happens


def test_the_watch_thread_ends_a_worker_whose_parent_died(tmp_path: Path) -> None:
    # The portable guard alone (no PR_SET_PDEATHSIG): a grandchild blocked in a long
    # sleep, as a worker waiting for work is, ends once its parent has exited.
    pid_file = tmp_path / "worker.pid"
    code = (
        "import os, sys, time\n"
        "from assay.session.parent_watch import die_with_parent\n"
        "parent = os.getpid()\n"
        "if os.fork():\n"
        "    time.sleep(0.5)\n"
        "    os._exit(0)\n"
        "die_with_parent(parent, forked_by_main_thread=False)\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    subprocess.run([sys.executable, "-c", code], timeout=60, check=True)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.02)
    worker = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # "a few seconds"
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not _alive(worker), "the worker outlived its parent"
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)
