"""Writers to one SQLite file take turns before SQLite's lock (store/_write_queue.py).

Checked here: a write transaction holds the file's turn (another process cannot take
it until the commit or rollback), the turn is given back on every way a transaction
ends, threads and processes writing at once lose no compare-and-set update, a forked
child does not inherit its parent's turn, and a writer that waits past the deadline
fails as "store unavailable" instead of hanging.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from assay.errors import StoreError
from assay.store import Store, _write_queue
from assay.store.exceptions import EtagMismatchError, StoreUnavailableError


def _url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'assay.db'}"


def _turn_is_free(lock_path: str) -> bool:
    """Whether another open file of the lock can take it now (as another process would)."""
    fd = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def test_a_write_transaction_holds_the_turn_until_it_commits(tmp_path: Path) -> None:
    with Store.open(_url(tmp_path)) as store:
        lock_path = str(tmp_path / "assay.db") + "-wlock"
        assert _turn_is_free(lock_path)
        writer = store.resources._writer
        with writer.begin() as conn:
            conn.exec_driver_sql("SELECT 1")
            assert not _turn_is_free(lock_path)
        assert _turn_is_free(lock_path)


def test_the_turn_is_given_back_when_the_transaction_fails(tmp_path: Path) -> None:
    with Store.open(_url(tmp_path)) as store:
        lock_path = str(tmp_path / "assay.db") + "-wlock"
        with pytest.raises(RuntimeError), store.resources._writer.begin() as conn:
            conn.exec_driver_sql("SELECT 1")
            raise RuntimeError("boom")
        assert _turn_is_free(lock_path)
        # A stale guarded update fails inside its transaction; the next write proceeds.
        created = store.resources.create("a", "evaluations", "e1", display_name="E", body={})
        with pytest.raises(EtagMismatchError):
            store.resources.put("a", "evaluations", "e1", display_name="E", body={}, etag="x")
        assert _turn_is_free(lock_path)
        again = store.resources.put(
            "a", "evaluations", "e1", display_name="E2", body={"n": 1}, etag=created.etag
        )
        assert again.display_name == "E2" and again.body == {"n": 1}
        assert again.etag != created.etag


def _increment(url: str, times: int, result: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """Compare-and-set increments of one counter, retried on a stale etag."""
    done = 0
    with Store.open(url) as store:
        for _ in range(times):
            while True:
                current = store.resources.get("a", "evaluations", "counter")
                assert current is not None
                try:
                    store.resources.put(
                        "a",
                        "evaluations",
                        "counter",
                        display_name="counter",
                        body={"n": current.body["n"] + 1},
                        etag=current.etag,
                    )
                except EtagMismatchError:
                    continue
                done += 1
                break
    result.put(done)


def test_threads_and_processes_writing_at_once_lose_no_update(tmp_path: Path) -> None:
    url = _url(tmp_path)
    with Store.open(url) as store:
        store.resources.create("a", "evaluations", "counter", display_name="counter", body={"n": 0})
    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_increment, args=(url, 40, results)) for _ in range(2)]
    for proc in procs:
        proc.start()
    threads = [threading.Thread(target=_increment, args=(url, 40, results)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    acknowledged = sum(results.get(timeout=10) for _ in range(6))
    assert acknowledged == 6 * 40
    with Store.open(url) as store:
        final = store.resources.get("a", "evaluations", "counter")
    assert final is not None and final.body["n"] == acknowledged


def test_a_forked_child_takes_its_own_turn(tmp_path: Path) -> None:
    """A child forked while the parent held the turn must wait for it, not share it."""
    url = _url(tmp_path)
    with Store.open(url) as store:
        store.resources.create("a", "evaluations", "e1", display_name="E", body={})
        with store.resources._writer.begin() as conn:
            conn.exec_driver_sql("SELECT 1")
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: its queue must not think it holds the turn
                os.close(read)
                queue = _write_queue.queue_for(str((tmp_path / "assay.db").resolve()), 0.2)
                queue.timeout_s = 0.2
                try:
                    queue.acquire()
                except Exception as exc:
                    os.write(write, f"waited: {exc}".encode())
                else:
                    os.write(write, b"took the parent's turn")
                os._exit(0)
            os.close(write)
            _, status = os.waitpid(pid, 0)
            answer = os.read(read, 1000).decode()
            os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert answer.startswith("waited: database is locked"), answer


def _hold_turn(url: str, ready: multiprocessing.Event, release: multiprocessing.Event) -> None:  # type: ignore[type-arg]
    with Store.open(url) as store, store.resources._writer.begin() as conn:
        conn.exec_driver_sql("SELECT 1")
        ready.set()
        release.wait(60)


def test_a_writer_waiting_past_the_deadline_fails_as_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _url(tmp_path)
    store = Store.open(url)  # opened (and migrated) before the other process holds the turn
    try:
        created = store.resources.create("a", "evaluations", "e1", display_name="E", body={})
        ctx = multiprocessing.get_context("spawn")
        ready, release = ctx.Event(), ctx.Event()
        holder = ctx.Process(target=_hold_turn, args=(url, ready, release))
        holder.start()
        try:
            assert ready.wait(60)
            queue = _write_queue.queue_for(str((tmp_path / "assay.db").resolve()), 30.0)
            monkeypatch.setattr(queue, "timeout_s", 0.3)
            with pytest.raises(StoreUnavailableError, match="database is locked") as caught:
                store.resources.put(
                    "a", "evaluations", "e1", display_name="E", body={}, etag=created.etag
                )
            assert isinstance(caught.value, StoreError)
        finally:
            release.set()
            holder.join(60)
        assert holder.exitcode == 0
    finally:
        store.close()
    # Once the holder is gone the same write goes through.
    with Store.open(url) as store:
        current = store.resources.get("a", "evaluations", "e1")
        assert current is not None
        store.resources.put("a", "evaluations", "e1", display_name="F", body={}, etag=current.etag)
