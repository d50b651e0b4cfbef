"""The cxas-scrapi golden shorthand YAML (see `assay.formats.ces`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.core.cases import EvalCase, Expectation, Rubric, ToolCall, Turn, UserInput
from assay.formats._common import Loc


def is_scrapi(d: object) -> bool:
    """Whether `d` is scrapi YAML: `conversations` holding `conversation` names."""
    convs = d.get("conversations") if isinstance(d, Mapping) else None
    return (
        isinstance(convs, list)
        and bool(convs)
        and all(isinstance(c, Mapping) and "conversation" in c for c in convs)
    )


def load_scrapi(root: Loc, data: Mapping[str, Any]) -> list[EvalCase]:
    """One case per golden conversation; turn-eval files (no `turns`) are refused."""
    convs = data["conversations"]
    if any("turns" not in c for c in convs):
        raise root.key("conversations").error(
            "this is a cxas-scrapi turn-eval file; its typed checks (contains, equals, "
            "tool_output, ...) have no CES Evaluation equivalent",
            expected="a CES Evaluation, or the scrapi golden shorthand with turns",
        )
    common = root.key("common_session_parameters").expect_dict(
        data.get("common_session_parameters") or {}
    )
    cases = []
    for cl, conv in root.key("conversations").items(convs):
        case_id = cl.key("conversation").expect_str(conv.get("conversation"))
        cl = cl.case(case_id)
        variables = {
            **common,
            **cl.key("session_parameters").expect_dict(conv.get("session_parameters") or {}),
        }
        turns = []
        for i, (tl, t) in enumerate(cl.key("turns").items(conv["turns"])):
            t = tl.expect_dict(t, "{user, agent, tool_calls}")
            user = t.get("user")
            exps = [
                Expectation(
                    tool_call=ToolCall(
                        name=al.key("action").expect_str(al.expect_dict(a).get("action")),
                        args=al.key("args").expect_dict(a.get("args") or {}),
                    )
                )
                for al, a in tl.key("tool_calls").items(t.get("tool_calls") or [])
            ]
            if t.get("agent") is not None:
                exps.append(Expectation(agent_response=tl.key("agent").expect_str(t["agent"])))
            turns.append(
                Turn(
                    user_input=UserInput(
                        text=None if user is None else tl.key("user").expect_str(user),
                        variables=variables if i == 0 and variables else None,
                    ),
                    expectations=exps,
                )
            )
        rubrics = [
            # Named after the conversation: as CES expectation resources the ids are
            # display names, one text each across the file.
            Rubric(id=f"{case_id} expectation {i + 1}", text=el.expect_str(e))
            for i, (el, e) in enumerate(
                cl.key("expectations").items(conv.get("expectations") or [])
            )
        ]
        tags = [str(t) for t in cl.key("tags").expect_list(conv.get("tags") or [])]
        cases.append(EvalCase(id=case_id, tags=tags, reference=turns, rubrics=rubrics))
    return cases
