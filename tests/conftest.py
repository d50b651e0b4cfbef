"""Settings every test shares.

pytest-xdist (`pytest -n 2`, as .ci/run runs the suite) sets COLUMNS=80 in its worker
processes, which `assay`'s stdout console takes as the terminal's width (it uses 120
columns where there is no terminal, as in CI logs); the tests assume what a run
without a terminal prints. A test that wants a width passes COLUMNS to CliRunner.

This folder is on sys.path (pytest puts a conftest's folder there): helpers beside it,
such as `compiled.py`, are imported by name."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_inherited_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
