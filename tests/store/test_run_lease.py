"""Run ownership (`store.lease`): a run held by a live process is never resumed by
another; one whose owner is gone (dead process on this host, lease run out elsewhere)
is, and of several processes claiming it exactly one wins. SQLite and PostgreSQL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from assay.session.resume import find_resumable
from assay.store import Store
from assay.store.lease import LeaseKeeper, Owner, owner_alive, this_process
from assay.store.types import utcnow

IDENTITY = {
    "eval_set_ids": ["rows"],
    "metrics": ["exact_match"],
    "config": {"criteria": {"exact_match": 1.0}},
    "agent": "bot:answer",
}


def _start(store: Store, owner: str | None, lease_s: float | None = 60.0) -> str:
    return store.start_run(**IDENTITY, runs=1, owner=owner, lease_s=lease_s)


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


def test_a_run_held_by_a_live_process_is_not_resumed(store: Store) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = Owner(socket.gethostname(), sleeper.pid, "", "other")
        run_id = _start(store, str(live))
        assert owner_alive(store.get_run(run_id))
        busy: list = []
        assert find_resumable(store, **IDENTITY, busy=busy) is None
        assert [r.id for r in busy] == [run_id]
    finally:
        sleeper.kill()
        sleeper.wait()
    # its owner died (as after kill -9): free at once, lease or not
    assert not owner_alive(store.get_run(run_id))
    found = find_resumable(store, **IDENTITY)
    assert found is not None and found.id == run_id


def test_a_dead_or_recycled_process_id_frees_the_run(store: Store) -> None:
    dead = _start(store, str(Owner(socket.gethostname(), _dead_pid(), "", "gone")))
    assert not owner_alive(store.get_run(dead))
    # a live process id whose start time is not the owner's: the id was recycled
    recycled = Owner(socket.gethostname(), os.getppid(), "1", "old")
    assert not owner_alive(store.get_run(_start(store, str(recycled))))


def test_another_hosts_run_is_held_until_its_lease_runs_out(store: Store) -> None:
    elsewhere = str(Owner("some-other-host.example", 4242, "99", "x"))
    held = _start(store, elsewhere, lease_s=60.0)
    assert owner_alive(store.get_run(held))
    assert find_resumable(store, **IDENTITY) is None
    later = utcnow() + timedelta(seconds=61)
    assert not owner_alive(store.get_run(held), now=later)
    expired = _start(store, elsewhere, lease_s=0.001)
    time.sleep(0.01)
    found = find_resumable(store, **IDENTITY)
    assert found is not None and found.id == expired  # the newest free one


def test_finished_and_interrupted_runs_are_free(store: Store) -> None:
    me = str(this_process())
    run_id = _start(store, me)
    store.finish_run(run_id, summary={}, status="INTERRUPTED")
    run = store.get_run(run_id)
    assert run.lease_until is None and not owner_alive(run)


def test_of_two_claims_of_one_run_exactly_one_wins(store: Store) -> None:
    run_id = _start(store, str(Owner(socket.gethostname(), _dead_pid(), "", "gone")))
    seen = store.get_run(run_id)
    wins: list[bool] = []
    barrier = threading.Barrier(4)

    def claim(i: int) -> None:
        barrier.wait()
        wins.append(store.claim_run(run_id, owner=f"h/{i}/1/t", lease_s=60.0, seen=seen))

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False, False, False, True]
    run = store.get_run(run_id)
    assert run.status == "RUNNING" and run.owner is not None and run.owner.startswith("h/")


def test_the_keeper_renews_the_lease_and_stops_when_the_run_is_taken(store: Store) -> None:
    me = this_process()
    run_id = _start(store, str(me), lease_s=0.2)
    first = store.get_run(run_id).lease_until
    keeper = LeaseKeeper(store, run_id, me, lease_s=0.2).start()
    try:
        assert owner_alive(store.get_run(run_id))  # this process holds it
        deadline = time.monotonic() + 30
        while store.get_run(run_id).lease_until == first:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.02)
        # another process takes the run over: the keeper notices and stops renewing
        assert store.claim_run(run_id, owner="elsewhere/1/1/t", lease_s=60.0)
        while keeper._thread.is_alive():
            assert time.monotonic() < deadline, "the keeper went on renewing"
            time.sleep(0.02)
        assert keeper.lost
    finally:
        keeper.stop()
    assert not owner_alive(store.get_run(run_id), now=utcnow() + timedelta(seconds=61))


@given(host=st.text(min_size=1, max_size=40), pid=st.integers(0, 2**22),
       started=st.text(alphabet="0123456789", max_size=12), tag=st.text(max_size=8).filter(
           lambda t: "/" not in t))  # fmt: skip
def test_an_owner_reads_back_as_written(host: str, pid: int, started: str, tag: str) -> None:
    owner = Owner(host, pid, started, tag)
    assert Owner.parse(str(owner)) == owner


_SLASHED = st.lists(st.text(max_size=8), min_size=4, max_size=5).map("/".join)


@given(st.one_of(st.text(max_size=60), _SLASHED))
def test_any_stored_owner_text_parses_or_is_none(text: str) -> None:
    parsed = Owner.parse(text)  # never raises, whatever a store holds
    assert parsed is None or Owner.parse(str(parsed)) == parsed
    assert Owner.parse("host/²/1/t") is None  # a digit, but not a process id
