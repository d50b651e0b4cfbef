"""Judge backends: one module per API, each a `JudgeBackend` around the vendor's SDK.

- `openai_compat`: any OpenAI-compatible chat endpoint (`openai` SDK)
- `gemini`: Gemini API or Vertex AI (`google-genai` SDK)
- `anthropic`: Claude (`anthropic` SDK)
- `local_gguf`: a GGUF model in-process (`xllamacpp`)

Each module exposes ``create_backend(name, options, *, timeout_s)``, which
`assay.judges.resolve.make_backend` imports on demand, so assay imports without any
SDK. A backend makes exactly one request per `complete` call: SDK retries are switched
off so that assay's retry policy is the only one. The helpers below turn what the SDKs
raise into `JudgeCallError` the same way for every backend.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any

from assay.judges.types import BackendReply, JudgeCallError

logger = logging.getLogger(__name__)

#: statuses worth retrying besides 5xx: timeout, conflict, too early, rate limited
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
#: statuses with which an endpoint rejects a request it does not understand
REJECTED_STATUSES = frozenset({400, 422})
#: sent as the API key to a self-hosted endpoint when none is configured: vLLM, Ollama,
#: llama.cpp server and LM Studio ignore it, but the SDKs refuse to run without one
PLACEHOLDER_API_KEY = "assay-no-key"


def is_retryable_status(status: int) -> bool:
    """Rate limits, timeouts and server errors are retried; other 4xx are not."""
    return status in RETRYABLE_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if not headers:
        return None
    lower = {name.lower(): value for name, value in headers.items()}
    millis = _non_negative(lower.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = lower.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unparseable header: the retry policy's own back-off applies
    return max(0.0, when.timestamp() - time.time())


def _non_negative(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def error_detail(body: object) -> str:
    """The human message inside an API error body (nested ``error.message`` shapes)."""
    if isinstance(body, Mapping):
        for key in ("error", "message"):
            inner = body.get(key)
            if isinstance(inner, str) and inner:
                return inner
            if isinstance(inner, Mapping):
                return error_detail(inner)
    if isinstance(body, list) and len(body) == 1:
        return error_detail(body[0])
    return "" if body is None else str(body)


def status_error(
    backend: str, model: str, status: int, detail: str, headers: Mapping[str, str] | None
) -> JudgeCallError:
    """The error for an HTTP error status: retryable for 408/409/425/429/5xx."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:  # non-standard statuses such as Anthropic's 529
        phrase = "error"
    return JudgeCallError(
        f"{backend} judge {model}: HTTP {status} {phrase}: {detail or 'no detail given'}",
        retryable=is_retryable_status(status),
        status=status,
        retry_after=retry_after_seconds(headers),
    )


def timeout_error(backend: str, model: str, timeout_s: float) -> JudgeCallError:
    return JudgeCallError(
        f"{backend} judge {model}: no reply within the {timeout_s:g}s request timeout",
        retryable=True,
    )


def connection_error(backend: str, model: str, exc: BaseException) -> JudgeCallError:
    return JudgeCallError(
        f"{backend} judge {model}: cannot reach the endpoint: {type(exc).__name__}: {exc}",
        retryable=True,
    )


def malformed_reply_error(backend: str, model: str, what: str) -> JudgeCallError:
    """A body that is not the API's reply shape (proxies, overloaded servers): retried."""
    return JudgeCallError(
        f"{backend} judge {model}: the endpoint's reply is not a valid response ({what})",
        retryable=True,
    )


def empty_reply_error(backend: str, model: str, why: str) -> JudgeCallError:
    """A well-formed reply without text (refusal, safety block, token limit): not retried,
    since the same prompt would most likely end the same way."""
    return JudgeCallError(
        f"{backend} judge {model}: the reply has no text ({why})", retryable=False
    )


def split_system(messages: Sequence[Mapping[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """System instructions (joined) apart from the (role, content) conversation turns.

    Gemini and Anthropic take the system prompt as a separate field; their turns are
    "user" or "assistant" (anything else counts as the user's).
    """
    system: list[str] = []
    turns: list[tuple[str, str]] = []
    for message in messages:
        role, content = message.get("role", "user"), message.get("content", "")
        if role in ("system", "developer"):
            system.append(content)
        else:
            turns.append(("assistant" if role == "assistant" else "user", content))
    return "\n\n".join(system), turns


class StructuredOutput:
    """Whether to ask an endpoint for schema-constrained replies.

    Many OpenAI-compatible servers and older models reject the structured-output
    request field with 400/422. The first such rejection makes the call again without
    a schema; if that succeeds the backend asks for plain text from then on (logged
    once), and the metrics parse replies tolerantly as they do for any text reply.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.supported = True

    async def call(
        self,
        schema: dict[str, Any] | None,
        request: Callable[[dict[str, Any] | None], Awaitable[BackendReply]],
    ) -> BackendReply:
        """`request(schema)` with the schema while it is supported, else `request(None)`."""
        if schema is None or not self.supported:
            return await request(None)
        try:
            return await request(schema)
        except JudgeCallError as exc:
            if exc.status not in REJECTED_STATUSES:
                raise
            rejection = exc
        # If the plain request fails too, the request itself is at fault: that error
        # is the one to report, and structured output stays on.
        reply = await request(None)
        if self.supported:
            self.supported = False
            logger.warning(
                "%s rejected a structured-output request (%s); asking for plain text from now on",
                self.label,
                rejection.message,
            )
        return reply
