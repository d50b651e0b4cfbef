"""`assay serve` as a user starts it: `python -m assay serve` in a subprocess on loopback.

Its stdout and stderr (uvicorn's access log included) go to a file the test reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from serve_process import free_port


class CliServe:
    """`assay serve --store STORE --port PORT [ARGS]`, logging into `log`."""

    def __init__(self, store: str, log: Path, *args: str, cwd: Path | None = None) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = log
        out = log.open("ab")
        # The server runs in `cwd`: the test's import path, made absolute, is its own.
        path = os.pathsep.join(os.path.abspath(p) for p in sys.path if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "assay", "serve", "--store", store,
             "--port", str(self.port), *args],
            env={**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"},
            stdout=out, stderr=out, cwd=cwd,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{self.base_url}/openapi.json", timeout=5)
                return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)

    def peak_rss_bytes(self) -> int:
        """The server's peak resident memory so far (VmHWM)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
