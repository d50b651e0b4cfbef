"""The local viewer's authoring pages: a case run written into an eval set file.

On a case page of `assay view` (not of `assay serve`'s /ui, which must not write the
server's files), "make this the expected behaviour" and "add to eval set" (for a run
read from traces or recorded data: "new case from this conversation") open
`/runs/{run}/author/{key}`: the eval set file to write (under the folder the viewer
was started in) and the mode; posting it shows the diff the write would make, and a
second post saves it, only if the file still holds the text the diff was made from.
Both posts carry the viewer's token (`assay.view.writes`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

from assay.cases.api import add_cases
from assay.cases.edit import Edit, save
from assay.cases.sources import Played
from assay.errors import InputError
from assay.report.analysis import case_run_key
from assay.store import Store
from assay.store.reading import find_run, load_result
from assay.view.pages import esc, layout
from assay.view.writes import WriteGuard, WriteRefused

_CSS = """
form.author label { display: block; margin: 6px 0; }
form.author input[type=text] { width: 36rem; max-width: 100%; }
pre.diff { background: var(--panel); padding: 8px; border-radius: 6px; overflow-x: auto; }
pre.diff .add { color: var(--ok); } pre.diff .del { color: var(--bad); }
"""
_MODES = {
    "update": "make this the expected behaviour (replace the expectations of the case)",
    "add": "add to the eval set as a new case",
}


def author_href(base: str, run_id: str) -> str:
    """The prefix of a case run's authoring page (the key, URL-encoded, follows)."""
    return f"{base}/runs/{quote(run_id)}/author/"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        lines.append(f'<span class="{kind}">{esc(line)}</span>' if kind else esc(line))
    return '<pre class="diff" id="diff">' + "\n".join(lines) + "</pre>"


def add_case_routes(
    app: FastAPI, store: Store, *, root: Path, guard: WriteGuard | None = None
) -> None:
    """Mount the authoring pages on the viewer `app`; files are written under `root`,
    posts checked by `guard` (the viewer's one token; a new one when not given)."""
    guard = guard or WriteGuard()
    folder = root.resolve()

    def base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def page(request: Request, title: str, body: str, status: int = 200) -> HTMLResponse:
        html = layout(title, f"<style>{_CSS}</style>{body}", base=base(request))
        return HTMLResponse(html, status_code=status)

    def played(ref: str, key: str) -> tuple[str, Played, bool]:
        info = find_run(store, ref)
        for result in load_result(store, info).cases:
            if case_run_key(result.eval_set_id, result.case_id, result.run_index) == key:
                turns = [inv.actual for inv in result.invocations if inv.actual is not None]
                recorded = info.agent is None
                return info.id, Played(result.case_id, turns, f"run {info.id}"), recorded
        raise InputError(f"run {info.id} has no case run {key!r}")

    def target(raw: str) -> Path:
        if not raw.strip():
            raise InputError("give the eval set file to write")
        path = (folder / raw.strip()).resolve()
        if not path.is_relative_to(folder):
            raise InputError(f"{raw!r} is outside the folder assay view writes in ({folder})")
        return path

    def action(request: Request, run_id: str, key: str) -> str:
        return author_href(base(request), run_id) + quote(key, safe="")

    def form(request: Request, run_id: str, key: str, file: str, mode: str) -> str:
        choices = "".join(
            f'<label><input type="radio" name="mode" value="{m}" id="mode-{m}"'
            f"{' checked' if m == mode else ''}> {esc(text)}</label>"
            for m, text in _MODES.items()
        )
        return (
            f'<form class="author" method="post" action="{esc(action(request, run_id, key))}">'
            f'{guard.field()}<input type="hidden" name="step" value="preview">'
            f'<label>Eval set file (under {esc(folder)}) <input type="text" name="file" id="file" '
            f'value="{esc(file)}"></label>{choices}'
            '<button type="submit" id="preview">Show the diff</button></form>'
        )

    @app.get("/runs/{ref}/author/{key:path}", response_class=HTMLResponse)
    def author(
        request: Request, ref: str, key: str, mode: str = "update", file: str = ""
    ) -> HTMLResponse:
        run_id, item, recorded = played(ref, key)
        what = "New case from this conversation" if recorded else "Write this case run"
        body = (
            f"<h1>{esc(what)}: {esc(item.case_id)}</h1>"
            f'<p class="muted">case run {esc(key)} of run {esc(run_id)}: what the agent did '
            "(its user turns, tool calls with their arguments, tool results as mocks, final "
            "responses) becomes the case's expectations. The diff is shown before it is saved.</p>"
            + form(request, run_id, key, file, mode if mode in _MODES else "update")
        )
        return page(request, f"assay view · {item.case_id}", body)

    @app.post("/runs/{ref}/author/{key:path}", response_class=HTMLResponse)
    async def write(request: Request, ref: str, key: str) -> HTMLResponse:
        try:
            fields = await guard.form(request)
        except WriteRefused as exc:
            return page(request, "refused", f'<p class="error-page" id="error">{esc(exc)}</p>', 403)
        run_id, item, _recorded = played(ref, key)
        mode = fields.get("mode", "update")
        if mode not in _MODES:
            raise InputError(f"mode={mode!r}: expected one of {', '.join(_MODES)}")
        path = target(fields.get("file", ""))
        edit = add_cases(path, [item], update=mode == "update", dry_run=True)
        if fields.get("step") == "save":
            if fields.get("before") != _digest(edit.before):
                note = (
                    '<p class="error-page" id="error">the file changed since the diff was shown: '
                    "here is the diff against it now</p>"
                )
                return page(
                    request, "changed", note + _preview(request, run_id, key, fields, edit), 409
                )
            save(edit, expect_before=edit.before)
            return page(request, "saved", _saved(edit))
        return page(request, "diff", _preview(request, run_id, key, fields, edit))

    def _preview(
        request: Request, run_id: str, key: str, fields: dict[str, str], edit: Edit
    ) -> str:
        if not edit.changed:
            said = f"{esc(edit.path)} already expects this case run: nothing to write."
            return f'<p id="no-change">{said}</p>'
        hidden = "".join(
            f'<input type="hidden" name="{name}" value="{esc(value)}">'
            for name, value in (
                ("step", "save"),
                ("file", fields.get("file", "")),
                ("mode", fields.get("mode", "update")),
                ("before", _digest(edit.before)),
            )
        )
        checked = ", ".join(edit.validated_with)
        return (
            f"<h1>The diff of {esc(edit.path.name)}</h1>"
            f'<p class="muted">{esc(_summary(edit))}; checked with {esc(checked)}. Nothing is '
            "written until you save.</p>"
            + _diff_html(edit.diff)
            + f'<form method="post" action="{esc(action(request, run_id, key))}">{guard.field()}'
            f'{hidden}<button type="submit" id="save">Save {esc(edit.path.name)}</button></form>'
        )

    def _saved(edit: Edit) -> str:
        return (
            f'<h1 id="saved">Saved {esc(edit.path.name)}</h1>'
            f"<p>{esc(_summary(edit))} in {esc(edit.path)}.</p>" + _diff_html(edit.diff)
        )


def _summary(edit: Edit) -> str:
    parts = [f"added {', '.join(edit.added)}"] if edit.added else []
    if edit.updated:
        parts.append(f"expectations replaced: {', '.join(edit.updated)}")
    return "; ".join(parts) or "no change"
