"""A run-worker process: executes one service run, so the API process only supervises.

`assay serve` starts one per run (`python -m assay.service.run_worker`, see
`_run_process.RunProcesses`). The parent writes one JSON line (`WorkerOrder`) on the
child's stdin and keeps the pipe open: it is the child's lifeline. When the parent goes
away (killed with SIGKILL included) the pipe reaches end of file and the child exits at
once, so a run is never executed by an orphan while another server takes it over.

The child opens the store, loads the agent from its spec, and drives the same
`RunSession` the in-process executor does (`_run_session.run_session`), continuing the
stored run: case runs already stored are skipped. It announces each stored result on a
private copy of its stdout as one JSON line `{"stored": [case ids]}`; the agent's own
prints go to stderr (the server's log) instead, so they cannot garble that channel.

SIGTERM (the server stopping) cancels the run: it ends INTERRUPTED, to be resumed. Any
error is recorded on the run (ERROR) and the child exits 0; a non-zero exit means the
process died (a signal, `os._exit`, an interpreter crash) and the parent decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from typing import IO

from pydantic import BaseModel, ConfigDict

from assay.service._threads import shorten_thread_turns

EXIT_ORPHANED = 70
"""Exit status when the parent went away (the lifeline pipe closed)."""
EXIT_STORE_UNAVAILABLE = 75
"""Exit status when the store could not be reached: the run is left as stored (RUNNING)
for the parent to resume once the store answers again (EX_TEMPFAIL)."""


class StoreWentAway(Exception):
    """The run stopped because its store could not be reached (see EXIT_STORE_UNAVAILABLE)."""


logger = logging.getLogger("assay.service.run_worker")


class WorkerOrder(BaseModel):
    """What the parent tells a run worker (one JSON line on its stdin)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store_url: str
    run_id: str
    agent: str
    case_timeout_s: float | None = None
    #: the server's `--prices FILE` (None: the shipped price table)
    prices_file: str | None = None


def _watch_lifeline(stdin: IO[bytes]) -> None:
    # Blocks until the parent closes the pipe or dies; a daemon thread, so the GIL's
    # switch interval lets it run even while the agent hogs the interpreter.
    for _line in stdin:
        pass
    os._exit(EXIT_ORPHANED)


async def _run(order: WorkerOrder, announce: IO[str]) -> None:
    from assay.store.exceptions import store_unavailable

    try:
        await _execute(order, announce)
    except Exception as exc:
        if store_unavailable(exc):
            logger.warning("evaluation run %s paused: %s", order.run_id, exc)
            raise StoreWentAway(str(exc)) from None
        raise


async def _execute(order: WorkerOrder, announce: IO[str]) -> None:
    from assay.agents.loader import load_agent
    from assay.service._run_session import fail_run, interrupt_run, run_session
    from assay.service.settings import ServiceRunSettings
    from assay.store import Store
    from assay.store.exceptions import store_unavailable

    def on_stored(case_ids: list[str]) -> None:
        announce.write(json.dumps({"stored": case_ids}) + "\n")
        announce.flush()

    store = await asyncio.to_thread(Store.open, order.store_url)
    try:
        run = await asyncio.to_thread(store.get_run, order.run_id)
        session = None
        try:
            settings = ServiceRunSettings.of_run(run)
            agent = load_agent(order.agent)
            session = run_session(
                store,
                run,
                settings,
                agent,
                on_stored,
                timeout_s=order.case_timeout_s,
                prices_file=order.prices_file,
            )
            await session.arun()
        except asyncio.CancelledError:
            if session is None or not session.opened:  # else the session marked it
                await asyncio.to_thread(interrupt_run, store, order.run_id)
        except Exception as exc:  # recorded on the run; the server keeps going
            if store_unavailable(exc):
                raise  # left RUNNING for the server to resume (see EXIT_STORE_UNAVAILABLE)
            logger.exception("evaluation run %s failed", order.run_id)
            if session is None or not session.opened:  # else the session marked it ERROR
                await asyncio.to_thread(
                    fail_run, store, order.run_id, f"{type(exc).__name__}: {exc}"
                )
    finally:
        await asyncio.to_thread(store.close)


def _exit_status(task: asyncio.Future[None]) -> int:
    return EXIT_STORE_UNAVAILABLE if isinstance(task.exception(), StoreWentAway) else 0


async def _main_async(order: WorkerOrder, announce: IO[str]) -> int:
    task = asyncio.ensure_future(_run(order, announce))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    with contextlib.suppress(asyncio.CancelledError, StoreWentAway):
        await task
    return 0 if task.cancelled() else _exit_status(task)


def main() -> None:
    """Entry point of `python -m assay.service.run_worker` (started by the server)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # Ctrl-C in the server's terminal reaches this process too (same process group); the
    # server decides how its runs stop (SIGTERM, see `_run_process`), not the keyboard.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Its store writer thread holds the write turn shared with the API workers.
    shorten_thread_turns()
    line = sys.stdin.buffer.readline()
    order = WorkerOrder.model_validate_json(line)
    # The announcements get a private copy of stdout; fd 1 becomes stderr, so whatever
    # the agent prints lands in the server's log, not in the parent's JSON stream.
    announce = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    threading.Thread(
        target=_watch_lifeline, args=(sys.stdin.buffer,), name="lifeline", daemon=True
    ).start()
    status = asyncio.run(_main_async(order, announce))
    announce.close()
    logging.shutdown()
    # Not sys.exit: finalising the interpreter while the lifeline thread blocks reading
    # stdin aborts it ("could not acquire lock for <stdin>"). Everything is written.
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
