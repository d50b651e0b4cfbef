"""`RayExecutor`: a run's case runs as Ray tasks on a cluster (the `[ray]` extra).

What travels and what stays (`StagedWork`): each task runs the part of a case run that
needs nothing of this process — the agent (a golden replay, or a conversation with a
simulated user built on the worker) and the deterministic metrics; recorded data goes
in batches. The judged metrics are scored here, on the driver, as each task returns:
every judge call goes through the run's one judge pool, so the reply cache in the store
and the judges' concurrency and rate limits are the same as a local run's, and no
worker ever needs the store or the judge's credentials. The driver alone records
results (through `RunSession`), so the store's content is the same as a local run's.

At most `workers` (the run's concurrency) tasks are in flight, one per slot of the
run's scheduler (`assay.engine.schedule`); each takes `num_cpus` of the cluster. A task
that raises or whose worker dies (after Ray's retries for lost workers) fails its case
runs with the error, not the run. Cancelling the run (Ctrl-C,
SIGTERM) cancels the tasks in flight.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from assay.engine.executors.base import StagedWork
from assay.engine.schedule import Schedule
from assay.errors import AssayError, ConfigError

if TYPE_CHECKING:
    from ray import ObjectRef

JobT = TypeVar("JobT")
MidT = TypeVar("MidT")
ResultT = TypeVar("ResultT")

INSTALL_HINT = "pip install -e '.[ray]'"


def require_ray() -> None:
    """Fail now (exit 2 from the CLI) when Ray is not installed."""
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(f"--executor ray needs the ray extra: {INSTALL_HINT}")


def _check_reachable(address: str | None, label: str) -> None:
    """Fail in seconds when nothing listens at `address`: Ray itself keeps retrying a
    dead address for minutes before it gives up."""
    if address is None or address in ("auto", "local"):
        return
    where = address.removeprefix("ray://")
    host, sep, port = where.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(
            f"{label} {address!r}: expected HOST:PORT (the address `ray start --head`"
            " prints) or ray://HOST:PORT"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5.0):
            pass
    except OSError as exc:
        raise ConfigError(
            f"{label} {address}: no Ray cluster answers there ({exc.strerror or exc});"
            " start one with `ray start --head` and give the address it prints"
        ) from None


def _run_batch(payload: bytes, paths: list[str], jobs: list[Any]) -> Any:
    """The Ray task: one batch of jobs on the worker's own event loop.

    The work arrives pickled, and is unpickled only after the driver's import paths that
    exist here were added (appended: never shadowing the worker's own packages), so an
    agent the driver imported from a folder it put on `sys.path` (an ADK agent folder,
    `module:attr` run from a project folder) imports here too.
    """
    from ray import cloudpickle

    for path in paths:
        if path not in sys.path and os.path.isdir(path):
            sys.path.append(path)
    remote: Callable[[Sequence[Any]], Awaitable[list[Any]]] = cloudpickle.loads(payload)

    async def main() -> list[Any]:
        return await remote(jobs)

    return asyncio.run(main())


def _reason(exc: BaseException) -> str:
    """One line for a failed task: the agent-side exception itself when Ray wraps one."""
    from ray.exceptions import RayTaskError

    if isinstance(exc, RayTaskError) and exc.cause is not None:
        exc = exc.cause
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class _Whole:
    """A plain work function shipped whole (it must pickle, with everything it uses)."""

    def __init__(self, work: Callable[[Any], Awaitable[Any]]) -> None:
        self.work = work

    async def __call__(self, jobs: Sequence[object]) -> list[Any]:
        return [await self.work(job) for job in jobs]


async def _as_is(job: object, result: object) -> Any:
    return result


def _raise_lost(job: object, message: str) -> Any:
    raise AssayError(f"a Ray task failed: {message}")


class RayExecutor:
    """Runs a run's jobs as Ray tasks.

    `address`: the cluster to join (`ray start --head` prints it; None: `RAY_ADDRESS`,
    else a cluster started for this run on this machine and shut down after it). When
    the process already joined a cluster (`ray.init` in a notebook or a test), that one
    is used and left running. `runtime_env`: Ray's runtime environment for the workers
    (`working_dir`, `py_modules`, `pip`: see docs/scale.md). `num_cpus`: CPUs each task
    reserves (less than 1 for agents that mostly wait on the network). `max_retries`:
    Ray's retries of a task whose worker died.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        runtime_env: Mapping[str, Any] | None = None,
        num_cpus: float = 1.0,
        max_retries: int = 3,
    ) -> None:
        require_ray()
        if num_cpus <= 0:
            raise ConfigError(f"RayExecutor num_cpus must be positive, got {num_cpus}")
        if max_retries < 0:
            raise ConfigError(f"RayExecutor max_retries must be 0 or more, got {max_retries}")
        self.address = address
        self.runtime_env = dict(runtime_env) if runtime_env is not None else None
        self.num_cpus = num_cpus
        self.max_retries = max_retries

    @contextmanager
    def _cluster(self) -> Iterator[bool]:
        """The cluster to run on; yields True when it is one the caller joined before."""
        import ray

        if ray.is_initialized():
            yield True
            return
        label = "--ray-address" if self.address else "RAY_ADDRESS"
        _check_reachable(self.address or os.environ.get("RAY_ADDRESS"), label)
        # ray.init makes SIGTERM exit the process at once; keep the caller's handler (the
        # CLI's turns SIGTERM into an interrupt, so the run is marked INTERRUPTED).
        main = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGTERM) if main else None
        # No address and no RAY_ADDRESS: "local", a new cluster for this run, never one
        # that happens to run on this machine (plain ray.init() would join that one;
        # `--ray-address auto` asks for it).
        address = self.address
        if address is None and "RAY_ADDRESS" not in os.environ:
            address = "local"
        try:
            ray.init(
                address=address,
                runtime_env=self.runtime_env,
                include_dashboard=False,
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or os.environ.get("RAY_ADDRESS") or "a local cluster"
            hint = "start one with `ray start --head` and give the address it prints"
            if "RAY_AUTH_MODE" not in os.environ:
                # Ray's clusters check a token by default, and a driver that joins one
                # sends it only when told to.
                hint += (
                    "; if the cluster uses token authentication (Ray's default), set"
                    " RAY_AUTH_MODE=token (the token is ~/.ray/auth_token or RAY_AUTH_TOKEN)"
                )
            raise ConfigError(
                f"{label} {where}: cannot join the Ray cluster ({_reason(exc)}); {hint}"
            ) from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        try:
            yield False
        finally:
            ray.shutdown()

    async def run(
        self,
        jobs: Sequence[JobT],
        work: Callable[[JobT], Awaitable[ResultT]],
        done: Callable[[int, ResultT], Awaitable[None] | None],
        *,
        workers: int,
    ) -> None:
        if not jobs:
            return
        staged: StagedWork[JobT, Any, ResultT] = (
            work
            if isinstance(work, StagedWork)
            else StagedWork(remote=_Whole(work), finish=_as_is, failed=_raise_lost)
        )
        with self._cluster() as joined:
            await self._run_staged(jobs, staged, done, workers, joined=joined)

    async def _run_staged(
        self,
        jobs: Sequence[JobT],
        staged: StagedWork[JobT, MidT, ResultT],
        done: Callable[[int, ResultT], Awaitable[None] | None],
        workers: int,
        *,
        joined: bool,
    ) -> None:
        import ray
        from ray import cloudpickle

        try:
            payload: bytes = cloudpickle.dumps(staged.remote)  # type: ignore[no-untyped-call]
        except Exception as exc:  # cloudpickle raises whatever the object's reducer raises
            raise ConfigError(
                f"the run cannot be sent to Ray workers: {_reason(exc)} (the agent and the"
                " metrics must pickle; give the agent as module:attribute)"
            ) from None
        # Once into the object store: every task reads the same copy.
        payload_ref = ray.put(payload)
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        options: dict[str, Any] = {"num_cpus": self.num_cpus, "max_retries": self.max_retries}
        if joined and self.runtime_env is not None:
            # A cluster the caller joined has its own job runtime_env: add ours per task.
            options["runtime_env"] = self.runtime_env
        task = ray.remote(_run_batch).options(**options)
        size = max(1, staged.batch)
        batches = [(start, list(jobs[start : start + size])) for start in range(0, len(jobs), size)]

        async def one_batch(entry: tuple[int, list[JobT]]) -> None:
            # Each result goes to `done` as it is finished here, before the next one.
            start, batch = entry
            ref: ObjectRef[Any] = task.remote(payload_ref, paths, batch)
            try:
                mids: list[MidT] = await ref
            except asyncio.CancelledError:
                ray.cancel(ref)
                raise
            except Exception as exc:  # the task raised or its worker died
                reason = _reason(exc)
                for offset, job in enumerate(batch):
                    stored = done(start + offset, staged.failed(job, reason))
                    if stored is not None:
                        await stored
                return
            for offset, (job, mid) in enumerate(zip(batch, mids, strict=True)):
                stored = done(start + offset, await staged.finish(job, mid))
                if stored is not None:
                    await stored

        # One Ray task in flight per slot of the run's scheduler.
        await Schedule(one_batch, workers=max(1, workers)).run(batches)
