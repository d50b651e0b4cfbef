"""End-to-end `assay eval` of 100,000 recorded Vertex rows from a JSONL file.

Measures rows/second and peak memory of the real CLI (a subprocess, store included),
and, as the named baseline in the same process run, google-adk's own evaluators
(TrajectoryEvaluator for EXACT / IN_ORDER / ANY_ORDER and the ROUGE-1
`response_match_score` evaluator) on the same rows.

    python bench/score_rows.py [--rows 100000] [--adk-rows 5000]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    rng = random.Random(seed)
    rows = []
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
        rows.append(
            {
                "id": f"row-{i}",
                "prompt": f"Plan trip {i}",
                "response": response,
                "reference": reference,
                "predicted_trajectory": pred,
                "reference_trajectory": ref,
            }
        )
    return rows


def run_assay(path: Path, workdir: Path) -> tuple[float, float, int]:
    """Run the real CLI in a subprocess; return seconds, peak RSS (MiB) and exit code."""
    # trajectory_single_tool_use needs its tool_name option, so the metrics come from a config.
    criteria: dict[str, Any] = {m: {"threshold": 1.0} for m in METRICS}
    criteria["trajectory_single_tool_use"] = {"threshold": 1.0, "tool_name": "get_weather"}
    criteria["response_match_score"] = 0.8
    config = workdir / "config.json"
    config.write_text(json.dumps({"criteria": criteria}))
    args = [
        sys.executable,
        "-m",
        "assay",
        "eval",
        str(path),
        "--config",
        str(config),
        "--quiet",
        "--store",
        f"sqlite:///{workdir / 'bench.db'}",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=workdir, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"assay eval failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, peak_kib / 1024, proc.returncode


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--adk-rows", type=int, default=5_000)
    ns = parser.parse_args()
    rows = make_rows(ns.rows)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "rows.jsonl"
        with data.open("w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
        elapsed, peak_mib, rc = run_assay(data, work)
    assay_rate = ns.rows / elapsed
    adk_elapsed = run_adk(rows[: ns.adk_rows])
    adk_rate = ns.adk_rows / adk_elapsed
    print(
        f"assay eval (CLI, store on, {len(METRICS)} metrics): {ns.rows} rows in {elapsed:.2f}s "
        f"= {assay_rate:,.0f} rows/s, peak RSS {peak_mib:,.0f} MiB, exit {rc}"
    )
    print(
        f"google-adk evaluators (3 trajectory match types + ROUGE, in-process): "
        f"{ns.adk_rows} rows in {adk_elapsed:.2f}s = {adk_rate:,.0f} rows/s"
    )
    print(f"ratio assay/adk: {assay_rate / adk_rate:.1f}x  (target >= 20,000 rows/s, < 1024 MiB)")


if __name__ == "__main__":
    main()
