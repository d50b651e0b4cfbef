"""Without any google package installed (only the `service` extra), `assay serve` still
builds its app: the CES paths answer one line naming the extra, and ADK agents say
which extra they need — no ModuleNotFoundError from probing `google.cloud.*`."""

from __future__ import annotations

import sys

import pytest

from assay.errors import AgentError


def _hide(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)  # importing it now fails


def test_the_wire_probe_survives_a_missing_google_cloud(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.service import wire

    _hide(monkeypatch, "google.cloud")
    assert wire.ces_available() is False


def test_adk_agents_name_the_extra_without_google(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.agents import adk

    _hide(monkeypatch, "google")
    with pytest.raises(AgentError, match="needs google-adk"):
        adk._require_adk("an ADK agent")
