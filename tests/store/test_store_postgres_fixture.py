"""The PostgreSQL test fixture fails loudly when the server is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest
from postgres_server import SKIP_VARIABLE, find_bindir, require_bindir


def _fake_install(root: Path, version: str, tools: tuple[str, ...]) -> Path:
    bindir = root / version / "bin"
    bindir.mkdir(parents=True)
    for tool in tools:
        (bindir / tool).write_text("#!/bin/sh\n")
    return bindir


def test_missing_binaries_fail_with_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SKIP_VARIABLE, raising=False)
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y postgresql"):
        require_bindir([tmp_path], search_path=False)


def test_missing_binaries_skip_when_opted_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SKIP_VARIABLE, "1")
    with pytest.raises(pytest.skip.Exception, match=f"{SKIP_VARIABLE}=1"):
        require_bindir([tmp_path], search_path=False)


def test_newest_complete_installation_is_chosen(tmp_path: Path) -> None:
    full = ("initdb", "pg_ctl", "postgres")
    _fake_install(tmp_path, "9.6", full)
    newest = _fake_install(tmp_path, "15", full)
    _fake_install(tmp_path, "16", ("psql",))  # client only: no server
    assert find_bindir([tmp_path], search_path=False) == newest
