"""Shared by the tests of the Python API's streamed runs (`test_api_astream.py`,
`test_api_results.py`): row files, a spy on the streamed runs, an agent that can be
stopped midway, an observer, and what the store holds."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.session.agent_stream import AgentStreamingRun
from assay.session.streaming import StreamOutcome
from assay.store import Store

_TIMING = ("duration", "latency_s", "latency_in_seconds", "created", "updated")
METRICS = ["response_match_score"]


def write_rows(path: Path, n: int) -> Path:
    rows = (json.dumps({"prompt": f"q{i}", "reference": f"Q{i}"}) for i in range(n))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not k.startswith(_TIMING)}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def spy_streamed(monkeypatch: pytest.MonkeyPatch) -> list[AgentStreamingRun]:
    runs: list[AgentStreamingRun] = []
    real = AgentStreamingRun.arun

    async def spied(self: AgentStreamingRun) -> StreamOutcome:
        runs.append(self)
        return await real(self)

    monkeypatch.setattr(AgentStreamingRun, "arun", spied)
    return runs


class UpperAgent:
    """Answers in upper case (not row 4: it raises), noting the loop and thread of
    each call and the calls that returned or raised (`answered`); from its `stop_at`-th
    call on, a call waits until it is cancelled."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.answered: list[str] = []
        self.loops: set[int] = set()
        self.threads: set[int] = set()
        self.stop_at = stop_at
        self.reached = asyncio.Event()

    async def __call__(self, prompt: str) -> str:
        self.calls.append(prompt)
        self.loops.add(id(asyncio.get_running_loop()))
        self.threads.add(threading.get_ident())
        if self.stop_at is not None and len(self.calls) >= self.stop_at:
            self.reached.set()
            await asyncio.Event().wait()  # cancelled here: this case run never finishes
        await asyncio.sleep(0)
        self.answered.append(prompt)
        if prompt == "q4":
            raise RuntimeError("the agent broke on q4")
        return prompt.upper()


def stored_run(url: str) -> tuple[Any, list[dict[str, Any]]]:
    with Store.open(url) as store:
        (info,) = store.list_runs()
        return info, store.case_results(info.id)


class Observer:
    """What a `RunObserver` is told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_start(self, total: int) -> None:
        self.events.append(("start", total))

    def on_case_done(self, result: Any) -> None:
        self.events.append(("case", result.case_id))

    def on_finish(self, result: Any) -> None:
        self.events.append(("finish", len(result.cases)))
