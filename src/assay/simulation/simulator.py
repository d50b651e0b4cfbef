"""`UserSimulator`: the LLM that plays the user of a scenario, one message at a time.

The model is reached through the model layer (`assay.models`): a backend wrapped in a
`ModelClient`, so the simulated user gets the same pacing as judges: an adaptive limit
of calls in flight, retries with exponential back-off and jitter on 429, 5xx, timeouts
and malformed replies, and a per-call timeout. Replies are not cached: a scenario run
several times must meet a fresh user each time, unless the run asks for cached user
replies (`SimulatorOptions.cache_replies`): then each reply is kept in the run's reply
cache (the store's, shared with the judges) and the same conversation so far gets the
same reply again without a call.

What a reply means (as ADK's LLM-backed user simulator reads it): a reply containing
the stop signal (case-insensitive) ends the conversation, and nothing of that reply is
sent to the agent; otherwise the reply, trimmed of a leading `user:` label and
surrounding quotes, is the next user message. An empty reply is asked once more; a
second empty one is a `UserSimulationError`, as is any call that still failed after
the retries. A model that kept answering 429 raises `QuotaExhaustedError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.core.cases import Persona, Scenario, Turn
from assay.errors import AssayError, ConfigError, QuotaExhaustedError
from assay.models.cache import NoReplyCache
from assay.models.registry import ModelRegistry, current_registry
from assay.models.resolve import make_backend, parse_model
from assay.models.stats import CallStats
from assay.models.types import ModelBackend, ModelCallError
from assay.simulation.options import SimulatorOptions
from assay.simulation.prompts import simulator_messages

#: backends that take an API key (a local model file has none)
_KEYED_BACKENDS = frozenset({"openai", "gemini", "anthropic"})
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:user|customer|simulated user)(?:\*\*)?\s*:\s*", re.I)
_QUOTES = ('"', "'", "\u201c\u201d", "\u2018\u2019")
#: the simulator prompt's version: part of the cache key of cached user replies
PROMPT_VERSION = "user-simulator.v1"
#: attempts at a usable reply before the simulation fails (an empty reply is retried once)
ATTEMPTS = 2


class UserSimulationError(AssayError):
    """The simulated user could not produce a message (CES `USER_SIMULATION_FAILURE`)."""


@dataclass(frozen=True, slots=True)
class NextMessage:
    """The simulated user's next move: a message to send, or the end of the conversation."""

    text: str | None
    raw: str

    @property
    def stopped(self) -> bool:
        return self.text is None


def read_reply(reply: str, stop_signal: str) -> NextMessage | None:
    """What one model reply means; None when it holds no message at all."""
    if stop_signal.casefold() in reply.casefold():
        return NextMessage(None, reply)
    text = _LABEL.sub("", reply.strip(), count=1).strip()
    for quote in _QUOTES:
        opening, closing = quote[0], quote[-1]
        if len(text) >= 2 and text[0] == opening and text[-1] == closing:
            text = text[1:-1].strip()
            break
    return NextMessage(text, reply) if text else None


def _backend(options: SimulatorOptions) -> ModelBackend:
    """The backend for the simulator's model; ConfigError when it cannot be built."""
    model = options.model or ""
    if options.api_key is not None and parse_model(model).backend not in _KEYED_BACKENDS:
        raise ConfigError(f"user model {model!r}: an API key applies to cloud models only")
    return make_backend(
        model, base_url=options.base_url, api_key=options.api_key, timeout_s=options.timeout_s
    )


class UserSimulator:
    """The simulated user of a run, shared by all its scenario conversations.

    Raises ConfigError when the options are invalid or the model cannot be reached
    through any backend (unknown model string, SDK not installed, no API key).
    """

    def __init__(self, options: SimulatorOptions, registry: ModelRegistry | None = None) -> None:
        options.validate()
        self.options = options
        backend = _backend(options)
        # The run's registry (given, or the one of the run this is built in): the user
        # model shares its endpoint's limiter and retry policy with the judges and
        # agents calling it. Outside a run, it paces itself.
        self.registry = (
            registry
            or current_registry()
            or ModelRegistry(concurrency=options.concurrency, max_retries=options.max_retries)
        )
        self.client = self.registry.client(
            backend,
            role="user model",
            stats=CallStats(),
            timeout_s=options.timeout_s,
            use_cache=options.cache_replies,
            concurrency=options.concurrency,
            max_retries=options.max_retries,
            # Not cached: nothing is read from or written to any cache.
            cache=None if options.cache_replies else NoReplyCache(),
        )

    @property
    def label(self) -> str:
        """`backend:model`, for messages."""
        return self.client.label

    @property
    def stats(self) -> CallStats:
        """Calls, retries, errors and tokens of the simulated user so far."""
        return self.client.stats

    async def next_message(
        self, scenario: Scenario, persona: Persona | None, turns: Sequence[Turn]
    ) -> NextMessage:
        """The user's next message after `turns`, or the stop.

        Raises UserSimulationError or QuotaExhaustedError.
        """
        messages = simulator_messages(scenario, persona, turns, self.options.stop_signal)
        settings: Mapping[str, Any] = (
            {} if self.options.temperature is None else {"temperature": self.options.temperature}
        )
        stop = self.options.stop_signal

        def accept(reply: str) -> bool:  # only replies holding a move are cached
            return read_reply(reply, stop) is not None

        problem = ""
        for _ in range(ATTEMPTS):
            try:
                replies = await self.client.generate(
                    messages, 1, settings, accept=accept, prompt_version=PROMPT_VERSION
                )
            except ModelCallError as exc:
                if exc.status == 429:
                    raise QuotaExhaustedError(
                        f"user simulator {self.label}: the model kept answering HTTP 429"
                        f" (rate limit or quota exhausted): {exc.message}"
                    ) from exc
                if exc.status is not None:  # an HTTP error that the retries did not cure
                    raise UserSimulationError(
                        f"user simulator {self.label} failed: {exc.message}"
                    ) from exc
                problem = exc.message
                continue
            found = read_reply(replies[0], self.options.stop_signal)
            if found is not None:
                return found
            problem = f"the reply holds no user message: {replies[0][:200]!r}"
        raise UserSimulationError(
            f"user simulator {self.label} gave no usable message in {ATTEMPTS} attempts: {problem}"
        )

    async def aclose(self) -> None:
        """Write any cached replies and close the model's connections."""
        try:
            await self.client.cache.flush()
        finally:
            await self.client.backend.aclose()
