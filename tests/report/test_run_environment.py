"""A stored run records where it was made (git commit, assay version), and its reports
show it later from anywhere; where it was made is not part of what a resumption matches."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import __version__
from assay.cli import app
from assay.session.resume import ENVIRONMENT_KEY, find_resumable
from assay.store import Store

ROWS = [{"prompt": "Capital of France?", "response": "Paris.", "reference": "Paris."}]


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_the_stored_runs_report_names_the_commit_it_was_made_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "rows.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    _git(project, "add", "rows.jsonl")
    _git(project, "commit", "-q", "-m", "rows")
    commit = _git(project, "rev-parse", "--short=12", "HEAD")
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    monkeypatch.chdir(project)
    made = CliRunner().invoke(
        app, ["eval", "rows.jsonl", "-m", "exact_match", "--store", store, "--quiet"]
    )
    assert made.exit_code == 0, made.output
    with Store.open(store) as db:
        (run,) = db.list_runs()
    assert run.config[ENVIRONMENT_KEY] == {"assay_version": __version__, "git_commit": commit}

    # Later, from a folder that is no git checkout at all.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report = CliRunner().invoke(app, ["report", "latest", "--store", store, "--html", "r.html"])
    assert report.exit_code == 0, report.output
    text = (elsewhere / "r.html").read_text()
    raw = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', text, re.S)
    assert raw is not None
    assert json.loads(raw.group(1))["header"]["commit"] == commit


def test_a_run_resumes_whatever_commit_it_was_started_at(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'assay.db'}") as db:
        started = db.start_run(
            eval_set_ids=["rows"], metrics=["exact_match"], agent=None, runs=1,
            config={"criteria": {"exact_match": 1.0}, ENVIRONMENT_KEY: {"git_commit": "old"}},
        )  # fmt: skip
        found = find_resumable(
            db, eval_set_ids=["rows"], metrics=["exact_match"], agent=None,
            config={"criteria": {"exact_match": 1.0}},
        )  # fmt: skip
        assert found is not None and found.id == started
        other = find_resumable(
            db, eval_set_ids=["rows"], metrics=["exact_match"], agent=None,
            config={"criteria": {"exact_match": 0.5}},
        )  # fmt: skip
        assert other is None
