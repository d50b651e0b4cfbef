"""What a judge is asked for: `judge_model_options` and the protocol of whoever asks.

The shapes of a model call itself (settings, replies, errors, the backend protocol)
live in `assay.models.types`; the judge-side names of them are kept here because
metrics and their callers catch `JudgeCallError`.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from assay.models.types import BackendReply as BackendReply
from assay.models.types import GenerationSettings as GenerationSettings
from assay.models.types import ModelBackend, ModelCallError

#: a judge call failed: the model layer's error under the name metrics catch
JudgeCallError = ModelCallError
#: a judge is a model backend like any other
JudgeBackend = ModelBackend

__all__ = [
    "BackendReply",
    "GenerationSettings",
    "JudgeBackend",
    "JudgeCallError",
    "JudgeModelOptions",
    "JudgeRequest",
]


class JudgeModelOptions(BaseModel):
    """`judge_model_options`: which judge, how many samples, generation settings.

    `judge_model` None means "the judge given on the command line" (`--judge MODEL`).
    Fields of ADK's JudgeModelOptions (`judge_model_config`, `parallelism_limit`) are
    accepted so ADK configs load unchanged.
    """

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )

    judge_model: str | None = None
    num_samples: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    judge_model_config: dict[str, Any] | None = None
    parallelism_limit: int | None = Field(default=None, ge=1)
    #: for OpenAI-compatible endpoints; the openai SDK's environment variables otherwise
    base_url: str | None = None


class JudgeRequest(Protocol):
    """Anything that asks a pool for a judge: a judged metric, a calibration run."""

    @property
    def judge_options(self) -> JudgeModelOptions: ...
