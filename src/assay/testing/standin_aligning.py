"""A stand-in judge that learns from its prompt: for testing `assay judge align`.

`FollowingJudge` is a `JudgeServer` script for the verdict-style judged metrics
(`final_response_match_v2` by default: a JSON reply with `reasoning` and `verdict`). It
knows the right verdict of each item (`truth`: the agent response's text -> positive or
not), and errs in one of two ways:

- **systematically** (`bias_word`): it calls every response containing that word
  positive, right or wrong, unless its prompt teaches it otherwise: a guideline naming
  the word, or a labelled example containing the word with the negative verdict
  (what `assay.judges.align` adds to a prompt);
- **at random** (`flip_rate`): each prompt's verdict is flipped with that probability,
  a coin decided by a hash of the whole prompt (so a run is reproducible, and the same
  item asked with another prompt gets a fresh coin). Nothing in a prompt helps.

Asked to distil guidelines (a prompt holding `<disagreements>`, as
`assay.session.align` sends), it names the words that most of the shown responses
share, the way a model would spot a pattern, and otherwise gives a generic guideline.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping

from assay.testing.judge_dialects import StandinReply, StandinRequest

#: where the distillation prompt lists the judge's disagreements with people
DISAGREEMENTS_TAG = "<disagreements>"
_RESPONSE = re.compile(r"<(?:agent_)?response>\s*(.*?)\s*</(?:agent_)?response>", re.S)
_EXAMPLE = re.compile(r"<example\b[^>]*>(.*?)</example>", re.S)
_VERDICT = re.compile(r"<human_verdict>\s*(.*?)\s*</human_verdict>", re.S)
_GUIDELINES_HEAD = "Guidelines from human reviewers"
_WORD = re.compile(r"[a-z]{6,}")
#: share of the shown responses a word must be in to be named as a pattern
PATTERN_SHARE = 0.6


class FollowingJudge:
    """A `JudgeServer` script: a judge with a systematic or a random error (see module)."""

    def __init__(
        self,
        truth: Mapping[str, bool],
        *,
        bias_word: str | None = None,
        flip_rate: float = 0.0,
        seed: int = 0,
        positive: str = "valid",
        negative: str = "invalid",
    ) -> None:
        if not truth:
            raise ValueError("FollowingJudge needs the right verdict of at least one item")
        if not 0.0 <= flip_rate <= 1.0:
            raise ValueError(f"flip_rate must be within [0, 1], got {flip_rate}")
        self.truth = dict(truth)
        self.bias_word = bias_word.lower() if bias_word else None
        self.flip_rate = flip_rate
        self.seed = seed
        self.positive = positive
        self.negative = negative
        #: verdict requests answered, and how many of them the prompt corrected
        self.judged = 0
        self.corrected = 0
        self.distilled = 0

    def __call__(self, request: StandinRequest) -> StandinReply:
        if DISAGREEMENTS_TAG in request.user:
            self.distilled += 1
            return StandinReply(text=self.guidelines(request.user))
        self.judged += 1
        response = self._response(request.user)
        right = self.truth[response]
        verdict, reason = (
            right,
            "the key facts match the reference"
            if right
            else ("the response does not give the reference's answer"),
        )
        if self.bias_word and self.bias_word in response.lower():
            if self._taught(request.system):
                self.corrected += 1
            else:
                verdict, reason = True, f"the response says {self.bias_word!r}, so it is right"
        if self.flip_rate and self._coin(request) < self.flip_rate:
            verdict, reason = not verdict, "a coin decided"
        word = self.positive if verdict else self.negative
        return StandinReply(text=json.dumps({"reasoning": reason, "verdict": word}))

    def _response(self, text: str) -> str:
        """The item's agent response: the tagged one, else the longest known response
        the prompt contains."""
        for found in _RESPONSE.findall(text):
            if found in self.truth:
                return str(found)
        known = [r for r in self.truth if r in text]
        if not known:
            raise KeyError("the prompt holds no response this stand-in knows")
        return max(known, key=len)

    def _taught(self, system: str) -> bool:
        """Whether the prompt's guidelines or examples correct the bias."""
        word = self.bias_word or ""
        head = system.find(_GUIDELINES_HEAD)
        if head >= 0:
            guidelines = system[head:].split("Examples judged by human reviewers", 1)[0]
            if word in guidelines.lower():
                return True
        for example in _EXAMPLE.findall(system):
            verdict = _VERDICT.search(example)
            shown = _RESPONSE.search(example)
            if (
                verdict is not None
                and shown is not None
                and verdict.group(1).strip() == self.negative
                and word in shown.group(1).lower()
            ):
                return True
        return False

    def _coin(self, request: StandinRequest) -> float:
        digest = hashlib.sha256(f"{self.seed}\n{request.prompt}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def guidelines(self, text: str) -> str:
        """Guidelines from the disagreements shown: the shared words, else a generic one."""
        shown = [r.lower() for r in _RESPONSE.findall(text)]
        counts: Counter[str] = Counter()
        for response in shown:
            counts.update(set(_WORD.findall(response)))
        common = sorted(w for w, n in counts.items() if shown and n / len(shown) >= PATTERN_SHARE)
        lines = [
            f"- A response that says '{w}' is not right for that reason: check its facts"
            " against the reference."
            for w in common
        ]
        lines.append("- Compare every key fact of the response with the reference.")
        return "\n".join(lines)
