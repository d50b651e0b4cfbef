"""`assay.cases.generate`: eval cases written by a model from the agent's own definition.

`generate(agent, model=..., count=N)` reads the agent's definition
(`assay.cases.generate_definition`), asks the model for N diverse cases in batches
(`assay.cases.generate_prompt`), refuses those that call a tool the agent does not have
or with arguments its schema rejects, removes near-duplicates
(`assay.cases.generate_check`), and returns the kept cases as assay `EvalCase`s with
every refusal and the coverage of tools and personas. With `scenarios=True` the cases
are conversation scenarios (ADK's `conversation_scenario`, CES scenario evaluations): a
persona, an opening message, a plan and a stop condition for the simulated user.

Requests ask for at most `BATCH` cases each, one after the other, until N are kept.
When refusals leave the set short after ceil(N / BATCH) requests, up to `MAX_TOP_UPS`
more ask for the rest, and stop at the first that brings nothing new (a model that
only repeats itself is not asked forever). Kept cases beyond N are refused as surplus.
A model error after some cases were kept ends the asking but keeps those cases (the
error is listed with the refusals); before any, it is raised.

How a proposal becomes a case in each format is `assay.cases.generate_shape`.

`plan(...)` builds the first request and the cost estimate without calling anything
(`--dry-run`); `write_generated(result.cases_as(fmt), path, fmt)`
(`assay.cases.generate_write`) writes an ADK, CES or Vertex file, checked with the
format's own reader before it replaces anything.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from assay.cases.generate_check import (
    LEXICAL_THRESHOLD,
    MALFORMED,
    MODEL_ERROR,
    SEMANTIC_THRESHOLD,
    SURPLUS,
    Candidate,
    Coverage,
    Refusal,
    check_calls,
    check_persona,
    coverage,
    is_readable,
    parse_reply,
    remove_near_duplicates,
)
from assay.cases.generate_definition import AgentDefinition, read_definition
from assay.cases.generate_prompt import (
    BATCH,
    CostEstimate,
    batch_sizes,
    build_messages,
    estimate_cost,
    reply_schema,
)
from assay.cases.generate_shape import build_cases
from assay.core.cases import EvalCase, Persona
from assay.errors import ConfigError
from assay.models.stats import CallStats
from assay.models.types import ModelCallError

if TYPE_CHECKING:
    from assay.models.client import ModelClient

_P = ParamSpec("_P")
_T = TypeVar("_T")

DEFAULT_TIMEOUT_S = 120.0
#: requests beyond ceil(count / BATCH) when refusals left the set short of --count
MAX_TOP_UPS = 2


@dataclass
class GenerationResult:
    """What a generation kept, what it refused (with reasons) and what the set covers."""

    agent: AgentDefinition
    cases: list[EvalCase]
    refusals: list[Refusal]
    coverage: Coverage
    proposed: int
    requests: int
    input_tokens: int = 0
    output_tokens: int = 0
    kept: list[Candidate] = field(default_factory=list)
    personas: dict[str, Persona] = field(default_factory=dict)
    scenarios: bool = False

    def cases_as(self, fmt: str) -> list[EvalCase]:
        """The kept cases shaped for `fmt` (adk, ces or vertex); `cases` is the ADK shape."""
        if fmt not in ("adk", "ces", "vertex"):
            raise ConfigError(f"format {fmt!r}: expected one of adk, ces, vertex")
        return build_cases(self.kept, self.agent, self.personas, scenarios=self.scenarios, fmt=fmt)


@dataclass(frozen=True)
class GenerationPlan:
    """What a generation would send (`--dry-run`): the first request and the estimate."""

    messages: list[dict[str, str]]
    estimate: CostEstimate
    sizes: list[int]


def _personas(personas: str | Path | Mapping[str, Persona] | None) -> dict[str, Persona]:
    from assay.simulation.personas import PRESET_PERSONAS, load_personas

    if personas is None:
        return dict(PRESET_PERSONAS)
    if isinstance(personas, str | Path):
        return load_personas(personas)
    return dict(personas)


def _check(count: int, model: str) -> None:
    from assay.models.resolve import MODEL_FORMS, parse_model

    if count < 1:
        raise ConfigError(f"--count must be at least 1, got {count}")
    try:
        parse_model(model)
    except ConfigError:
        raise ConfigError(
            f"--model {model!r} is not a model string; valid forms are: {'; '.join(MODEL_FORMS)}"
        ) from None


def plan(
    agent: object,
    *,
    model: str,
    count: int,
    scenarios: bool = False,
    personas: str | Path | Mapping[str, Persona] | None = None,
    focus: str | None = None,
) -> GenerationPlan:
    """The requests a generation would make and their estimated cost; calls nothing."""
    _check(count, model)
    definition = read_definition(agent)
    chosen = list(_personas(personas).values()) if scenarios else []
    sizes = batch_sizes(count)
    requests = [
        build_messages(
            definition,
            size=size,
            batch=i + 1,
            batches=len(sizes),
            scenarios=scenarios,
            personas=chosen,
            focus=focus,
        )
        for i, size in enumerate(sizes)
    ]
    return GenerationPlan(requests[0], estimate_cost(model, requests, sizes), sizes)


async def agenerate(
    agent: object,
    *,
    model: str,
    count: int,
    scenarios: bool = False,
    personas: str | Path | Mapping[str, Persona] | None = None,
    focus: str | None = None,
    embeddings: str | None = None,
    embedding_model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    lexical_threshold: float = LEXICAL_THRESHOLD,
    semantic_threshold: float = SEMANTIC_THRESHOLD,
) -> GenerationResult:
    """Generate cases (see the module docstring); `generate` is the same, blocking."""
    from assay.models.registry import ModelRegistry
    from assay.models.resolve import make_backend

    _check(count, model)
    definition = read_definition(agent)
    chosen = _personas(personas) if scenarios else {}
    backend = make_backend(model, base_url=base_url, api_key=api_key, timeout_s=timeout_s)
    stats = CallStats()
    client = ModelRegistry().client(
        backend, role="case generator", stats=stats, timeout_s=timeout_s, use_cache=False
    )
    run = _Generation(
        definition,
        client,
        scenarios=scenarios,
        personas=chosen,
        focus=focus,
        embedder=_Embedder(embeddings, embedding_model) if embeddings else None,
        lexical_threshold=lexical_threshold,
        semantic_threshold=semantic_threshold,
    )
    planned = len(batch_sizes(count))
    try:
        while len(run.kept) < count and run.requests < planned + MAX_TOP_UPS:
            try:
                added = await run.request(min(BATCH, count - len(run.kept)), planned)
            except ModelCallError as exc:
                if not run.kept:
                    raise
                # The cases earlier requests gave are kept (they were paid for).
                run.refusals.append(Refusal(f"batch {run.requests}", MODEL_ERROR, str(exc)))
                break
            if added == 0 and run.requests >= planned:
                break  # a top-up that brought nothing new: asking again would not either
    finally:
        await backend.aclose()
    surplus = run.kept[count:]
    run.refusals += [
        Refusal(c.id, SURPLUS, f"more cases than --count {count} asked for") for c in surplus
    ]
    kept = run.kept[:count]
    return GenerationResult(
        agent=definition,
        cases=build_cases(kept, definition, chosen, scenarios=scenarios, fmt="adk"),
        refusals=run.refusals,
        coverage=coverage(kept, list(definition.all_tools()), list(chosen)),
        proposed=run.proposed,
        requests=run.requests,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
        kept=kept,
        personas=chosen,
        scenarios=scenarios,
    )


class _Generation:
    """The state of one generation: what was kept and refused, request after request."""

    def __init__(
        self,
        agent: AgentDefinition,
        client: ModelClient,
        *,
        scenarios: bool,
        personas: dict[str, Persona],
        focus: str | None,
        embedder: _Embedder | None,
        lexical_threshold: float,
        semantic_threshold: float,
    ) -> None:
        self.agent = agent
        self.tools = agent.all_tools()
        self.client = client
        self.scenarios = scenarios
        self.personas = personas
        self.focus = focus
        self.embedder = embedder
        self.lexical_threshold = lexical_threshold
        self.semantic_threshold = semantic_threshold
        self.settings = {"temperature": 1.0, "json_schema": reply_schema(scenarios)}
        self.kept: list[Candidate] = []
        self.refusals: list[Refusal] = []
        self.taken: set[str] = set()
        self.proposed = 0
        self.requests = 0

    async def request(self, size: int, planned: int) -> int:
        """Ask for `size` more cases; how many new ones were kept."""
        self.requests += 1
        batch = self.requests
        messages = build_messages(
            self.agent,
            size=size,
            batch=batch,
            batches=max(planned, batch),
            scenarios=self.scenarios,
            personas=list(self.personas.values()),
            focus=self.focus,
            avoid=[c.opening_message for c in self.kept],
        )
        (reply,) = await self.client.generate(messages, 1, self.settings, accept=is_readable)
        try:
            found, bad = parse_reply(reply, batch=batch, scenarios=self.scenarios, taken=self.taken)
        except ValueError as exc:
            self.refusals.append(Refusal(f"batch {batch}", MALFORMED, f"unreadable reply: {exc}"))
            return 0
        self.proposed += len(found) + len(bad)
        self.refusals += bad
        valid = []
        for cand in found:
            refusal = check_calls(cand, self.tools)
            if refusal is None and self.scenarios:
                refusal = check_persona(cand, self.personas)
            if refusal is None:
                valid.append(cand)
            else:
                self.refusals.append(refusal)
        vectors = await self.embedder.vectors(valid, self.kept) if self.embedder else None
        fresh, dupes = remove_near_duplicates(
            valid,
            self.kept,
            lexical_threshold=self.lexical_threshold,
            vectors=vectors,
            semantic_threshold=self.semantic_threshold,
            cosine=_cosine if vectors is not None else None,
        )
        self.kept += fresh
        self.refusals += dupes
        return len(fresh)


def _blocking(
    coroutine_function: Callable[_P, Coroutine[object, object, _T]],
) -> Callable[[Callable[[], object]], Callable[_P, _T]]:
    """Make the decorated function (its name and docstring) run `coroutine_function` to
    completion, with its parameters: declared once, on `coroutine_function` (for mypy
    the `ParamSpec`, for `inspect.signature` and `help()` `__signature__`)."""

    def take(described: Callable[[], object]) -> Callable[_P, _T]:
        def blocking(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            return _run_sync(coroutine_function(*args, **kwargs))

        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(blocking, name, getattr(described, name))
        blocking.__signature__ = inspect.signature(coroutine_function)  # type: ignore[attr-defined]
        return blocking

    return take


def _run_sync(coro: Coroutine[object, object, _T]) -> _T:
    """Run `coro` to completion, also from a notebook cell (a loop already running there:
    the coroutine then runs on its own loop in a worker thread, as `assay.evaluate` does).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


@_blocking(agenerate)
def generate() -> None:
    """Generate cases from the agent's definition (blocking; see `agenerate`).

    `agent` is a description file, an ADK agent (folder, ``MODULE:ATTR`` or the object),
    an `OpenAIToolsAgent`, or an `AgentDefinition`; `model` a model string
    (``openai:NAME``, ``gemini-...``, ``anthropic:NAME``); `embeddings` the base URL of
    an OpenAI-compatible embeddings endpoint for the semantic duplicate check.
    """


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    from assay.metrics.embedding import cosine

    return cosine(a, b)


class _Embedder:
    """Embeddings of opening messages from an OpenAI-compatible endpoint."""

    def __init__(self, base_url: str, model: str | None) -> None:
        from assay.metrics.embedding import EmbeddingOptions, EmbeddingSimilarity

        self.metric = EmbeddingSimilarity(EmbeddingOptions(base_url=base_url, model=model))

    async def vectors(
        self, fresh: Sequence[Candidate], kept: Sequence[Candidate]
    ) -> dict[str, list[float]]:
        from assay.metrics.embedding import EmbeddingError

        texts = [c.opening_message for c in [*kept, *fresh]]
        try:
            return await self.metric.embed(texts)
        except EmbeddingError as exc:
            raise ConfigError(f"--embeddings: {exc}") from None
