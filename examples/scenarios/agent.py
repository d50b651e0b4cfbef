"""A tiny restaurant booking agent: a plain Python callable with one tool.

`agent` is what assay runs (``--agent examples.scenarios.agent:agent``). It checks the
party size with `check_party_size` through assay's tool hook, so under ``--tools fake``
the scenario's `mockToolResponse` answers instead of the real tool.
"""

from __future__ import annotations

import re
from typing import Any

from assay.agents.tools import ToolHook
from assay.core.cases import ToolCall

MAX_ONLINE = 8
EVENTS = "events@trattoria-uno.example"


def check_party_size(size: int) -> dict[str, Any]:
    """Whether a party of `size` can book online."""
    return {"allowed": 1 <= size <= MAX_ONLINE, "max_online": MAX_ONLINE}


async def agent(text: str, tools: ToolHook) -> dict[str, Any]:
    """One turn: ask for the party size, check it, then decline or take the booking."""
    found = re.search(r"\b(\d+)\s*(?:people|persons|guests)\b", text, re.IGNORECASE)
    if found is None:
        return {"response": "Hello! For how many people would you like to book?"}
    size = int(found[1])
    call = ToolCall(name="check_party_size", args={"size": size})
    result, _ = await tools.execute(call, lambda: check_party_size(size))
    trajectory = [{"tool_name": call.name, "tool_input": call.args, "tool_output": result}]
    if isinstance(result, dict) and result.get("allowed"):
        answer = f"A table for {size} is possible. Which day and time would you like?"
    else:
        answer = (
            f"I'm sorry, online bookings are for parties of at most {MAX_ONLINE} people."
            f" For {size} guests, please write to our events team at {EVENTS}."
        )
    return {"response": answer, "predicted_trajectory": trajectory}
