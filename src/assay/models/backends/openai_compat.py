"""OpenAI-compatible judge backend: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio.

Model string `openai:NAME`. The endpoint is `base_url` from the judge options, else the
SDK's `OPENAI_BASE_URL`, else OpenAI itself; the key is `OPENAI_API_KEY`. Self-hosted
servers need no key, so with a base URL and no key a placeholder is sent.

A JSON schema in the settings is sent as ``response_format: json_schema`` (non-strict:
strict mode would require every property and forbid extras, which not every judge
schema does); an endpoint that rejects the field gets plain-text requests from then on.

Requests go through the SDK client (auth, timeouts, error classes) as plain JSON and
replies are read as JSON, skipping the typed layer's per-call conversions (see
`_request`), over aiohttp when `httpx-aiohttp` is installed (`sdk_http_client`).
Needs ``openai>=1.40`` (``openai[aiohttp]>=1.91`` for the aiohttp transport).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import openai
import orjson

from assay.models.backends import (
    SDKBackend,
    StainlessErrors,
    api_key_or_placeholder,
    sdk_http_client,
)
from assay.models.http import error_detail
from assay.models.types import BackendReply, GenerationSettings, ModelCallError

OPENAI_HOST = "api.openai.com"
_ERRORS = StainlessErrors.of(openai)
#: the clients (connection pools) live calls take turns over without httpx-aiohttp
_POOL_SHARDS = 8
#: what each line of a judge batch asks for
_BATCH_URL: Final = "/v1/chat/completions"
#: batch states before its files are final
_BATCH_RUNNING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
logger = logging.getLogger(__name__)


class OpenAICompatBackend(SDKBackend):
    """A `ModelBackend` over ``POST {base_url}/chat/completions`` (one choice per call).

    Raises ConfigError when no key is configured for OpenAI's own endpoint.
    """

    backend = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        official = base_url is None or OPENAI_HOST in base_url
        api_key = api_key_or_placeholder(
            api_key or os.environ.get("OPENAI_API_KEY") or None,
            own_endpoint=official,
            missing=(
                f"judge openai:{model} needs an API key: set OPENAI_API_KEY, or point"
                " OPENAI_BASE_URL (or judge_model_options.base_url) at an"
                " OpenAI-compatible server such as vLLM or Ollama"
            ),
        )
        # OpenAI's own API wants max_completion_tokens (reasoning models refuse
        # max_tokens); self-hosted servers have long known only max_tokens.
        self._max_tokens_field = "max_completion_tokens" if official else "max_tokens"
        http_client = sdk_http_client(openai, timeout_s)
        if http_client is not None:
            self._shards = [
                openai.AsyncOpenAI(
                    api_key=api_key,
                    base_url=base_url,
                    timeout=timeout_s,
                    max_retries=0,
                    http_client=http_client,
                )
            ]
        else:
            # httpx's own transport: live calls take turns over a few clients, each with
            # its own connection pool, since httpcore's pool checks every connection it
            # holds on each request it assigns (bench/README.md, "Judge throughput").
            self._shards = [
                openai.AsyncOpenAI(
                    api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
                )
                for _ in range(_POOL_SHARDS)
            ]
        self._client = self._shards[0]
        self._turn = 0
        super().__init__(
            model,
            base_url=base_url,
            timeout_s=timeout_s,
            label=f"openai judge {model} at {self._client.base_url}",
        )
        self.endpoint = str(self._client.base_url)

    def _params(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The chat completion request body."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": m.get("role", "user"), "content": m.get("content", "")} for m in messages
            ],
        }
        if settings.temperature is not None:
            params["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            params[self._max_tokens_field] = settings.max_tokens
        if schema is not None:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "schema": schema},
            }
        return params

    async def _request(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, Any] | None,
    ) -> BackendReply:
        """One chat completion."""
        params = self._params(messages, settings, schema)
        # Plain JSON through the SDK client's own post(): the typed
        # chat.completions.create() spends about a millisecond of CPU per call
        # converting parameters and building reply models, the largest cost of the
        # judge path at hundreds of calls per second. Auth, timeouts and the
        # SDK's error classes are the same either way.
        with self.stainless_errors(_ERRORS):
            self._turn = (self._turn + 1) % len(self._shards)
            client = self._shards[self._turn]
            raw = await client.post("/chat/completions", body=params, cast_to=str)
        try:
            completion = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise self.malformed_reply_error(f"not JSON: {raw[:80]!r}") from exc
        return self._reply(completion)

    def _reply(self, completion: Any) -> BackendReply:
        choices = completion.get("choices") if isinstance(completion, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self.malformed_reply_error("no choices in the reply")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self.malformed_reply_error("no message in the choice")
        text = message.get("content")
        if isinstance(text, list):  # some compatible servers answer in content parts
            text = "".join(str(part.get("text") or "") for part in text if isinstance(part, dict))
        if not isinstance(text, str) or not text.strip():
            refusal = message.get("refusal")
            reason = (
                f"refusal: {refusal}" if refusal else f"finish_reason {choice.get('finish_reason')}"
            )
            raise self.empty_reply_error(reason)
        usage = completion.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        # OpenAI caches a prompt's prefix by itself (the judge prompts keep the shared
        # instructions first, in the system message) and says how much it read.
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        return BackendReply(
            text=text,
            input_tokens=_count(usage.get("prompt_tokens")),
            output_tokens=_count(usage.get("completion_tokens")),
            cached_tokens=_count(cached),
        )

    # -- the Batch API (`--judge-batch`, `assay.models.batch`) -------------------------------

    def batch_request(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> dict[str, Any]:
        """The body a live call would send (with the schema while the endpoint takes it)."""
        schema = settings.json_schema if self._structured.supported else None
        return self._params(messages, settings, schema)

    async def submit_batch(self, requests: Mapping[str, dict[str, Any]]) -> str:
        """Upload the requests as a JSONL file (``/files``) and create a batch of them
        (``/batches``); the batch id."""
        lines = [
            orjson.dumps({"custom_id": key, "method": "POST", "url": _BATCH_URL, "body": body})
            for key, body in requests.items()
        ]
        with self.stainless_errors(_ERRORS):
            uploaded = await self._client.files.create(
                file=("assay-judge-batch.jsonl", b"\n".join(lines) + b"\n"), purpose="batch"
            )
            batch = await self._client.batches.create(
                input_file_id=uploaded.id, endpoint=_BATCH_URL, completion_window="24h"
            )
        return batch.id

    async def collect_batch(self, batch_id: str) -> dict[str, BackendReply | ModelCallError] | None:
        """Each request's outcome once the batch has ended (None while it runs): the
        output file's replies, the errors file's failures, and an error for any
        request an expired or cancelled batch left out (the caller makes those live)."""
        with self.stainless_errors(_ERRORS):
            batch = await self._client.batches.retrieve(batch_id)
            if batch.status in _BATCH_RUNNING:
                return None
            outcomes: dict[str, BackendReply | ModelCallError] = {}
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    content = await self._client.files.content(file_id)
                    for line in content.content.splitlines():
                        if line.strip():
                            self._batch_line(line, batch_id, outcomes)
        return outcomes

    def _batch_line(
        self, line: bytes, batch_id: str, outcomes: dict[str, BackendReply | ModelCallError]
    ) -> None:
        """One line of an output or errors file into `outcomes` (by custom id)."""
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            logger.warning("batch %s: a result line is not JSON: %r", batch_id, line[:80])
            return
        key = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(key, str):
            logger.warning("batch %s: a result line has no custom_id", batch_id)
            return
        response = item.get("response")
        response = response if isinstance(response, dict) else {}
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            try:
                outcomes[key] = self._reply(body)
            except ModelCallError as exc:
                outcomes[key] = exc
            return
        detail = error_detail(item.get("error")) or error_detail(body) or "no detail given"
        outcomes[key] = ModelCallError(
            f"{self.backend} judge {self.model}: batch {batch_id} failed this request"
            f" (status {status}): {detail}",
            retryable=False,
            status=status if isinstance(status, int) else None,
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        for client in self._shards:
            await client.close()


create_backend = OpenAICompatBackend.create


def _count(value: object) -> int:
    """A token count as reported, 0 when missing or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
