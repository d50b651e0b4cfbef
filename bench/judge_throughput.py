"""Judge throughput: how close assay's judge path gets to the ideal call rate.

    python bench/judge_throughput.py                  # 2,000 items x 5 samples, 200 ms, 32
    python bench/judge_throughput.py --items 500 --latency 0.1 --concurrency 16

Scores `final_response_match_v2` over N labelled items (the shipped labelled set,
repeated with numbered prompts so every prompt is distinct) with the judge
`openai:stand-in` served by assay's stand-in server (`assay.testing.JudgeServer`, in a
child process) on 127.0.0.1, through the real `openai` SDK and the same engine,
`JudgePool`, cache and adaptive limiter as `assay eval`. Five runs:

1. latency L, limit C, SQLite store: calls/s against the ideal C / L;
2. the same again on the same store: fully cached, expect zero server calls;
3. latency 0 over HTTP: the rate assay + SDK + stand-in server sustain;
4. latency L with an in-process backend (no HTTP, no SDK): how well the engine and
   the limiter keep C calls in flight;
5. latency 0 in-process: assay's own cost per judge call
   (prompt rendering, cache keys and lookups, limiter, stats, voting, engine).

Prints figures; asserts only that the runs scored what they should (the judge answers
each item's human label, so accuracy must be 1.0). Timings are never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _standin import ServerProcess
from assay.engine.calibrate import LabelledSet, load_labels
from assay.judges.client import JudgePool
from assay.judges.types import BackendReply, GenerationSettings
from assay.session.calibrate import acalibrate
from assay.store import Store
from assay.testing import StandinReply, StandinRequest

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "examples" / "judge_calibration" / "final_response_match_v2.jsonl"
MODEL = "openai:stand-in"
_MARK = re.compile(r"\[bench item (\d+)\]")


def make_items(n: int, folder: Path) -> tuple[LabelledSet, list[str]]:
    """`n` labelled items cycling the shipped set; the verdict each item should get."""
    base = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    path = folder / "bench_items.jsonl"
    verdicts: list[str] = []
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = dict(base[i % len(base)])
            row["id"] = f"item-{i}"
            row["prompt"] = f"{row['prompt']} [bench item {i}]"
            verdicts.append(row["label"])
            out.write(json.dumps(row) + "\n")
    return load_labels(path), verdicts


def reply_for(verdict: str) -> str:
    return json.dumps({"reasoning": "compared the key facts", "verdict": verdict})


def server_script(verdicts: Sequence[str], latency: float) -> Any:
    replies = [StandinReply(text=reply_for(v), delay=latency) for v in verdicts]

    def script(request: StandinRequest) -> StandinReply:
        found = _MARK.search(request.user)
        if found is None:
            return StandinReply.server_error(message="no bench item marker in the prompt")
        return replies[int(found.group(1))]

    return script


class InProcessBackend:
    """A backend answering in-process after `latency` seconds (no HTTP, no SDK).

    With latency 0 what is left is assay's own cost per call; with the bench latency it
    shows how well the engine and limiter keep the allowed calls in flight.
    """

    backend = "bench"

    def __init__(self, model: str, verdicts: Sequence[str], latency: float) -> None:
        self.model = model
        self.latency = latency
        self._replies = [reply_for(v) for v in verdicts]

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        found = _MARK.search(messages[-1]["content"])
        if found is None:
            raise RuntimeError("no bench item marker in the prompt")
        if self.latency:
            await asyncio.sleep(self.latency)
        return BackendReply(self._replies[int(found.group(1))], 100, 20)

    async def aclose(self) -> None:
        return None


@dataclass
class Figures:
    seconds: float
    cpu_seconds: float  # this process: assay, the SDK and the event loop
    calls: int
    cache_hits: int
    server_requests: int = 0

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    def call_ms(self, concurrency: int) -> float:
        """Mean time a call holds its slot, if the limit was always full (Little's law)."""
        return 1000 * concurrency / self.calls_per_s if self.calls else 0.0

    @property
    def cpu_us_per_call(self) -> float:
        return 1e6 * self.cpu_seconds / self.calls if self.calls else 0.0


async def timed(labelled: LabelledSet, samples: int, **kwargs: Any) -> Figures:
    """One calibration run over `labelled`, timed (wall and this process's CPU)."""
    wall, cpu = time.perf_counter(), time.process_time()
    report = await acalibrate(
        labelled, metric="final_response_match_v2", judge=MODEL, samples=samples, **kwargs
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if report.accuracy != 1.0 or report.unscored:
        sys.exit(
            f"bench run scored wrongly: accuracy {report.accuracy}, "
            f"{len(report.unscored)} unscored: {report.unscored[:1]}"
        )
    stats = report.judge_stats
    return Figures(
        wall, cpu, int(stats.get("judge/calls", 0)), int(stats.get("judge/cache_hits", 0))
    )


async def over_http(
    labelled: LabelledSet,
    server: ServerProcess,
    *,
    samples: int,
    concurrency: int,
    store: Store | None,
) -> Figures:
    before = server.requests()
    figures = await timed(
        labelled,
        samples,
        base_url=server.base_url,
        store=store,
        concurrency=concurrency,
        timeout_s=30.0,
    )
    figures.server_requests = server.requests() - before
    return figures


async def in_process(
    labelled: LabelledSet,
    verdicts: Sequence[str],
    *,
    samples: int,
    concurrency: int,
    latency: float,
) -> Figures:
    def factory(model: str, options: Any = None, *, timeout_s: float) -> InProcessBackend:
        return InProcessBackend(model, verdicts, latency)

    pool = JudgePool(default_model=MODEL, concurrency=concurrency, backend_factory=factory)
    try:
        return await timed(labelled, samples, pool=pool)
    finally:
        await pool.aclose()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per judge reply")
    parser.add_argument("--concurrency", type=int, default=32, help="judge calls in flight")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENAI_API_KEY", "bench")  # the SDK wants one, the stand-in not
    importlib.import_module("openai")  # a one-off import cost, not part of any call

    calls = args.items * args.samples
    ideal = args.concurrency / args.latency
    print(
        f"{args.items:,} items x {args.samples} samples = {calls:,} judge calls; "
        f"latency {args.latency * 1000:.0f} ms, limit {args.concurrency}: "
        f"ideal {ideal:.1f} calls/s ({calls / ideal:.1f} s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        labelled, verdicts = make_items(args.items, folder)
        store = Store.open(f"sqlite:///{folder / 'bench.db'}")
        run = functools.partial(
            over_http, labelled, samples=args.samples, concurrency=args.concurrency
        )
        try:
            with ServerProcess(server_script, list(verdicts), args.latency) as server:
                first = asyncio.run(run(server, store=store))
                cached = asyncio.run(run(server, store=store))
        finally:
            store.close()
        with ServerProcess(server_script, list(verdicts), 0.0) as server:
            zero = asyncio.run(run(server, store=None))
        local = functools.partial(
            in_process, labelled, verdicts, samples=args.samples, concurrency=args.concurrency
        )
        paced = asyncio.run(local(latency=args.latency))
        instant = asyncio.run(local(latency=0.0))
    print(
        f"1. {args.latency * 1000:.0f} ms latency: {first.seconds:.2f} s, {first.calls:,} "
        f"calls, {first.calls_per_s:.1f} calls/s = {first.calls_per_s / ideal:.3f} of the "
        f"ideal (target >= 0.9); {first.call_ms(args.concurrency):.0f} ms per call in "
        f"flight; client CPU {first.cpu_us_per_call:.0f} µs per call"
    )
    print(
        f"2. fully cached re-run: {cached.seconds:.2f} s, {cached.server_requests} server "
        f"calls, {cached.calls} judge calls, {cached.cache_hits:,} cache hits"
    )
    print(
        f"3. 0 ms latency over HTTP: {zero.seconds:.2f} s, {zero.calls_per_s:.0f} calls/s, "
        f"client CPU {zero.cpu_us_per_call:.0f} µs per call (assay + openai SDK + httpx)"
    )
    print(
        f"4. {args.latency * 1000:.0f} ms in-process backend (no HTTP, no SDK): "
        f"{paced.seconds:.2f} s, {paced.calls_per_s:.1f} calls/s = "
        f"{paced.calls_per_s / ideal:.3f} of the ideal; {paced.call_ms(args.concurrency):.0f} "
        "ms per call in flight"
    )
    print(
        f"5. 0 ms in-process backend: {instant.seconds:.2f} s, {instant.calls_per_s:.0f} "
        f"calls/s, {instant.cpu_us_per_call:.0f} µs CPU per call (assay's own judge path)"
    )


if __name__ == "__main__":
    main()
