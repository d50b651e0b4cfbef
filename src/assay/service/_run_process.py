"""Service runs in worker processes: the API process starts, watches and stops them.

One process per run (`run_worker`), not a pool: a run is seconds to hours of agent
calls, so an interpreter's start is noise, and a run that crashes its interpreter,
leaks memory or hogs a core takes only itself down. The API process stays the run's
owner (its executor heartbeats the run while the worker lives), so leases, takeover by
other servers and restarts work as before.

When a worker dies while its run is still RUNNING (killed, `os._exit`, a segfault),
the run is resumed by a new worker at once, skipping the case runs already stored; a
run whose workers keep dying (`MAX_DEATHS`) is marked ERROR naming how they died,
rather than crashing forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from assay.errors import AssayError
from assay.service._run_session import fail_run, interrupt_run
from assay.service.run_worker import EXIT_ORPHANED, EXIT_STORE_UNAVAILABLE, WorkerOrder
from assay.store.exceptions import StoreUnavailableError
from assay.store.schema import RunStatus

if TYPE_CHECKING:
    from assay.store import Store

logger = logging.getLogger("assay.service.runs")

MAX_DEATHS = 5
"""Worker deaths after which a run is given up (ERROR) instead of resumed again."""
STORE_POLL_S = (0.5, 5.0)
"""First and longest wait between looks at a store that cannot be reached."""
STOP_GRACE_S = 10.0
"""How long a stopping server lets a worker mark its run INTERRUPTED before killing it."""


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    if code == EXIT_ORPHANED:
        return "it lost its server"
    if code == EXIT_STORE_UNAVAILABLE:
        return "the store could not be reached"
    return f"exit status {code}"


class RunProcesses:
    """Executes runs in worker processes for one `RunExecutor`."""

    def __init__(
        self,
        store: Store,
        agent_spec: str,
        case_timeout_s: float,
        on_stored: Callable[[str, list[str]], None],
        is_lost: Callable[[str], bool],
        *,
        prices_file: str | None = None,
    ) -> None:
        self.store = store
        self.agent_spec = agent_spec
        self.case_timeout_s = case_timeout_s
        self.prices_file = prices_file
        self._on_stored = on_stored
        self._is_lost = is_lost
        self._processes: dict[str, asyncio.subprocess.Process] = {}
        self.restart_delay_s = 0.5

    def order_of(self, run_id: str) -> WorkerOrder:
        # Sent on the worker's stdin, not argv: the URL may hold a database password.
        url = self.store.engine.url.render_as_string(hide_password=False)
        return WorkerOrder(
            store_url=url,
            run_id=run_id,
            agent=self.agent_spec,
            case_timeout_s=self.case_timeout_s,
            prices_file=self.prices_file,
        )

    def pid(self, run_id: str) -> int | None:
        """The process id of the worker executing `run_id` now, if any."""
        process = self._processes.get(run_id)
        return process.pid if process is not None and process.returncode is None else None

    def kill(self, run_id: str) -> bool:
        """SIGKILL the run's worker now (callable from any thread); False if none."""
        process = self._processes.get(run_id)
        if process is None or process.returncode is not None:
            return False
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        return True

    async def execute(self, app: str, run_id: str) -> None:
        """Run `run_id` in workers until it finishes, is given up, or this task stops."""
        deaths = 0
        while True:
            code = await self._one_worker(app, run_id)
            if code == 0 or self._is_lost(run_id):
                return
            status = await self._status_once_reachable(run_id)
            if status != RunStatus.RUNNING.value or self._is_lost(run_id):
                return  # it ended (or was cancelled) before the worker died
            if code == EXIT_STORE_UNAVAILABLE:
                # Not the run's fault: the store answers again, so carry on from what
                # it holds (the worker left the run RUNNING; nothing is lost).
                logger.warning("evaluation run %s: the store is back; resuming it", run_id)
                continue
            deaths += 1
            how = describe_exit(code)
            if deaths >= MAX_DEATHS:
                logger.error("evaluation run %s: its worker died %d times", run_id, deaths)
                message = (
                    f"the run's worker process died {deaths} times (last: {how}); "
                    "the agent crashes its interpreter: fix it, then start a new run"
                )
                await asyncio.to_thread(fail_run, self.store, run_id, message)
                return
            logger.warning(
                "evaluation run %s: its worker process died (%s); resuming it", run_id, how
            )
            await asyncio.sleep(self.restart_delay_s * deaths)

    async def _status_once_reachable(self, run_id: str) -> str:
        """The run's stored status, waiting (with backoff) while the store is away."""
        wait, longest = STORE_POLL_S
        while True:
            try:
                run = await asyncio.to_thread(self.store.get_run, run_id)
            except StoreUnavailableError as exc:
                logger.warning("evaluation run %s waits for the store: %s", run_id, exc)
                await asyncio.sleep(wait)
                wait = min(wait * 2, longest)
                continue
            return run.status

    async def _one_worker(self, app: str, run_id: str) -> int:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "assay.service.run_worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        self._processes[run_id] = process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(self.order_of(run_id).model_dump_json().encode() + b"\n")
            await process.stdin.drain()
            async for line in process.stdout:
                self._announce(app, run_id, line)
            return await process.wait()
        except (ConnectionError, BrokenPipeError):
            return await process.wait()  # it died at once; the caller decides
        except asyncio.CancelledError:
            await self._stop(run_id, process)
            raise
        finally:
            self._processes.pop(run_id, None)
            process.stdin.close()

    def _announce(self, app: str, run_id: str, line: bytes) -> None:
        try:
            stored = json.loads(line).get("stored") or []
        except (ValueError, AttributeError):
            logger.warning("evaluation run %s: unreadable worker line %r", run_id, line[:200])
            return
        self._on_stored(app, [str(case_id) for case_id in stored])

    async def _stop(self, run_id: str, process: asyncio.subprocess.Process) -> None:
        """The task was cancelled: stop the worker, leaving the run resumable."""
        if self._is_lost(run_id):
            # Cancelled, deleted or taken over: its state is written elsewhere.
            self.kill(run_id)
            await process.wait()
            return
        # The server is stopping: the worker marks its run INTERRUPTED and exits.
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), STOP_GRACE_S)
        except TimeoutError:
            self.kill(run_id)
            await process.wait()
        try:
            run = await asyncio.to_thread(self.store.get_run, run_id)
            if run.status == RunStatus.RUNNING.value:
                await asyncio.to_thread(interrupt_run, self.store, run_id)
        except AssayError as exc:
            logger.warning("evaluation run %s: could not mark it interrupted: %s", run_id, exc)
