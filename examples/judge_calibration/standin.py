"""Stand-in judges for `assay judge align` (docs/judges.md), answering from the labels.

`overconfident`: a judge that calls every response saying "definitely" valid, unless
its prompt's guidelines or examples teach it otherwise (`overconfident.jsonl` has 15
invalid and 5 valid responses ending "I am definitely sure of this."). `coin`: a judge
that flips three verdicts in ten at random, which no alignment can fix. Run one with
``python -m assay.testing.judge_server --script examples.judge_calibration.standin:overconfident``.
"""

from __future__ import annotations

import json
from pathlib import Path

from assay.testing.standin_aligning import FollowingJudge

LABELS = Path(__file__).with_name("overconfident.jsonl")
_ROWS = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line]
TRUTH = {row["response"]: row["label"] == "valid" for row in _ROWS}

overconfident = FollowingJudge(TRUTH, bias_word="definitely")
coin = FollowingJudge(TRUTH, flip_rate=0.3, seed=1)
