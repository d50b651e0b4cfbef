"""`assay eval` freezes what lives until the end (`gc.freeze`), which spares the `assay`
program's last collection a walk over every result. Run inside another program
(typer's CliRunner here, a notebook, a test), the command unfreezes it when it returns,
so that program's garbage is collected again."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app


@pytest.fixture(autouse=True)
def _collected() -> Iterator[None]:
    yield
    gc.collect()  # the unfrozen heap's garbage, now rather than in a later test


ROWS = [
    {"id": f"r{i}", "prompt": "p", "response": "the answer", "reference": "the answer"}
    for i in range(60)
]


def _rows(tmp_path: Path) -> Path:
    # A JSON document, not JSON lines: the run is loaded whole (not streamed), the path
    # that freezes the loaded eval sets and, at the end, the results.
    data = tmp_path / "rows.json"
    data.write_text(json.dumps(ROWS), encoding="utf-8")
    return data


def test_a_command_run_in_process_leaves_nothing_frozen(tmp_path: Path) -> None:
    gc.unfreeze()  # whatever an earlier test froze
    data = _rows(tmp_path)
    for extra in ([], ["--out", str(tmp_path / "r.json")]):
        result = CliRunner().invoke(
            app, ["eval", str(data), "--metric", "response_match_score", "--no-store", *extra]
        )
        assert result.exit_code == 0, result.output
        assert "not streamed" not in result.output
        assert gc.get_freeze_count() == 0


def test_what_the_caller_froze_stays_frozen(tmp_path: Path) -> None:
    gc.unfreeze()
    kept = [[i] for i in range(10)]  # lists: objects the collector tracks
    gc.freeze()
    result = CliRunner().invoke(
        app, ["eval", str(_rows(tmp_path)), "--metric", "response_match_score", "--no-store"]
    )
    assert result.exit_code == 0, result.output
    tracked = {id(o) for o in gc.get_objects()}  # frozen objects are in no generation
    assert gc.get_freeze_count() > 0
    assert not any(id(k) in tracked for k in kept)
    gc.unfreeze()


def test_the_assay_program_keeps_its_heap_frozen_to_the_end(tmp_path: Path) -> None:
    """The console script exits right after: what it froze is left frozen."""
    script = textwrap.dedent(
        """
        import atexit, gc, sys
        atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
        from assay.cli import main
        sys.argv = ["assay", "eval", sys.argv[1], "--metric", "response_match_score",
                    "--no-store"]
        main()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(_rows(tmp_path))], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "frozen at exit: True" in done.stdout


def test_a_paused_collector_comes_back_with_what_the_block_made_frozen() -> None:
    # Re-enabled over everything allocated while it was off, the collector's first pass
    # would be a full one over every result; frozen, they are out of its reach.
    from assay.cli.common import frozen_heap_released, gc_paused

    gc.unfreeze()
    with frozen_heap_released():
        with gc_paused(True):
            made = [[i] for i in range(1_000)]  # tracked objects, as results are
            assert not gc.isenabled()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(made)
    assert gc.get_freeze_count() == 0  # unfrozen: this is not the `assay` program
