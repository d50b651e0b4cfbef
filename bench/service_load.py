"""Service load: REST reads and guarded writes while an evaluation run writes results.

    python bench/service_load.py                      # 30 s, 32 clients
    python bench/service_load.py --seconds 10 --clients 16 --evaluations 100

1. Starts `assay serve`'s app (uvicorn, API keys on) in a child process on 127.0.0.1,
   over a SQLite store in a temporary directory, with a callable agent that sleeps
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
4. Prints requests/s, p50/p99 latency per operation, errors (must be 0), conflicts,
   and how many results the run stored during the load. Exits 1 if there were errors.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import socket
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

HOT_SET = 8


async def _agent(text: str, state: dict[str, Any] | None = None) -> dict[str, Any]:
    await asyncio.sleep(_AGENT_S)
    return {
        "response": "Sunny.",
        "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
    }


_AGENT_S = 0.02


def _serve(url: str, port: int, key_file: str, agent_s: float) -> None:
    import uvicorn

    from assay.agents.callable import CallableAgent
    from assay.service.app import create_app
    from assay.store import Store

    global _AGENT_S
    _AGENT_S = agent_s
    store = Store.open(url)
    _info, secret = store.api_keys.create("bench")
    Path(key_file).write_text(secret)
    app = create_app(store, agent=CallableAgent(_agent, name="bench-agent"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


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


async def _client(
    http: httpx.AsyncClient, names: list[str], stop_at: float, stats: Stats, seed: int
) -> None:
    rng = random.Random(seed)
    while time.monotonic() < stop_at:
        pick = rng.random()
        try:
            if pick < 0.5:
                await _get(http, rng.choice(names), stats)
            elif pick < 0.75:
                started = time.perf_counter()
                reply = await http.get("/v1/apps/bench/evaluations", params={"pageSize": 20})
                stats.timed("list", started)
                _check(reply, "list", stats)
            else:
                await _update(http, rng.choice(names[:HOT_SET]), rng, stats)
        except httpx.HTTPError as exc:
            stats.errors.append(f"{type(exc).__name__}: {exc}")


async def _get(http: httpx.AsyncClient, name: str, stats: Stats) -> dict[str, Any] | None:
    started = time.perf_counter()
    reply = await http.get(f"/v1/{name}")
    stats.timed("get", started)
    return reply.json() if _check(reply, "get", stats) else None


async def _update(http: httpx.AsyncClient, name: str, rng: random.Random, stats: Stats) -> None:
    for _attempt in range(50):
        current = await _get(http, name, stats)
        if current is None:
            return
        started = time.perf_counter()
        reply = await http.patch(
            f"/v1/{name}",
            params={"updateMask": "description"},
            json={"description": f"edit {rng.random():.6f}", "etag": current["etag"]},
        )
        stats.timed("update", started)
        if reply.status_code == 409:
            stats.conflicts += 1
            continue
        _check(reply, "update", stats)
        return
    stats.errors.append(f"update of {name} kept conflicting")


def _check(reply: httpx.Response, op: str, stats: Stats) -> bool:
    if reply.is_success:
        return True
    stats.errors.append(f"{op}: HTTP {reply.status_code} {reply.text[:200]}")
    return False


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _load(base: str, key: str, args: argparse.Namespace) -> int:
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
        started = time.monotonic()
        stop_at = started + args.seconds
        await asyncio.gather(
            *(_client(http, names, stop_at, stats, seed) for seed in range(args.clients))
        )
        elapsed = time.monotonic() - started
        after = (await http.get(f"/v1/{run}")).json()
    written = after["progress"]["completedCount"] - before["completedCount"]
    total = sum(len(v) for v in stats.latency.values())
    print(f"{args.clients} clients, {elapsed:.1f} s, {args.evaluations} evaluations")
    print(f"requests: {total} ({total / elapsed:.0f}/s)")
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'assay.db'}"
        key_file = str(Path(tmp) / "key")
        port = _free_port()
        server = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(url, port, key_file, args.agent_ms / 1000), daemon=True
        )
        server.start()
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if Path(key_file).exists() and httpx.get(f"{base}/openapi.json").is_success:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or not server.is_alive():
                print("the server did not start", file=sys.stderr)
                return 2
            time.sleep(0.1)
        try:
            return asyncio.run(_load(base, Path(key_file).read_text(), args))
        finally:
            server.terminate()
            server.join(10)


if __name__ == "__main__":
    sys.exit(main())
