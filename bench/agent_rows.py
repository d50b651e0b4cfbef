"""`assay eval rows.jsonl --agent ...` over 100,000 Vertex rows: streamed vs loaded.

Runs the real CLI twice in fresh processes on the same rows with a trivial Python
agent (it upper-cases the prompt), each writing `--out`, `--csv` and the SQLite store:
once streamed (the default for row files) and once on the path that loads the rows
whole (what every agent run took before). Prints rows/s (wall and CPU) and peak RSS of
each, and checks both runs report the same cases and summary counts.

    python bench/agent_rows.py [--rows 100000] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

# Run inside the child: the CLI in-process, then its own peak RSS and CPU time.
CHILD = """
import resource, sys, time
LOADED = sys.argv.pop(1) == "loaded"
if LOADED:
    import assay.cli.eval as cli_eval
    cli_eval._streamable = lambda *a: None  # the path that loads the rows whole
from assay.cli import app
code = 0
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit as exc:
    code = exc.code or 0
usage = resource.getrusage(resource.RUSAGE_SELF)
print(f"RESULT {code} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
"""

AGENT = "def answer(prompt):\n    return prompt.upper() if len(prompt) % 4 else 'no idea'\n"


def write_rows(path: Path, n: int) -> None:
    """`n` rows of a question and its upper-cased answer (bench/api_rows.py too)."""
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            prompt = f"question number {i}"
            handle.write(json.dumps({"prompt": prompt, "reference": prompt.upper()}) + "\n")


def _run(mode: str, work: Path, data: Path, concurrency: int) -> dict[str, Any]:
    tag = f"{mode}"
    command = [sys.executable, "-c", textwrap.dedent(CHILD), mode, "eval", str(data),
               "--agent", "bench_agent:answer", "--metric", "response_match_score",
               "--out", str(work / f"{tag}.json"), "--csv", str(work / f"{tag}.csv"),
               "--store", f"sqlite:///{work / f'{tag}.sqlite'}", "--quiet",
               "--concurrency", str(concurrency)]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"{mode} run failed:\n{done.stderr}")
    _, code, maxrss_kib, cpu = line.split()
    summary = json.loads((work / f"{tag}.json").read_text(encoding="utf-8"))["summary"]
    return {
        "mode": mode,
        "exit": int(code),
        "wall": wall,
        "cpu": float(cpu),
        "rss_mib": int(maxrss_kib) / 1024,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-agent-rows-") as tmp:
        work = Path(tmp)
        (work / "bench_agent.py").write_text(AGENT, encoding="utf-8")
        data = work / "rows.jsonl"
        write_rows(data, args.rows)
        print(f"{args.rows:,} rows, trivial agent, --concurrency {args.concurrency},"
              f" --out + --csv + SQLite store; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        runs = [_run(mode, work, data, args.concurrency) for mode in ("streamed", "loaded")]
        keys = ("row_count", "case_count", "passed", "failed", "response_match_score/mean")
        first, second = ({k: r["summary"][k] for k in keys} for r in runs)
        assert first == second, (first, second)
        assert runs[0]["exit"] == runs[1]["exit"]
        print(f"{'path':<10} {'wall s':>8} {'rows/s':>8} {'CPU s':>7} {'rows/CPU s':>10}"
              f" {'peak RSS MiB':>12}")  # fmt: skip
        for r in runs:
            n = args.rows
            rates = f"{n / r['wall']:>8,.0f} {r['cpu']:>7.1f} {n / r['cpu']:>10,.0f}"
            print(f"{r['mode']:<10} {r['wall']:>8.1f} {rates} {r['rss_mib']:>12,.0f}")
        streamed, loaded = runs
        print(f"peak RSS loaded / streamed: {loaded['rss_mib'] / streamed['rss_mib']:.1f}x;"
              f" CPU streamed / loaded: {streamed['cpu'] / loaded['cpu']:.2f};"
              f" load average after: {os.getloadavg()[0]:.1f}")  # fmt: skip
        print("same summary counts and exit code:", first)


if __name__ == "__main__":
    main()
