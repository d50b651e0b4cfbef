"""`await assay.aevaluate("rows.jsonl", agent=...)` over 100,000 Vertex rows: what the
Python API holds.

Runs the async API three times in fresh processes on the same rows with a trivial
Python agent (it upper-cases the prompt), each recording to its own SQLite store:
streamed keeping every case result (the default), streamed with `keep_cases=0` (the
summary and the store only), and on the path that loads the rows whole (what
`aevaluate` took before it streamed). Prints rows/s (wall and CPU), peak RSS and the
case results each returned, and checks the three summaries agree.

    python bench/api_rows.py [--rows 100000] [--concurrency 4] [--modes keep_cases=0 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from agent_rows import write_rows

# Run inside the child: the awaited API in-process, then its CPU time and peak RSS.
CHILD = """
import asyncio, json, resource, sys, time
import assay
mode, data, store, concurrency = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if mode == "loaded":
    import assay.api_stream
    assay.api_stream.row_files = lambda *a: None  # the path that loads the rows whole

def answer(prompt):
    return prompt.upper() if len(prompt) % 4 else "no idea"

async def main():
    return await assay.aevaluate(
        data, metrics=["response_match_score"], agent=answer, concurrency=concurrency,
        store=store, keep_cases=0 if mode == "keep_cases=0" else None,
    )

started, cpu_before = time.perf_counter(), time.process_time()  # after the imports
result = asyncio.run(main())
wall, cpu = time.perf_counter() - started, time.process_time() - cpu_before
usage = resource.getrusage(resource.RUSAGE_SELF)
keys = ("row_count", "passed", "failed", "response_match_score/mean")
print("RESULT " + json.dumps({
    "wall": wall, "cpu": cpu, "rss_mib": usage.ru_maxrss / 1024,
    "cases": len(result.cases), "summary": {k: result.summary[k] for k in keys},
}))
"""

MODES = ("streamed", "keep_cases=0", "loaded")


def _run(mode: str, work: Path, data: Path, concurrency: int) -> dict[str, Any]:
    store = f"sqlite:///{work / (mode.replace('=', '') + '.sqlite')}"
    command = [sys.executable, "-c", textwrap.dedent(CHILD), mode, str(data), store,
               str(concurrency)]  # fmt: skip
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"{mode} run failed:\n{done.stderr}")
    return {"mode": mode, **json.loads(line.removeprefix("RESULT "))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=4)
    # A million rows kept whole take ~4 GiB: `--modes keep_cases=0` runs that one only.
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-api-rows-") as tmp:
        work = Path(tmp)
        data = work / "rows.jsonl"
        write_rows(data, args.rows)
        print(f"{args.rows:,} rows, trivial agent, concurrency {args.concurrency}, SQLite"
              f" store; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        runs = [_run(mode, work, data, args.concurrency) for mode in args.modes]
        summaries = [r["summary"] for r in runs]
        assert all(s == summaries[0] for s in summaries), summaries
        print(f"{'path':<14} {'wall s':>8} {'rows/s':>8} {'CPU s':>7} {'µs CPU/row':>10}"
              f" {'peak RSS MiB':>12} {'cases kept':>10}")  # fmt: skip
        for r in runs:
            n = args.rows
            rates = f"{n / r['wall']:>8,.0f} {r['cpu']:>7.1f} {r['cpu'] / n * 1e6:>10,.0f}"
            print(f"{r['mode']:<14} {r['wall']:>8.1f} {rates} {r['rss_mib']:>12,.0f}"
                  f" {r['cases']:>10,}")  # fmt: skip
        print(f"load average after: {os.getloadavg()[0]:.1f}; same summary: {summaries[0]}")


if __name__ == "__main__":
    main()
