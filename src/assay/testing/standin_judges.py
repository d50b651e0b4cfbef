"""Stand-in judges with known flaws, for measuring judge noise and bias.

Each is a `JudgeServer` script (a callable of the request), usable in tests or with
``python -m assay.testing.judge_server --script assay.testing.standin_judges:NAME``:

- `coin_flip`: answers every verdict at random (positive or negative, even odds), so
  its samples disagree and its repeats flip: `assay judge stability` reports it
  unstable.
- `fair`: a deterministic judge of content: a response is valid when it contains the
  reference answer (case and spacing ignored); padding does not change its verdict, and
  for a pairwise prompt it prefers the answer that holds more of the reference's words
  (ties broken by the answers' text), whichever order they are shown in.
- `first_shown`: a pairwise judge that always prefers the first answer shown (answer A):
  `assay judge probe --bias position` catches it. On a pointwise prompt it is `fair`.
- `longer_answer`: a pairwise judge that prefers the longer answer whatever it says (a
  tie for answers of one length), in either order; `assay compare --judge` shows B
  winning exactly where B's answer is longer. On a pointwise prompt it is `fair`.
- `length_loving`: `fair`, except that a response of more than `LONG_RESPONSE`
  characters is always valid: `assay judge probe --bias verbosity` catches it.

The judges read the tagged parts of assay's prompts (`<reference_response>`,
`<agent_response>` for pointwise verdicts; `<answer_a>`, `<answer_b>` and
`<reference>` for pairwise ones, see `assay.judges.pairwise`); a request they cannot
read gets the positive verdict. Replies follow the JSON schema the request asks for,
with every verdict set to its positive (first) or negative (second) choice.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping
from typing import Any

from assay.testing.judge_dialects import StandinReply, StandinRequest
from assay.testing.standin_schema import FILLER

__all__ = [
    "LONG_RESPONSE",
    "coin_flip",
    "fair",
    "first_shown",
    "length_loving",
    "longer_answer",
    "seeded_coin",
]

#: responses longer than this are always valid for `length_loving`
LONG_RESPONSE = 160

Script = Callable[[StandinRequest], StandinReply]


def verdict_instance(schema: Mapping[str, Any], positive: bool, key: int | None = None) -> Any:
    """An instance of `schema` whose verdicts are all positive or all negative.

    As `standin_schema.instance_of`: the first enum of an array item's object is its
    key (a rubric id) and takes the item's position; every other enum is a verdict and
    takes its first value when `positive`, its second otherwise.
    """
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        if key is not None:
            return enum[key % len(enum)]
        return enum[0] if positive or len(enum) < 2 else enum[1]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        enums = [name for name, sub in properties.items() if "enum" in sub]
        keyed = enums[0] if key is not None and len(enums) > 1 else None
        return {
            name: verdict_instance(sub, positive, key if name == keyed else None)
            for name, sub in properties.items()
        }
    if kind == "array":
        items = schema.get("items", {})
        count = max(int(schema.get("minItems", 1)), 1)
        return [verdict_instance(items, positive, i) for i in range(count)]
    if kind == "integer":
        return int(schema.get("maximum" if positive else "minimum", 1))
    if kind == "number":
        return float(schema.get("maximum" if positive else "minimum", 1.0))
    if kind == "boolean":
        return positive
    return FILLER


def _tagged(text: str, tag: str) -> str | None:
    found = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, re.DOTALL)
    return found.group(1) if found else None


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _reply(request: StandinRequest, positive: bool) -> StandinReply:
    schema = request.json_schema
    if schema:
        return StandinReply(text=json.dumps(verdict_instance(schema, positive)))
    return StandinReply(text="yes" if positive else "no")


def _choice(request: StandinRequest, choice: str) -> StandinReply:
    """A pairwise reply naming `choice` ("A", "B" or "tie")."""
    return StandinReply(text=json.dumps({"reasoning": FILLER, "winner": choice}))


def _fair_choice(text: str) -> str | None:
    a, b = _tagged(text, "answer_a"), _tagged(text, "answer_b")
    if a is None or b is None:
        return None
    wanted = _words(_tagged(text, "reference") or "")

    def rank(answer: str) -> tuple[int, int, str]:
        return (len(wanted & _words(answer)), -len(answer), _norm(answer))

    if rank(a) == rank(b):
        return "tie"
    return "A" if rank(a) > rank(b) else "B"


def _fair_verdict(text: str) -> bool:
    reference = _tagged(text, "reference_response")
    response = _tagged(text, "agent_response")
    if reference is None or response is None:
        return True
    return _norm(reference) in _norm(response)


def fair(request: StandinRequest) -> StandinReply:
    """Judges content only (see the module's note)."""
    choice = _fair_choice(request.user)
    if choice is not None:
        return _choice(request, choice)
    return _reply(request, _fair_verdict(request.user))


def first_shown(request: StandinRequest) -> StandinReply:
    """Always prefers answer A of a pairwise prompt; `fair` otherwise."""
    if _fair_choice(request.user) is not None:
        return _choice(request, "A")
    return fair(request)


def longer_answer(request: StandinRequest) -> StandinReply:
    """Prefers the longer answer of a pairwise prompt; `fair` otherwise."""
    a, b = _tagged(request.user, "answer_a"), _tagged(request.user, "answer_b")
    if a is None or b is None:
        return fair(request)
    return _choice(request, "tie" if len(a) == len(b) else "A" if len(a) > len(b) else "B")


def length_loving(request: StandinRequest) -> StandinReply:
    """`fair`, but any response longer than `LONG_RESPONSE` characters is valid."""
    response = _tagged(request.user, "agent_response")
    if response is not None and len(response) > LONG_RESPONSE:
        return _reply(request, True)
    return fair(request)


def seeded_coin(seed: int = 0) -> Script:
    """A `coin_flip` judge with its own random generator (reproducible in a test: the
    server calls scripts one at a time, so the draws follow the requests' order)."""
    rng = random.Random(seed)

    def answer(request: StandinRequest) -> StandinReply:
        positive = rng.random() < 0.5
        if _fair_choice(request.user) is not None:
            return _choice(request, "A" if positive else "B")
        return _reply(request, positive)

    return answer


#: a judge that answers at random (its own unseeded generator)
coin_flip: Script = seeded_coin(random.SystemRandom().randrange(2**32))
