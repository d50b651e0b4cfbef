"""How the simulated user of a scenario run is configured (`SimulatorOptions`).

The simulated user is an LLM reached through assay's model backends, so the same model
strings work: `openai:NAME` (any OpenAI-compatible endpoint), `gemini-NAME` /
`gemini:NAME`, `anthropic:NAME`, `local:PATH.gguf`. Without a model, scenario cases
cannot run; the engine reports them `NOT_SUPPORTED` with `NO_USER_MODEL_MESSAGE`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assay.core.cases import Persona
from assay.errors import ConfigError

DEFAULT_STOP_SIGNAL = "</finished>"

NO_USER_MODEL_MESSAGE = (
    "scenario cases need a simulated user: give its model with --user-model MODEL (CLI)"
    " or RunOptions(simulator=SimulatorOptions(model=MODEL)) (Python API), where MODEL is"
    " openai:NAME (any OpenAI-compatible endpoint; OPENAI_BASE_URL / OPENAI_API_KEY),"
    " gemini-NAME or gemini:NAME, anthropic:NAME or local:PATH.gguf"
)


@dataclass
class SimulatorOptions:
    """The simulated user's model and the rules of a simulated conversation.

    `max_turns` bounds the simulated user's messages when the scenario sets no
    `max_turns` of its own. `personas` maps persona ids to personas, for scenarios that
    name their persona by id; the built-in presets (NOVICE, EXPERT, EVALUATOR) apply
    when an id is not found there. `max_retries`, `timeout_s` and `concurrency` pace
    the calls to the model exactly as for judges (retries with back-off on 429 and 5xx,
    an adaptive limit of calls in flight).
    """

    model: str | None = None
    stop_signal: str = DEFAULT_STOP_SIGNAL
    max_turns: int = 10
    temperature: float | None = None
    personas: Mapping[str, Persona] = field(default_factory=dict)
    base_url: str | None = None
    api_key: str | None = None
    max_retries: int = 4
    timeout_s: float = 60.0
    concurrency: int = 32
    #: keep the user model's replies in the run's reply cache (the store's when the run
    #: has one): a re-run of the same conversation gets the same replies, no calls
    cache_replies: bool = False

    def validate(self) -> None:
        """Raise ConfigError naming the first option that is out of range."""
        if self.model is None or not self.model.strip():
            raise ConfigError(NO_USER_MODEL_MESSAGE)
        if not self.stop_signal.strip():
            raise ConfigError("the user simulator's stop_signal must not be empty")
        if self.max_turns < 1:
            raise ConfigError(
                f"the user simulator's max_turns must be 1 or more, got {self.max_turns}"
            )
        if self.temperature is not None and self.temperature < 0:
            raise ConfigError(
                f"the user simulator's temperature must be 0 or more, got {self.temperature}"
            )
        if self.max_retries < 0:
            raise ConfigError(
                f"the user simulator's max_retries must be 0 or more, got {self.max_retries}"
            )
        if self.timeout_s <= 0:
            raise ConfigError(
                f"the user simulator's timeout_s must be positive, got {self.timeout_s}"
            )
        if self.concurrency < 1:
            raise ConfigError(
                f"the user simulator's concurrency must be 1 or more, got {self.concurrency}"
            )
