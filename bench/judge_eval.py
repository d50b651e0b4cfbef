"""Judge throughput end to end from `assay eval` (issue #38): start-up included.

    python bench/judge_eval.py                        # 3,200 rows, 200 ms, 32 in flight
    python bench/judge_eval.py --no-store             # the same without the store
    python bench/judge_eval.py --rows 800 --latency 0.1 --concurrency 16
    python bench/judge_eval.py --baseline-tree ../assay-at-an-older-commit

Writes N recorded rows (distinct prompts), serves the judge `openai:stand-in` from
assay's stand-in (`assay.testing.JudgeServer`, in a child process) on 127.0.0.1 with
each reply after `latency`, and times a child `python -m assay eval ROWS --from mlflow
-m correctness --judge openai:stand-in --judge-concurrency C` from its start to its
exit, as a user runs it: the store on (a fresh `.assay/` in the run's folder, so no
reply is cached) and a JSON report, or `--no-store`. One judge call per row, so the
ideal is N x latency / C seconds. A small untimed run first writes assay's bytecode
(which an installed assay has; `PYTHONDONTWRITEBYTECODE` is dropped for the child).
Prints the wall time, the ratio ideal / wall, and the calls the server saw; asserts
only that every row was judged (one call each, every case scored). Timings are never
asserted. With `--baseline-tree`, the same runs of that checkout's assay (its `src`)
alternate with this one's, and the ratio of their median walls is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _standin import ServerProcess
from assay.testing import StandinReply, StandinRequest

REPO = Path(__file__).resolve().parents[1]


def yes_script(latency: float) -> Any:
    reply = StandinReply(json.dumps({"rationale": "matches", "rating": "yes"}), delay=latency)

    def script(request: StandinRequest) -> StandinReply:
        return reply

    return script


def write_rows(n: int, folder: Path) -> Path:
    path = folder / "rows.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "request": f"What is {i} plus one?",
                "response": f"{i + 1}.",
                "expected_response": f"{i + 1}",
            }
            out.write(json.dumps(row) + "\n")
    return path


def run(
    rows: int, latency: float, concurrency: int, *, store: bool, tree: Path = REPO
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(yes_script, latency) as server:
        folder = Path(tmp)
        data = write_rows(rows, folder)
        out = folder / "out.json"
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "unused",
            "PYTHONPATH": str(tree / "src"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        command = [
            sys.executable, "-m", "assay", "eval", str(data), "--from", "mlflow",
            "-m", "correctness", "--judge", "openai:stand-in",
            "--judge-concurrency", str(concurrency), "--out", str(out), "-q",
            *([] if store else ["--no-store"]),
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        if done.returncode != 0:
            sys.exit(f"assay eval exited {done.returncode}: {done.stderr[-2000:]}")
        summary = json.loads(out.read_text(encoding="utf-8"))["summary"]
        calls = server.requests()
    assert calls == rows, f"{calls} judge calls for {rows} rows"
    assert summary["judge/calls"] == rows, summary
    ideal = rows * latency / concurrency
    return {"wall_s": wall, "ideal_s": ideal, "ratio": ideal / wall, "calls": calls, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=3200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-store", action="store_true", help="run assay eval with --no-store")
    parser.add_argument(
        "--baseline-tree", type=Path, help="another checkout of assay, run alternately"
    )
    args = parser.parse_args()
    store = not args.no_store
    trees = [REPO] if args.baseline_tree is None else [args.baseline_tree.resolve(), REPO]
    for tree in trees:
        run(32, 0.0, args.concurrency, store=store, tree=tree)  # untimed: writes bytecode
    where = "store on" if store else "--no-store"
    walls: dict[Path, list[float]] = {tree: [] for tree in trees}
    for _ in range(args.repeat):
        for tree in trees:
            got = run(args.rows, args.latency, args.concurrency, store=store, tree=tree)
            walls[tree].append(got["wall_s"])
            name = "this tree" if tree == REPO else f"baseline {tree.name}"
            print(
                f"{name}: {args.rows:,} rows, {args.latency * 1000:g} ms,"
                f" {args.concurrency} in flight, {where}: {got['wall_s']:.2f} s against the"
                f" ideal {got['ideal_s']:.2f} s = {got['ratio']:.3f} of the ideal"
                f" ({got['calls']:,} calls, {got['cpu_s']:.2f} s of CPU in assay eval)"
            )
    if args.baseline_tree is not None:
        base, this = (statistics.median(walls[tree]) for tree in trees)
        print(f"baseline wall / this tree's wall: {base / this:.3f} (medians)")


if __name__ == "__main__":
    main()
