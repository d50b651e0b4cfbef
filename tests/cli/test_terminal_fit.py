"""The CLI's tables in a real terminal of 80 and 120 columns: tmux runs each command in a
pane of that size and `capture-pane -J` gives the screen back with the terminal's own
line wraps joined, so a line the terminal had to wrap shows up longer than the pane.

Nothing here measures strings the code produced: the width is the terminal's (assay's
console asks the pty), as a user at that terminal sees it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.metrics.registry import metric_names

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "home_automation" / "home.evalset.json"
AGENT = "examples.home_automation.agent:root_agent"
WIDTHS = (80, 120)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


class Terminal:
    """A tmux server of its own (`-L`), one detached session per width."""

    def __init__(self, socket: str, cwd: Path) -> None:
        self.socket = socket
        self.cwd = cwd

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"tmux {' '.join(args)}: {done.stderr}"
        return done.stdout

    def run(self, command: str, width: int) -> str:
        """Run `command` (a shell line) in a fresh pane `width` columns wide; the screen
        and its history afterwards, wrapped lines joined."""
        session = f"w{width}-{uuid.uuid4().hex[:8]}"
        signal = f"done-{session}"
        env = {
            "PYTHONPATH": os.pathsep.join(
                [str(REPO / "src"), str(REPO), str(REPO / "tests" / "cli")]
            ),
            "TERM": "xterm-256color",
        }
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        line = (
            f"cd {shlex.quote(str(self.cwd))} && env -u COLUMNS -u LINES {exports} "
            f"{command}; tmux -L {self.socket} wait-for -S {signal}"
        )
        self._tmux("new-session", "-d", "-s", session, "-x", str(width), "-y", "50")
        self._tmux("set-option", "-t", session, "history-limit", "5000")
        self._tmux("send-keys", "-t", session, line, "Enter")
        self._tmux("wait-for", signal)
        screen = self._tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", session)
        self._tmux("kill-session", "-t", session)
        # The output starts after the echoed command line (joined, it ends with the signal).
        lines = screen.rstrip("\n").splitlines()
        start = max(i for i, text in enumerate(lines) if signal in text) + 1
        return "\n".join(text.rstrip() for text in lines[start:]).strip("\n")


@pytest.fixture(scope="module")
def terminal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Terminal]:
    socket = f"assay-fit-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    # A session that stays for the module keeps the server up between the tests' own
    # sessions (a server whose last session ends exits, racing the next new-session).
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "keep"], check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    yield Terminal(socket, tmp_path_factory.mktemp("terminal"))
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def _assay(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", "assay", *args))


@pytest.fixture(scope="module")
def store(terminal: Terminal) -> str:
    """A store with two runs of the example agent, a run of three runs per case and a
    run whose three cases lost a tool call."""
    url = f"sqlite:///{terminal.cwd / 'runs.db'}"
    for agent, runs in (
        (AGENT, "1"),
        (AGENT, "1"),
        (AGENT, "3"),
        ("home_variants:lost_call_agent", "1"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "assay", "eval", str(EXAMPLE), "--agent", agent,
             "--store", url, "--runs", runs, "--fresh"],
            cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO),
                                                              str(REPO / "tests" / "cli")])},
        )  # fmt: skip
        assert done.returncode == 1, done.stderr  # the example has failing cases
    return url


def _fits(screen: str, width: int) -> None:
    too_long = [line for line in screen.splitlines() if len(line) > width]
    assert not too_long, f"wrapped by the terminal at {width} columns:\n" + "\n".join(too_long)


def _run_ids(store: str) -> list[str]:
    from assay.store import Store

    with Store.open(store) as db:
        return [info.id for info in db.list_runs(limit=10)]


@pytest.mark.parametrize("width", WIDTHS)
def test_assay_metrics_one_line_per_metric_grouped_by_family(
    terminal: Terminal, width: int
) -> None:
    screen = terminal.run(_assay("metrics"), width)
    _fits(screen, width)
    lines = screen.splitlines()
    names = set(metric_names())
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    assert sorted(listed) == sorted(names)  # every metric on one line of its own
    headings = [line for line in lines if line and not line.startswith(" ")]
    assert headings[0] == "adk: Google ADK" and len(lines) < len(names) + 20
    assert any(line.startswith("informational:") for line in headings)
    detail = terminal.run(_assay("metrics", "invocation_duration_v1"), width)
    assert "better             lower" in detail and "informational" in detail


@pytest.mark.parametrize("width", WIDTHS)
def test_assay_runs_fits_with_unique_prefixes(terminal: Terminal, store: str, width: int) -> None:
    screen = terminal.run(_assay("runs", "--store", store), width)
    _fits(screen, width)
    ids = _run_ids(store)
    rows = [line for line in screen.splitlines() if line[:2] == ids[0][:2]]
    assert len(rows) == len(ids)
    for row, full in zip(rows, ids, strict=True):
        prefix = row.split()[0]
        assert full.startswith(prefix) and len(prefix) < len(full)
        assert sum(other.startswith(prefix) for other in ids) == 1
        assert "COMPLETED" in row  # a status is never folded (no COMP/LETE/D)
    # The full id is one command away, and the prefix is accepted as input.
    shown = terminal.run(_assay("runs", "show", rows[-1].split()[0], "--store", store), width)
    assert f"run            {ids[-1]}" in shown


@pytest.mark.parametrize("width", WIDTHS)
def test_runs_show_of_a_repeated_run_groups_by_case(
    terminal: Terminal, store: str, width: int
) -> None:
    three = _run_ids(store)[1]  # the run of three runs per case
    screen = terminal.run(_assay("runs", "show", three, "--store", store), width)
    _fits(screen, width)
    cells = [[c.strip() for c in line.split("│")] for line in screen.splitlines()]
    # The case table's rows: case (on a case's first run only), run, status, ...
    rows = [c for c in cells if len(c) > 3 and c[2] in ("1", "2", "3")]
    named = [c[1] for c in rows if c[2] == "1"]
    # Each case once, its runs 1, 2, 3 together (not in completion order).
    assert len(named) == 14 and len(set(named)) == 14 and all(named)
    assert [c[2] for c in rows] == ["1", "2", "3"] * 14
    assert all(not c[1] for c in rows if c[2] != "1")
    why = screen.split("Why cases failed", 1)[1].split("Failure causes", 1)[0]
    assert why.count("two_devices_off") == 1 and "[all 3 runs]" in why
    assert why.count("missing call set_device_info") == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_assay_compare_fits_and_says_unchanged_or_regression(
    terminal: Terminal, store: str, width: int
) -> None:
    ids = _run_ids(store)
    lost, first, second = ids[0], ids[3], ids[2]
    same = terminal.run(_assay("compare", first, second, "--store", store), width)
    _fits(same, width)
    assert "Cases: 14 unchanged" in same and "No regression" in same
    worse = terminal.run(_assay("compare", first, lost, "--store", store), width)
    _fits(worse, width)
    assert "Cases: 3 regressed, 11 unchanged" in worse
    row = next(line for line in worse.splitlines() if line.startswith("tool_trajectory_avg_score"))
    assert "-0.214" in row and "regressed" in row and "[-0.500, -0.071]" in row
    assert "why: missing call set_device_info" in worse


@pytest.mark.parametrize("width", WIDTHS)
def test_the_eval_result_table_fits(terminal: Terminal, width: int) -> None:
    screen = terminal.run(_assay("eval", str(EXAMPLE), "--agent", AGENT, "--no-store"), width)
    _fits(screen, width)
    assert "Result: 10 passed, 4 failed, 0 not evaluated (14 cases)" in screen
    assert "tool_trajectory_avg_score" in screen  # whole, never folded over two lines


@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_refusal_lists_one_case_per_line_at_most_20(terminal: Terminal, width: int) -> None:
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    cases = data["eval_cases"]
    data["eval_cases"] = [{**cases[i % len(cases)], "eval_id": f"case_{i:02d}"} for i in range(30)]
    source = terminal.cwd / "big.evalset.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    target = terminal.cwd / "big.ces.json"
    screen = terminal.run(_assay("convert", str(source), str(target), "--to", "ces"), width)
    listed = [line for line in screen.splitlines() if line.startswith("  case 'case_")]
    assert [line.split("'")[1] for line in listed] == [f"case_{i:02d}" for i in range(20)]
    assert "  and 10 more cases" in screen
    assert "all 30 cases: session_input.app_name" in screen
    assert not target.exists()
