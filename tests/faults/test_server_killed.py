"""`assay serve` killed with SIGKILL at a random point of a run, then restarted.

Five fixed seeds each pick when to kill (before the run's worker started, mid-case,
while results are written, while evaluations are being created). A client keeps
creating evaluations meanwhile. After a restart on the same store:

- every evaluation created with a 200 is there (acknowledged writes survive);
- the run ends COMPLETED with every case run stored exactly once, and a case run
  stored before the kill was not run again;
- the killed server's run worker did not outlive it (no orphan executing the run);
- no run is left RUNNING.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import httpx
import pytest
from faults_common import (
    APP,
    assert_each_result_once,
    create_evaluations,
    golden,
    start_run,
    wait_finished,
)
from serve_process import ServeProcess, process_gone, stored_results, wait_for

from assay.store import Store
from assay.store.schema import RunStatus

AGENT = """
import asyncio, os
from assay.core.cases import Step, ToolCall, ToolResponse, Turn


async def agent(text: str) -> Turn:
    with open(os.environ["FAULT_CALLS"], "a") as out:
        out.write(f"{os.getpid()} {text}\\n")
    await asyncio.sleep(0.3)
    call = ToolCall(id="c1", name="get_weather", args={"city": "Paris"})
    reply = ToolResponse(id="c1", name="get_weather", response={"sky": "sunny"})
    return Turn(steps=[Step(tool_call=call), Step(tool_response=reply)], final_response="Sunny.")
"""
CASES = 8
SEEDS = [1, 2, 3, 4, 5]


class Creator(threading.Thread):
    """Creates evaluations until stopped; remembers the ones answered 200."""

    def __init__(self, base_url: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=base_url, timeout=5)
        self.seed = seed
        self.acknowledged: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            try:
                reply = self.http.post(f"{APP}/evaluations", json=golden(f"extra {self.seed} {n}"))
            except httpx.TransportError:
                time.sleep(0.02)  # the server is gone: nothing was acknowledged
                continue
            if reply.status_code == 200:
                self.acknowledged.append(reply.json()["name"])
            time.sleep(0.02)  # a steady client, not a load test
        self.http.close()


def _calls(folder: Path) -> list[tuple[int, str]]:
    path = folder / "calls.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(int(pid), text) for pid, text in (line.split(" ", 1) for line in lines)]


@pytest.mark.slow
def test_a_server_killed_at_random_points_loses_nothing(
    servers: list[ServeProcess], tmp_path: Path
) -> None:
    # One chain over the seeds: the server started after each kill checks that kill's
    # run and is the one killed next (an interpreter start costs seconds on a busy box).
    (tmp_path / "steady_agent.py").write_text(AGENT)
    store_url = f"sqlite:///{tmp_path / 'assay.db'}"
    env = {"FAULT_CALLS": str(tmp_path / "calls.log")}
    log = tmp_path / "server.log"
    server = ServeProcess(store_url, tmp_path, "steady_agent:agent", env=env, log=log)
    servers.append(server)
    with Store.open(store_url) as store:
        for seed in SEEDS:
            server = _kill_and_restart(seed, server, store, store_url, tmp_path, servers)
        assert not [r.id for r in store.list_runs(100) if r.status == RunStatus.RUNNING.value]


def _kill_and_restart(
    seed: int,
    server: ServeProcess,
    store: Store,
    store_url: str,
    folder: Path,
    servers: list[ServeProcess],
) -> ServeProcess:
    """One seed: run, kill at a random point, restart, check; the restarted server."""
    rng = random.Random(seed)
    evaluations = create_evaluations(server, [f"S{seed} Q{i}" for i in range(CASES)])
    run_id = start_run(server, list(evaluations))
    creator = Creator(f"http://127.0.0.1:{server.port}", seed)
    creator.start()
    time.sleep(rng.uniform(0.0, 3.0))
    workers = server.run_workers()
    server.kill()
    creator.stop.set()
    creator.join(timeout=30)
    before = {case for case, _ in stored_results(store, run_id)}
    # The worker follows its server (lifeline pipe), so nothing executes the run while
    # no server owns it.
    for pid in workers:
        wait_for(lambda pid=pid: process_gone(pid), f"seed {seed}: run worker {pid} to exit", 30)
    env = {"FAULT_CALLS": str(folder / "calls.log")}
    restarted = ServeProcess(
        store_url, folder, "steady_agent:agent", env=env, log=folder / "server.log"
    )
    servers.append(restarted)
    run = wait_finished(restarted, run_id)
    assert run["state"] == "COMPLETED", (seed, run)
    assert_each_result_once(store, run_id, {(eid, 0) for eid in evaluations})
    made = [text for _pid, text in _calls(folder)]
    for case in before:
        assert made.count(evaluations[case]) == 1, (seed, evaluations[case], made)
    for name in creator.acknowledged:
        reply = restarted.http.get(f"/v1/{name}")
        assert reply.status_code == 200, (seed, name, reply.text)
    return restarted
