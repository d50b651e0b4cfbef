"""`assay eval --cache-user-replies`: the simulated user's replies in the store's cache.

By default each run meets a fresh simulated user (every user message is a model call);
with the flag, a later run of the same scenario replays the cached replies, no calls.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing.judge_server import JudgeServer, StandinRequest

runner = CliRunner()
LARGE_PARTY = (
    Path(__file__).resolve().parents[2]
    / "tests/data/realworld/ces/bella_notte/evaluations/Scenario_-_Large_Party_Rejection.json"
)
BOTS = """
from assay.core import Step, ToolCall, ToolResponse, Turn

async def host(prompt, tools):
    call = ToolCall(name="set_party_size", args={"size": 12})
    payload, _ = await tools.execute(call, lambda: {"stored": 12})
    return Turn(steps=[Step(tool_call=call),
                       Step(tool_response=ToolResponse(name="set_party_size", response=payload))],
                final_response="Parties of 1-8 only; write to events@bellanotte.com.")
"""


def _is_user(request: StandinRequest) -> bool:
    return "You play a human user" in request.messages[0]["content"]


def _reply(request: StandinRequest) -> str:
    return "A table for 12 people, please." if _is_user(request) else "{}"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    (tmp_path / "cli_bots.py").write_text(textwrap.dedent(BOTS), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with JudgeServer(_reply) as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
        yield running


def _user_calls(server: JudgeServer) -> int:
    return sum(1 for request in server.requests if _is_user(request))


def test_cached_user_replies_replay_in_a_later_run(server: JudgeServer, tmp_path: Path) -> None:
    args = ["eval", str(LARGE_PARTY), "--agent", "cli_bots:host", "--user-model", "openai:user",
            "--max-turns", "1", "--tools", "mixed", "-m", "scenario_expectations", "--fresh",
            "--store", f"sqlite:///{tmp_path / 'runs.db'}"]  # fmt: skip
    fresh = runner.invoke(app, args)
    assert fresh.exit_code == 0, fresh.output
    uncached = _user_calls(server)
    assert uncached >= 1
    # Without the flag, the next run meets a fresh user: as many calls again.
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert _user_calls(server) == 2 * uncached
    # With it, the first run asks the model and fills the cache; the next replays it.
    # (The scenario runs 5 times; the same conversation so far is one cache entry, so
    # the later runs of the first cached run replay its first run's user too.)
    first = runner.invoke(app, [*args, "--cache-user-replies"])
    assert first.exit_code == 0, first.output
    cached_run = _user_calls(server) - 2 * uncached
    assert 1 <= cached_run < uncached
    replayed = runner.invoke(app, [*args, "--cache-user-replies"])
    assert replayed.exit_code == 0, replayed.output
    assert _user_calls(server) == 2 * uncached + cached_run  # no user-model call at all
