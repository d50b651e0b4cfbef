"""Reports on a full disk: `assay eval` exits 2 with one line naming the file and "No
space left on device" (no traceback), leaves no temporary file behind, and an earlier
report at the target stays as it was. A real full file system: a 256 KiB tmpfs
(mounting needs root; skipped where it is not allowed)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROWS = 6000  # each report of them is larger than the file system


@pytest.fixture(scope="module")
def full_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("full")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


@pytest.fixture
def disk(full_disk: Path) -> Iterator[Path]:
    yield full_disk
    for path in full_disk.iterdir():
        path.unlink()


def _rows(tmp_path: Path, suffix: str) -> Path:
    rows = [{"id": f"r{i}", "response": f"answer {i}", "reference": f"answer {i}"}
            for i in range(ROWS)]  # fmt: skip
    path = tmp_path / f"rows{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".json", ".jsonl"], ids=["loaded", "streamed"])
@pytest.mark.parametrize(
    ("flag", "name"),
    [("--out", "results.json"), ("--csv", "rows.csv"), ("--junit", "junit.xml"),
     ("--html", "report.html")],
)  # fmt: skip
def test_a_report_on_a_full_disk_is_exit_2_naming_the_file(
    tmp_path: Path, disk: Path, suffix: str, flag: str, name: str
) -> None:
    earlier = disk / name
    earlier.write_text("an earlier report\n", encoding="utf-8")
    command = [
        sys.executable, "-m", "assay", "eval", str(_rows(tmp_path, suffix)),
        "--metric", "response_match_score", "--store", f"sqlite:///{tmp_path / 'a.db'}",
        "--quiet", flag, str(earlier),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert f"{earlier}: No space left on device" in said
    assert "Traceback" not in done.stderr
    assert earlier.read_text(encoding="utf-8") == "an earlier report\n"
    assert sorted(p.name for p in disk.iterdir()) == [name]  # no partial file left
