"""Ray executor scaling: `assay eval ... --executor ray` on a 1-CPU and a 2-CPU local
cluster, against the local executor, for a CPU-bound Python callable agent.

    python bench/ray_scaling.py                     # 40 cases x ~0.4 s of CPU each
    python bench/ray_scaling.py --cases 16 --work 200000

What it does, in a temporary folder (the working directory of every command, so the
agent module is importable there and on the workers):

1. writes `cpubot.py`, an agent whose every answer costs real CPU (`--work` rounds of
   SHA-256 over the prompt; the reply is the final digest, so the expected answers are
   known), and `rows.jsonl` with `--cases` prompts and their expected replies;
2. times `assay eval rows.jsonl --agent cpubot:answer -m response_match_score --no-store
   --quiet --concurrency 4` (the local executor: one process, so one core for the
   agent) — the baseline;
3. for N in 1, 2: starts a Ray head (`ray start --head --block --num-cpus N`, its own
   ports, stopped by signalling that process, never `ray stop`, which would stop every
   Ray on the machine), times the same command with `--executor ray --ray-address
   127.0.0.1:PORT`, and checks every case passed.

Prints each wall-clock time with the load average around it, and the ratios: local ÷
Ray with N CPUs, and Ray 1 CPU ÷ Ray 2 CPUs (the scaling). Each timing includes what a
user waits for: interpreter start, joining the cluster, shipping the agent. The ratios
are the numbers to read on a shared machine; nothing is asserted about time (the
script exits non-zero only when a run did not pass every case).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = """
import hashlib

WORK = {work}


def answer(prompt):
    digest = prompt.encode()
    for _ in range(WORK):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()[:16]
"""


def _expected(prompt: str, work: int) -> str:
    digest = prompt.encode()
    for _ in range(work):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()[:16]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _eval(folder: Path, extra: list[str]) -> tuple[float, tuple[float, float]]:
    """Wall seconds of one `assay eval` and the 1-minute load average before / after."""
    command = [
        sys.executable, "-m", "assay", "eval", "rows.jsonl", "--agent", "cpubot:answer",
        "-m", "response_match_score", "--no-store", "--quiet", "--concurrency", "4", *extra,
    ]  # fmt: skip
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    # The head checks Ray's auth token (~/.ray/auth_token); a joining driver sends it
    # only in token mode.
    env = {**os.environ, "RAY_AUTH_MODE": "token"}
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "0 failed, 0 not evaluated" not in done.stdout:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed, (load_before, os.getloadavg()[0])


def _head(folder: Path, cpus: int) -> tuple[subprocess.Popen[bytes], str]:
    """A Ray head with `cpus` CPUs, its own ports; returns it and its address."""
    port = _free_port()
    ray = Path(sys.executable).with_name("ray")
    command = [
        str(ray), "start", "--head", "--block", f"--num-cpus={cpus}", f"--port={port}",
        "--include-dashboard=false", "--disable-usage-stats",
        f"--min-worker-port={port + 1}", f"--max-worker-port={port + 200}",
    ]  # fmt: skip
    head = subprocess.Popen(
        command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if head.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the Ray head did not start: {' '.join(command)}")
            time.sleep(0.5)
    time.sleep(2)  # the raylet registers with the GCS after the GCS port opens
    return head, f"127.0.0.1:{port}"


def _stop(head: subprocess.Popen[bytes], address: str) -> None:
    """Stop the head we started: `ray start --block` stops its processes on SIGTERM."""
    head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)  # its own session: only what it started
        head.wait()
    # `ray start` records its address for plain `ray.init()` calls on this machine and
    # only `ray stop` (which stops every Ray here) removes it: drop our head's record.
    current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    port = address.rsplit(":", 1)[1]
    with contextlib.suppress(OSError):
        if current.read_text(encoding="utf-8").strip().endswith(f":{port}"):
            current.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--work", type=int, default=1_000_000, help="SHA-256 rounds per answer")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-ray-bench-") as tmp:
        folder = Path(tmp)
        (folder / "cpubot.py").write_text(AGENT.format(work=args.work), encoding="utf-8")
        rows = [
            {"id": f"c{i}", "prompt": f"p{i}", "reference": _expected(f"p{i}", args.work)}
            for i in range(args.cases)
        ]
        (folder / "rows.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
        )
        per_answer = time.process_time()
        _expected("warm-up", args.work)
        per_answer = time.process_time() - per_answer
        print(f"{args.cases} cases, {per_answer * 1000:.0f} ms of CPU per answer here")
        local, local_load = _eval(folder, [])
        print(f"local executor:  {local:6.2f} s  (load {local_load[0]:.2f} -> {local_load[1]:.2f})")
        on_ray: dict[int, float] = {}
        for cpus in (1, 2):
            head, address = _head(folder, cpus)
            try:
                seconds, load = _eval(folder, ["--executor", "ray", "--ray-address", address])
            finally:
                _stop(head, address)
            on_ray[cpus] = seconds
            print(
                f"ray, {cpus} CPU{'s' if cpus > 1 else ' '}:     {seconds:6.2f} s  (load"
                f" {load[0]:.2f} -> {load[1]:.2f})  local / ray = {local / seconds:.2f}"
            )
        print(f"scaling, ray 1 CPU / ray 2 CPUs: {on_ray[1] / on_ray[2]:.2f}x")


if __name__ == "__main__":
    main()
