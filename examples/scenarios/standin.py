"""The scripted models behind the scenario example: the simulated guest and the judges.

One stand-in answers every model the run calls, telling them apart by their prompts:
the simulated user (assay's user simulator prompt), the hallucination, user-goal and
scenario-rubric judges. Run it with::

    python -m assay.testing.judge_server --port 8012 --script examples.scenarios.standin:script
"""

from __future__ import annotations

import json
import re

from assay.testing.judge_server import StandinReply, StandinRequest

_RUBRIC_ID = re.compile(r"^- \[id: ([^\]]+)\]", re.MULTILINE)


def _guest(request: StandinRequest) -> str:
    """The simulated guest: asks once, then ends when the agent has answered."""
    history = request.user
    if "user: " not in history:
        return "Hi! I'd like to book dinner for 12 people this Friday at 8pm."
    if "events team" in history:
        return "</finished>"
    return "We are 12 people, Friday at 8pm."


def script(request: StandinRequest) -> StandinReply:
    """One reply of the stand-in to `request`."""
    prompt = request.prompt
    if "You play a human user" in prompt:
        return StandinReply(_guest(request))
    if "for hallucination" in prompt:
        reply = {"explanation": "Every claim matches the tool result.", "score": 1}
    elif "satisfied the user's goal" in prompt:
        reply = {
            "explanation": "The agent declined the booking for 12 and named the events team.",
            "score": 0,
            "rejected": True,
        }
    elif "against a list of rubrics" in prompt:
        rubrics = [
            {"id": rid, "rationale": "Said in the agent's reply.", "verdict": "yes"}
            for rid in _RUBRIC_ID.findall(request.user)
        ]
        reply = {"rubrics": rubrics}
    else:
        return StandinReply("I can only answer the scenario example's prompts.")
    return StandinReply(json.dumps(reply))
