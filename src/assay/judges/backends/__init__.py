"""Judge backends: one module per API, each a `JudgeBackend` around the vendor's SDK.

- `openai_compat`: any OpenAI-compatible chat endpoint (`openai` SDK)
- `gemini`: Gemini API or Vertex AI (`google-genai` SDK)
- `anthropic`: Claude (`anthropic` SDK)
- `local_gguf`: a GGUF model in-process (`xllamacpp`)

Each module exposes ``create_backend(name, options, *, timeout_s)``, which
`assay.judges.resolve.make_backend` imports on demand, so assay imports without any
SDK. A backend makes exactly one request per `complete` call: SDK retries are switched
off so that assay's retry policy is the only one. The helpers below turn what the SDKs
raise into `JudgeCallError` the same way for every backend, and `SDKBackend` holds what
the three cloud backends share (the structured-output fallback, credential checks,
errors naming the backend and model), leaving each module the SDK-specific request and
reply handling.
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from types import ModuleType
from typing import TYPE_CHECKING, Any, Self

from assay.errors import ConfigError
from assay.judges.types import BackendReply, GenerationSettings, JudgeCallError

if TYPE_CHECKING:
    from assay.judges.types import JudgeModelOptions

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


def api_key_or_placeholder(
    api_key: str | None, *, own_endpoint: bool, missing: str, configured: bool = False
) -> str | None:
    """The API key to hand the SDK.

    `api_key` when given; None when `configured` says the SDK finds credentials of its
    own (environment, token, cloud login); otherwise ConfigError(`missing`) for the
    vendor's own endpoint and the placeholder for any other (a self-hosted server or a
    stand-in, which needs no key).
    """
    if api_key is not None or configured:
        return api_key
    if own_endpoint:
        raise ConfigError(missing)
    return PLACEHOLDER_API_KEY


@dataclass(frozen=True)
class StainlessErrors:
    """The error classes of an SDK generated by Stainless (`openai`, `anthropic`).

    Both SDKs raise the same hierarchy with the same attributes, each from its own
    module: a timeout is a connection error, and a status error has `status_code`,
    `body`, `message` and `response`.
    """

    timeout: type[Exception]
    connection: type[Exception]
    status: type[Exception]

    @classmethod
    def of(cls, sdk: ModuleType) -> StainlessErrors:
        return cls(sdk.APITimeoutError, sdk.APIConnectionError, sdk.APIStatusError)


class SDKBackend(ABC):
    """The part the SDK backends share, as a base for one `JudgeBackend` per API.

    `complete` runs `_request` through the structured-output fallback
    (`StructuredOutput`); a subclass sets `backend`, builds its SDK client in
    `__init__` and writes `_request` (one API call, with a JSON schema or None) and
    `aclose`. The error methods build the `JudgeCallError` of each kind of failure,
    naming the backend and the model.
    """

    backend: str
    model: str
    #: where the model is served (part of the judge cache key: two servers serving a
    #: model of the same name are two judges); subclasses set the URL their SDK resolved
    endpoint: str

    def __init__(
        self, model: str, *, base_url: str | None, timeout_s: float, label: str | None = None
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.endpoint = base_url or ""
        self.timeout_s = timeout_s
        self._structured = StructuredOutput(label or f"{self.backend} judge {model}")

    @classmethod
    def from_options(
        cls, name: str, options: JudgeModelOptions | None = None, *, timeout_s: float
    ) -> Self:
        """The backend for model `name` (`options.base_url` picks the endpoint): the
        modules' ``create_backend``."""
        base_url = options.base_url if options is not None else None
        return cls(name, base_url=base_url, timeout_s=timeout_s)

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        """One API call; JudgeCallError when the call or its reply fails."""

        async def request(schema: dict[str, Any] | None) -> BackendReply:
            return await self._request(messages, settings, schema)

        return await self._structured.call(settings.json_schema, request)

    @abstractmethod
    async def _request(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, Any] | None,
    ) -> BackendReply:
        """One request, for a JSON object of `schema` unless it is None."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release the SDK client's connections."""

    # -- errors naming this backend and model -------------------------------------------

    def status_error(
        self, status: int, detail: str, headers: Mapping[str, str] | None
    ) -> JudgeCallError:
        """The error for an HTTP error status: retryable for 408/409/425/429/5xx."""
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:  # non-standard statuses such as Anthropic's 529
            phrase = "error"
        return JudgeCallError(
            f"{self.backend} judge {self.model}: HTTP {status} {phrase}:"
            f" {detail or 'no detail given'}",
            retryable=is_retryable_status(status),
            status=status,
            retry_after=retry_after_seconds(headers),
        )

    def timeout_error(self) -> JudgeCallError:
        return JudgeCallError(
            f"{self.backend} judge {self.model}: no reply within the {self.timeout_s:g}s"
            " request timeout",
            retryable=True,
        )

    def connection_error(self, exc: BaseException) -> JudgeCallError:
        return JudgeCallError(
            f"{self.backend} judge {self.model}: cannot reach the endpoint:"
            f" {type(exc).__name__}: {exc}",
            retryable=True,
        )

    def malformed_reply_error(self, what: str) -> JudgeCallError:
        """A body that is not the API's reply shape (proxies, overloaded servers): retried."""
        return JudgeCallError(
            f"{self.backend} judge {self.model}: the endpoint's reply is not a valid response"
            f" ({what})",
            retryable=True,
        )

    def empty_reply_error(self, why: str) -> JudgeCallError:
        """A well-formed reply without text (refusal, safety block, token limit): not
        retried, since the same prompt would most likely end the same way."""
        return JudgeCallError(
            f"{self.backend} judge {self.model}: the reply has no text ({why})", retryable=False
        )

    @contextmanager
    def stainless_errors(self, errors: StainlessErrors) -> Iterator[None]:
        """Raise the SDK's timeout, connection and status errors as JudgeCallError."""
        try:
            yield
        except errors.timeout as exc:
            raise self.timeout_error() from exc
        except errors.connection as exc:
            # The SDK wraps the transport's error; that one says what went wrong.
            raise self.connection_error(exc.__cause__ or exc) from exc
        except errors.status as exc:
            failed: Any = exc  # the SDK's APIStatusError (see StainlessErrors)
            detail = error_detail(failed.body) or failed.message
            raise self.status_error(failed.status_code, detail, failed.response.headers) from exc
