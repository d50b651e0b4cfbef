"""Run ownership: which process executes a run, and whether it still does.

A run being executed carries its owner — this host, this process id, the process's
start time (so a recycled process id is not mistaken for the owner) and a random tag —
and a lease: a time until which the owner holds the run. `LeaseKeeper` renews the
lease from a thread every quarter of its length while the run goes on; finishing the
run (completed, interrupted, error) lets it go. `owner_alive` tells whether another
process may still be executing a stored run: a process on this host is asked directly
(a dead one frees its run at once, as after `kill -9`); one on another host holds the
run until its lease runs out.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from assay.errors import StoreError
from assay.store.schema import RunStatus
from assay.store.types import utcnow

if TYPE_CHECKING:
    from assay.store.runs import RunInfo
    from assay.store.store import Store

logger = logging.getLogger("assay.store.lease")

#: how long a run stays held without a heartbeat (renewed every quarter of it)
LEASE_S = 60.0


@dataclass(frozen=True, slots=True)
class Owner:
    """A process that executes a run (`str()` is what the store keeps)."""

    host: str
    pid: int
    started: str  # the process's start time as the kernel counts it ("" if unknown)
    tag: str

    def __str__(self) -> str:
        return f"{self.host}/{self.pid}/{self.started}/{self.tag}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        parts = text.rsplit("/", 3)
        if len(parts) != 4 or not (parts[1].isascii() and parts[1].isdigit()):
            return None
        return cls(parts[0], int(parts[1]), parts[2], parts[3])

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), "" where /proc is
    missing, None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else ""
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: fields after its ")".
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else ""


def pid_alive(pid: int) -> bool:
    """Whether a process of that id exists on this host (one of another user's too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_tag = secrets.token_hex(4)


def this_process() -> Owner:
    """The owner record of the calling process."""
    pid = os.getpid()
    return Owner(socket.gethostname(), pid, _start_time(pid) or "", _tag)


# Runs whose lease a `LeaseKeeper` of this process renews right now.
_held: set[str] = set()
_held_lock = threading.Lock()


def process_alive(owner: Owner, run_id: str) -> bool | None:
    """Whether the owner process still executes the run: None when it is on another host."""
    if owner.host != socket.gethostname():
        return None
    if owner.pid == os.getpid():
        # This process: only while a keeper holds the run (a session that gave up on a
        # store outage left it RUNNING for anyone, this process included, to resume).
        with _held_lock:
            return owner.tag == _tag and run_id in _held
    if not pid_alive(owner.pid):
        return False
    started = _start_time(owner.pid)
    if started is None:
        return False
    return not (owner.started and started and started != owner.started)


def owner_alive(run: RunInfo, now: datetime | None = None) -> bool:
    """Whether a stored run may still be executing in another process (its owner lives).

    Only RUNNING runs with a lease have an owner; an INTERRUPTED, finished or unleased
    run (written before leases, or by a process that ended) is free.
    """
    if run.status != RunStatus.RUNNING.value or run.owner is None or run.lease_until is None:
        return False
    owner = Owner.parse(run.owner)
    alive = process_alive(owner, run.id) if owner is not None else None
    if alive is not None:
        return alive
    return (now or utcnow()) < run.lease_until


def describe_owner(run: RunInfo) -> str:
    owner = Owner.parse(run.owner or "")
    return owner.describe() if owner is not None else "another process"


class LeaseKeeper:
    """Renews a run's lease from a daemon thread until `stop` (see the module docstring)."""

    def __init__(self, store: Store, run_id: str, owner: Owner, lease_s: float = LEASE_S) -> None:
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self.lease_s = lease_s
        self.lost = False  # another process claimed the run (our lease ran out)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"assay-lease-{run_id}", daemon=True
        )

    def start(self) -> LeaseKeeper:
        with _held_lock:
            _held.add(self.run_id)
        self._thread.start()
        return self

    def stop(self) -> None:
        with _held_lock:
            _held.discard(self.run_id)
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                held = self.store.renew_lease(self.run_id, str(self.owner), self.lease_s)
            except StoreError as exc:  # the store is down for now: try at the next beat
                logger.warning("could not renew the lease of run %s: %s", self.run_id, exc)
                continue
            if not held:
                self.lost = True
                with _held_lock:
                    _held.discard(self.run_id)
                return


def lease_expiry(lease_s: float) -> datetime:
    return utcnow() + timedelta(seconds=lease_s)
