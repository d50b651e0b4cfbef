"""The files-root layer on its own: no path leads out, for reading or writing (issue #31).

A property test draws paths from pieces that are traps (links out, a link loop, a
dangling link out, `..`, overlong names, NUL) and checks that whatever the layer does,
it either refuses with INVALID_ARGUMENT / FAILED_PRECONDITION or stays inside the root:
the outside file is never read nor changed. A deterministic test swaps a folder for a
link out between the check and the open (the window a resolve-then-open layer has).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from assay.service.errors import FailedPrecondition, InvalidArgument
from assay.service.safe_files import FilesRoot

SECRET = b"outside the root"
_PIECES = [
    os.curdir,
    os.pardir,
    "in",
    "out",
    "loop",
    "dangling",
    "evaluations.json",
    "new",
    "x" * 300,
]


@pytest.fixture(scope="module")
def planted() -> Iterator[tuple[FilesRoot, Path]]:
    base = Path(tempfile.mkdtemp(prefix="assay-safe-files-"))
    root, outside = base / "root", base / "outside"
    (root / "in").mkdir(parents=True)
    outside.mkdir()
    (outside / "evaluations.json").write_bytes(SECRET)
    (root / "in" / "evaluations.json").write_bytes(b"{}")
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "in" / "link.json").symlink_to(outside / "evaluations.json")
    (root / "loop").symlink_to(root / "loop")
    (root / "dangling").symlink_to(outside / "missing.json")
    yield FilesRoot(root.resolve()), outside
    shutil.rmtree(base)


def _try(files: FilesRoot, text: str) -> None:
    """Everything a client can make the layer do with `text`, refusals allowed."""
    try:
        path = files.resolve(text, "gcs_uri", text)
        assert path.is_relative_to(files.root), path
        kind = files.kind(path, "gcs_uri", text)
        if kind == "file":
            assert files.read_bytes(path, "gcs_uri", text) != SECRET
        if kind in ("dir", "missing"):
            files.write_bytes(path, "evaluations.json", b"written", "gcs_uri", text)
    except (InvalidArgument, FailedPrecondition):
        pass


def test_no_drawn_path_leads_out(planted: tuple[FilesRoot, Path]) -> None:
    files, outside = planted

    @seed(20261204)
    @settings(
        max_examples=300,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(
        pieces=st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), min_size=0, max_size=6),
        prefix=st.sampled_from(["root", "none", "outside"]),
    )
    def check(pieces: list[str], prefix: str) -> None:
        start = {"root": str(files.root), "none": "", "outside": str(outside)}[prefix]
        _try(files, "/".join([start, *pieces]))

    check()
    assert (outside / "evaluations.json").read_bytes() == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["evaluations.json"]


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(
    planted: tuple[FilesRoot, Path], tmp_path: Path
) -> None:
    files, outside = planted
    folder = files.root / "swap"
    folder.mkdir()
    (folder / "evaluations.json").write_bytes(b"{}")
    checked = files.resolve(str(folder / "evaluations.json"), "gcs_uri", "swap")
    # Between the check and the open, the folder becomes a link to the outside folder.
    folder.rename(tmp_path / "moved")
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidArgument, match=r"gcs_uri.*symbolic link"):
        files.read_bytes(checked, "gcs_uri", "swap")
    with pytest.raises(InvalidArgument, match=r"gcs_uri.*symbolic link"):
        files.write_bytes(checked.parent, "evaluations.json", b"x", "gcs_uri", "swap")
    assert (outside / "evaluations.json").read_bytes() == SECRET
    folder.unlink()


def test_a_link_planted_at_the_written_name_is_replaced_not_followed(
    planted: tuple[FilesRoot, Path],
) -> None:
    files, outside = planted
    folder = files.root / "plant"
    folder.mkdir()
    (folder / "evaluations.json").symlink_to(outside / "evaluations.json")
    # The layer's caller resolves the name first (and refuses this one); even handed the
    # folder directly, the write replaces the link.
    files.write_bytes(folder, "evaluations.json", b"new", "gcs_uri", "plant")
    assert (folder / "evaluations.json").read_bytes() == b"new"
    assert not (folder / "evaluations.json").is_symlink()
    assert (outside / "evaluations.json").read_bytes() == SECRET
