"""End-to-end `assay eval` of 100,000 recorded Vertex rows from a JSONL file.

Measures rows/second and peak memory of the real CLI (a subprocess, store included),
and, as the named baseline in the same process run, google-adk's own evaluators
(TrajectoryEvaluator for EXACT / IN_ORDER / ANY_ORDER and the ROUGE-1
`response_match_score` evaluator) on the same rows.

    python bench/score_rows.py [--rows 100000] [--adk-rows 5000] [--repeat 3]
        [--baseline-tree ../assay-at-an-older-commit]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

TOOLS = ["search_flights", "book_hotel", "get_weather", "convert_currency", "send_email"]
WORDS = [
    "the",
    "flight",
    "to",
    "paris",
    "leaves",
    "at",
    "nine",
    "and",
    "the",
    "hotel",
    "near",
    "the",
    "station",
    "costs",
    "eighty",
    "euros",
    "per",
    "night",
    "weather",
    "tomorrow",
    "is",
    "sunny",
    "with",
    "light",
    "winds",
    "booking",
    "confirmed",
    "for",
    "two",
    "guests",
]
METRICS = [
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "trajectory_single_tool_use",
    "response_match_score",
]


def _call(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(TOOLS)
    return {
        "tool_name": name,
        "tool_input": {"city": rng.choice(["Paris", "Rome"]), "n": rng.randint(1, 3)},
    }


def make_rows(n: int, seed: int = 7) -> list[dict[str, Any]]:
    return list(iter_rows(n, seed))


def iter_rows(n: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """The rows one at a time (1M rows are written without holding them)."""
    rng = random.Random(seed)
    for i in range(n):
        ref = [_call(rng) for _ in range(rng.randint(1, 5))]
        pred = list(ref)
        if rng.random() < 0.3:
            pred = pred[::-1]
        if rng.random() < 0.2:
            pred.append(_call(rng))
        if rng.random() < 0.1 and pred:
            pred.pop(0)
        reference = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 25)))
        words = reference.split()
        response = " ".join(w if rng.random() > 0.2 else rng.choice(WORDS) for w in words)
        yield {
            "id": f"row-{i}",
            "prompt": f"Plan trip {i}",
            "response": response,
            "reference": reference,
            "predicted_trajectory": pred,
            "reference_trajectory": ref,
        }


def _tree_rss(tree: list[psutil.Process]) -> int:
    """Resident memory of a process and its descendants (a pool's workers included)."""
    total = 0
    for p in tree:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


EXTRA_METRICS: list[str] = []
"""Metrics scored besides `METRICS` (`--extra-metric`)."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_assay(
    path: Path, workdir: Path, extra: list[str] | None = None, *, csv: bool = True
) -> tuple[float, float, int, float]:
    """Run the real CLI as a user would (default store under the working directory,
    `--out` and, with `csv`, `--csv`); return seconds, peak RSS of the process tree
    (MiB), exit code and the CPU seconds of the whole tree (the CLI and its worker
    processes, which it waits for, so their time is counted in its children's)."""
    # trajectory_single_tool_use needs its tool_name option, so the metrics come from a config.
    criteria: dict[str, Any] = {m: {"threshold": 1.0} for m in METRICS}
    criteria["trajectory_single_tool_use"] = {"threshold": 1.0, "tool_name": "get_weather"}
    criteria["response_match_score"] = 0.8
    for name in EXTRA_METRICS:  # --extra-metric: e.g. one the fast row path does not know
        criteria[name] = {"threshold": 0.5}
    config = workdir / "config.json"
    config.write_text(json.dumps({"criteria": criteria}))
    # Each run starts as a first run does: no store, and no report of an earlier run to
    # replace. Replacing a 520 MB report frees its blocks inside the rename, 0.1-0.5 s
    # on this machine's disk (ext4 mounted with `discard`), whatever wrote the file.
    shutil.rmtree(workdir / ".assay", ignore_errors=True)
    for name in ("results.json", "results.csv"):
        (workdir / name).unlink(missing_ok=True)
    # Nor with the last run's ~1.3 GB still being written back to the disk (and its
    # removed files' blocks freed): that work of the kernel's, on the same two cores,
    # made the same run vary by 4.6-7.2 s; after a sync and a pause, by 5.1-5.7 s.
    os.sync()
    time.sleep(1.0)
    args = [
        sys.executable,
        "-m",
        "assay",
        "eval",
        str(path),
        "--config",
        str(config),
        "--quiet",
        "--out",
        str(workdir / "results.json"),
        *(["--csv", str(workdir / "results.csv")] if csv else []),
        *(extra or []),
    ]
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    child = subprocess.Popen(
        args, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=user_environment(),
    )  # fmt: skip
    watched = psutil.Process(child.pid)
    peak = 0
    # Sample the tree's RSS while it runs; a reader thread drains stderr meanwhile.
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.append(child.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    # The tree is looked up every 0.5 s (psutil reads every process on the machine for
    # that: 1.3 ms here), its members' RSS every 0.05 s (0.05 ms): the sampling takes
    # ~0.4 % of a core, where looking the tree up at every sample took ~2.6 %.
    tree: list[psutil.Process] = [watched]
    looked_up = 0.0
    while child.poll() is None:
        now = time.perf_counter()
        if now - looked_up >= 0.5:
            with contextlib.suppress(psutil.Error):
                tree = [watched, *watched.children(recursive=True)]
            looked_up = now
        peak = max(peak, _tree_rss(tree))
        time.sleep(0.05)
    elapsed = time.perf_counter() - t0
    cpu = _children_cpu() - cpu0
    reader.join()
    if child.returncode not in (0, 1):
        raise SystemExit(f"assay eval failed ({child.returncode}):\n{''.join(errors)[-3000:]}")
    return elapsed, peak / 2**20, child.returncode, cpu


def user_environment() -> dict[str, str]:
    """This process's environment as a user's shell has it: Python writes its bytecode
    cache (some sandboxes and CI images set PYTHONDONTWRITEBYTECODE, which makes every
    run compile assay's imported modules from source again)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def warm_up(workdir: Path) -> None:
    """One small run first, as a user has run assay before: the bytecode cache exists."""
    data = workdir / "warm-up.jsonl"
    write_rows(data, 200)
    run_assay(data, workdir)
    shutil.rmtree(workdir / ".assay", ignore_errors=True)


def run_adk(rows: list[dict[str, Any]]) -> float:
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
    from google.genai import types

    def invocation(row: dict[str, Any], which: str, text_key: str) -> Invocation:
        return Invocation(
            user_content=types.Content(role="user", parts=[types.Part(text=row["prompt"])]),
            final_response=types.Content(role="model", parts=[types.Part(text=row[text_key])]),
            intermediate_data=IntermediateData(
                tool_uses=[
                    types.FunctionCall(name=c["tool_name"], args=c["tool_input"])
                    for c in row[which]
                ]
            ),
        )

    evaluators = []
    for match in ("EXACT", "IN_ORDER", "ANY_ORDER"):
        metric = EvalMetric(
            metric_name="tool_trajectory_avg_score",
            threshold=1.0,
            criterion={"threshold": 1.0, "match_type": match},
        )
        evaluators.append(TrajectoryEvaluator(eval_metric=metric))
    evaluators.append(RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8)))
    t0 = time.perf_counter()
    for row in rows:
        actual = [invocation(row, "predicted_trajectory", "response")]
        expected = [invocation(row, "reference_trajectory", "reference")]
        for ev in evaluators:
            ev.evaluate_invocations(actual, expected)
    return time.perf_counter() - t0


def write_rows(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for row in iter_rows(n):
            fh.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000])
    parser.add_argument("--adk-rows", type=int, default=5_000)
    parser.add_argument(
        "--assay-args", default="", help="extra `assay eval` flags, e.g. '--workers 1'"
    )
    parser.add_argument(
        "--extra-metric",
        action="append",
        default=[],
        help="score this metric too (threshold 0.5), e.g. tool_parameter_kv_match, which"
        " keeps the run off the fast row path; may be given more than once",
    )
    parser.add_argument(
        "--also-without-csv",
        action="store_true",
        help="run each size again without --csv (the store and --out: issue #13's run)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each size (and each of its outputs) this many times, alternating, and"
        " print the median and the best: a shared machine varies by 10%% between minutes",
    )
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        help="a checkout of another commit (its row path compiled there with `python"
        " hatch_build.py`): its runs alternate with this tree's, and the ratio is printed",
    )
    ns = parser.parse_args()
    EXTRA_METRICS.extend(ns.extra_metric)
    adk_elapsed = run_adk(make_rows(ns.adk_rows))
    adk_rate = ns.adk_rows / adk_elapsed
    print(
        f"google-adk evaluators (3 trajectory match types + ROUGE, in-process): "
        f"{ns.adk_rows} rows in {adk_elapsed:.2f}s = {adk_rate:,.0f} rows/s"
    )
    trees: list[Path | None] = [None] if ns.baseline_tree is None else [ns.baseline_tree, None]
    for n in ns.rows:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for tree in trees:
                with _tree(tree):
                    warm_up(work)
            data = work / "rows.jsonl"
            write_rows(data, n)
            outputs = (True, False) if ns.also_without_csv else (True,)
            runs: dict[tuple[Path | None, bool], list[tuple[float, float, int, float]]] = {
                (t, c): [] for t in trees for c in outputs
            }
            for _ in range(ns.repeat):
                for csv in outputs:
                    for tree in trees:  # alternating: the same minutes for both
                        with _tree(tree):
                            run = run_assay(data, work, ns.assay_args.split(), csv=csv)
                        runs[tree, csv].append(run)
            for csv in outputs:
                for tree in trees:
                    if tree is not None:
                        print(f"baseline tree {tree}:", end=" ")
                    _report(n, csv, runs[tree, csv], adk_rate)
                if ns.baseline_tree is not None:
                    base = _median(runs[ns.baseline_tree, csv])
                    this = _median(runs[None, csv])
                    print(f"  this tree / baseline tree: {base / this:.2f}x rows/s (medians)")


@contextlib.contextmanager
def _tree(tree: Path | None) -> Iterator[None]:
    """Run `assay` from `tree`'s source (its own compiled copies) while inside."""
    if tree is None:
        yield
        return
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree.resolve() / "src")
    try:
        yield
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous


def _median(runs: list[tuple[float, float, int, float]]) -> float:
    return sorted(r[0] for r in runs)[len(runs) // 2]


def _report(
    n: int, csv: bool, runs: list[tuple[float, float, int, float]], adk_rate: float
) -> None:
    by_time = sorted(runs)
    elapsed, _, rc, cpu = by_time[len(by_time) // 2]  # the median run
    rate = n / elapsed
    outputs = "--out, --csv" if csv else "--out"
    best = f" (best of {len(runs)}: {n / by_time[0][0]:,.0f} rows/s)" if len(runs) > 1 else ""
    print(
        f"assay eval (CLI, default store, {outputs}, {len(METRICS) + len(EXTRA_METRICS)} metrics): "
        f"{n:,} rows in {elapsed:.2f}s = {rate:,.0f} rows/s{best}, CPU {cpu:.1f}s = "
        f"{cpu / n * 1e6:,.0f} us/row (all processes, start-up included), "
        f"peak RSS {max(r[1] for r in runs):,.0f} MiB, exit {rc}; "
        f"load average {os.getloadavg()[0]:.1f}; ratio assay/adk "
        f"{rate / adk_rate:.1f}x  (target >= 20,000 rows/s, < 1024 MiB)"
    )


if __name__ == "__main__":
    main()
