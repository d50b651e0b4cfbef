"""Owner-only store files (issue #31): under umask 022, `.assay/` is 0700 and the
database with its `-wal` and `-shm` files 0600, whoever creates the store (the CLI, a
server, the Python API)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.store import Store


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_the_cli_s_default_store_is_owner_only(tmp_path: Path) -> None:
    rows = [{"request": "2 + 2?", "response": "4", "expected_response": "4"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run(
        [sys.executable, "-m", "assay", "eval", "rows.jsonl", "--from", "mlflow",
         "-m", "response_match_score"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, umask=0o022,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _mode(tmp_path / ".assay") == 0o700
    files = list((tmp_path / ".assay").iterdir())
    assert files and all(_mode(f) == 0o600 for f in files), [(f.name, oct(_mode(f))) for f in files]


def test_an_open_store_s_wal_and_shm_are_owner_only(tmp_path: Path, umask_022: None) -> None:
    folder = tmp_path / "nested" / ".assay"
    with Store.open(f"sqlite:///{folder / 'assay.db'}") as db:
        db.api_keys.create("ci")  # a write: the WAL and its index exist now
        db.secrets.get("page-tokens")  # the page-token signing key
        names = {p.name for p in folder.iterdir()}
        assert {"assay.db", "assay.db-wal", "assay.db-shm"} <= names
        assert _mode(folder) == 0o700
        for name in names:
            assert _mode(folder / name) == 0o600, name


def test_an_existing_folder_keeps_its_permissions(tmp_path: Path, umask_022: None) -> None:
    """A store put in a folder that is there already (/tmp, a folder of other users) does not
    change that folder; only what assay creates is owner-only."""
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    with Store.open(f"sqlite:///{existing / 'results.db'}"):
        pass
    assert _mode(existing) == 0o755
    assert _mode(existing / "results.db") == 0o600
