"""Anthropic judge backend: Claude through the `anthropic` SDK.

Model string `anthropic:NAME`; the key is `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`).
`base_url` in the judge options (else the SDK's `ANTHROPIC_BASE_URL`) points the SDK
at a proxy or a stand-in; with a base URL and no key a placeholder is sent.

A JSON schema in the settings is sent as ``output_config.format`` (structured
outputs), with ``additionalProperties: false`` added to its objects as that API
requires; a model that rejects it gets plain-text requests from then on.

The temperature setting is not sent: the Messages API version that SDK 2.x speaks
rejects sampling parameters (the SDK has none), so Claude samples with its own
settings and repeated samples still vary. Needs ``anthropic>=2.0`` (`output_config`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import anthropic

from assay.models.backends import (
    SDKBackend,
    StainlessErrors,
    api_key_or_placeholder,
    sdk_http_client,
    split_system,
)
from assay.models.types import BackendReply, GenerationSettings, ModelCallError

#: the Messages API requires max_tokens; room for a rationale over many rubric items
DEFAULT_MAX_TOKENS = 4096
_ERRORS = StainlessErrors.of(anthropic)
#: Anthropic's prompt-cache marker (a five-minute cache, refreshed by each hit)
_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def closed_objects(schema: object) -> object:
    """`schema` with ``additionalProperties: false`` on every object that does not say."""
    if isinstance(schema, list):
        return [closed_objects(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {key: closed_objects(value) for key, value in schema.items()}
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


class AnthropicBackend(SDKBackend):
    """A `ModelBackend` over ``POST {base_url}/v1/messages``.

    Raises ConfigError when no key is configured for Anthropic's own endpoint.
    """

    backend = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        super().__init__(model, base_url=base_url, timeout_s=timeout_s)
        api_key = api_key_or_placeholder(
            api_key or os.environ.get("ANTHROPIC_API_KEY") or None,
            configured=bool(os.environ.get("ANTHROPIC_AUTH_TOKEN")),
            own_endpoint=base_url is None,
            missing=f"judge anthropic:{model} needs an API key: set ANTHROPIC_API_KEY",
        )
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=sdk_http_client(anthropic, timeout_s),
        )
        self.endpoint = str(self._client.base_url)

    def _params(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The Messages API request body."""
        system, turns = split_system(messages)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": settings.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": role, "content": text} for role, text in turns],
        }
        if system:
            # The judge instructions (and a rubric rendered into them) are the prefix
            # every call of a metric shares: marked for Anthropic's prompt cache, which
            # bills the cached part at a tenth of the input price (a prompt shorter than
            # the model's minimum is simply not cached).
            params["system"] = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
        if schema is not None:
            params["output_config"] = {
                "format": {"type": "json_schema", "schema": closed_objects(schema)}
            }
        return params

    async def _request(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, Any] | None,
    ) -> BackendReply:
        """One Messages API call."""
        params = self._params(messages, settings, schema)
        try:
            with self.stainless_errors(_ERRORS):
                message = await self._client.messages.create(**params)
        except (json.JSONDecodeError, anthropic.APIResponseValidationError) as exc:
            raise self.malformed_reply_error(str(exc)) from exc
        return self._reply(message)

    def _reply(self, message: Any) -> BackendReply:
        # The SDK builds reply objects without validation: a body of the wrong shape
        # arrives as an object with missing fields.
        blocks = getattr(message, "content", None)
        if not isinstance(blocks, list):
            raise self.malformed_reply_error("no content in the reply")
        text = "".join(
            block.text for block in blocks if getattr(block, "type", None) == "text" and block.text
        )
        if not text.strip():
            raise self.empty_reply_error(f"stop reason {message.stop_reason}")
        usage = getattr(message, "usage", None)
        input_tokens = 0
        if usage is not None:
            # Cached prompt tokens are reported apart from the uncached ones.
            input_tokens = sum(
                getattr(usage, name, None) or 0
                for name in (
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            )
        return BackendReply(
            text=text,
            input_tokens=input_tokens,
            output_tokens=(getattr(usage, "output_tokens", None) or 0) if usage else 0,
            cached_tokens=(getattr(usage, "cache_read_input_tokens", None) or 0) if usage else 0,
        )

    # -- Message Batches (`--judge-batch`, `assay.models.batch`) ------------------------------

    def batch_request(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> dict[str, Any]:
        """The params a live call would send (with the schema while the API takes it)."""
        schema = settings.json_schema if self._structured.supported else None
        return self._params(messages, settings, schema)

    async def submit_batch(self, requests: Mapping[str, dict[str, Any]]) -> str:
        """Create one Message Batch of `requests` (custom id -> params); its id."""
        items: Any = [{"custom_id": key, "params": params} for key, params in requests.items()]
        with self.stainless_errors(_ERRORS):
            batch = await self._client.messages.batches.create(requests=items)
        return str(batch.id)

    async def collect_batch(self, batch_id: str) -> dict[str, BackendReply | ModelCallError] | None:
        """Each request's outcome once the batch has ended (None while it runs); an
        errored, cancelled or expired request is an error (the caller makes it live)."""
        outcomes: dict[str, BackendReply | ModelCallError] = {}
        with self.stainless_errors(_ERRORS):
            batch = await self._client.messages.batches.retrieve(batch_id)
            if batch.processing_status != "ended":
                return None
            async for item in await self._client.messages.batches.results(batch_id):
                result = item.result
                if result.type == "succeeded":
                    try:
                        outcomes[item.custom_id] = self._reply(result.message)
                    except ModelCallError as exc:
                        outcomes[item.custom_id] = exc
                    continue
                error = getattr(result, "error", None)
                detail = getattr(getattr(error, "error", None), "message", None) or result.type
                outcomes[item.custom_id] = ModelCallError(
                    f"{self.backend} judge {self.model}: batch {batch_id} {result.type}"
                    f" this request: {detail}",
                    retryable=False,
                )
        return outcomes

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()


create_backend = AnthropicBackend.create
