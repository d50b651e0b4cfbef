"""`assay view`: a local web app over the store (FastAPI, server-rendered pages).

Routes (each page has its own URL, so every view can be linked to):

- `/` — the runs (filters `eval_set`, `agent`, `status`, `since`), pass rate over time
  per eval set, and a form to compare selected runs;
- `/runs/{run}` — the run's HTML report (the same page `assay report --html` writes);
  `/runs/{run}/cases/{key}` opens one case of it (`key` is `set/case#run`);
- `/compare?runs=A&runs=B[&runs=C]` — B (and C) against A, regressions first; with
  `&judge=MODEL` (and `metric`, `criteria`, `trajectories`, `base_url` as given to
  `assay compare --judge`) the pairwise verdicts, read from the store's judge cache;
- `/runs/{run}/review` — the review queue: people label the judged results one case at a
  time (`view/review.py`); a POST there stores a label.

`{run}` is an id, a unique prefix, `latest` or `latest~N`. Pages of a run still in
progress reload themselves every few seconds. The app only reads the store, but for
the labels of the review queue; the local `assay view` also writes case runs into eval
set files on request (`/runs/{run}/author/{key}`, `assay.view.cases`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from assay.errors import AssayError, InputError
from assay.report.compare import compare_many
from assay.report.html import page as report_page
from assay.report.html import report_data
from assay.session.label_calibration import stored_agreement
from assay.store import RunNotFoundError, Store
from assay.store.labels import (
    LabelTargetNotFoundError,
    LabelValueError,
    judge_verdict,
    local_author,
)
from assay.store.reading import find_run, load_result
from assay.store.runs import RunInfo
from assay.store.schema import RunStatus
from assay.view import review
from assay.view.pages import (
    ICON,
    compare_query,
    comparison_section,
    esc,
    layout,
    nav,
    pairwise_form,
    pairwise_section,
    runs_page,
)
from assay.view.writes import WriteGuard, WriteRefused

#: seconds between reloads of a page that shows a run still in progress
REFRESH_S = 3
_UNFINISHED = {"RUNNING", "PENDING"}


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _csrf(request: Request) -> str | None:
    """The CSRF token of the browser session serving this request (`assay serve`'s
    /ui login), if any."""
    token = request.scope.get("state", {}).get("ui_csrf")
    return token if isinstance(token, str) else None


def _error(request: Request, status: int, message: str) -> HTMLResponse:
    body = f'<h1>Not available</h1><p class="error-page" id="error">{esc(message)}</p>'
    page = layout("assay view", body, base=_base(request), csrf=_csrf(request))
    return HTMLResponse(page, status_code=status)


def previous_run(store: Store, info: RunInfo) -> RunInfo | None:
    """The latest run of the same eval sets made before `info` (what its page offers
    to compare with), or None."""
    for other in store.list_runs(limit=500):  # newest first
        if (
            other.id != info.id
            and other.eval_set_ids == info.eval_set_ids
            and (other.created_at, other.id) < (info.created_at, info.id)
        ):
            return other
    return None


def _author(request: Request) -> str:
    """Who is looking: the API key's name behind `/ui`, the OS user in `assay view`."""
    key = request.scope.get("state", {}).get("api_key")
    return str(key.name) if key is not None else local_author()


def create_view_app(
    store: Store, *, local_writes: bool = False, cases_root: Path | None = None
) -> FastAPI:
    """The viewer over `store` (which the caller opens and closes).

    `local_writes`: the review queue's labels may be written with a token made now and
    held in the viewer's own pages, from a loopback `Host` (`assay view`, and `assay
    serve` without API keys); otherwise only behind the service's login (`view/review.py`).
    With `cases_root` (the local `assay view`), case pages offer to write the case run
    into an eval set file under that folder (`assay.view.cases`).
    """
    app = FastAPI(title="assay view", docs_url=None, redoc_url=None, openapi_url=None)
    # One token per viewer process for both of its writers (`view/writes.py`).
    guard = WriteGuard()
    local_token = guard.token if local_writes else None
    if cases_root is not None:
        from assay.view.cases import add_case_routes

        add_case_routes(app, store, root=cases_root, guard=guard)

    @app.exception_handler(AssayError)
    async def _assay_error(request: Request, exc: AssayError) -> Response:
        status = 404 if isinstance(exc, RunNotFoundError | LabelTargetNotFoundError) else 400
        if isinstance(exc, WriteRefused):
            status = 403
        return _error(request, status, str(exc))

    def _review(request: Request, ref: str, case: str, view: str, metric: str,
                message: str = "", status: int = 200) -> HTMLResponse:  # fmt: skip
        if view not in review.FILTERS:
            raise InputError(f"filter={view!r}: expected one of {', '.join(review.FILTERS)}")
        info = find_run(store, ref)
        cases = review.load_cases(store, info.id)
        token = _csrf(request) or local_token or ""
        body = review.review_page(
            base=_base(request),
            run_id=info.id,
            cases=cases,
            ref=case,
            view=view,
            metric=metric,
            author=_author(request),
            token=token,
            message=message,
        )
        page = layout(
            f"assay view · review {info.id}", body, base=_base(request), csrf=_csrf(request)
        )
        return HTMLResponse(page, status_code=status)

    @app.get("/runs/{ref}/review", response_class=HTMLResponse)
    def review_queue(
        request: Request, ref: str, case: str = "", filter: str = "unlabelled", metric: str = ""
    ) -> HTMLResponse:
        return _review(request, ref, case, filter, metric)

    @app.post("/runs/{ref}/review", response_class=HTMLResponse)
    async def review_label(request: Request, ref: str) -> Response:
        form = review.read_form(await request.body())
        if form is None:
            raise InputError("the label form is too large or not a form")
        author = review.check_writer(request.scope, form, local_token, _author(request))
        view = form.get("filter", "unlabelled")
        metric_filter = form.get("metric_filter", "")
        case, metric = form.get("case", ""), form.get("metric", "")
        return await anyio.to_thread.run_sync(
            lambda: _store_label(request, ref, form, author, (case, metric, view, metric_filter))
        )

    def _store_label(request: Request, ref: str, form: dict[str, str], author: str,
                     where: tuple[str, str, str, str]) -> Response:  # fmt: skip
        case, metric, view, metric_filter = where
        info = find_run(store, ref)
        target = store.labels.find_case(info.id, case)
        result = target.metric(metric)
        try:
            value = review.label_value(form, judge_verdict(result))
            store.labels.set_label(
                info.id, target, metric=metric, label=value, author=author, note=form.get("note")
            )
        except (InputError, LabelValueError) as exc:
            return _review(request, ref, target.ref, view, metric_filter, str(exc), 400)
        # The same case while it holds an item you have not labelled yet, else the next
        # case of the queue.
        cases = review.load_cases(store, info.id)
        here = [c for c in cases if c.ref == target.ref]
        stay = bool(review.queue(here, "unlabelled", metric_filter, author))
        following = (
            target.ref if stay else review.next_ref(cases, target.ref, view, metric_filter, author)
        )
        url = review.review_url(
            _base(request), info.id, filter=view, metric=metric_filter, case=following
        )
        return RedirectResponse(url, status_code=303)

    @app.get("/", response_class=HTMLResponse)
    def runs(
        request: Request,
        eval_set: str = "",
        agent: str = "",
        status: str = "",
        since: str = "",
    ) -> HTMLResponse:
        infos = store.list_runs(limit=500)
        if since:
            try:
                day = datetime.fromisoformat(since).date()
            except ValueError:
                raise InputError(f"since={since!r}: expected a date YYYY-MM-DD") from None
            infos = [i for i in infos if i.created_at.date() >= day]
        if eval_set:
            infos = [i for i in infos if any(eval_set in s for s in i.eval_set_ids)]
        if agent:
            infos = [i for i in infos if agent in (i.agent or "")]
        if status:
            known = [s.value for s in RunStatus]
            if status.upper() not in known:
                raise InputError(f"status={status!r}: expected one of {', '.join(known)}")
            infos = [i for i in infos if i.status == status.upper()]
        filters = {"eval_set": eval_set, "agent": agent, "status": status, "since": since}
        refresh = REFRESH_S if any(i.status in _UNFINISHED for i in infos) else None
        body = runs_page(infos, filters, base=_base(request))
        return HTMLResponse(
            layout(
                "assay view · runs",
                body,
                base=_base(request),
                refresh=refresh,
                csrf=_csrf(request),
            )
        )

    @app.get("/runs/{ref}", response_class=HTMLResponse)
    def run(request: Request, ref: str) -> HTMLResponse:
        info = find_run(store, ref)
        result = load_result(store, info)
        data = report_data(result, run=info, title=info.name or f"run {info.id}")
        before = previous_run(store, info)
        data["header"]["compare_previous"] = before and {
            "label": before.name or before.id,
            "href": f"{_base(request)}/compare?{compare_query([before.id, info.id])}",
        }
        if cases_root is not None:
            from assay.view.cases import author_href

            data["header"]["case_actions"] = {
                "href": author_href(_base(request), info.id),
                "recorded": info.agent is None,
            }
        head = ICON + (
            f'<meta http-equiv="refresh" content="{REFRESH_S}">'
            if info.status in _UNFINISHED
            else ""
        )
        agreement = review.agreement_section(
            _base(request), info.id, stored_agreement(store, info.id)
        )
        return HTMLResponse(
            report_page(
                str(data["header"]["title"]),
                data,
                extra_head=head,
                nav=nav(_base(request), _csrf(request)) + agreement,
            )
        )

    @app.get("/runs/{ref}/cases/{key:path}")
    def case(request: Request, ref: str, key: str) -> RedirectResponse:
        info = find_run(store, ref)
        target = f"{_base(request)}/runs/{quote(info.id)}#case/{quote(key, safe='')}"
        return RedirectResponse(target, status_code=307)

    @app.get("/compare", response_class=HTMLResponse)
    def compare(
        request: Request,
        runs: list[str] = Query(default=[]),
        order: str = "",
        judge: str = "",
        metric: str = "",
        criteria: str = "",
        trajectories: bool = False,
        base_url: str = "",
    ) -> HTMLResponse:
        if len(runs) < 2:
            raise InputError("select two or more runs to compare (the first is the base)")
        infos = [find_run(store, r) for r in runs]
        if order == "time":  # from the runs page's checkboxes: the oldest run is the base
            infos.sort(key=lambda i: (i.created_at, i.id))
        results = [load_result(store, i) for i in infos]
        names = {i.id: i.name or "" for i in infos}
        sections = [
            comparison_section(c, results[0], other, base=_base(request), names=names)
            for c, other in zip(
                compare_many(results, names=[i.name for i in infos]), results[1:], strict=True
            )
        ]
        given = {"judge": judge, "metric": metric, "criteria": criteria, "base_url": base_url,
                 "trajectories": "1" if trajectories else ""}  # fmt: skip
        if judge.strip():
            pairs = _cached_pairwise(store, results, given)
            sections = [s + pairwise_section(p) for s, p in zip(sections, pairs, strict=True)]
        form = pairwise_form([i.id for i in infos], _base(request), given)
        body = "<h1>Compare runs</h1>" + form + "".join(sections)
        refresh = REFRESH_S if any(i.status in _UNFINISHED for i in infos) else None
        return HTMLResponse(
            layout(
                "assay view · compare",
                body,
                base=_base(request),
                refresh=refresh,
                csrf=_csrf(request),
            )
        )

    return app


def _cached_pairwise(store: Store, results: list[Any], given: dict[str, str]) -> list[Any]:
    """Each later run against the first, judged pairwise from the judge cache only: a
    pair `assay compare --judge` has not judged shows as not judged, saying so."""
    import asyncio

    from assay.judges.client import JudgePool
    from assay.models.resolve import parse_model
    from assay.report.pairwise import apairwise_against_first, cached_only, resolve_criterion

    judge = given["judge"].strip()
    if parse_model(judge).backend == "local":
        # The page would have to open a file named in a URL to find the cache keys.
        raise InputError(
            f"judge {judge!r}: the compare page reads the verdicts of API judges only; "
            "compare with a local judge on the command line (assay compare --judge)"
        )
    criterion = resolve_criterion(given["metric"] or None, given["criteria"] or None)
    base_url = given["base_url"].strip() or None
    refs = " ".join(r.run_id or "" for r in results)
    hint = (
        f"not in the judge cache: run assay compare {refs} --judge {judge} with the same"
        " options to judge it"
    )

    pool = JudgePool(
        store=store,
        default_model=judge,
        default_base_url=base_url,
        backend_factory=cached_only(hint),
        max_retries=0,
    )
    return asyncio.run(
        apairwise_against_first(
            results,
            pool,
            judge,
            base_url=base_url,
            criterion=criterion,
            trajectories=bool(given["trajectories"]),
        )
    )
