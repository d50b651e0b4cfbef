"""The shapes every model backend shares: settings, replies, errors and the protocol.

A backend does one thing: send one chat prompt to one model and return one reply with
its token usage. It does no retries, caching or rate limiting; `assay.models.client.
ModelClient` wraps it with those, so a new backend is about a hundred lines. Judges, the
simulated user and the agents are users of backends; nothing here knows them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from assay.errors import AssayError, ConfigError
from assay.redact import redact

# Accepted spellings of each setting: ours, camelCase, and the names ADK's
# `judge_model_config` and the Gemini SDK use for the same thing.
_SETTING_ALIASES: dict[str, str] = {
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "maxTokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "maxOutputTokens": "max_tokens",
    "json_schema": "json_schema",
    "jsonSchema": "json_schema",
}


@dataclass(frozen=True)
class GenerationSettings:
    """What changes a reply besides the prompt; part of the cache key.

    `json_schema` asks the backend for a JSON object of that schema when it supports
    structured output; the metrics still parse replies tolerantly when it does not.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    json_schema: dict[str, Any] | None = None

    @classmethod
    def from_mapping(
        cls, m: Mapping[str, object] | GenerationSettings | None
    ) -> GenerationSettings:
        """Settings from a metric's mapping; None values mean "the backend's default".

        Unknown keys raise ConfigError: a setting silently ignored would make replies
        differ from what the user asked for while sharing their cache entries.
        """
        if m is None:
            return cls()
        if isinstance(m, GenerationSettings):
            return m
        values: dict[str, Any] = {}
        for key, value in m.items():
            field = _SETTING_ALIASES.get(key)
            if field is None:
                valid = ", ".join(sorted({k for k in _SETTING_ALIASES if "_" in k or k.islower()}))
                raise ConfigError(
                    f"unknown judge generation setting {key!r}; valid settings are: {valid}"
                )
            if value is not None:
                values[field] = value
        temperature = values.get("temperature")
        max_tokens = values.get("max_tokens")
        schema = values.get("json_schema")
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, int | float)
        ):
            raise ConfigError(f"judge temperature must be a number, got {temperature!r}")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ConfigError(f"judge max_tokens must be a positive integer, got {max_tokens!r}")
        if schema is not None and not isinstance(schema, Mapping):
            raise ConfigError(f"judge json_schema must be a JSON object, got {schema!r}")
        return cls(
            temperature=float(temperature) if temperature is not None else None,
            max_tokens=max_tokens,
            json_schema=dict(schema) if schema is not None else None,
        )

    def as_key(self) -> dict[str, object]:
        """The settings as a plain dict for the cache key (unset ones left out)."""
        key: dict[str, Any] = {}
        if self.temperature is not None:
            key["temperature"] = self.temperature
        if self.max_tokens is not None:
            key["max_tokens"] = self.max_tokens
        if self.json_schema is not None:
            key["json_schema"] = self.json_schema
        return key


@dataclass(frozen=True)
class BackendReply:
    """One completion: its text and the tokens the backend reported (0 when unknown).

    `cached_tokens` are the input tokens the vendor read from its prompt cache (part of
    `input_tokens`, billed at a fraction of the price)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


class ModelCallError(AssayError):
    """One model call failed (or, from `ModelClient.generate`, every sample of a prompt did).

    `retryable` is True for rate limits (429), server errors (5xx), timeouts and
    connection errors; `retry_after` is the server's Retry-After in seconds, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        # What an endpoint answers may quote the credentials it was sent (issue #31).
        message = redact(message)
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after

    @property
    def overloaded(self) -> bool:
        """The backend said it is overloaded (429 or 5xx): shrink the in-flight limit."""
        return self.status is not None and (self.status == 429 or self.status >= 500)


@runtime_checkable
class ModelBackend(Protocol):
    """One model behind one API: a single completion per call, nothing else."""

    backend: str
    """"openai", "gemini", "anthropic" or "local"."""
    model: str

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        """One reply to `messages`; raises ModelCallError when the call fails."""
        ...

    async def aclose(self) -> None:
        """Release connections, threads or model memory."""
        ...
