"""Writers to one SQLite file take turns here before they ask SQLite for its write lock.

SQLite has one write lock per file. A writer that finds it taken waits in SQLite's busy
handler, which sleeps in growing steps (1, 2, 5, ... up to 100 ms) and looks again: a
writer that has waited a while sleeps 100 ms at a time while newer writers, still in
their short first sleeps, take the lock before it. Under a steady stream of writes (the
service's guarded updates from several API workers plus a run writing its results) a
few writers waited seconds for a lock that was free most of the time.

Here each process lines its writers up on a lock of its own (a `threading.Lock`: a
waiting thread is woken as soon as it is released), and the processes sharing the file
take turns on an advisory `flock` of a small file next to it (`assay.db-wlock`), looked
at every few hundred microseconds; only then is `BEGIN IMMEDIATE` issued, and it finds
the SQLite lock free unless a writer outside assay holds it (then the busy handler
waits, as before). The turn ends when the transaction commits or rolls back, or the
connection closes. The deadline is SQLite's busy timeout: a writer that waits longer
fails with SQLite's own "database is locked", which the store reports as unavailable
(503 with Retry-After in the service).

The lock file only orders writers; it holds no data and may be deleted while nothing
writes. Where `flock` does not exist (Windows) processes fall back to SQLite's busy
handler; threads still queue.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

# How often a process waiting for another process's turn looks again (seconds): short
# enough that a free lock is taken within a fraction of a typical write.
_POLL_FIRST_S = 0.0002
_POLL_MAX_S = 0.002


class WriteQueue:
    """The turn-taking for one SQLite file, shared by the connections of one engine."""

    def __init__(self, database: str, timeout_s: float) -> None:
        self.lock_path = database + "-wlock"
        self.timeout_s = timeout_s
        self._pid = -1
        self._thread_lock = threading.Lock()
        self._fd: int | None = None

    def _for_this_process(self) -> None:
        # After a fork the child must not share the parent's lock state: a thread lock
        # taken in the parent at fork time would never be released in the child, and a
        # flock belongs to the open file, which a forked child shares with its parent.
        pid = os.getpid()
        if pid != self._pid:
            self._thread_lock = threading.Lock()
            self._fd = None
            self._pid = pid

    def acquire(self) -> None:
        """Wait for this writer's turn; raise SQLite's 'database is locked' past the
        deadline."""
        self._for_this_process()
        deadline = time.monotonic() + self.timeout_s
        if not self._thread_lock.acquire(timeout=self.timeout_s):
            raise sqlite3.OperationalError("database is locked (waited for this process's writers)")
        try:
            self._lock_file(deadline)
        except BaseException:
            self._thread_lock.release()
            raise

    def release(self) -> None:
        fd = self._fd
        if fd is not None and fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
        self._thread_lock.release()

    def _lock_file(self, deadline: float) -> None:
        if fcntl is None:
            return
        if self._fd is None:
            try:
                self._fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                return  # a read-only folder: SQLite's busy handler orders the processes
        pause = _POLL_FIRST_S
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            if time.monotonic() > deadline:
                raise sqlite3.OperationalError(
                    "database is locked (another process kept its write turn)"
                )
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX_S)


class QueuedConnection(sqlite3.Connection):
    """A sqlite3 connection that gives its writer's turn back when its transaction ends."""

    write_queue: WriteQueue | None = None
    holds_turn: bool = False

    def take_turn(self) -> None:
        queue = self.write_queue
        if queue is not None and not self.holds_turn:
            queue.acquire()
            self.holds_turn = True

    def give_turn(self) -> None:
        if self.holds_turn:
            self.holds_turn = False
            assert self.write_queue is not None
            self.write_queue.release()

    def commit(self) -> None:
        try:
            super().commit()
        finally:
            self.give_turn()

    def rollback(self) -> None:
        try:
            super().rollback()
        finally:
            self.give_turn()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.give_turn()


_QUEUES: dict[str, WriteQueue] = {}
_QUEUES_LOCK = threading.Lock()


def queue_for(database: str, timeout_s: float) -> WriteQueue:
    """The process's one queue for the SQLite file at `database` (an absolute path), so
    that two engines on the same file (two `Store`s) also line their writers up."""
    with _QUEUES_LOCK:
        queue = _QUEUES.get(database)
        if queue is None:
            queue = _QUEUES[database] = WriteQueue(database, timeout_s)
        return queue


def attach(dbapi_connection: object, queue: WriteQueue) -> None:
    if isinstance(dbapi_connection, QueuedConnection):
        dbapi_connection.write_queue = queue
