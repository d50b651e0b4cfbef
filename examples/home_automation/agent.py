"""A home-automation agent as a plain Python callable: deterministic rules, real tools.

No LLM and no network: the agent reads the user's text with a few rules, calls the
tools in `home.py` against the session's home, and answers from what they returned.
It keeps per-session memory in `state` (the device and room last talked about), so
follow-ups such as "turn it off" or "make it 2 degrees warmer" work across turns.

Two deliberate bugs give the bundled eval set something to find:
- a temperature in Fahrenheit is passed on unconverted (wrong tool argument);
- only the first device of "the lamp and the fan" is switched (missing tool call).

Run it with: assay eval examples/home_automation/home.evalset.json \
    --agent examples.home_automation.agent:root_agent

Its tool calls go through the session's tool hook (`tools`), so FAKE and MIXED runs
(`--tools fake`, mocks from the eval case) answer them instead of the home; `app_details`
gives its instructions and tool names, as an LLM agent's adapter would.
"""

from __future__ import annotations

import re
from typing import Any

from assay.agents.tools import ToolHook
from assay.core.cases import Step, ToolCall, ToolResponse, Turn

from .home import LOCATIONS, TOOLS, Home, new_home

# Words people use for devices, mapped to device ids (the agent's device directory).
_DEVICE_WORDS = {
    "living room light": "device_1",
    "bedroom lamp": "device_2",
    "kitchen light": "device_3",
    "living room tv": "device_4",
    "bedroom fan": "device_5",
    "heat pump": "device_6",
    "tv": "device_4",
    "lamp": "device_2",
    "fan": "device_5",
}
_NUMBER = r"(-?\d+(?:\.\d+)?)"


class _Session:
    """Runs tools against the home and records each call and response as steps."""

    def __init__(self, state: dict[str, Any], tools: ToolHook | None = None) -> None:
        self.state = state
        self.home: Home = state.setdefault("home", new_home())
        self.steps: list[Step] = []
        self.tools = tools

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        call = ToolCall(name=tool, args=args)
        self.steps.append(Step(tool_call=call))
        mocked = self.tools.intercept(call) if self.tools is not None else None
        result: dict[str, Any] = mocked if mocked is not None else TOOLS[tool](self.home, **args)
        self.steps.append(Step(tool_response=ToolResponse(name=tool, response=result)))
        return result


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() else value


def _find_location(text: str) -> str | None:
    for location in LOCATIONS:
        if location.lower() in text:
            return location
    return None


def _find_device(text: str) -> str | None:
    explicit = re.search(r"\bdevice_\d+\b", text)
    if explicit:
        return explicit.group(0)
    # Longest names first, so "bedroom lamp" wins over "lamp"; and only the FIRST
    # device mentioned is returned, which is the agent's "missing call" bug.
    hits: list[tuple[int, int, str]] = []
    for words, device_id in sorted(_DEVICE_WORDS.items(), key=lambda kv: -len(kv[0])):
        pos = text.find(words)
        if pos >= 0 and not any(start <= pos < end for start, end, _ in hits):
            hits.append((pos, pos + len(words), device_id))
    return min(hits)[2] if hits else None


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _switch(s: _Session, text: str) -> str:
    turn = re.search(r"\b(?:turn|switch)\b.*?\b(on|off)\b", text)
    status = (turn.group(1) if turn else "on").upper()
    device_id = _find_device(text) or (
        s.state.get("last_device") if re.search(r"\b(it|that)\b", text) else None
    )
    if device_id is None:
        return "Which device do you mean?"
    s.state["last_device"] = device_id
    condition = re.search(r"\bif (?:it'?s|it is) (on|off)\b", text)
    if condition:
        info = s.call("get_device_info", device_id=device_id)
        now = str(info.get("status", "")).upper()
        if "error" not in info and now != condition.group(1).upper():
            return f"The {info.get('name', device_id)} is already {now.lower()}."
    result = s.call("set_device_info", device_id=device_id, status=status)
    if "error" in result:
        if "not found" in result["error"]:
            return f"Sorry, I couldn't find {device_id}."
        return f"Sorry, that didn't work: {result['error']}."
    name = s.home["devices"][device_id]["name"]
    return f"OK, the {name} ({device_id}) is now {status.lower()}."


def _device_status(s: _Session, text: str) -> str:
    device_id = _find_device(text) or s.state.get("last_device")
    if device_id is None:
        return "Which device do you mean?"
    s.state["last_device"] = device_id
    info = s.call("get_device_info", device_id=device_id)
    if "error" in info:
        return f"Sorry, I couldn't find {device_id}."
    name = info.get("name", device_id)
    return f"The {name} is {str(info.get('status', 'unknown')).lower()}."


def _list(s: _Session, location: str | None) -> str:
    result = s.call("list_devices", location=location) if location else s.call("list_devices")
    devices = [f"{d['name']} ({d['status'].lower()})" for d in result.get("devices", [])]
    where = f"the {location}" if location else "the house"
    if not devices:
        return f"There are no devices in {where}."
    noun = "device" if len(devices) == 1 else "devices"
    verb = "is" if len(devices) == 1 else "are"
    return f"There {verb} {len(devices)} {noun} in {where}: {_join(devices)}."


def _set_temperature(s: _Session, location: str, temperature: int | float) -> str:
    result = s.call("set_temperature", location=location, temperature=temperature)
    if "error" in result:
        return f"Sorry, I couldn't set the temperature: {result['error']}."
    return f"The {location} thermostat is now set to {temperature}°C."


def _temperature(s: _Session, text: str, location: str | None) -> str | None:
    where = location or s.state.get("last_location")
    relative = re.search(_NUMBER + r" degrees? (warmer|cooler|hotter|colder)", text)
    absolute = re.search(r"\b(?:set|change|put|make)\b.*\bto " + _NUMBER, text)
    if relative:
        if where is None:
            return "Which room do you mean?"
        current = s.call("get_temperature", location=where)
        if "error" in current:
            return f"Sorry, {current['error']}."
        delta = _number(relative.group(1))
        sign = 1 if relative.group(2) in ("warmer", "hotter") else -1
        return _set_temperature(s, where, current["temperature"] + sign * delta)
    if absolute:
        # The unit is ignored: "72 degrees Fahrenheit" reaches the tool as 72 (the bug).
        return _set_temperature(s, where or "Living Room", _number(absolute.group(1)))
    if re.search(r"\b(temperature|how (?:warm|cold|hot))\b", text):
        if where is None:
            return "Which room do you mean?"
        result = s.call("get_temperature", location=where)
        if "error" in result:
            return f"Sorry, {result['error']}."
        return f"It is {result['temperature']}°C in the {where}."
    return None


def _energy(s: _Session, text: str, location: str | None) -> str:
    period = "week" if re.search(r"\bweek\b|\b7 days\b", text) else "today"
    if location:
        report = s.call("get_energy_report", period=period, location=location)
    else:
        report = s.call("get_energy_report", period=period)
    if "error" in report:
        return f"Sorry, {report['error']}."
    scope = f"The {location}" if location else "The whole house"
    when = "today" if period == "today" else "in the last 7 days"
    top = report["top_device"]
    return (
        f"{scope} used {report['total_kwh']} kWh {when}. "
        f"The biggest consumer was the {top} ({report['by_device'][top]} kWh)."
    )


def _answer(s: _Session, text: str) -> str:
    location = _find_location(text)
    if location:
        s.state["last_location"] = location
    if re.search(r"\b(energy|electricity|kwh|consumption|power use)\b", text):
        return _energy(s, text, location)
    if re.search(r"\b(temperature|thermostat|degrees?|warmer|cooler|how warm|how cold)\b", text):
        reply = _temperature(s, text, location)
        if reply is not None:
            return reply
    if re.search(r"\b(turn|switch)\b", text) and re.search(r"\b(on|off)\b", text):
        return _switch(s, text)
    if re.search(r"\b(which|what|list)\b.*\bdevices\b", text):
        return _list(s, location)
    if re.search(r"^(is|are)\b|\bstatus\b", text):
        return _device_status(s, text)
    return "Sorry, I can help with devices, room temperatures and energy use."


INSTRUCTIONS = (
    "You are a home automation assistant for one household. "
    "You switch devices on and off, set room thermostats and report energy use. "
    "Only change a device when the user asks you to change that device."
)


def app_details() -> dict[str, Any]:
    """The agent's instructions and tool declarations, in ADK's app-details shape."""
    declarations = [{"name": name, "description": fn.__doc__ or ""} for name, fn in TOOLS.items()]
    return {
        "agent_details": {
            "home_automation": {
                "name": "home_automation",
                "instructions": INSTRUCTIONS,
                "tool_declarations": [{"function_declarations": declarations}],
            }
        }
    }


def root_agent(prompt: str, state: dict[str, Any], tools: ToolHook | None = None) -> Turn:
    """Answer one user message; `state` is this conversation's memory (and its home),
    `tools` the session's tool hook (FAKE / MIXED mocks)."""
    session = _Session(state, tools)
    reply = _answer(session, prompt.strip().lower().rstrip("?!."))
    return Turn(steps=session.steps, final_response=reply)


root_agent.app_details = app_details  # type: ignore[attr-defined]
