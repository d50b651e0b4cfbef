"""Where new cases come from: stored runs, trace files, CES conversations.

Each source gives `Played` items: a case id and the turns the agent played, in order.
- a run (`from_run`): each chosen case's run from the store (the first run of it, or
  with `failed` its first failed run);
- traces (`from_traces`): the conversations assay reads from OpenTelemetry,
  OpenInference or MLflow trace files, exactly the cases `assay eval TRACES` scores;
- a CES conversation (`from_ces_conversation`): a `Conversation` resource's JSON (as
  CES's `GetConversation` answers it), parsed by google-cloud-ces's proto;
- a conversation `assay serve` recorded (`from_stored_conversation`): its name,
  `[projects/P/locations/L/]apps/A/conversations/{evaluation}-{run id}-{index}` (what
  the service's GenerateEvaluation takes), read from the store.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.core.cases import AgentTransfer, Step, Turn, UserInput
from assay.core.results import CaseResult, Status
from assay.errors import ConfigError, InputError
from assay.formats import load
from assay.formats._ces_parts import read_call, read_response
from assay.formats._common import Loc


@dataclass(frozen=True)
class Played:
    """A conversation the agent played: the case it becomes and its turns."""

    case_id: str
    turns: list[Turn]
    source: str


def _selected(case_id: str, set_id: str | None, patterns: Sequence[str] | None) -> bool:
    if not patterns:
        return True
    names = [case_id] + ([f"{set_id}/{case_id}"] if set_id else [])
    return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names)


def _unmatched(patterns: Sequence[str] | None, matched: set[str], what: str) -> None:
    missing = [p for p in patterns or [] if p not in matched]
    if missing:
        raise InputError(f"no {what} matches {', '.join(repr(m) for m in missing)}")


def played_of_results(
    results: Sequence[CaseResult],
    run_id: str,
    *,
    cases: Sequence[str] | None = None,
    failed: bool = False,
) -> list[Played]:
    """One `Played` per chosen case of a run's results (see the module docstring)."""
    chosen: dict[str, CaseResult] = {}
    matched: set[str] = set()
    for result in results:
        hits = [p for p in cases or [] if _selected(result.case_id, result.eval_set_id, [p])]
        if cases and not hits:
            continue
        matched.update(hits)
        if failed and result.status is not Status.FAILED:
            continue
        if result.case_id not in chosen:
            chosen[result.case_id] = result
    _unmatched(cases, matched, f"case of run {run_id}")
    played = []
    for case_id, result in chosen.items():
        turns = [inv.actual for inv in result.invocations if inv.actual is not None]
        played.append(Played(case_id, turns, f"run {run_id} (run {result.run_index + 1})"))
    return played


def from_run(
    run: str,
    *,
    cases: Sequence[str] | None = None,
    failed: bool = False,
    store: str | None = None,
) -> list[Played]:
    """The chosen case runs of the stored run `run` (an id, a prefix or `latest`)."""
    from assay.store.reading import load_stored_run

    info, result = load_stored_run(store, run)
    return played_of_results(result.cases, info.id, cases=cases, failed=failed)


def from_traces(path: str | Path, *, sessions: Sequence[str] | None = None) -> list[Played]:
    """The conversations of a trace file, as `assay eval` reads them (one per session)."""
    evalset = load(path)
    played, matched = [], set()
    for case in evalset.cases:
        if case.actual is None:
            raise InputError(
                "holds expected conversations, not recorded ones: it is an eval set, not traces",
                file=str(path),
            )
        hits = [s for s in sessions or [] if _selected(case.id, None, [s])]
        if sessions and not hits:
            continue
        matched.update(hits)
        played.append(Played(case.id, list(case.actual), f"traces {path}"))
    _unmatched(sessions, matched, f"session of {path}")
    return played


def from_ces_conversation(path: str | Path, *, case_id: str | None = None) -> Played:
    """The conversation of a CES `Conversation` JSON file, one turn per user message."""
    try:
        from google.cloud import ces_v1beta
        from google.protobuf.json_format import ParseError
    except ImportError:
        raise ConfigError(
            "reading a CES Conversation needs the ces extra: pip install -e '.[ces]'"
        ) from None

    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
        ces_v1beta.Conversation.from_json(text, ignore_unknown_fields=False)
        data = json.loads(text)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file=file) from None
    except (ParseError, ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())
        raise InputError(f"is not a CES Conversation: {reason}", file=file) from None
    root = Loc(file)
    messages: list[tuple[Loc, Mapping[str, object]]] = []
    if data.get("turns"):
        for tl, turn in root.key("turns").items(data["turns"]):
            messages.extend(tl.key("messages").items(turn.get("messages") or []))
    else:
        messages = list(root.key("messages").items(data.get("messages") or []))
    turns = _ces_turns(messages)
    name = data.get("name")
    cid = case_id or (name.rsplit("/", 1)[-1] if isinstance(name, str) and name else None)
    if not cid:
        raise InputError("the conversation has no name: give the case an id with --case", file=file)
    return Played(cid, turns, f"CES conversation {path}")


_CONVERSATION = re.compile(
    r"^(?:projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/)?"
    r"apps/(?P<app>[^/]+)/conversations/(?P<id>[^/]+)$"
)


def is_conversation_name(text: str) -> bool:
    return _CONVERSATION.match(text) is not None


def from_stored_conversation(
    name: str, *, store: str | None = None, case_id: str | None = None
) -> Played:
    """The conversation a stored result recorded, by its CES conversation name."""
    from assay.store.eval_results import EvaluationResults
    from assay.store.namespace import DEFAULT_NAMESPACE, Namespace, namespace_scope
    from assay.store.reading import open_existing

    found = _CONVERSATION.match(name)
    pieces = found["id"].rsplit("-", 2) if found else []
    if found is None or len(pieces) != 3 or not all(pieces) or not pieces[2].isdigit():
        raise InputError(
            f"{name!r} is not a conversation name of assay: "
            "[projects/P/locations/L/]apps/A/conversations/{evaluation}-{run id}-{index}"
        )
    evaluation, run_id, index = pieces
    space = (
        Namespace(found["project"], found["location"]) if found["project"] else DEFAULT_NAMESPACE
    )
    with open_existing(store) as db, namespace_scope(space):
        row = EvaluationResults(db.engine, db.url).result(
            found["app"], evaluation, run_id, int(index)
        )
    if row is None:
        raise InputError(f"no conversation {name} in the store")
    turns = [
        Turn.model_validate(inv["actual"])
        for inv in row.document.get("invocations") or []
        if inv.get("actual") is not None
    ]
    return Played(case_id or evaluation, turns, f"conversation {name}")


def _ces_turns(messages: Sequence[tuple[Loc, Mapping[str, object]]]) -> list[Turn]:
    turns: list[Turn] = []
    for loc, message in messages:
        chunks = list(loc.key("chunks").items(message.get("chunks") or []))
        if message.get("role") == "user":
            text = "".join(str(c.get("text") or c.get("transcript") or "") for _, c in chunks)
            turns.append(Turn(user_input=UserInput(text=text)))
            continue
        if not turns:
            raise loc.error("the agent speaks before the user", expected="a user message first")
        turn = turns[-1]
        for cl, chunk in chunks:
            if "toolCall" in chunk:
                turn.steps.append(Step(tool_call=read_call(cl.key("toolCall"), chunk["toolCall"])))
            elif "toolResponse" in chunk:
                response = read_response(cl.key("toolResponse"), chunk["toolResponse"])
                turn.steps.append(Step(tool_response=response))
            elif "agentTransfer" in chunk:
                target = cl.key("agentTransfer").expect_dict(chunk["agentTransfer"])
                transfer = AgentTransfer(target_agent=str(target.get("targetAgent", "")))
                turn.steps.append(Step(agent_transfer=transfer))
            elif "text" in chunk or "transcript" in chunk:
                said = str(chunk.get("text") or chunk.get("transcript") or "")
                turn.final_response = (turn.final_response or "") + said
    return turns
