"""An eval set file being edited: which format, where its cases are, how one is written.

- ADK `*.evalset.json`: the `eval_cases` (or camelCase `evalCases`) array; a new case
  is written in snake_case, which google-adk reads in either file.
- CES JSON: the `evaluations` array of a `{evaluations: [...]}` file (ids: `name`, else
  `displayName`); a file holding one bare Evaluation is wrapped the first time a case
  is added to it (a CES list holds several).
- Vertex: a JSON array of rows, the `eval_cases` array of an envelope, or JSON lines
  (ids: the file's id column, `id` unless it uses `eval_case_id` or `eval_id`).

CES YAML and CSV files are refused: their text cannot be edited without rewriting it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.cases.jsonedit import ArrayText
from assay.core.cases import EvalCase, EvalSet
from assay.errors import ConfigError, InputError
from assay.formats import detect_format

FORMATS = ("adk", "ces", "vertex")
_LINES = (".jsonl", ".ndjson")
_VERTEX_IDS = ("id", "eval_case_id", "eval_id")


def json_lines(text: str) -> list[str]:
    """The lines of a JSON-lines text, each with its ending: split at "\n" only (a JSON
    string may hold U+2028 and other characters `str.splitlines` splits at)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def parse_lines(text: str, file: str) -> list[Any]:
    rows = []
    for number, line in enumerate(json_lines(text), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"line {number}: not valid JSON: {exc}", file=file) from None
    return rows


class LinesText:
    """JSON lines: one element per non-blank line (the same edits as `ArrayText`). A
    span is the line without its ending; removing an element removes its ending too."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        spans: list[tuple[int, int]] = []
        at = 0
        for line in json_lines(text):
            body = line.rstrip("\r\n")
            if body.strip():
                spans.append((at, at + len(body)))
            at += len(line)
        self.spans = tuple(spans)

    def element(self, index: int) -> str:
        start, end = self.spans[index]
        return self.text[start:end]

    def render(self, value: object) -> str:
        return json.dumps(value, ensure_ascii=False)

    def append(self, element: str) -> str:
        text = self.text
        newline = "\r\n" if "\r\n" in text else "\n"
        if text and not text.endswith("\n"):
            text += newline
        return text + element + newline

    def append_all(self, elements: Sequence[str]) -> str:
        text = self.text
        for element in elements:
            text = LinesText(text, self.file).append(element)
        return text

    def replace(self, index: int, element: str) -> str:
        start, end = self.spans[index]
        return self.text[:start] + element + self.text[end:]

    def remove(self, index: int) -> str:
        start, end = self.spans[index]
        line_end = self.text.find("\n", end)
        return self.text[:start] + ("" if line_end < 0 else self.text[line_end + 1 :])


class WholeText:
    """A document that is its one case (a CES file of one bare Evaluation): the case is
    replaced in place; adding a second one makes the file a list first."""

    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        start = len(text) - len(text.lstrip())
        self.spans = ((start, len(text.rstrip())),)
        self._layout = ArrayText(text, file, 0, 0, ())

    def element(self, index: int) -> str:
        start, end = self.spans[index]
        return self.text[start:end]

    def render(self, value: object) -> str:
        unit = self._layout.indent_unit()
        ascii_only = self._layout.ascii_only
        if unit is None:
            return json.dumps(value, ensure_ascii=ascii_only)
        indent: int | str = len(unit) if set(unit) == {" "} else unit
        dumped = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
        return dumped.replace("\n", self._layout.newline)

    def replace(self, index: int, element: str) -> str:
        start, end = self.spans[index]
        return self.text[:start] + element + self.text[end:]

    def append(self, element: str) -> str:
        raise InputError("holds one CES Evaluation: make it a list first", file=self.file)

    def append_all(self, elements: Sequence[str]) -> str:
        if elements:
            return self.append(elements[0])
        return self.text

    def remove(self, index: int) -> str:
        raise InputError(
            "holds one CES Evaluation, not a list: delete the file to remove it", file=self.file
        )


Elements = ArrayText | LinesText | WholeText


@dataclass
class Target:
    """An eval set file's text, its format and its array of cases."""

    path: Path
    fmt: str
    text: str
    data: Any
    array_path: tuple[str, ...]

    @property
    def file(self) -> str:
        return str(self.path)

    def elements(self) -> Elements:
        if self.is_lines:
            return LinesText(self.text, self.file)
        if self.bare_evaluation:
            return WholeText(self.text, self.file)
        return ArrayText.find(self.text, self.array_path, self.file)

    @property
    def is_lines(self) -> bool:
        return self.path.suffix.lower() in _LINES

    @property
    def bare_evaluation(self) -> bool:
        """A CES file holding one Evaluation, not a list of them."""
        return self.fmt == "ces" and not self.array_path

    def raw_cases(self) -> list[Any]:
        if self.is_lines:
            return list(self.data)
        if self.bare_evaluation:
            return [self.data]
        node = self.data
        for key in self.array_path:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, list):
            where = ".".join(self.array_path) or "the document"
            raise InputError(f"{where} is not a list of cases", file=self.file)
        return list(node)

    def id_key(self) -> str:
        """The key that names a case in this file (for Vertex rows: the column in use)."""
        if self.fmt == "adk":
            return "eval_id"
        if self.fmt == "ces":
            return "name"
        for key in _VERTEX_IDS:
            if any(isinstance(r, dict) and key in r for r in self.raw_cases()):
                return key
        return "eval_case_id" if self.array_path else "id"

    def set_id(self) -> str:
        if isinstance(self.data, dict):
            for key in ("eval_set_id", "evalSetId"):
                value = self.data.get(key)
                if isinstance(value, str):
                    return value
        return self.path.name.split(".")[0]


def read_exact(path: Path) -> str:
    """The file's text with its line endings as they are (no newline translation)."""
    with path.open(encoding="utf-8", newline="") as f:
        return f.read()


def write_exact(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(text)


def read_target(path: Path) -> Target:
    """The eval set file at `path`, ready to edit (refused: formats it cannot edit)."""
    file = str(path)
    if path.is_dir():
        raise InputError("is a folder, not an eval set file", file=file)
    if not path.is_file():
        raise InputError("no such file (create it with `assay cases new FILE`)", file=file)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", ".csv"):
        raise InputError(
            f"{suffix} files are not edited by assay cases (their text would be rewritten)",
            file=file,
            expected="a JSON or JSON-lines eval set (convert it with assay convert)",
        )
    try:
        text = read_exact(path)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", file=file) from None
    data = _parse(text, path)
    # An empty list of rows (what `cases new --format vertex` writes) has no columns to
    # detect by: it is a Vertex dataset.
    fmt = "vertex" if data == [] else detect_format(data, path)
    if fmt not in FORMATS:
        raise InputError(
            f"is {fmt} data; assay cases edits ADK, CES and Vertex eval sets", file=file
        )
    return Target(path, fmt, text, data, _array_path(fmt, data, path))


def _parse(text: str, path: Path) -> Any:
    if path.suffix.lower() in _LINES:
        return parse_lines(text, str(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", file=str(path)) from None


def _array_path(fmt: str, data: object, path: Path) -> tuple[str, ...]:
    if path.suffix.lower() in _LINES:
        return ()
    if fmt == "adk":
        if isinstance(data, dict) and "scenarios" in data and "eval_cases" not in data:
            raise InputError(
                "a conversation scenarios file is not edited by assay cases",
                file=str(path),
                expected="an ADK eval set {eval_set_id, eval_cases[]}",
            )
        # google-adk writes and reads camelCase too (`evalCases`)
        return ("evalCases",) if isinstance(data, dict) and "evalCases" in data else ("eval_cases",)
    if fmt == "ces":
        if isinstance(data, dict) and "evaluations" in data:
            return ("evaluations",)
        if isinstance(data, dict) and ("golden" in data or "scenario" in data):
            return ()
        raise InputError(
            "is not a CES Evaluation or a list of them", file=str(path),
            expected='{"evaluations": [...]} or one Evaluation',
        )  # fmt: skip
    if isinstance(data, dict):
        return ("eval_cases",)
    return ()


def new_text(fmt: str, set_id: str, path: Path) -> str:
    """The text of an empty eval set of `fmt` (what `assay cases new` writes)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if path.suffix.lower() in _LINES:
        if fmt != "vertex":
            raise ConfigError(f"a {fmt} eval set is a JSON file, not JSON lines ({path.name})")
        return ""
    if fmt == "adk":
        body: object = {"eval_set_id": set_id, "eval_cases": []}
    elif fmt == "ces":
        body = {"evaluations": []}
    else:
        return "[]\n"
    return json.dumps(body, indent=2) + "\n"


def case_set(target: Target, cases: Sequence[EvalCase]) -> EvalSet:
    return EvalSet(id=target.set_id(), cases=list(cases))
