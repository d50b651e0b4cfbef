"""The review queue of the viewer (issue #35): people label judged results, one case at
a time, at `/runs/{run}/review` of `assay view` and of `/ui` in `assay serve`.

Each page shows one case: its conversation, and for each judged metric the judge's
verdict, score, rationale and samples (an item whose samples straddle the threshold is
marked unstable), the labels people gave it, and a form to agree, disagree, label it
pass or fail or give a score, with a note. Keys: `a` agree, `d` disagree, `y` pass,
`x` fail, `1`-`9` pick the metric the keys act on (at first the first one you have not
labelled), `n` / `p` next / previous case, `e` the note. Filters narrow the queue to
items not yet labelled by you, items where the judge and people disagree, or unstable
verdicts (and to one metric); the header shows progress and, where several people
labelled one item, how far they agree.

Writing needs proof the form came from this page (`check_writer`):

- in `assay serve`'s `/ui`, the login session's CSRF token (`service/ui_session.py`) or a
  Bearer key; the author is the key's name;
- in `assay view` (no login, loopback only), a random token made when the viewer starts,
  held in its pages only, and a `Host` header naming a loopback address (so a page of
  another site, even one whose name resolves to 127.0.0.1, cannot post); the author is
  the OS user.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from assay.errors import AssayError
from assay.metrics.judged.base import JudgedMetric
from assay.metrics.registry import get_metric_class
from assay.report.label_agreement import AgreementReport, krippendorff_alpha
from assay.store import Store
from assay.store.labels import (
    FAIL,
    PASS,
    Label,
    case_ref,
    is_unstable,
    judge_verdict,
    rationale,
    sample_scores,
)
from assay.view.pages import esc
from assay.view.writes import WriteRefused, loopback_host, parse_form

FILTERS = {
    "unlabelled": "not yet labelled by you",
    "disagree": "judge and people disagree",
    "unstable": "unstable verdicts",
    "all": "every judged item",
}
#: a label form is small; a larger body is refused
MAX_FORM_BYTES = 65_536
CSRF_FIELD = "csrf_token"


@dataclass(frozen=True)
class Item:
    """One judged metric of one case run, with the labels people gave it."""

    metric: str
    result: dict[str, Any]
    labels: tuple[Label, ...]

    @property
    def judge(self) -> str | None:
        return judge_verdict(self.result)

    @property
    def unstable(self) -> bool:
        return is_unstable(self.result)

    def by(self, author: str) -> Label | None:
        return next((label for label in self.labels if label.author == author), None)

    @property
    def disagreement(self) -> bool:
        return self.judge is not None and any(lab.verdict != self.judge for lab in self.labels)


@dataclass(frozen=True)
class Case:
    ref: str
    document: dict[str, Any]
    items: tuple[Item, ...]


def is_judged(name: str, result: Mapping[str, Any]) -> bool:
    """Whether a stored metric result is an LLM judge's verdict."""
    try:
        if issubclass(get_metric_class(name), JudgedMetric):
            return True
    except AssayError:
        pass
    for per in result.get("per_invocation") or []:
        details = (per or {}).get("details") or {}
        if "samples" in details or "agreement" in details:
            return True
    return False


def load_cases(store: Store, run_id: str) -> list[Case]:
    """The run's case runs that have a judged metric, in stored order, with labels."""
    labels: dict[tuple[str, str], list[Label]] = {}
    for label in store.labels.list_labels([run_id]):
        labels.setdefault((label.case, label.metric), []).append(label)
    cases = []
    for doc in store.case_results(run_id):
        ref = case_ref(doc.get("eval_set_id") or "", doc["case_id"], doc.get("run_index") or 0)
        items = tuple(
            Item(name, result, tuple(labels.get((ref, name), ())))
            for name, result in (doc.get("metrics") or {}).items()
            if isinstance(result, dict) and result.get("status") and is_judged(name, result)
        )
        if items:
            cases.append(Case(ref, doc, items))
    return cases


def keep(item: Item, view: str, author: str) -> bool:
    """Whether an item stays in the queue under filter `view`."""
    if view == "unlabelled":
        return item.by(author) is None
    if view == "disagree":
        return item.disagreement
    if view == "unstable":
        return item.unstable
    return True


def queue(cases: Sequence[Case], view: str, metric: str, author: str) -> list[Case]:
    """The cases with at least one item under the filter (and of `metric` if given)."""
    return [
        c
        for c in cases
        if any(keep(i, view, author) and (not metric or i.metric == metric) for i in c.items)
    ]


def progress(cases: Sequence[Case], author: str, metric: str) -> dict[str, int]:
    items = [i for c in cases for i in c.items if not metric or i.metric == metric]
    return {
        "items": len(items),
        "mine": sum(1 for i in items if i.by(author) is not None),
        "anyone": sum(1 for i in items if i.labels),
        "several": sum(1 for i in items if len({lab.author for lab in i.labels}) > 1),
        "disagree": sum(1 for i in items if i.disagreement),
        "unstable": sum(1 for i in items if i.unstable),
    }


def people_alpha(cases: Sequence[Case], metric: str) -> float | None:
    """Krippendorff's alpha among people on the items several of them labelled."""
    units = [
        [lab.verdict for lab in i.labels]
        for c in cases
        for i in c.items
        if (not metric or i.metric == metric) and len(i.labels) > 1
    ]
    return krippendorff_alpha(units) if units else None


# ----------------------------------------------------------------------------- writing


def check_writer(
    scope: Mapping[str, Any], form: Mapping[str, str], local_token: str | None, author: str
) -> str:
    """The author a label post is written as, or WriteRefused (see the module)."""
    state = scope.get("state") or {}
    key = state.get("api_key")
    session_csrf = state.get("ui_csrf")
    sent = form.get(CSRF_FIELD, "")
    if isinstance(session_csrf, str):
        if not hmac.compare_digest(sent.encode(), session_csrf.encode()):
            raise WriteRefused("this form has no valid CSRF token for your session: reload")
        return str(getattr(key, "name", author))
    if key is not None:
        return str(key.name)
    if local_token is None:
        raise WriteRefused("labels cannot be written through this viewer")
    if not hmac.compare_digest(sent.encode(), local_token.encode()):
        raise WriteRefused("this form did not come from this viewer (no valid token): reload")
    headers = dict(scope.get("headers") or [])
    if not loopback_host(headers.get(b"host", b"").decode("latin-1")):
        raise WriteRefused("labels are written only through a loopback address of the viewer")
    return author


def read_form(body: bytes) -> dict[str, str] | None:
    """A label form (first value of each field); None when too large or not one."""
    return parse_form(body, MAX_FORM_BYTES)


def label_value(form: Mapping[str, str], judge: str | None) -> str:
    """What the form's button asks to store: the judge's verdict (agree), its opposite
    (disagree), pass, fail, or the score typed; InputError naming the field otherwise."""
    from assay.errors import InputError

    action = form.get("action", "")
    if action in ("agree", "disagree"):
        if judge is None:
            raise InputError("action: the judge gave no verdict on this item to agree with")
        if action == "agree":
            return judge
        return FAIL if judge == PASS else PASS
    if action in (PASS, FAIL):
        return action
    if action == "score":
        score = form.get("score", "").strip()
        if not score:
            raise InputError("score: type a score to set")
        return score
    raise InputError(f"action: {action[:40]!r} is not agree, disagree, pass, fail or score")


def review_url(base: str, run_id: str, **query: str) -> str:
    shown = {k: v for k, v in query.items() if v}
    return f"{base}/runs/{run_id}/review" + (f"?{urlencode(shown)}" if shown else "")


def next_ref(ordered: Sequence[Case], ref: str, view: str, metric: str, author: str) -> str:
    """The case after `ref` in the filtered queue (wrapping), or "" when none is left."""
    refs = [c.ref for c in ordered]
    start = refs.index(ref) + 1 if ref in refs else 0
    for c in [*ordered[start:], *ordered[:start]]:
        if c.ref != ref and queue([c], view, metric, author):
            return c.ref
    return ""


# ----------------------------------------------------------------------------- the page


def _turns(document: Mapping[str, Any]) -> str:
    parts = []
    for inv in document.get("invocations") or []:
        actual = inv.get("actual") or {}
        expected = inv.get("expected") or {}
        user = (actual.get("user_input") or expected.get("user_input") or {}).get("text")
        if user:
            parts.append(f'<div class="turn user"><b>user</b> {esc(user)}</div>')
        for step in actual.get("steps") or []:
            call = step.get("tool_call")
            if call:
                args = json.dumps(call.get("args") or {}, ensure_ascii=False)[:400]
                parts.append(
                    f'<div class="turn tool">tool {esc(call.get("name"))}({esc(args)})</div>'
                )
        answer = actual.get("final_response")
        if answer:
            parts.append(f'<div class="turn agent"><b>agent</b> {esc(answer)}</div>')
        if expected.get("final_response"):
            reference = esc(expected["final_response"])
            parts.append(f'<div class="turn expected"><b>expected</b> {reference}</div>')
    return "".join(parts) or "<p>(no conversation stored)</p>"


def _samples(result: Mapping[str, Any]) -> str:
    bits = []
    for per in result.get("per_invocation") or []:
        details = (per or {}).get("details") or {}
        if "samples" in details:
            agreement = details.get("agreement")
            share = f", {agreement:.0%} agree" if isinstance(agreement, int | float) else ""
            bits.append(f"{details['samples']} samples{share}")
    scores = sample_scores(result)
    if scores:
        bits.append("scores " + ", ".join(f"{s:g}" for s in scores))
    return "; ".join(bits)


def _labels_html(item: Item) -> str:
    if not item.labels:
        return '<p class="labels none">no label yet</p>'
    rows = "".join(
        f'<li class="label {esc(lab.verdict)}" data-author="{esc(lab.author)}">'
        f"<b>{esc(lab.author)}</b>: {esc(lab.label)}"
        f"{' (' + esc(lab.verdict) + ')' if lab.score is not None else ''}"
        f"{' — ' + esc(lab.note) if lab.note else ''}</li>"
        for lab in item.labels
    )
    verdicts = {lab.verdict for lab in item.labels}
    agree = ""
    if len(item.labels) > 1:
        agree = (
            '<p class="people-agree">people agree</p>'
            if len(verdicts) == 1
            else '<p class="people-agree split">people disagree</p>'
        )
    return f'<ul class="labels">{rows}</ul>{agree}'


def _item_html(
    item: Item, number: int, *, case: Case, action: str, token: str, hidden: dict[str, str],
    author: str,
) -> str:  # fmt: skip
    result = item.result
    judge = item.judge or "no verdict"
    score, threshold = result.get("score"), result.get("threshold")
    shown = f"{score:.3g}" if isinstance(score, int | float) else "—"
    if isinstance(threshold, int | float):
        shown += f" (threshold {threshold:g})"
    unstable = ' <span class="unstable" title="samples straddle the threshold">unstable</span>'
    mine = item.by(author)
    fields = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
        for k, v in {**hidden, CSRF_FIELD: token, "case": case.ref, "metric": item.metric}.items()
    )
    note = esc(mine.note) if mine is not None and mine.note else ""
    return (
        f'<section class="item" data-metric="{esc(item.metric)}" data-number="{number}" '
        f'data-mine="{"1" if mine is not None else ""}">'
        f"<h3>{number}. {esc(item.metric)}{unstable if item.unstable else ''}</h3>"
        f'<p>judge: <b class="verdict {esc(item.judge or "none")}">{esc(judge)}</b>, '
        f'score {shown}</p><p class="rationale">{esc(rationale(result) or "")}</p>'
        f'<p class="samples">{esc(_samples(result))}</p>{_labels_html(item)}'
        f'<form method="post" action="{esc(action)}" class="label-form">{fields}'
        '<button type="submit" name="action" value="agree" class="agree">agree (a)</button> '
        '<button type="submit" name="action" value="disagree" class="disagree">'
        "disagree (d)</button> "
        '<button type="submit" name="action" value="pass" class="pass">pass (y)</button> '
        '<button type="submit" name="action" value="fail" class="fail">fail (x)</button> '
        '<input type="text" name="score" size="6" placeholder="score" class="score"> '
        '<button type="submit" name="action" value="score" class="set-score">set score</button>'
        f'<br><textarea name="note" rows="2" cols="70" placeholder="note (e)" class="note">'
        f"{note}</textarea></form></section>"
    )


_REVIEW_CSS = (
    ".turn{margin:.3em 0;padding:.4em .6em;border-radius:4px;white-space:pre-wrap}"
    ".turn.user{background:#eef4ff}.turn.agent{background:#f4f4f4}.turn.tool{font-family:"
    "monospace;font-size:.9em}.turn.expected{background:#effaf0}"
    ".item{border:1px solid #ccc;border-radius:6px;padding:.6em;margin:.8em 0}"
    ".item.selected{border:2px solid #3a6fd8}.unstable{background:#ffe6a6;padding:0 .4em;"
    "border-radius:3px;font-size:.8em}.verdict.pass{color:#17803d}.verdict.fail{color:#b42318}"
    ".filters a{margin-right:.8em}.filters a.on{font-weight:bold}"
)

_KEYS_JS = """
(function(){
  var items = Array.prototype.slice.call(document.querySelectorAll('section.item'));
  var at = 0;
  function pick(i){ if(!items.length) return; at = i;
    items.forEach(function(s, j){ s.classList.toggle('selected', j === at); }); }
  var first = items.findIndex(function(s){ return !s.dataset.mine; });
  pick(first < 0 ? 0 : first);
  function click(cls){ var b = items[at] && items[at].querySelector('button.' + cls);
    if (b) b.click(); }
  document.addEventListener('keydown', function(e){
    var t = e.target && e.target.tagName;
    if (t === 'TEXTAREA' || t === 'INPUT') { if (e.key === 'Escape') e.target.blur(); return; }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var go = function(id){ var a = document.getElementById(id); if (a) a.click(); };
    if (e.key === 'a') click('agree');
    else if (e.key === 'd') click('disagree');
    else if (e.key === 'y') click('pass');
    else if (e.key === 'x') click('fail');
    else if (e.key === 'n' || e.key === 'ArrowRight') go('next');
    else if (e.key === 'p' || e.key === 'ArrowLeft') go('previous');
    else if (e.key === 'e') { var n = items[at] && items[at].querySelector('textarea');
      if (n) { e.preventDefault(); n.focus(); } }
    else if (/^[1-9]$/.test(e.key) && +e.key <= items.length) pick(+e.key - 1);
  });
})();
"""


def review_page(
    *, base: str, run_id: str, cases: Sequence[Case], ref: str, view: str, metric: str,
    author: str, token: str, message: str = "",
) -> str:  # fmt: skip
    """The body of the review page: filters, progress, one case and its items."""
    ordered = queue(cases, view, metric, author)
    current = next((c for c in ordered if c.ref == ref), None)
    if current is None:
        current = next((c for c in cases if c.ref == ref), None) if ref else None
    if current is None and ordered:
        current = ordered[0]
    counts = progress(cases, author, metric)
    links = "".join(
        f'<a href="{esc(review_url(base, run_id, filter=key, metric=metric))}" '
        f'id="filter-{key}" class="{"on" if key == view else ""}">{esc(label)}</a>'
        for key, label in FILTERS.items()
    )
    metrics = sorted({i.metric for c in cases for i in c.items})
    metric_links = " ".join(
        f'<a href="{esc(review_url(base, run_id, filter=view, metric=m))}" '
        f'class="{"on" if m == metric else ""}">{esc(m or "all metrics")}</a>'
        for m in ["", *metrics]
    )
    alpha = people_alpha(cases, metric)
    alpha_text = f", Krippendorff's alpha among people {alpha:.2f}" if alpha is not None else ""
    head = (
        f'<h1>Review run <a href="{esc(base)}/runs/{esc(run_id)}">{esc(run_id)}</a></h1>'
        f'<p class="filters">{links}</p><p class="filters">{metric_links}</p>'
        f'<p id="progress">you labelled {counts["mine"]} of {counts["items"]} judged items; '
        f"{counts['anyone']} labelled by anyone, {counts['several']} by several people"
        f"{alpha_text}; {counts['disagree']} disagree with the judge, {counts['unstable']} "
        f'unstable. In this queue: <b id="queue-size">{len(ordered)}</b> cases.</p>'
    )
    if message:
        head += f'<p class="error" id="error">{esc(message)}</p>'
    if current is None:
        return head + '<p id="empty">Nothing to review under this filter.</p>'
    refs = [c.ref for c in ordered]
    position = refs.index(current.ref) if current.ref in refs else -1
    hidden = {"filter": view, "metric_filter": metric}
    previous = ordered[position - 1].ref if position > 0 else ""
    following = next_ref(ordered, current.ref, view, metric, author)
    nav_links = ""
    if previous:
        url = review_url(base, run_id, filter=view, metric=metric, case=previous)
        nav_links += f'<a href="{esc(url)}" id="previous">← previous (p)</a> '
    if following:
        url = review_url(base, run_id, filter=view, metric=metric, case=following)
        nav_links += f'<a href="{esc(url)}" id="next">next (n) →</a>'
    action = f"{base}/runs/{run_id}/review"
    shown = [i for i in current.items if not metric or i.metric == metric]
    items = "".join(
        _item_html(i, n, case=current, action=action, token=token, hidden=hidden, author=author)
        for n, i in enumerate(shown, 1)
    )
    where = f"{position + 1} of {len(ordered)}" if position >= 0 else "not in this queue"
    return (
        f"<style>{_REVIEW_CSS}</style>{head}"
        f'<h2 id="case" data-case="{esc(current.ref)}">case {esc(current.ref)} '
        f'<small>({where})</small></h2><p class="case-nav">{nav_links}</p>'
        f'<div class="conversation">{_turns(current.document)}</div>{items}'
        f"<p>Keys: a agree, d disagree, y pass, x fail, 1-9 pick the metric, e note, "
        f"n / p next / previous case. You label as <b id='author'>{esc(author)}</b>.</p>"
        f"<script>{_KEYS_JS}</script>"
    )


def agreement_section(base: str, run_id: str, reports: Sequence[AgreementReport]) -> str:
    """The run page's block: the run's judge against people, per labelled metric."""
    link = (
        f'<a href="{esc(review_url(base, run_id))}" id="review-link">review and label this '
        "run's judged results</a>"
    )
    rows = []
    for r in reports:
        alpha = r.alpha_people.show() if r.alpha_people else "—"
        rows.append(
            f'<tr data-metric="{esc(r.metric)}"><td>{esc(r.metric)}</td><td>{r.labels}</td>'
            f'<td class="accuracy">{esc(r.accuracy.show())}</td>'
            f'<td class="kappa">{esc(r.kappa.show())}</td>'
            f"<td>{esc(r.base_rate.show())}</td><td>{esc(alpha)}</td>"
            f"<td>{_matrix(r)}</td></tr>"
        )
    table = (
        '<table id="agreement"><tr><th>metric</th><th>labels</th><th>accuracy</th>'
        "<th>Cohen's kappa</th><th>base rate (pass)</th><th>alpha (people)</th>"
        f"<th>people × judge</th></tr>{''.join(rows)}</table>"
        if rows
        else ""
    )
    title = "<b>Judge against people's labels</b> (95% bootstrap intervals) " if rows else ""
    return f'<div class="page" id="labels-block"><p>{title}{link}</p>{table}</div>'


def _matrix(report: AgreementReport) -> str:
    m = report.matrix
    return ", ".join(f"{h}/{j}: {m.count(h, j)}" for h in m.labels for j in m.labels)
