"""The one scheduler of case runs (`assay.engine.schedule`): results in file order
whatever order they finish in, a bounded read-ahead, nothing finished lost to an error
or a cancellation, never more than `workers` jobs in flight.

The order jobs finish in is set by how many times each yields to the event loop, so
every example is deterministic (no wall-clock sleeps)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.engine.executors import LocalExecutor
from assay.engine.schedule import Schedule


@dataclass
class _Log:
    """What a schedule did: jobs taken, in flight, completed and released."""

    taken: int = 0
    in_flight: int = 0
    most_in_flight: int = 0
    most_waiting: int = 0
    done: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)

    def jobs(self, yields: list[int]) -> Iterator[int]:
        """The jobs, read lazily: job i yields `yields[i]` times before it finishes."""
        for i in range(len(yields)):
            self.taken += 1
            self.most_waiting = max(self.most_waiting, self.taken - len(self.released))
            yield i


def _work(log: _Log, yields: list[int], fail: int | None = None) -> Callable[[int], Awaitable[str]]:
    async def work(job: int) -> str:
        log.in_flight += 1
        log.most_in_flight = max(log.most_in_flight, log.in_flight)
        try:
            for _ in range(yields[job]):
                await asyncio.sleep(0)
            if job == fail:
                raise RuntimeError(f"case run {job} broke")
            return f"r{job}"
        finally:
            log.in_flight -= 1

    return work


def _schedule(
    log: _Log, yields: list[int], workers: int, window: int | None, fail: int | None = None
) -> Schedule[int, str]:
    def done(i: int, result: str) -> None:
        assert result == f"r{i}"
        log.done.append(i)

    def in_order(i: int, result: str) -> None:
        assert result == f"r{i}"
        log.released.append(i)

    return Schedule(
        _work(log, yields, fail),
        workers=workers,
        done=done,
        in_order=in_order,
        window=window,
    )


@settings(max_examples=150, deadline=None)
@given(
    yields=st.lists(st.integers(0, 12), max_size=40),
    workers=st.integers(1, 6),
    extra=st.integers(0, 6),
)
def test_results_are_released_in_file_order_within_the_window(
    yields: list[int], workers: int, extra: int
) -> None:
    window = workers + extra
    log = _Log()
    asyncio.run(_schedule(log, yields, workers, window).run(log.jobs(yields)))
    n = len(yields)
    assert log.released == list(range(n))
    assert sorted(log.done) == list(range(n))  # each once, in completion order
    assert log.most_in_flight <= workers
    # A job is read only while the window has room: read minus released never passes it.
    assert log.most_waiting <= window


def test_jobs_finish_out_of_order_yet_are_released_in_order() -> None:
    # The first job is the slowest: the others complete (and are stored) before it.
    yields = [30, 1, 2, 3]
    log = _Log()
    asyncio.run(_schedule(log, yields, 4, None).run(log.jobs(yields)))
    assert log.done == [1, 2, 3, 0]
    assert log.released == [0, 1, 2, 3]
    assert log.most_in_flight == 4


def test_a_slow_first_job_stops_the_reading_once_the_window_is_full() -> None:
    async def main() -> tuple[int, list[int], list[int]]:
        gate = asyncio.Event()
        log = _Log()

        async def work(job: int) -> str:
            if job == 0:
                await gate.wait()
            await asyncio.sleep(0)
            return f"r{job}"

        schedule: Schedule[int, str] = Schedule(
            work,
            workers=2,
            done=lambda i, r: log.done.append(i),
            in_order=lambda i, r: log.released.append(i),
            window=5,
        )
        running = asyncio.create_task(schedule.run(log.jobs([0] * 100)))
        for _ in range(50):
            await asyncio.sleep(0)
        read_while_blocked = log.taken
        gate.set()
        await running
        return read_while_blocked, log.done, log.released

    read, done, released = asyncio.run(main())
    assert read == 5  # the head and four finished behind it: no more rows read
    assert done[:4] == [1, 2, 3, 4] and sorted(done) == list(range(100))
    assert released == list(range(100))


def test_a_failing_job_is_raised_as_itself_and_loses_no_finished_result() -> None:
    yields = [40, 1, 2, 3, 4, 60, 70]
    log = _Log()
    schedule = _schedule(log, yields, 3, None, fail=3)
    with pytest.raises(RuntimeError, match="case run 3 broke"):
        asyncio.run(schedule.run(log.jobs(yields)))
    # Jobs 1 and 2 finished (and went to `done`) behind the slow head; job 0 was
    # cancelled with the run. What finished is released or held, never dropped.
    assert log.done == [1, 2]
    assert log.released == []
    assert schedule.held() == [(1, "r1"), (2, "r2")]


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    yields=st.lists(st.integers(0, 12), min_size=1, max_size=30),
    workers=st.integers(1, 5),
    extra=st.integers(0, 5),
)
def test_whatever_job_fails_every_finished_result_is_released_or_held(
    data: st.DataObject, yields: list[int], workers: int, extra: int
) -> None:
    fail = data.draw(st.integers(0, len(yields) - 1), label="fail")
    log = _Log()
    schedule = _schedule(log, yields, workers, workers + extra, fail=fail)
    with pytest.raises(RuntimeError, match=f"case run {fail} broke"):
        asyncio.run(schedule.run(log.jobs(yields)))
    held = [i for i, _ in schedule.held()]
    assert fail not in log.done
    assert len(set(log.done)) == len(log.done)  # none twice
    assert log.released == list(range(len(log.released)))  # a prefix, in order
    assert sorted(log.done) == sorted(log.released + held)  # none lost
    assert held == sorted(held)


def test_a_cancelled_schedule_holds_what_finished_behind_an_unfinished_job() -> None:
    async def main() -> tuple[_Log, Schedule[int, str]]:
        gate = asyncio.Event()
        log = _Log()

        async def work(job: int) -> str:
            if job == 2:
                await gate.wait()  # never set: the run is cancelled while it waits
            await asyncio.sleep(0)
            return f"r{job}"

        schedule: Schedule[int, str] = Schedule(
            work,
            workers=3,
            done=lambda i, r: log.done.append(i),
            in_order=lambda i, r: log.released.append(i),
            window=6,
        )
        running = asyncio.create_task(schedule.run(log.jobs([0] * 20)))
        for _ in range(30):
            await asyncio.sleep(0)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        return log, schedule

    log, schedule = asyncio.run(main())
    held = [i for i, _ in schedule.held()]
    assert log.released == [0, 1]
    assert held == [3, 4, 5, 6, 7]  # the window was full: job 2 and five behind it
    # Every finished job was released or is held; the one in flight is neither.
    assert sorted(log.done) == sorted(log.released + held)
    assert 2 not in log.done


def test_an_error_reading_the_jobs_is_raised_as_itself() -> None:
    def jobs() -> Iterator[int]:
        yield 0
        yield 1
        raise ValueError("row 3: not JSON")

    log = _Log()
    with pytest.raises(ValueError, match="row 3"):
        asyncio.run(_schedule(log, [5, 5], 2, 4).run(jobs()))


@settings(max_examples=60, deadline=None)
@given(yields=st.lists(st.integers(0, 8), max_size=30), workers=st.integers(1, 5))
def test_the_local_executor_runs_every_job_once_within_its_workers(
    yields: list[int], workers: int
) -> None:
    log = _Log()
    results: dict[int, str] = {}

    def done(i: int, result: str) -> None:
        assert i not in results
        results[i] = result

    jobs = list(range(len(yields)))
    asyncio.run(LocalExecutor().run(jobs, _work(log, yields), done, workers=workers))
    assert results == {i: f"r{i}" for i in jobs}
    assert log.most_in_flight <= workers
    if yields and min(yields) > 0:  # every job awaits: all slots fill
        assert log.most_in_flight == min(workers, len(yields))


def test_bad_settings_are_refused() -> None:
    async def work(job: int) -> int:
        return job

    with pytest.raises(ValueError, match="at least one worker"):
        Schedule(work, workers=0)
    with pytest.raises(ValueError, match="window"):
        Schedule(work, workers=2, window=4)  # a window needs in_order
    with pytest.raises(ValueError, match="window"):
        Schedule(work, workers=2, in_order=lambda i, r: None, window=0)


def test_a_result_its_done_refused_is_not_released_and_the_error_is_raised() -> None:
    """`done` raising (a store refusing a result) stops the run with that error; that
    result is never released to the reports, nor held as finished."""
    released: list[int] = []

    async def work(job: int) -> int:
        await asyncio.sleep(0)
        return job

    def done(i: int, result: int) -> None:
        if i == 2:
            raise OSError("disk full")

    schedule: Schedule[int, int] = Schedule(
        work, workers=1, done=done, in_order=lambda i, r: released.append(i), window=3
    )
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(schedule.run(range(6)))
    assert released == [0, 1]
    assert schedule.held() == []


def test_a_slot_awaits_what_done_returns_before_taking_new_work() -> None:
    # A recorder storing from its writer thread hands back the durability to await: the
    # slot that finished a job takes the next only once its result is stored.
    events: list[str] = []

    async def main() -> None:
        stored: dict[int, asyncio.Future[None]] = {}

        async def work(job: int) -> int:
            events.append(f"start {job}")
            return job

        def done(index: int, result: int) -> asyncio.Future[None]:
            events.append(f"done {result}")
            stored[result] = asyncio.get_running_loop().create_future()
            return stored[result]

        async def store_later() -> None:
            for job in range(3):
                while job not in stored:
                    await asyncio.sleep(0)
                events.append(f"stored {job}")
                stored[job].set_result(None)

        await asyncio.gather(Schedule(work, workers=1, done=done).run(range(3)), store_later())

    asyncio.run(main())
    assert events == [
        "start 0", "done 0", "stored 0",
        "start 1", "done 1", "stored 1",
        "start 2", "done 2", "stored 2",
    ]  # fmt: skip
