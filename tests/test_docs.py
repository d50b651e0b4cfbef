"""Every documented command runs: the shell and Python blocks of README.md and docs/*.md.

Each ```bash, ```sh and ```python block of README.md and of every docs/*.md (found
anew each run, so a page someone adds is covered at once) is one test, run in the
order of its file, from the root of a fresh copy of the repository (one copy per
file, so what a page writes is seen by its later blocks and never by other pages or
the checkout). Offline: nothing here reaches beyond 127.0.0.1.

Rules a block is held to:

- A block directly preceded by the line ``<!-- docs-test: skip: REASON -->`` (blank
  lines between are allowed) is not run; pytest reports it skipped with REASON. Use it
  for blocks that need a real API key, a long time, or a server that keeps running.
  ```text / ```json / ```console blocks are never run: write output samples that way.
- Shell blocks run with bash in their own process group, with this interpreter's
  environment first on PATH, stdin closed. A command that exits 2 or more (a usage or
  input error, a crash) fails the block at once; exit 1 is accepted, because `assay
  eval` documents it for "a case failed" and the examples fail cases on purpose. Any
  Python traceback in the output fails the block too. Lines
  that install assay itself (``pip install -e ...``) are not re-run: the suite runs
  inside the virtualenv that installed the checkout with ``.[dev]``, which holds every
  extra. Whatever a block leaves running in the background is stopped when it ends.
  The fixed ports in ``DOC_PORTS`` (the stand-in's 8012) are replaced by a free port
  per block, so two runs of the suite at once never collide.
- Python blocks of one file share one namespace, as in a notebook: they run in one
  interpreter process per file (cwd = the copy's root, which is on ``sys.path``).
- Each block has ``BLOCK_TIMEOUT_S`` seconds; one that takes longer fails (and its
  processes are killed), so a server that does not stop cannot hang the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import docs_transcript

REPO = Path(__file__).resolve().parents[1]
BLOCK_TIMEOUT_S = 90.0
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell"})
RUN_LANGUAGES = SHELL_LANGUAGES | {"python"}
SKIP = re.compile(r"<!--\s*docs-test:\s*skip:\s*(?P<reason>.+?)\s*-->")
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*$")
# `pip install -e .`, `pip install -e '.[dev]'`, `python -m pip install -e ".[adk]"`, ...
SELF_INSTALL = re.compile(r"""^\s*(python3? -m )?pip install (-q )?-e ['"]?\.(\[[\w,-]+\])?['"]?""")
# Exit at the first command that fails with 2 or more (see the module docstring).
SHELL_PRELUDE = "set -o pipefail\ntrap 'rc=$?; if [ $rc -ge 2 ]; then exit $rc; fi' ERR\n"
TRACEBACK = "Traceback (most recent call last)"
# What a copy of the repository leaves out: environments, caches, stores of runs.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".hypothesis", ".assay", ".adk", "*.egg-info", "node_modules",
)  # fmt: skip


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str  # path relative to the repository root
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skip_reason: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.language}"


def doc_pages() -> list[Path]:
    """README.md and every docs/*.md (sorted), as they are now."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks_of(path: Path, root: Path = REPO) -> list[Block]:
    """The runnable blocks of one page, in order, with their skip markers."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, language = opening["indent"], opening["lang"].lower()
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[i + 1 : end]]
        if language in RUN_LANGUAGES:
            code = "\n".join(body) + "\n"
            found.append(Block(page, i + 1, language, code, _skip_reason(lines, i)))
        i = end + 1
    return found


def _skip_reason(lines: list[str], fence: int) -> str | None:
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    marker = SKIP.search(lines[j]) if j >= 0 else None
    return marker["reason"] if marker else None


def without_self_installs(code: str) -> str:
    """The shell block without the lines that install assay itself (see the module doc).

    A line such as ``pip install -e . && assay eval ...`` keeps what follows ``&&``.
    """
    kept: list[str] = []
    for line in code.replace("\\\n", " ").splitlines():
        if SELF_INSTALL.match(line):
            rest = line.split("&&", 1)
            line = rest[1] if len(rest) == 2 else ""
        kept.append(line)
    return "\n".join(kept) + "\n"


ALL_BLOCKS = [block for page in doc_pages() for block in blocks_of(page)]


# -- where blocks run -------------------------------------------------------------------


class PythonSession:
    """One interpreter per page: blocks are sent over stdin and exec'd in one namespace."""

    WORKER = textwrap.dedent(
        """
        import json, sys, traceback
        sys.path.insert(0, ".")
        namespace = {"__name__": "__main__"}
        out = sys.stdout
        sys.stdout = sys.stderr  # what blocks print goes to stderr, the protocol to stdout
        for line in sys.stdin:
            request = json.loads(line)
            try:
                exec(compile(request["code"], request["name"], "exec"), namespace)
                reply = {"ok": True}
            except BaseException:
                reply = {"ok": False, "error": traceback.format_exc(limit=-6)}
            out.write(json.dumps(reply) + "\\n")
            out.flush()
        """
    )

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        # What blocks print goes to a file: a pipe nobody reads would fill and block them.
        self.log = cwd.parent / "python-blocks.log"
        self._log_file = self.log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-c", self.WORKER],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
            start_new_session=True,
        )
        self.broken: str | None = None

    def run(self, block: Block) -> None:
        if self.broken is not None:
            pytest.fail(f"an earlier Python block of {block.page} broke the session: {self.broken}")
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"code": block.code, "name": block.id}) + "\n")
        self.process.stdin.flush()
        reply = _read_line(self.process, BLOCK_TIMEOUT_S)
        if reply is None:
            self.broken = f"{block.id} did not finish within {BLOCK_TIMEOUT_S:g}s"
            self.close()
            pytest.fail(self.broken + "\n" + self._stderr())
        result: dict[str, Any] = json.loads(reply)
        if not result["ok"]:
            pytest.fail(f"{block.id} raised:\n{result['error']}\n---\n{self._stderr()}")

    def _stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def close(self) -> None:
        _kill_group(self.process)
        self._log_file.close()


def _read_line(process: subprocess.Popen[str], timeout: float) -> str | None:
    """One line of the worker's stdout, or None when it takes longer than `timeout`."""
    stdout = process.stdout
    assert stdout is not None
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive() or not box or not box[0]:
        return None
    return box[0]


def _kill_group(process: subprocess.Popen[Any]) -> None:
    """Stop a process and everything it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@dataclass
class PageCopy:
    root: Path
    python: PythonSession | None = None


def _environment(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # Offline and deterministic: no credentials for real services leak into the docs.
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                 "ANTHROPIC_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):  # fmt: skip
        env.pop(name, None)
    env["HOME"] = str(home)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    return env


@pytest.fixture(scope="session")
def page_copies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, PageCopy]]:
    copies: dict[str, PageCopy] = {}
    yield copies
    for copy in copies.values():
        if copy.python is not None:
            copy.python.close()


def _copy_for(copies: dict[str, PageCopy], page: str, factory: pytest.TempPathFactory) -> PageCopy:
    if page not in copies:
        base = factory.mktemp(re.sub(r"\W", "_", page))
        root = base / "repo"
        shutil.copytree(REPO, root, ignore=COPY_IGNORE)
        (base / "home").mkdir()
        copies[page] = PageCopy(root)
    return copies[page]


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.id for b in ALL_BLOCKS])
def test_documented_block_runs(
    block: Block, page_copies: dict[str, PageCopy], tmp_path_factory: pytest.TempPathFactory
) -> None:
    if block.skip_reason is not None:
        pytest.skip(block.skip_reason)
    copy = _copy_for(page_copies, block.page, tmp_path_factory)
    env = _environment(copy.root.parent / "home")
    if block.language == "python":
        if copy.python is None:
            copy.python = PythonSession(copy.root, env)
        copy.python.run(block)
        return
    _run_shell(block, copy.root, env)


# Fixed ports the docs give servers they start in the background (8012: the stand-in
# judge). Each block gets a free port in their place, so two runs of the suite at once
# (CI and a developer's checkout, two worktrees) never meet on the same port.
DOC_PORTS = ("8012",)


def with_free_ports(script: str) -> str:
    for port in DOC_PORTS:
        if re.search(rf"\b{port}\b", script):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                free = sock.getsockname()[1]
            script = re.sub(rf"\b{port}\b", str(free), script)
    return script


def _run_shell(block: Block, cwd: Path, env: dict[str, str]) -> None:
    script = with_free_ports(without_self_installs(block.code))
    log = cwd.parent / f"shell-{block.line}.log"
    code = docs_transcript.run_in_group(SHELL_PRELUDE + script, cwd, env, log, BLOCK_TIMEOUT_S)
    output = log.read_text(encoding="utf-8", errors="replace")
    if code is None:
        pytest.fail(f"{block.id} did not finish within {BLOCK_TIMEOUT_S:g}s:\n{output[-4000:]}")
    if code not in (0, 1) or TRACEBACK in output:
        pytest.fail(f"{block.id} exited {code}:\n{script}\n---\n{output[-6000:]}")


# -- the runner's own rules -------------------------------------------------------------


def test_blocks_are_found_on_every_page() -> None:
    pages = {b.page for b in ALL_BLOCKS}
    assert "README.md" in pages
    assert any(p.startswith("docs/") for p in pages)


def test_skip_marker_and_self_install_rules(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "intro\n<!-- docs-test: skip: needs a real key -->\n\n```bash\nassay eval x\n```\n"
        "```python\nx = 1\n```\n```text\nnot run\n```\n",
        encoding="utf-8",
    )
    found = blocks_of(page, tmp_path)
    assert [(b.language, b.skip_reason) for b in found] == [
        ("bash", "needs a real key"),
        ("python", None),
    ]
    script = without_self_installs("pip install -e '.[adk]'\npip install -e . && assay metrics\n")
    assert script.split() == ["assay", "metrics"]


def test_fixed_doc_ports_become_free_ports() -> None:
    script = with_free_ports("serve --port 8012 &\nURL=http://127.0.0.1:8012/v1 run 18012\n")
    ports = set(re.findall(r":(\d+)/v1|--port (\d+)", script))
    chosen = {p for pair in ports for p in pair if p}
    assert len(chosen) == 1 and "8012" not in chosen  # one free port, used at both places
    assert script.endswith(" run 18012\n")  # a number that merely contains it is kept


# -- transcripts: sessions shown as they run (docs_transcript.py) ------------------------

ALL_TRANSCRIPTS = [t for page in doc_pages() for t in docs_transcript.transcripts_of(page, REPO)]


@pytest.mark.parametrize("transcript", ALL_TRANSCRIPTS, ids=[t.id for t in ALL_TRANSCRIPTS])
def test_documented_transcript_runs_as_printed(
    transcript: docs_transcript.Transcript, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A copy of its own: a session leaves a store and files behind.
    base = tmp_path_factory.mktemp("transcript")
    root = base / "repo"
    shutil.copytree(REPO, root, ignore=COPY_IGNORE)
    (base / "home").mkdir()
    outputs = docs_transcript.run(transcript, root, _environment(base / "home"))
    for i, step in enumerate(transcript.steps):
        assert i < len(outputs), f"{transcript.id}: stopped before `{step.command}`"
        assert TRACEBACK not in outputs[i], f"`{step.command}` printed:\n{outputs[i]}"
        assert docs_transcript.matches(step.expected, outputs[i]), (
            f"{transcript.id}: `{step.command}` printed\n{outputs[i]}\n--- the docs show\n"
            f"{step.expected}"
        )


def test_the_readme_service_session_is_a_transcript() -> None:
    (session,) = [t for t in ALL_TRANSCRIPTS if "evaluations:run" in str(t.steps)]
    commands = [s.command for s in session.steps if "curl" in s.command and " -d " in s.command]
    # Every request with a body says it is JSON, but the one showing the 400 without it.
    assert [c for c in commands if '-H "$JSON"' not in c] == [commands[0]]
    assert '"passedCount":1' in str(session.steps)


def test_transcripts_parse_and_match() -> None:
    steps = docs_transcript.parse(
        ["$ echo a \\", "    b", "a b", "$ true", "$ date", "it is ... now"]
    )
    assert [(s.command, s.expected) for s in steps] == [
        ("echo a \\\n    b", "a b"),
        ("true", ""),
        ("date", "it is ... now"),
    ]
    assert docs_transcript.matches("it is ... now", "it is 5 o'clock\non Monday now  \n")
    assert not docs_transcript.matches("it is ... now", "it was 5 now")
    assert docs_transcript.matches("", "\n")
