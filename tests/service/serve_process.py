"""A real `assay serve` in a subprocess, its run-worker processes, and store checks.

Shared by tests/service/test_run_workers.py and the fault-injection suite
(tests/faults/): the server runs the agent module written into `folder`, on
`store_url`, without auth on a free loopback port, with a short run lease.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from assay.store import Store

SERVE = (
    "import typer; from assay.cli.serve import serve_command; "
    "app = typer.Typer(); app.command()(serve_command); app()"
)
WORKER_MODULE = b"assay.service.run_worker"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServeProcess:
    """`assay serve --agent AGENT` in a subprocess; `http` is a client on it."""

    def __init__(
        self,
        store_url: str,
        folder: Path,
        agent: str,
        *,
        lease_s: float = 2.0,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.port = free_port()
        environment = {
            **os.environ,
            **(env or {}),
            "PYTHONPATH": f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        out = log.open("ab") if log is not None else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVE, "--store", store_url, "--no-auth",
             "--port", str(self.port), "--agent", agent,
             "--run-lease", str(lease_s), "--log-level", "warning", *extra],
            env=environment, stdout=out, stderr=out, cwd=folder,
        )  # fmt: skip
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.http.get("/openapi.json").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None, "the server exited at start-up"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)

    def run_workers(self) -> list[int]:
        """Process ids of this server's run workers (its children running one)."""
        return [pid for pid in children(self.process.pid) if _is_run_worker(pid)]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.http.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self.http.close()


def children(pid: int) -> list[int]:
    """Live child processes of `pid` (from /proc; every thread's children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after its ")".
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _is_run_worker(pid: int) -> bool:
    try:
        return WORKER_MODULE in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def process_gone(pid: int) -> bool:
    """Whether `pid` exited (a zombie counts as gone: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def stored_results(store: Store, run_id: str) -> list[tuple[str, int]]:
    """(case id, run index) of every case result stored for the run, duplicates kept."""
    return [(d["case_id"], d["run_index"]) for d in store.case_results(run_id)]


def wait_for(predicate: object, what: str, timeout_s: float = 120.0) -> None:
    """Poll `predicate()` until true; fail naming `what` after `timeout_s`."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
