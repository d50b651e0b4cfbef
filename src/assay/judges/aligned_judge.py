"""`AlignedJudge`: a judge client whose prompts carry an aligned judge's guidelines and
examples (`assay.judges.align`), and whose cache keys carry its `NAME@VERSION`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from assay.judges.align import AlignedJudgeSpec, alignment_text, augment_messages
from assay.judges.client import Judge
from assay.models.client import Outcome
from assay.models.types import GenerationSettings


class AlignedJudge(Judge):
    """A base judge's client whose prompts carry an aligned judge's guidelines and
    examples, and whose cache keys carry its `NAME@VERSION`.

    Built by `JudgePool` from the base model's `Judge` (same backend, limiter, retry
    policy, cache and stats); it does not own the backend (the base judge closes it).
    """

    def __init__(
        self,
        base: Judge,
        spec: AlignedJudgeSpec,
        *,
        in_flight: dict[str, asyncio.Future[Outcome]] | None = None,
    ) -> None:
        super().__init__(
            base.backend,
            cache=base.cache,
            limiter=base.limiter,
            retry=base.retry,
            stats=base.stats,
            timeout_s=base.timeout_s,
            use_cache=base.use_cache,
            in_flight=in_flight,
        )
        self.spec = spec
        self.judge_version = spec.ref
        self._addition = alignment_text(spec.guidelines, spec.examples)

    def __repr__(self) -> str:
        return f"<AlignedJudge {self.spec.ref} over {self.label}>"

    async def generate(
        self,
        messages: Sequence[Mapping[str, object]],
        n: int,
        settings: Mapping[str, object] | GenerationSettings | None = None,
        *,
        accept: Callable[[str], bool] | None = None,
        prompt_version: str | None = None,
    ) -> list[str]:
        """The base model's `n` replies to `messages` with the alignment added."""
        return await super().generate(
            augment_messages(messages, self._addition),
            n,
            settings,
            accept=accept,
            prompt_version=prompt_version,
        )
