"""Service load: REST reads and guarded writes while an evaluation run writes results.

    python bench/service_load.py                          # workers 1 and 2, 1 and 32 clients
    python bench/service_load.py --baseline 111462b       # the same against an older commit
    python bench/service_load.py --workers 2 --clients 32 --seconds 30
    python bench/service_load.py --baseline 111462b --workers 1 --clients   # CPU probe only

For each server (this checkout, and with `--baseline REV` the code of that commit, taken
with `git archive` into a temporary folder and run from there) and each `--workers N`:

1. Starts `assay serve --workers N` as a user does (API keys on) on 127.0.0.1, over a
   SQLite store in a temporary directory, with a callable agent that sleeps
   `--agent-ms` per turn; creates `--evaluations` golden evaluations and runs them once,
   so every evaluation has results (aggregatedMetrics, lastCompletedResult).
2. Server CPU per request, one request at a time and nothing else running: `--probe`
   GETs of evaluations, then as many lists of 20 (the server's CPU time from /proc, all
   its processes, divided by the requests). This is the figure robust to other work on
   the machine.
3. Starts one run over all evaluations (`runCount` large enough to keep writing results
   for the whole load) and, for each `--clients` count, runs that many concurrent
   clients for `--seconds`: each loops over get (50 %, an evaluation with its aggregated
   metrics), list (25 %, a page of 20) and update (25 %, PATCH description of one of 8
   "hot" evaluations with the etag it read). An update answered 409 ABORTED (changed
   since it was read) re-reads and retries after a short jittered back-off: those
   conflicts are counted apart, they are the etag check doing its job. Any other
   non-2xx answer or exception is an error.

Prints one line per configuration — requests/s, p50/p99 over all requests, server CPU
per request (the run's work included), errors, the load average of the machine at the
end — and the per-get / per-list CPU of step 2. Exits 1 if there were errors.
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
    """CPU seconds (user + system) of the server and every process under it: its
    `--workers` processes and the run-worker processes they start (a run executes in
    its own process), the finished ones included (counted in their parent's cutime)."""
    ticks = 0
    pending = [pid]
    while pending:
        each = pending.pop()
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            # Any thread may have started a child: each lists its own.
            children = [
                child
                for task in Path(f"/proc/{each}/task").iterdir()
                for child in (task / "children").read_text().split()
            ]
        except OSError:
            continue
        # utime, stime, and cutime, cstime of its children that ended and were waited for.
        ticks += sum(int(value) for value in fields[11:15])
        pending.extend(map(int, children))
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
            # Back off a little, with jitter, as a client told ABORTED should: without it
            # 8 clients retrying one hot evaluation in lockstep can keep beating each other.
            await asyncio.sleep(rng.uniform(0, 0.002 * (_attempt + 1)))
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


async def _setup(http: httpx.AsyncClient, args: argparse.Namespace) -> list[str]:
    names = []
    for i in range(args.evaluations):
        reply = await http.post("/v1/apps/bench/evaluations", json=_golden(i))
        reply.raise_for_status()
        names.append(reply.json()["name"])
    # One pass over every evaluation first, so each has results to aggregate and show.
    run = await _start_run(http, names, 1)
    while (await http.get(f"/v1/{run}")).json()["state"] == "RUNNING":
        await asyncio.sleep(0.2)
    return names


async def _start_run(http: httpx.AsyncClient, names: list[str], run_count: int) -> str:
    op = await http.post(
        "/v1/apps/bench/evaluations:run",
        json={"evaluations": names, "runCount": run_count, "appVersion": "bench"},
    )
    op.raise_for_status()
    run: str = op.json()["metadata"]["evaluationRun"]
    return run


async def _probe(conn: Conn, names: list[str], count: int, server_pid: int) -> dict[str, float]:
    """Server CPU ms per request, one at a time: GET of an evaluation, list of 20, and a
    guarded update (PATCH with the etag the previous one answered)."""
    paths = {
        "get": [f"/v1/{names[i % len(names)]}" for i in range(count)],
        "list": ["/v1/apps/bench/evaluations?pageSize=20"] * count,
    }
    cpu: dict[str, float] = {}
    for op, ops in paths.items():
        for path in ops[:20]:  # warm up (first reads of each page, imports)
            await conn.request("GET", path)
        before = _server_cpu_s(server_pid)
        for path in ops:
            status, body = await conn.request("GET", path)
            if status != 200:
                raise RuntimeError(f"{op} {path}: HTTP {status} {body[:200]!r}")
        cpu[op] = (_server_cpu_s(server_pid) - before) / count * 1000
    # Guarded updates, each with the etag the previous one answered (no conflicts).
    name = names[-1]
    status, body = await conn.request("GET", f"/v1/{name}")
    etag = json.loads(body)["etag"]
    before = _server_cpu_s(server_pid)
    for i in range(count):
        status, body = await conn.request(
            "PATCH",
            f"/v1/{name}?updateMask=description",
            {"description": f"probe {i}", "etag": etag},
        )
        if status != 200:
            raise RuntimeError(f"update {name}: HTTP {status} {body[:200]!r}")
        etag = json.loads(body)["etag"]
    cpu["update"] = (_server_cpu_s(server_pid) - before) / count * 1000
    return cpu


async def _load(
    port: int, key: str, names: list[str], clients: int, args: argparse.Namespace, pid: int
) -> dict[str, Any]:
    stats = Stats()
    conns = [Conn("127.0.0.1", port, key) for _ in range(clients)]
    cpu_before = _server_cpu_s(pid)
    started = time.monotonic()
    stop_at = started + args.seconds
    await asyncio.gather(*(_client(c, names, stop_at, stats, seed) for seed, c in enumerate(conns)))
    elapsed = time.monotonic() - started
    server_cpu = _server_cpu_s(pid) - cpu_before
    for conn in conns:
        conn.close()
    every = [v for values in stats.latency.values() for v in values]
    total = len(every)
    return {
        "clients": clients,
        "rps": total / elapsed,
        "p50": statistics.median(every) * 1000 if every else float("nan"),
        "p99": _percentile(every, 0.99) * 1000 if every else float("nan"),
        "cpu": server_cpu / max(total, 1) * 1000,
        "errors": stats.errors,
        "conflicts": stats.conflicts,
        "load": os.getloadavg()[0],
        "by_op": {
            op: (statistics.median(v) * 1000, _percentile(v, 0.99) * 1000)
            for op, v in stats.latency.items()
        },
    }


async def _measure(
    base: str, key: str, args: argparse.Namespace, server_pid: int
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    headers = {"Authorization": f"Bearer {key}"}
    port = int(base.rsplit(":", 1)[1])
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as http:
        names = await _setup(http, args)
        # The setup run's worker process winds down after the run reads as finished:
        # wait until the server is idle, or the probe would count its work.
        for _ in range(40):
            before = _server_cpu_s(server_pid)
            await asyncio.sleep(0.5)
            if _server_cpu_s(server_pid) - before < 0.02:
                break
        probe_conn = Conn("127.0.0.1", port, key)
        probe = await _probe(probe_conn, names, args.probe, server_pid)
        probe_conn.close()
        if not args.clients:
            return probe, []
        await _start_run(http, names, args.run_count)
        await asyncio.sleep(1.0)  # let the run get going
        rows = [await _load(port, key, names, n, args, server_pid) for n in args.clients]
    return probe, rows


def _baseline_tree(rev: str, into: Path) -> Path:
    """The `src` folder of commit `rev` of this repository, unpacked under `into`."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _serve_and_measure(
    label: str, src: Path | None, workers: int, args: argparse.Namespace
) -> tuple[dict[str, float], list[dict[str, Any]]] | None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'assay.db'}"
        (Path(tmp) / "bench_agent.py").write_text(AGENT)
        paths = [tmp, *([str(src)] if src is not None else [])]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([*paths[::-1], os.environ.get("PYTHONPATH", "")]),
            "BENCH_AGENT_S": str(args.agent_ms / 1000),
        }
        created = subprocess.run(
            [sys.executable, "-m", "assay", "keys", "create", "--name", "bench", "--store", url],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
        key = created.stdout.strip()
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "assay", "serve", "--store", url, "--port", str(port),
             "--agent", "bench_agent:agent", "--log-level", "warning",
             *(["--workers", str(workers)] if workers > 1 else [])],
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
                print(f"{label}: the server did not start", file=sys.stderr)
                server.kill()
                return None
            time.sleep(0.1)
        try:
            return asyncio.run(_measure(base, key, args, server.pid))
        finally:
            server.terminate()
            server.wait(30)


def _report(label: str, workers: int, probe: dict[str, float], rows: list[dict[str, Any]]) -> None:
    print(
        f"{label:<14}{workers:>8}  one at a time: get {probe['get']:.2f} ms, "
        f"list {probe['list']:.2f} ms, update {probe['update']:.2f} ms of server CPU per request"
    )
    for row in rows:
        ops = "  ".join(
            f"{op} {p50:.0f}/{p99:.0f}" for op, (p50, p99) in sorted(row["by_op"].items())
        )
        print(
            f"{label:<14}{workers:>8}{row['clients']:>8}{row['rps']:>8.0f}{row['p50']:>8.1f}"
            f"{row['p99']:>8.1f}{row['cpu']:>9.2f}{len(row['errors']):>7}{row['load']:>6.1f}"
            f"   {ops}  (409 retried: {row['conflicts']})"
        )
        for message in row["errors"][:5]:
            print(f"    error: {message}")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per load phase")
    parser.add_argument(
        "--clients", type=int, nargs="*", default=[1, 32], help="none: the CPU probe only"
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--evaluations", type=int, default=200)
    parser.add_argument("--run-count", type=int, default=50)
    parser.add_argument("--agent-ms", type=float, default=20.0)
    parser.add_argument("--probe", type=int, default=300, help="requests per CPU probe")
    parser.add_argument("--baseline", metavar="REV", help="also measure the server of commit REV")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tree:
        servers: list[tuple[str, Path | None]] = []
        if args.baseline:
            servers.append((f"@{args.baseline}", _baseline_tree(args.baseline, Path(tree))))
        servers.append(("this checkout", None))
        print(
            f"{args.evaluations} evaluations, agent {args.agent_ms:g} ms/turn, "
            f"{args.seconds:g} s per load phase; p50/p99 in ms over all requests, "
            "CPU = server CPU ms per request (the run writing results included), "
            "load = 1-minute load average"
        )
        print(
            f"{'server':<14}{'workers':>8}{'clients':>8}{'req/s':>8}{'p50':>8}{'p99':>8}"
            f"{'CPU':>9}{'errors':>7}{'load':>6}   per op p50/p99"
        )
        for label, src in servers:
            for workers in args.workers:
                measured = _serve_and_measure(label, src, workers, args)
                if measured is None:
                    failed = True
                    continue
                probe, rows = measured
                _report(label, workers, probe, rows)
                failed = failed or any(row["errors"] for row in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
