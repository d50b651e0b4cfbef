"""Transcripts in the docs: a ```console block marked ``<!-- docs-test: transcript -->``
is a shell session shown as it runs, and tests/test_docs.py runs it as printed.

A transcript is `$ COMMAND` lines (a line ending in ``\\`` continues on the next), each
followed by what it prints (stdout and stderr). Its commands run in order in one bash
process, from the root of a copy of the repository; what each prints must match the
lines under it, where ``...`` stands for any text (ids, times, etags, the parts left
out). Fixed ports in ``PORTS`` are replaced by a free port (in the commands and the
replies alike), and whatever the session leaves running is stopped at the end.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"<!--\s*docs-test:\s*transcript\s*-->")
PORTS = ("8767",)
TIMEOUT_S = 150.0
_SEPARATOR = "@@assay-transcript-step@@"


@dataclass(frozen=True)
class Step:
    command: str
    expected: str  # what it prints, as printed in the docs


@dataclass(frozen=True)
class Transcript:
    page: str
    line: int
    steps: tuple[Step, ...]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:transcript"


def transcripts_of(path: Path, root: Path) -> list[Transcript]:
    """The marked ```console blocks of one page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for i, line in enumerate(lines):
        if not line.startswith("```console"):
            continue
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j < 0 or not MARKER.search(lines[j]):
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        found.append(
            Transcript(path.relative_to(root).as_posix(), i + 1, parse(lines[i + 1 : end]))
        )
    return found


def parse(lines: list[str]) -> tuple[Step, ...]:
    steps: list[Step] = []
    command: list[str] = []
    output: list[str] = []
    for line in lines:
        continues = bool(command) and command[-1].endswith("\\") and not output
        if continues:
            command.append(line)
        elif line.startswith("$ "):
            if command:
                steps.append(Step("\n".join(command), "\n".join(output)))
            command, output = [line[2:]], []
        else:
            if not command:
                raise ValueError(f"a transcript starts with a command ($ ...), not {line!r}")
            output.append(line)
    if command:
        steps.append(Step("\n".join(command), "\n".join(output)))
    return tuple(steps)


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def run_in_group(
    script: str, cwd: Path, env: dict[str, str], log: Path, timeout: float
) -> int | None:
    """Run a bash `script` in a process group of its own, its output into `log` (a file,
    not a pipe: a server it leaves in the background would hold a pipe open); then stop
    the group, whatever it started in the background included. Its exit code, or None
    when it did not finish within `timeout` seconds."""
    with log.open("w+", encoding="utf-8") as out:
        process = subprocess.Popen(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return code


def matches(expected: str, actual: str) -> bool:
    """`actual` is `expected` with each `...` standing for any text (lines' trailing
    spaces ignored)."""
    expected = "\n".join(line.rstrip() for line in expected.strip().splitlines())
    actual = "\n".join(line.rstrip() for line in actual.strip().splitlines())
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


def run(transcript: Transcript, cwd: Path, env: dict[str, str]) -> list[str]:
    """Run the transcript's commands in order; the output of each, as printed."""
    ports = {port: _free_port() for port in PORTS}

    def local(text: str) -> str:
        for port, free in ports.items():
            text = re.sub(rf"\b{port}\b", free, text)
        return text

    script = ["set -o pipefail", "exec 2>&1"]
    for step in transcript.steps:
        script += [f"printf '\\n{_SEPARATOR}\\n'", local(step.command)]
    script.append(f"printf '\\n{_SEPARATOR}\\n'")
    log = cwd.parent / f"transcript-{transcript.line}.log"
    run_in_group("\n".join(script), cwd, env, log, TIMEOUT_S)
    pieces = log.read_text(encoding="utf-8", errors="replace").split(f"\n{_SEPARATOR}\n")
    outputs = pieces[1:]  # before the first separator: nothing
    for port, free in ports.items():
        outputs = [o.replace(free, port) for o in outputs]
    return outputs
