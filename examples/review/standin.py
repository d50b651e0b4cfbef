"""A stand-in judge for the review example (docs/review.md), with a judge's typical blind
spot: it calls a response valid when every number of the reference appears in it, so it
misses wrong wording around right numbers and flags right answers that write a number
differently. Run it with::

    python -m assay.testing.judge_server --port 8012 --script examples.review.standin:script
"""

from __future__ import annotations

import json
import re

from assay.testing.judge_server import StandinReply, StandinRequest

_NUMBER = re.compile(r"\d+(?:[.:]\d+)?")


def _section(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, re.DOTALL)
    return found.group(1) if found else ""


def script(request: StandinRequest) -> StandinReply:
    """The verdict on one `final_response_match_v2` request."""
    reference = _section(request.user, "reference_response")
    response = _section(request.user, "agent_response")
    numbers = _NUMBER.findall(reference)
    valid = all(n in response for n in numbers) if numbers else bool(response)
    reply = {
        "reasoning": "every number of the reference is in the response"
        if valid
        else "a number of the reference is missing from the response",
        "verdict": "valid" if valid else "invalid",
    }
    return StandinReply(json.dumps(reply), input_tokens=200, output_tokens=20)
