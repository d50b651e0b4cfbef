"""One question to the server's judge (`assay serve --judge-model`), answered as JSON.

Used where the service itself has to judge: Vertex's pointwise and pairwise metrics
and CES's generated scenarios. The reply must parse (`parse` returns None when it does
not); an unparseable one is asked for again once. A judge that cannot be built is
FAILED_PRECONDITION; one that fails or keeps answering out of shape is UNAVAILABLE
with what it said — never a made-up answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from assay.errors import AssayError
from assay.judges.client import JudgePool
from assay.redact import redact
from assay.service.errors import FailedPrecondition, ServiceError

T = TypeVar("T")
ATTEMPTS = 2
_JSON_OBJECT = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}", re.DOTALL)


class Unavailable(ServiceError):
    http_status, code = 503, "UNAVAILABLE"


def last_object(reply: str) -> dict[str, Any] | None:
    """The last JSON object in a reply (judges often reason before it), else None."""
    for match in reversed(_JSON_OBJECT.findall(reply)):
        try:
            found = json.loads(match)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    return None


async def ask(
    model: str, messages: list[dict[str, str]], parse: Callable[[str], T | None]
) -> tuple[T, str]:
    """(parsed answer, raw reply) of the judge `model` to `messages`."""
    try:
        pool = JudgePool(max_retries=2)
        judge = pool.judge(model)
    except AssayError as exc:
        raise FailedPrecondition(f"the server's judge {model} cannot be used: {exc}") from None
    last = ""
    try:
        for _attempt in range(ATTEMPTS):
            replies = await judge.generate(
                messages, 1, {"temperature": 0.0}, accept=lambda r: parse(r) is not None
            )
            last = replies[0]
            parsed = parse(last)
            if parsed is not None:
                return parsed, last
            # Only replies that parse are cached: the second attempt is a fresh call.
            retry = {"role": "user", "content": "Answer with the JSON object only."}
            messages = [*messages, {"role": "assistant", "content": last}, retry]
    except AssayError as exc:
        raise Unavailable(redact(f"the judge {model} failed: {exc}")) from None
    finally:
        await pool.aclose()
    raise Unavailable(
        redact(f"the judge {model} did not answer in the asked shape; it said: {last[:300]!r}")
    )
