"""`load_agent` / `as_agent`: every spec form resolves to the right adapter."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.agents import CallableAgent, as_agent, load_agent
from assay.agents.adk import AdkAgent
from assay.agents.http import HttpAgent
from assay.errors import AgentError

ADK_AGENT = """
from google.adk.agents import LlmAgent

def lookup(city: str) -> dict:
    \"\"\"Weather of a city.\"\"\"
    return {"city": city}

root_agent = LlmAgent(name="weather_bot", model="gemini-2.0-flash",
                      instruction="Answer weather questions.", tools=[lookup])
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith(("loader_weather", "plainbots")):
            del sys.modules[name]


def _adk_folder(root: Path) -> Path:
    folder = root / "loader_weather"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (folder / "agent.py").write_text(textwrap.dedent(ADK_AGENT), encoding="utf-8")
    return folder


def test_urls_become_http_agents() -> None:
    agent = load_agent("http://127.0.0.1:9/agent")
    assert isinstance(agent, HttpAgent)
    assert isinstance(load_agent("https://agents.example.com/run"), HttpAgent)


def test_an_adk_folder_becomes_an_adk_agent(workdir: Path) -> None:
    agent = load_agent(str(_adk_folder(workdir)))
    assert isinstance(agent, AdkAgent)
    details = agent.app_details()
    assert details is not None and "weather_bot" in details["agent_details"]


def test_an_adk_object_by_module_attr_is_wrapped(workdir: Path) -> None:
    _adk_folder(workdir)
    agent = load_agent("loader_weather.agent:root_agent")
    assert isinstance(agent, AdkAgent)


def test_callables_and_ready_agents(workdir: Path) -> None:
    (workdir / "plainbots.py").write_text(
        "def echo(prompt):\n    return prompt\n\nnot_an_agent = 42\n", encoding="utf-8"
    )
    wrapped = load_agent("plainbots:echo")
    assert isinstance(wrapped, CallableAgent) and wrapped.name == "plainbots:echo"
    assert as_agent(wrapped) is wrapped  # already an Agent: passed through
    with pytest.raises(AgentError, match="not an agent: expected a Google ADK agent"):
        load_agent("plainbots:not_an_agent")


def test_bad_specs_say_which_forms_are_accepted(workdir: Path) -> None:
    with pytest.raises(AgentError, match=r"'agents/missing' \(no such folder\): expected"):
        load_agent("agents/missing")
    with pytest.raises(AgentError, match="an ADK agent folder, or an http"):
        load_agent("just_a_name")
