"""`UserSimulator`: the LLM that plays the user of a scenario, one message at a time.

The model is reached through a judge backend (`assay.judges`) wrapped in the judges'
own `Judge` client, so the simulated user gets the same pacing as judges: an adaptive
limit of calls in flight, retries with exponential back-off and jitter on 429, 5xx,
timeouts and malformed replies, and a per-call timeout. Replies are never cached: a
scenario run several times must meet a fresh user each time.

What a reply means (as ADK's LLM-backed user simulator reads it): a reply containing
the stop signal (case-insensitive) ends the conversation, and nothing of that reply is
sent to the agent; otherwise the reply, trimmed of a leading `user:` label and
surrounding quotes, is the next user message. An empty reply is asked once more; a
second empty one is a `UserSimulationError`, as is any call that still failed after
the retries. A model that kept answering 429 raises `QuotaExhaustedError`.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.errors import AssayError, ConfigError, QuotaExhaustedError
from assay.judges.client import Judge
from assay.judges.policy import AdaptiveLimiter, RetryPolicy
from assay.judges.resolve import BACKENDS, make_backend, missing_sdk_message, parse_model
from assay.judges.stats import JudgeStats
from assay.judges.types import JudgeBackend, JudgeCallError, JudgeModelOptions
from assay.model.core import Persona, Scenario, Turn
from assay.simulation.options import SimulatorOptions
from assay.simulation.prompts import simulator_messages

#: backends that take an API key in their constructor: (module, class)
_KEYED_BACKENDS = {
    "openai": ("openai_compat", "OpenAICompatBackend"),
    "gemini": ("gemini", "GeminiBackend"),
    "anthropic": ("anthropic", "AnthropicBackend"),
}
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:user|customer|simulated user)(?:\*\*)?\s*:\s*", re.I)
_QUOTES = ('"', "'", "\u201c\u201d", "\u2018\u2019")
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


class _NoCache:
    """A reply cache that keeps nothing: every simulated message is a fresh call."""

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        return {}

    def put(self, key: str, *, backend: str, model: str, reply: str) -> None:
        return None

    async def flush(self) -> None:
        return None

    @property
    def write_errors(self) -> list[str]:
        return []


def _backend(options: SimulatorOptions) -> JudgeBackend:
    """The backend for the simulator's model; ConfigError when it cannot be built."""
    model = options.model or ""
    if options.api_key is None:
        return make_backend(
            model, JudgeModelOptions(base_url=options.base_url), timeout_s=options.timeout_s
        )
    spec = parse_model(model)
    if spec.backend not in _KEYED_BACKENDS:
        raise ConfigError(f"user model {model!r}: an API key applies to cloud models only")
    try:
        installed = importlib.util.find_spec(BACKENDS[spec.backend].sdk) is not None
    except ModuleNotFoundError:  # the parent package ("google") is missing
        installed = False
    if not installed:
        raise ConfigError(missing_sdk_message(spec.backend))
    module_name, class_name = _KEYED_BACKENDS[spec.backend]
    module = importlib.import_module(f"assay.judges.backends.{module_name}")
    cls: Any = getattr(module, class_name)
    backend: JudgeBackend = cls(
        spec.name, base_url=options.base_url, api_key=options.api_key, timeout_s=options.timeout_s
    )
    return backend


class UserSimulator:
    """The simulated user of a run, shared by all its scenario conversations.

    Raises ConfigError when the options are invalid or the model cannot be reached
    through any backend (unknown model string, SDK not installed, no API key).
    """

    def __init__(self, options: SimulatorOptions) -> None:
        options.validate()
        self.options = options
        backend = _backend(options)
        self.judge = Judge(
            backend,
            cache=_NoCache(),
            limiter=AdaptiveLimiter(options.concurrency),
            retry=RetryPolicy(max_retries=options.max_retries),
            stats=JudgeStats(),
            timeout_s=options.timeout_s,
            use_cache=False,
        )

    @property
    def label(self) -> str:
        """`backend:model`, for messages."""
        return self.judge.label

    @property
    def stats(self) -> JudgeStats:
        """Calls, retries, errors and tokens of the simulated user so far."""
        return self.judge.stats

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
        problem = ""
        for _ in range(ATTEMPTS):
            try:
                replies = await self.judge.generate(messages, 1, settings)
            except JudgeCallError as exc:
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
        """Close the model's connections."""
        await self.judge.backend.aclose()
