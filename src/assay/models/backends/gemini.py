"""Gemini judge backend through `google-genai`: the Gemini API or Vertex AI.

Model strings `gemini-*` (ADK's default judge `gemini-2.5-flash`) and `gemini:NAME`.
Credentials are the SDK's own: `GOOGLE_API_KEY` / `GEMINI_API_KEY` for the Gemini API,
or `GOOGLE_GENAI_USE_VERTEXAI=true` with `GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION`
and application-default credentials for Vertex AI. `base_url` in the judge options
points the SDK elsewhere (a proxy or a stand-in); without a key a placeholder is sent.

With `--judge-batch`, a Gemini API judge sends its calls through Gemini's batch mode
(``batches.create`` with inlined requests, each carrying its reply-cache key as
``metadata.key``, or a JSONL file of ``{"key", "request"}`` lines for a batch too large
to inline; ``batches.get`` until it ends): the same request body as a live call, its
replies matched by key, never by position. A Vertex AI judge stays live (its batch
prediction needs Cloud Storage or BigQuery).

A JSON schema in the settings becomes ``responseMimeType: application/json`` with
``responseJsonSchema`` (the JSON Schema form, not the OpenAPI subset of
``responseSchema``); a model that rejects it gets plain-text requests from then on.
Needs ``google-genai>=1.40`` (the first with `aclose` and `response_json_schema`).
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import pydantic
from google import genai
from google.auth import exceptions as auth_errors
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from assay.errors import ConfigError
from assay.models.backends import SDKBackend, api_key_or_placeholder, error_detail, split_system
from assay.models.types import BackendReply, GenerationSettings, ModelCallError

# The SDK talks through httpx, or httpx2 (a fork with its own exception classes) when
# only that one is installed or GOOGLE_GENAI_HTTP_CLIENT asks for it.
_TIMEOUTS: tuple[type[BaseException], ...] = (httpx.TimeoutException,)
_TRANSPORT: tuple[type[BaseException], ...] = (httpx.TransportError,)
try:
    import httpx2

    _TIMEOUTS += (httpx2.TimeoutException,)
    _TRANSPORT += (httpx2.TransportError,)
except ImportError:
    pass
try:
    # With aiohttp installed (google-cloud-aiplatform's evaluation extra brings it), the
    # SDK's async calls go through aiohttp, whose errors are neither httpx's nor OSError.
    import aiohttp

    _TIMEOUTS += (TimeoutError, aiohttp.ServerTimeoutError)
    _TRANSPORT += (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)
except ImportError:
    pass


logger = logging.getLogger(__name__)

#: the largest batch sent inline, in bytes of JSON (the API takes up to 20 MB in one
#: request); a larger one is uploaded as a JSONL file first
INLINE_BATCH_BYTES = 10_000_000
#: a Gemini API batch's name
_BATCH_NAME = re.compile(r"batches/[^/]+")
#: the metadata key of a batched request that carries its custom id (the reply-cache key)
_KEY = "key"
#: the states in which a batch has ended (the SDK's names of the API's batch states)
_BATCH_ENDED = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
    }
)
#: why a Vertex AI judge's calls stay live under `--judge-batch`
VERTEX_BATCH_UNAVAILABLE = (
    "is served by Vertex AI, whose batch prediction reads and writes Cloud Storage or"
    " BigQuery, which assay does not use"
)

#: why a judge whose batch came back without any key stops batching for the run
UNKEYED_BATCHES = (
    "answered a batch without its requests' keys (metadata.key), so its answers cannot be"
    " matched to its calls"
)

#: what the SDK raises for a reply it cannot read: pydantic's error, and AttributeError
#: from its enums, which call ``.upper()`` on whatever the server sent (a list, a number)
_UNREADABLE = (pydantic.ValidationError, AttributeError)


def _state(state: object) -> str:
    """A batch state as its name (the SDK gives an enum, or the text of a new state)."""
    return str(getattr(state, "value", state))


def _file_items(data: bytes) -> list[tuple[str | None, Any, Any]]:
    """(key, response, error) of each line of a batch's responses file (JSONL, one
    ``{"key", "response" | "error"}`` object a line); a line that is no JSON object
    has no key."""
    items: list[tuple[str | None, Any, Any]] = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if not isinstance(item, dict):
            logger.warning("line %d of a Gemini batch's responses file is no JSON object", number)
            items.append((None, None, None))
            continue
        key = item.get(_KEY)
        response, error = item.get("response"), item.get("error")
        parsed: Any = None
        if isinstance(response, dict):
            try:
                parsed = genai_types.GenerateContentResponse._from_response(
                    response=response, kwargs={}
                )
            except _UNREADABLE:
                error = error or {"message": f"line {number}: an unreadable response"}
        if error is not None and not isinstance(error, dict):
            error = {"message": str(error)}
        items.append(
            (
                key if isinstance(key, str) else None,
                parsed,
                genai_types.JobError.model_validate(_job_error(error)) if error else None,
            )
        )
    return items


def _job_error(error: dict[str, Any]) -> dict[str, Any]:
    """The fields of a google.rpc.Status the SDK's `JobError` reads."""
    code, message = error.get("code"), error.get("message")
    return {
        "code": code if isinstance(code, int) and not isinstance(code, bool) else None,
        "message": str(message) if message is not None else None,
    }


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("true", "1")


class GeminiBackend(SDKBackend):
    """A `ModelBackend` over ``models.generateContent`` (one candidate per call).

    Raises ConfigError when neither an API key nor Vertex AI is configured.
    """

    backend = "gemini"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        super().__init__(model, base_url=base_url, timeout_s=timeout_s)
        vertex = _env_flag("GOOGLE_GENAI_USE_VERTEXAI") or _env_flag("GOOGLE_GENAI_USE_ENTERPRISE")
        env_key = os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        api_key = api_key_or_placeholder(
            api_key,
            configured=vertex or bool(env_key),
            own_endpoint=base_url is None,
            missing=(
                f"judge {model} needs Gemini credentials: set GEMINI_API_KEY (or"
                " GOOGLE_API_KEY), or GOOGLE_GENAI_USE_VERTEXAI=true with"
                " GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION for Vertex AI"
            ),
        )
        # Vertex AI and the Gemini API serve different models under the same names; the
        # project and location pick the Vertex endpoint.
        self.endpoint = base_url or (
            "vertex:{}/{}".format(
                os.environ.get("GOOGLE_CLOUD_PROJECT", ""),
                os.environ.get("GOOGLE_CLOUD_LOCATION", ""),
            )
            if vertex
            else "gemini-api"
        )
        http_options = genai_types.HttpOptions(
            base_url=base_url,
            timeout=max(1, round(timeout_s * 1000)),  # the SDK counts milliseconds
            retry_options=genai_types.HttpRetryOptions(attempts=1),
        )
        #: a batch larger than this (bytes of JSON) goes as a file, not inline
        self.inline_batch_bytes = INLINE_BATCH_BYTES
        #: why this judge cannot batch (`--judge-batch` then calls it live); None: it can
        self.batch_unavailable: str | None = VERTEX_BATCH_UNAVAILABLE if vertex else None
        try:
            self._client = genai.Client(api_key=api_key, http_options=http_options)
        except (ValueError, auth_errors.GoogleAuthError) as exc:
            # missing or conflicting settings, or no application-default credentials
            raise ConfigError(f"judge {model}: cannot set up the Gemini client: {exc}") from exc

    def _generate(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, object] | None,
    ) -> tuple[list[genai_types.Content], genai_types.GenerateContentConfig]:
        """The contents and config of one generateContent request (live or batched)."""
        system, turns = split_system(messages)
        contents = [
            genai_types.Content(
                role="model" if role == "assistant" else "user",
                parts=[genai_types.Part(text=text)],
            )
            for role, text in turns
        ]
        config = genai_types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=settings.temperature,
            max_output_tokens=settings.max_tokens,
            response_mime_type="application/json" if schema is not None else None,
            response_json_schema=schema,
        )
        return contents, config

    async def _request(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, object] | None,
    ) -> BackendReply:
        """One generateContent call."""
        contents, config = self._generate(messages, settings, schema)
        with self._sdk_errors(), self._sdk_shapes():
            response = await self._client.aio.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        return self._reply(response)

    @contextmanager
    def _sdk_errors(self) -> Iterator[None]:
        """Raise what the SDK raises for a failed call as ModelCallError."""
        try:
            yield
        except genai_errors.APIError as exc:
            headers = getattr(exc.response, "headers", None)
            detail = exc.message or error_detail(exc.details)
            raise self.status_error(exc.code, detail, headers) from exc
        except _TIMEOUTS as exc:
            raise self.timeout_error() from exc
        except _TRANSPORT as exc:
            raise self.connection_error(exc) from exc
        except json.JSONDecodeError as exc:
            raise self.malformed_reply_error(str(exc)) from exc
        except auth_errors.TransportError as exc:  # fetching a Vertex AI token failed
            raise self.connection_error(exc) from exc
        except auth_errors.GoogleAuthError as exc:
            raise ModelCallError(
                f"{self.backend} judge {self.model}: Google authentication failed: {exc}",
                retryable=False,
            ) from exc

    def _reply(self, response: genai_types.GenerateContentResponse) -> BackendReply:
        if not response.candidates:
            feedback = response.prompt_feedback
            if feedback is not None and feedback.block_reason is not None:
                why = f"prompt blocked: {feedback.block_reason}"
                if feedback.block_reason_message:
                    why += f" ({feedback.block_reason_message})"
                raise self.empty_reply_error(why)
            raise self.malformed_reply_error("no candidates in the reply")
        candidate = response.candidates[0]
        parts = candidate.content.parts if candidate.content is not None else None
        # Thought summaries (thinking models) are not the answer.
        text = "".join(p.text for p in parts or [] if p.text and not p.thought)
        if not text.strip():
            raise self.empty_reply_error(f"finish reason {candidate.finish_reason}")
        usage = response.usage_metadata
        output_tokens = 0
        if usage is not None:
            # Thinking tokens are billed as output.
            output_tokens = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        return BackendReply(
            text=text,
            input_tokens=(usage.prompt_token_count or 0) if usage is not None else 0,
            output_tokens=output_tokens,
        )

    # -- batch mode (`--judge-batch`, `assay.models.batch`) ----------------------------------

    def batch_request(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> dict[str, Any]:
        """The request a live call would send (with the schema while the model takes
        it), as the JSON of an inlined batch request."""
        schema = settings.json_schema if self._structured.supported else None
        contents, config = self._generate(messages, settings, schema)
        request = genai_types.InlinedRequest(contents=contents, config=config)
        body: dict[str, Any] = request.model_dump(mode="json", exclude_none=True)
        return body

    async def submit_batch(self, requests: Mapping[str, dict[str, Any]]) -> str:
        """Create one batch of `requests` (custom id -> `batch_request` body), each
        carrying its custom id as ``metadata.key``; the batch's name (``batches/...``)."""
        if self.batch_unavailable is not None:
            raise ModelCallError(
                f"{self.backend} judge {self.model} {self.batch_unavailable}; its calls are"
                " made live",
                retryable=False,
            )
        inlined = [
            genai_types.InlinedRequest.model_validate({**body, "metadata": {_KEY: key}})
            for key, body in requests.items()
        ]
        size = sum(len(json.dumps(body)) for body in requests.values())
        config = genai_types.CreateBatchJobConfig(display_name=f"assay judge {self.model}")
        src: str | list[genai_types.InlinedRequest] = inlined
        if size > self.inline_batch_bytes:
            src = await self._upload_requests(inlined)
        with self._sdk_errors(), self._sdk_shapes():
            batch = await self._client.aio.batches.create(model=self.model, src=src, config=config)
        if not batch.name or not _BATCH_NAME.fullmatch(batch.name):
            raise self.malformed_reply_error(f"the created batch's name is {batch.name!r}")
        return batch.name

    async def _upload_requests(self, inlined: Sequence[genai_types.InlinedRequest]) -> str:
        """Upload the requests as a JSONL file, one ``{"key", "request"}`` a line (the
        API's batch file); the file's name (``files/...``).

        Each line's request is the REST body the SDK itself would send for that inlined
        request (its own converter, so the file carries what a live call sends)."""
        try:
            from google.genai._common import convert_to_dict
            from google.genai.batches import _InlinedRequest_to_mldev
        except ImportError as exc:
            raise ModelCallError(
                f"{self.backend} judge {self.model}: this google-genai cannot write a batch"
                f" too large to send inline ({exc}); its calls are made live",
                retryable=False,
            ) from exc
        lines = []
        for request in inlined:
            rest = convert_to_dict(_InlinedRequest_to_mldev(self._client._api_client, request))
            key = (request.metadata or {})[_KEY]
            lines.append(json.dumps({_KEY: key, "request": rest["request"]}).encode())
        config = genai_types.UploadFileConfig(
            mime_type="jsonl", display_name=f"assay judge {self.model} requests"
        )
        try:
            with self._sdk_errors(), self._sdk_shapes():
                uploaded = await self._client.aio.files.upload(
                    file=io.BytesIO(b"\n".join(lines) + b"\n"), config=config
                )
        except KeyError as exc:  # the SDK's word for an upload answered without its URL
            raise self.malformed_reply_error(f"file upload: {exc}") from exc
        if not uploaded.name:
            raise self.malformed_reply_error("the uploaded batch file has no name")
        return uploaded.name

    async def collect_batch(self, batch_id: str) -> dict[str, BackendReply | ModelCallError] | None:
        """Each request's outcome, by its key, once the batch has ended (None while it
        runs). A failed request is an error (the caller makes it live); so is one a
        failed, cancelled or expired batch left out. A response without its key is
        left out (its call is made live): the API does not promise the requests' order."""
        if not _BATCH_NAME.fullmatch(batch_id):  # the SDK would raise ValueError
            raise ModelCallError(
                f"{self.backend} judge {self.model}: {batch_id!r} is not a Gemini API batch",
                retryable=False,
            )
        with self._sdk_errors(), self._sdk_shapes():
            batch = await self._client.aio.batches.get(name=batch_id)
        state = _state(batch.state)
        if state not in _BATCH_ENDED:
            return None
        if state != "JOB_STATE_SUCCEEDED":
            error = batch.error
            logger.warning(
                "%s judge %s: batch %s ended %s%s; what it did not answer is made live",
                self.backend,
                self.model,
                batch_id,
                state,
                f" ({error.message})" if error is not None and error.message else "",
            )
        dest = batch.dest
        items: list[tuple[str | None, Any, Any]] = []
        if dest is not None and dest.inlined_responses:
            items = [
                # (an SDK before responses had `metadata` leaves every key out)
                ((getattr(item, "metadata", None) or {}).get(_KEY), item.response, item.error)
                for item in dest.inlined_responses
            ]
        elif dest is not None and dest.file_name:
            with self._sdk_errors():
                data = await self._client.aio.files.download(file=dest.file_name)
            items = _file_items(data)
        if not items and state == "JOB_STATE_SUCCEEDED":
            logger.warning(
                "%s judge %s: batch %s succeeded without answers; its calls are made live",
                self.backend,
                self.model,
                batch_id,
            )
        return self._outcomes(batch_id, items)

    def _outcomes(
        self, batch_id: str, items: Sequence[tuple[str | None, Any, Any]]
    ) -> dict[str, BackendReply | ModelCallError]:
        """(key, response, error) of each answered request, as each key's outcome."""
        outcomes: dict[str, BackendReply | ModelCallError] = {}
        unkeyed = 0
        for key, response, error in items:
            if not isinstance(key, str):
                unkeyed += 1
                continue
            if key in outcomes:  # two answers for one request: trust neither
                outcomes[key] = ModelCallError(
                    f"{self.backend} judge {self.model}: batch {batch_id} answered this"
                    " request twice",
                    retryable=False,
                )
                continue
            outcomes[key] = self._outcome(batch_id, response, error)
        if unkeyed:
            logger.warning(
                "%s judge %s: %d responses of batch %s carry no key; their calls are made live",
                self.backend,
                self.model,
                unkeyed,
                batch_id,
            )
        if unkeyed and not outcomes:
            # An endpoint that drops every key would have each later batch paid twice
            # (batched, then live): this judge's next calls go live straight away.
            self.batch_unavailable = UNKEYED_BATCHES
        return outcomes

    def _outcome(self, batch_id: str, response: Any, error: Any) -> BackendReply | ModelCallError:
        if isinstance(response, genai_types.GenerateContentResponse) and error is None:
            try:
                return self._reply(response)
            except ModelCallError as exc:
                return exc
        code = getattr(error, "code", None)
        detail = getattr(error, "message", None) or "no response and no error given"
        return ModelCallError(
            f"{self.backend} judge {self.model}: batch {batch_id} failed this request"
            f"{f' (code {code})' if code is not None else ''}: {detail}",
            retryable=False,
        )

    @contextmanager
    def _sdk_shapes(self) -> Iterator[None]:
        """A body the SDK cannot read (a proxy's page, a changed API, a hostile server)
        as an error; wraps the SDK's call alone, so no bug of assay's is taken for one."""
        try:
            yield
        except _UNREADABLE as exc:
            raise self.malformed_reply_error(f"{type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        """Close the SDK's HTTP clients."""
        await self._client.aio.aclose()
        self._client.close()


create_backend = GeminiBackend.create
