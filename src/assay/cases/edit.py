"""Adding, replacing and removing cases of an eval set file, checked before it is saved.

`plan_add` / `plan_remove` compute the new text of the file (only the edited cases'
text changes, see `assay.cases.jsonedit`) and check it with assay's reader of the
format and the format's own library (`assay.cases.validate`); `save` writes it with
a temporary file renamed over the target. `Edit.diff` is the unified diff shown before
a write is confirmed (the viewer's preview, `--dry-run`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.cases.golden import for_format, golden_case
from assay.cases.jsonedit import ArrayText, replaced
from assay.cases.sources import Played
from assay.cases.target import (
    Target,
    case_set,
    parse_lines,
    read_exact,
    read_target,
    write_exact,
)
from assay.cases.validate import validate_text
from assay.core.cases import EvalCase, SessionInput
from assay.errors import InputError
from assay.formats import format_module
from assay.formats.adk import EXT as ADK_EXT
from assay.formats.convert import fit
from assay.report.atomic import replaced_whole


@dataclass
class Edit:
    """A planned write: the file's text before and after, and what changed."""

    path: Path
    fmt: str
    before: str
    after: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    validated_with: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{self.path.name}",
                tofile=f"b/{self.path.name}",
            )
        )


def render_case(target: Target, case: EvalCase) -> dict[str, Any]:
    """`case` as one element of the target file (its format's own JSON)."""
    if target.fmt == "adk":
        return _render_adk(target, case)
    return _render(target, for_format(case, target.fmt))


def _render_adk(target: Target, case: EvalCase) -> dict[str, Any]:
    """An ADK case whose golden turns keep their native steps and final response, with
    their tool mocks beside them under the case's `assay` key (which ADK's reader keeps
    and assay's reads back as the turns' `mock_tool_response` expectations). Written
    through `fit`, mocks would turn the whole turn into expectations, which ADK's
    response metrics do not read."""
    mocks: dict[str, list[dict[str, Any]]] = {}
    turns = []
    for i, turn in enumerate(case.reference or []):
        if turn.expectations and all(e.mock_tool_response is not None for e in turn.expectations):
            mocks[str(i)] = [
                e.model_dump(mode="json", exclude_none=True) for e in turn.expectations
            ]
            turn = turn.model_copy(update={"expectations": []})
        turns.append(turn)
    plain = case if case.reference is None else case.model_copy(update={"reference": turns})
    out = _render(target, plain)
    if mocks:
        ext = out.setdefault(ADK_EXT, {})
        for index, expectations in mocks.items():
            ext.setdefault("turns", {}).setdefault(index, {})["expectations"] = expectations
    return out


def _render(target: Target, case: EvalCase) -> dict[str, Any]:
    fitted, losses = fit(case_set(target, [case]), target.fmt)
    if losses:
        fields = ", ".join(sorted({loss.field for loss in losses}))
        raise InputError(
            f"cannot be written to a {target.fmt} eval set: it has no place for {fields}",
            case_id=case.id,
            file=target.file,
        )
    if target.fmt == "vertex":
        from assay.formats._vertex_write import rows

        return rows(fitted, target.id_key())[0]
    dumped = format_module(target.fmt).dump(fitted)
    if target.fmt == "adk":
        return dict(dumped["eval_cases"][0])
    if "evaluations" in dumped:
        missing = _new_resources(target, dumped.get("evaluationExpectations") or [])
        if missing:
            raise InputError(
                f"refers to rubrics the file has no expectation resource for ({missing}): "
                "add them in CES, not with assay cases",
                case_id=case.id,
                file=target.file,
            )
        return dict(dumped["evaluations"][0])
    return dict(dumped)


def _with_resources(target: Target, cases: Sequence[EvalCase]) -> Target:
    """A CES list with the rubric resources (`evaluationExpectations`) `cases` refer to
    and the file lacks, appended in its layout (the key added after `evaluations` when
    the file has none). Other targets are returned as they are."""
    if target.fmt != "ces" or target.bare_evaluation or not isinstance(target.data, dict):
        return target
    fitted, _ = fit(case_set(target, cases), "ces")  # a loss is refused when rendered
    wanted = format_module("ces").dump(fitted).get("evaluationExpectations") or []
    missing = _new_resources(target, wanted)
    if not missing:
        return target
    names = set(missing.split(", "))
    resources = [r for r in wanted if str(r.get("displayName") or r.get("name")) in names]
    text, file = target.text, target.file
    if "evaluationExpectations" in target.data:
        held = ArrayText.find(text, ("evaluationExpectations",), file)
        text = held.append_all([held.render(r) for r in resources])
    else:
        cases_array = ArrayText.find(text, target.array_path, file)
        unit = cases_array.indent_unit()
        if unit is None:
            body = json.dumps(resources, ensure_ascii=cases_array.ascii_only)
            member = f', "evaluationExpectations": {body}'
        else:
            key_indent = _key_indent(text, cases_array.open_at)
            indent: int | str = len(unit) if set(unit) == {" "} else unit
            body = json.dumps(resources, indent=indent, ensure_ascii=cases_array.ascii_only)
            nl = cases_array.newline
            body = body.replace("\n", nl + key_indent)
            member = f',{nl}{key_indent}"evaluationExpectations": {body}'
        at = cases_array.close_at + 1
        text = text[:at] + member + text[at:]
    return Target(target.path, target.fmt, text, json.loads(text), target.array_path)


def _key_indent(text: str, i: int) -> str:
    line_start = text.rfind("\n", 0, i) + 1
    j = line_start
    while j < i and text[j] in " \t":
        j += 1
    return text[line_start:j]


def _new_resources(target: Target, resources: Sequence[Mapping[str, Any]]) -> str:
    """The display names of CES expectation resources the file does not hold yet."""
    held = target.data.get("evaluationExpectations") if isinstance(target.data, dict) else None
    names = {r.get("displayName") or r.get("name") for r in held or [] if isinstance(r, Mapping)}
    return ", ".join(
        str(r.get("displayName") or r.get("name"))
        for r in resources
        if (r.get("displayName") or r.get("name")) not in names
    )


def _merged(old: dict[str, Any], was: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The file's element `old` with what changed between assay's rendering of it
    before (`was`) and after the edit (`new`): keys the edit did not change keep their
    text, keys assay does not know are kept, the order of `old` is kept."""
    out: dict[str, Any] = {}
    for key, value in old.items():
        if key in new:
            out[key] = value if was.get(key) == new[key] else new[key]
        elif key not in was:
            out[key] = value
    for key, value in new.items():
        if key not in out and key not in old:
            out[key] = value
    return out


def loaded_cases(target: Target) -> list[EvalCase]:
    """The file's cases as assay reads them, one per element of its array."""
    reader = format_module(target.fmt)
    cases = reader.load_data(target.data, file=target.file, mapping=None).cases
    if len(cases) != len(target.raw_cases()):
        raise InputError(
            f"holds {len(target.raw_cases())} elements but reads as {len(cases)} cases",
            file=target.file,
        )
    return list(cases)


def _wrapped(target: Target) -> Target:
    """A CES file of one bare Evaluation as a `{evaluations: [...]}` list."""
    if not target.bare_evaluation:
        return target
    text = json.dumps({"evaluations": [target.data]}, indent=2, ensure_ascii=False) + "\n"
    return Target(target.path, "ces", text, json.loads(text), ("evaluations",))


def plan_add(path: Path, cases: Sequence[EvalCase], *, update: bool = False) -> Edit:
    """The edit adding `cases` to the file at `path` (with `update`, replacing the
    expectations of those it has already; without, such a case is refused)."""
    target = read_target(path)
    return _plan(target, loaded_cases(target), cases, update=update)


def plan_played(
    path: Path,
    played: Sequence[Played],
    *,
    update: bool = False,
    session_input: SessionInput | None = None,
) -> Edit:
    """The edit writing each played conversation as a case expecting what the agent
    did; with `update`, a case the file has keeps its other fields (`golden_case`)."""
    target = read_target(path)
    existing = loaded_cases(target)
    by_id = {c.id: c for c in existing}
    cases = [
        golden_case(
            item.case_id, item.turns, session_input=session_input,
            like=by_id.get(item.case_id) if update else None,
        )
        for item in played
    ]  # fmt: skip
    return _plan(target, existing, cases, update=update)


def _plan(
    target: Target, existing: Sequence[EvalCase], cases: Sequence[EvalCase], *, update: bool
) -> Edit:
    path = target.path
    before = target.text
    index = {c.id: i for i, c in enumerate(existing)}
    if any(c.id not in index for c in cases):
        target = _wrapped(target)  # a second case: a bare Evaluation becomes a list
    ids = [c.id for c in cases]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise InputError(f"the same case is given twice: {', '.join(twice)}", file=str(path))
    clash = [c.id for c in cases if c.id in index]
    if clash and not update:
        raise InputError(
            f"already has case(s) {', '.join(clash)}",
            file=str(path),
            expected="other case ids, or --update to replace their expectations",
        )
    target = _with_resources(target, cases)
    edit = Edit(path, target.fmt, before, target.text)
    elements = target.elements()
    replacements: dict[int, str] = {}
    appended: list[str] = []
    for case in cases:
        if case.id in index:
            i = index[case.id]
            old = json.loads(elements.element(i))
            was = render_case(target, existing[i])
            new = render_case(target, case.model_copy(update={"metadata": existing[i].metadata}))
            merged = _merged(old, was, new)
            if merged == old:
                edit.unchanged.append(case.id)
                continue
            replacements[i] = elements.render(merged)
            edit.updated.append(case.id)
        else:
            appended.append(elements.render(render_case(target, case)))
            edit.added.append(case.id)
    if edit.added or edit.updated:
        # Appending first leaves every element's span where it was: then the replacements.
        edit.after = replaced(elements.append_all(appended), elements.spans, replacements)
    else:
        edit.after = before
    if edit.changed:
        edit.validated_with = validate_text(target, edit.after)
    return edit


def plan_remove(path: Path, case_ids: Sequence[str]) -> Edit:
    """The edit removing the cases `case_ids` from the file at `path`."""
    target = read_target(path)
    if target.bare_evaluation:
        raise InputError(
            "holds one CES Evaluation, not a list: delete the file to remove it",
            file=str(path),
        )
    text = target.text
    edit = Edit(path, target.fmt, text, text)
    for case_id in case_ids:
        current = Target(target.path, target.fmt, text, _reparse(text, target), target.array_path)
        ids = [c.id for c in loaded_cases(current)]
        if case_id not in ids:
            known = ", ".join(ids) or "none"
            raise InputError(f"has no case {case_id!r} (its cases: {known})", file=str(path))
        text = current.elements().remove(ids.index(case_id))
        edit.removed.append(case_id)
    edit.after = text
    edit.validated_with = validate_text(target, text)
    return edit


def _reparse(text: str, target: Target) -> Any:
    if target.is_lines:
        return parse_lines(text, target.file)
    return json.loads(text)


def save(edit: Edit, *, expect_before: str | None = None) -> None:
    """Write the edit's text (nothing when it changes nothing). With `expect_before`,
    refuse when the file no longer holds that text (someone else saved it since)."""
    if not edit.changed:
        return
    current = read_exact(edit.path) if edit.path.exists() else None
    if current != (edit.before if expect_before is None else expect_before):
        raise InputError(
            "changed on disk since the edit was planned; plan it again", file=str(edit.path)
        )
    with replaced_whole(edit.path, "eval set") as tmp:
        write_exact(tmp, edit.after)
