"""Service load: REST reads and guarded writes while an evaluation run writes results.

    python bench/service_load.py                      # 30 s, 32 clients, 1 process
    python bench/service_load.py --workers 2          # assay serve --workers 2
    python bench/service_load.py --seconds 10 --clients 16 --evaluations 100

1. Starts `assay serve --workers N` as a user does (API keys on) on 127.0.0.1, over a
   SQLite store in a temporary directory, with a callable agent that sleeps
   `--agent-ms` per turn.
2. Creates `--evaluations` golden evaluations and starts one run over all of them
   (`runCount` large enough to keep writing results for the whole load).
3. Runs `--clients` concurrent httpx clients for `--seconds`: each loops over
   get (50 %, an evaluation with its aggregated metrics), list (25 %, a page of 20
   evaluations) and update (25 %, PATCH description of one of 8 "hot" evaluations
   with the etag it read). An update answered 409 ABORTED (another client changed the
   evaluation since it was read) re-reads and retries: those conflicts are counted
   separately, they are the etag check doing its job. Any other non-2xx answer or
   exception is an error.
4. Prints requests/s, p50/p99 latency per operation, the server's CPU time per request
   (all its processes, from /proc; the run's work included), errors (must be 0),
   conflicts, and how many results the run stored during the load. Exits 1 if there
   were errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

HOT_SET = 8


AGENT = """
import asyncio, os

DELAY_S = float(os.environ.get("BENCH_AGENT_S", "0.02"))


async def agent(text: str, state=None) -> dict:
    await asyncio.sleep(DELAY_S)
    return {
        "response": "Sunny.",
        "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
    }
"""


def _server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of the server process and its worker processes."""
    pids = [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
    ticks = 0
    for each in pids:
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _golden(i: int) -> dict[str, Any]:
    return {
        "displayName": f"weather {i}",
        "tags": ["bench"],
        "golden": {
            "turns": [
                {
                    "steps": [
                        {"userInput": {"text": f"Weather in Paris? ({i})"}},
                        {
                            "expectation": {
                                "toolCall": {"tool": "get_weather", "args": {"city": "Paris"}}
                            }
                        },
                    ]
                }
            ]
        },
    }


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.conflicts = 0

    def timed(self, op: str, started: float) -> None:
        self.latency[op].append(time.perf_counter() - started)


class Conn:
    """One kept-alive HTTP/1.1 connection, as lean as a client can be in Python.

    httpx costs ~2-5 ms of CPU per request; 32 of them in one process saturate a core
    before the server does, and the bench would measure the client. This one writes the
    request bytes and reads the answer by Content-Length (the server never chunks JSON).
    """

    def __init__(self, host: str, port: int, key: str) -> None:
        self.host, self.port = host, port
        self.auth = f"Authorization: Bearer {key}\r\n".encode()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode() if body is not None else b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        ).encode()
        self.writer.write(head + self.auth + b"\r\n" + payload)
        try:
            header = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            self.writer = None
            raise
        status = int(header[9:12])
        length = 0
        for line in header.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _client(conn: Conn, names: list[str], stop_at: float, stats: Stats, seed: int) -> None:
    rng = random.Random(seed)
    while time.monotonic() < stop_at:
        pick = rng.random()
        try:
            if pick < 0.5:
                await _get(conn, rng.choice(names), stats)
            elif pick < 0.75:
                started = time.perf_counter()
                reply = await conn.request("GET", "/v1/apps/bench/evaluations?pageSize=20")
                stats.timed("list", started)
                _check(reply, "list", stats)
            else:
                await _update(conn, rng.choice(names[:HOT_SET]), rng, stats)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            stats.errors.append(f"{type(exc).__name__}: {exc}")


async def _get(conn: Conn, name: str, stats: Stats) -> dict[str, Any] | None:
    started = time.perf_counter()
    reply = await conn.request("GET", f"/v1/{name}")
    stats.timed("get", started)
    return json.loads(reply[1]) if _check(reply, "get", stats) else None


async def _update(conn: Conn, name: str, rng: random.Random, stats: Stats) -> None:
    for _attempt in range(50):
        current = await _get(conn, name, stats)
        if current is None:
            return
        started = time.perf_counter()
        reply = await conn.request(
            "PATCH",
            f"/v1/{name}?updateMask=description",
            {"description": f"edit {rng.random():.6f}", "etag": current["etag"]},
        )
        stats.timed("update", started)
        if reply[0] == 409:
            stats.conflicts += 1
            continue
        _check(reply, "update", stats)
        return
    stats.errors.append(f"update of {name} kept conflicting")


def _check(reply: tuple[int, bytes], op: str, stats: Stats) -> bool:
    if 200 <= reply[0] < 300:
        return True
    stats.errors.append(f"{op}: HTTP {reply[0]} {reply[1][:200]!r}")
    return False


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _load(base: str, key: str, args: argparse.Namespace, server_pid: int) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=args.clients + 4)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60, limits=limits) as http:
        names = []
        for i in range(args.evaluations):
            reply = await http.post("/v1/apps/bench/evaluations", json=_golden(i))
            reply.raise_for_status()
            names.append(reply.json()["name"])
        op = await http.post(
            "/v1/apps/bench/evaluations:run",
            json={"evaluations": names, "runCount": args.run_count, "appVersion": "bench"},
        )
        op.raise_for_status()
        run = op.json()["metadata"]["evaluationRun"]
        await asyncio.sleep(1.0)  # let the run get going
        before = (await http.get(f"/v1/{run}")).json()["progress"]
        stats = Stats()
        port = int(base.rsplit(":", 1)[1])
        conns = [Conn("127.0.0.1", port, key) for _ in range(args.clients)]
        cpu_before = _server_cpu_s(server_pid)
        client_before = time.process_time()
        started = time.monotonic()
        stop_at = started + args.seconds
        await asyncio.gather(
            *(_client(c, names, stop_at, stats, seed) for seed, c in enumerate(conns))
        )
        elapsed = time.monotonic() - started
        server_cpu = _server_cpu_s(server_pid) - cpu_before
        client_cpu = time.process_time() - client_before
        for conn in conns:
            conn.close()
        after = (await http.get(f"/v1/{run}")).json()
    written = after["progress"]["completedCount"] - before["completedCount"]
    total = sum(len(v) for v in stats.latency.values())
    print(
        f"{args.clients} clients, {elapsed:.1f} s, {args.evaluations} evaluations, "
        f"assay serve --workers {args.workers}"
    )
    print(f"requests: {total} ({total / elapsed:.0f}/s)")
    print(
        f"server CPU: {server_cpu:.1f} s = {server_cpu / max(total, 1) * 1000:.2f} ms per request"
        " (including the run writing results)"
    )
    print(f"client CPU: {client_cpu:.1f} s ({client_cpu / elapsed:.0%} of a core)")
    print(f"{'op':<8}{'count':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for op_name in ("get", "list", "update"):
        values = stats.latency.get(op_name, [])
        if values:
            print(
                f"{op_name:<8}{len(values):>8}{len(values) / elapsed:>9.0f}"
                f"{statistics.median(values) * 1000:>9.1f}{_percentile(values, 0.99) * 1000:>9.1f}"
            )
    print(f"errors: {len(stats.errors)}")
    for message in stats.errors[:10]:
        print(f"  {message}")
    print(f"etag conflicts (409, retried): {stats.conflicts}")
    print(
        f"results written during the load: {written} "
        f"({written / elapsed:.0f}/s; run {after['state']}, "
        f"{after['progress']['completedCount']}/{after['progress']['totalCount']})"
    )
    return 1 if stats.errors else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--evaluations", type=int, default=200)
    parser.add_argument("--run-count", type=int, default=50)
    parser.add_argument("--agent-ms", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=1, help="assay serve --workers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'assay.db'}"
        (Path(tmp) / "bench_agent.py").write_text(AGENT)
        created = subprocess.run(
            [sys.executable, "-m", "assay", "keys", "create", "--name", "bench", "--store", url],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        key = created.stdout.strip()
        port = _free_port()
        env = {
            **os.environ,
            "PYTHONPATH": f"{tmp}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "BENCH_AGENT_S": str(args.agent_ms / 1000),
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "assay", "serve", "--store", url, "--port", str(port),
             "--agent", "bench_agent:agent", "--log-level", "warning",
             *(["--workers", str(args.workers)] if args.workers > 1 else [])],
            env=env, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{base}/openapi.json").is_success:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print("the server did not start", file=sys.stderr)
                return 2
            time.sleep(0.1)
        try:
            return asyncio.run(_load(base, key, args, server.pid))
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    sys.exit(main())
