"""Labelled items for the judge-alignment tests: the shipped calibration set, with a
word that a `FollowingJudge` stand-in is biased by added to some responses (the same
items as examples/judge_calibration/overconfident.jsonl, which the docs use)."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "examples" / "judge_calibration" / "final_response_match_v2.jsonl"
BIAS_WORD = "definitely"
#: how many invalid / valid responses get the bias word
BIASED_INVALID = 15
BIASED_VALID = 5


def labelled_rows() -> list[dict[str, str]]:
    """The shipped 60 items, 15 invalid and 5 valid responses ending with the bias word."""
    rows = [json.loads(line) for line in SHIPPED.read_text().splitlines() if line.strip()]
    invalid = [r for r in rows if r["label"] == "invalid"]
    valid = [r for r in rows if r["label"] == "valid"]
    for row in invalid[:BIASED_INVALID] + valid[:BIASED_VALID]:
        row["response"] += f" I am {BIAS_WORD} sure of this."
    return rows


def write_labels(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def truth_of(rows: list[dict[str, str]]) -> dict[str, bool]:
    """Each response's right verdict (what the people said)."""
    return {r["response"]: r["label"] == "valid" for r in rows}
