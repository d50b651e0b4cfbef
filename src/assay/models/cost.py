"""What a run's model calls cost, and the cap on it: the judges' meter.

A `CallMeter` sits in a `ModelClient`'s call path (`ModelClient(meter=...)`). Before
each call it `admit`s it: the call's price is estimated from its prompt (tokens counted
as `assay.models.pricing` says) and its `max_tokens` (else `DEFAULT_OUTPUT_TOKENS`), and
the call is refused with `BUDGET_REACHED` when it would take the money spent, plus the
estimates of the calls in flight, past `max_usd`, or the calls past `max_calls`. After
the call it `settle`s it with the tokens the backend reported (the estimate where a
backend reports none). So a cap is never passed by more than what one call's reply
costs beyond its estimate.

A call made through a vendor's batch interface (`--judge-batch`, `assay.models.batch`)
is admitted the same way before it is queued (`admit(..., batched=True)`), estimated
and settled at the table's batch price; until its batch returns it is in flight, its
estimate reserved. A batch item that fails is settled as a failed call (the vendors
bill none) and its live retry is admitted anew at the live price, like any live
attempt. A call whose request went into a batch before a crash (`committed=True`:
collected by the resumed run, paid once) was admitted under the cap of the run that
submitted it: it is counted and priced in this run's cost, and takes nothing of this
run's cap (a cap bounds what one invocation decides to spend, as the cached verdicts a
resumed run re-uses take nothing of it either). The input tokens a vendor read from its
prompt cache are priced at the table's cached-input price.

Every call, cache hit and token is counted per (metric, model): the metric is the one
named by `charged_to` in the current context (judged metrics set it while they score).
`CallMeter.summary()` gives the `judge/...` cost keys of a run summary.

A dry run (`--dry-run`) makes its calls through `DryRunBackend`, which answers each one
at once with a reply built from the call's JSON schema, and through a `ReadOnlyCache`,
which reads the run's cache but writes nothing: the meter then counts the calls, cache
hits and tokens the real run would make, and no model is called.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from typing import Any

from assay.models.cache import ReplyCache
from assay.models.pricing import ModelPrice, estimate_tokens, find_price, prompt_tokens
from assay.models.types import BackendReply, GenerationSettings, ModelBackend, ModelCallError

#: the reason a call refused by the cap is not made (the metric reports it)
BUDGET_REACHED = "judge budget reached"
#: output tokens assumed for a call that sets no max_tokens
DEFAULT_OUTPUT_TOKENS = 256
#: `_refusal`'s answer for a call that may fit once the calls in flight are paid for
_WAIT = "wait"
#: what calls are charged to when no metric is named
UNNAMED = "(other)"


class BudgetReached(ModelCallError):
    """A call the cap refused: not made, not an error of the model's, never retried."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


_CHARGED_TO: ContextVar[str | None] = ContextVar("assay_charged_to", default=None)


@contextmanager
def charged_to(label: str) -> Iterator[None]:
    """Charge the model calls made inside (and in tasks started there) to `label`."""
    token = _CHARGED_TO.set(label)
    try:
        yield
    finally:
        _CHARGED_TO.reset(token)


def current_charge() -> str:
    return _CHARGED_TO.get() or UNNAMED


@dataclass
class CostLine:
    """The calls of one metric to one model: counts, tokens, US dollars."""

    calls: int = 0
    #: of `calls`, those made in a vendor's batch (priced at the batch price)
    batched_calls: int = 0
    cache_hits: int = 0
    refused: int = 0
    input_tokens: int = 0
    #: of `input_tokens`, those the vendor read from its prompt cache
    cached_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    estimated_usd: float = 0.0

    def as_dict(self) -> dict[str, int | float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Admission:
    """A call let through: what it was charged to and its estimate (`batched`: at the
    batch price, for a call made in a vendor's batch)."""

    charge: str
    model: str
    input_tokens: int
    output_tokens: int
    usd: float
    batched: bool = False
    #: in a batch submitted before a crash: outside this run's cap
    committed: bool = False


@dataclass(frozen=True)
class CapNames:
    """How a refusal names the caps and the price table, as the user set them."""

    usd: str = "--max-judge-usd"
    calls: str = "--max-judge-calls"
    prices: str = "--prices FILE"


#: the caps as `assay eval` and `assay.evaluate` take them
CLI_CAPS = CapNames()


class CallMeter:
    """Counts and prices a run's model calls, and refuses those past the caps.

    `prices`: the price table; `max_usd` / `max_calls`: the caps (None: none), named in
    a refusal as `names` says. A call to a model the table does not price is refused
    under `max_usd` (its cost is unknown) and counted without a price otherwise
    (`unpriced`).
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice],
        *,
        max_usd: float | None = None,
        max_calls: int | None = None,
        names: CapNames = CLI_CAPS,
    ) -> None:
        self.prices = dict(prices)
        self.max_usd = max_usd
        self.max_calls = max_calls
        self.names = names
        self.lines: dict[tuple[str, str], CostLine] = {}
        #: models called that the price table does not know
        self.unpriced: set[str] = set()
        self.spent_usd = 0.0
        self.admitted = 0
        self._reserved_usd = 0.0
        self._settled: asyncio.Event | None = None
        self._pending = 0  # calls admitted and not yet settled

    def line(self, charge: str, model: str) -> CostLine:
        found = self.lines.get((charge, model))
        if found is None:
            found = self.lines[(charge, model)] = CostLine()
        return found

    def price_of(self, model: str) -> ModelPrice | None:
        price = find_price(model, self.prices)
        if price is None:
            self.unpriced.add(model)
        return price

    async def admit(
        self,
        model: str,
        prompt: Sequence[Mapping[str, object]],
        settings: GenerationSettings,
        *,
        batched: bool = False,
        committed: bool = False,
    ) -> Admission | str:
        """Let one call through (its `Admission`), or say why not (the reason).

        A call that fits the cap only once the calls in flight have cost less than their
        estimates waits for them to settle; it is refused only when it cannot fit.
        `batched`: the call goes in a vendor's batch (estimated at the batch price);
        `committed`: its request is in a batch already (submitted before a crash), paid
        whatever happens now: admitted without a check, outside the cap.
        """
        charge = current_charge()
        input_tokens = prompt_tokens(prompt)
        output_tokens = settings.max_tokens or DEFAULT_OUTPUT_TOKENS
        price = self.price_of(model)
        usd = price.usd(input_tokens, output_tokens, batch=batched) if price is not None else 0.0
        if committed:
            return Admission(charge, model, input_tokens, output_tokens, usd, batched, True)
        while True:
            refusal = self._refusal(model, price, usd)
            if refusal is None:
                break
            if refusal is _WAIT:
                if self._settled is None:
                    self._settled = asyncio.Event()
                await self._settled.wait()
                continue
            self.line(charge, model).refused += 1
            return refusal
        self.admitted += 1
        self._pending += 1
        self._reserved_usd += usd
        return Admission(charge, model, input_tokens, output_tokens, usd, batched)

    def _refusal(self, model: str, price: ModelPrice | None, usd: float) -> str | None:
        if self.max_calls is not None and self.admitted >= self.max_calls:
            return f"{BUDGET_REACHED}: {self.max_calls:,} judge calls ({self.names.calls})"
        if self.max_usd is None:
            return None
        if price is None:
            return (
                f"{BUDGET_REACHED}: {model} has no price in the price table, so no call to it"
                f" fits a {self.names.usd} cap (give its price with {self.names.prices})"
            )
        if self.spent_usd + usd > self.max_usd:
            return f"{BUDGET_REACHED}: ${self.max_usd:g} ({self.names.usd})"
        if self._pending and self.spent_usd + self._reserved_usd + usd > self.max_usd:
            return _WAIT  # it may fit once the calls in flight are paid for
        return None

    def settle(self, admission: Admission, reply: BackendReply | None) -> None:
        """Count a call that was made: with its reply's tokens, or failed (None).

        A backend that reports no tokens is charged the estimate; a failed call is
        counted but charged nothing (the vendors bill no failed request).
        """
        if not admission.committed:
            self._reserved_usd -= admission.usd
            self._pending -= 1
            if self._settled is not None:  # wake the calls waiting to know what is left
                self._settled.set()
                self._settled = None
        line = self.line(admission.charge, admission.model)
        line.calls += 1
        line.batched_calls += int(admission.batched)
        line.estimated_usd += admission.usd
        if reply is None:
            return
        input_tokens = reply.input_tokens or admission.input_tokens
        output_tokens = reply.output_tokens or admission.output_tokens
        cached_tokens = min(reply.cached_tokens, input_tokens)
        price = find_price(admission.model, self.prices)
        usd = (
            price.usd(
                input_tokens, output_tokens, cached_tokens=cached_tokens, batch=admission.batched
            )
            if price is not None
            else 0.0
        )
        line.input_tokens += input_tokens
        line.cached_tokens += cached_tokens
        line.output_tokens += output_tokens
        line.usd += usd
        if not admission.committed:
            self.spent_usd += usd

    def record_cache_hits(self, model: str, count: int = 1) -> None:
        self.line(current_charge(), model).cache_hits += count

    def snapshot(self) -> dict[tuple[str, str], CostLine]:
        """A copy of the lines now (to report one run of a shared pool: `summary(since=)`)."""
        return {key: CostLine(**line.as_dict()) for key, line in self.lines.items()}  # type: ignore[arg-type]

    def _lines_since(
        self, since: Mapping[tuple[str, str], CostLine] | None
    ) -> dict[tuple[str, str], CostLine]:
        if since is None:
            return self.lines
        out: dict[tuple[str, str], CostLine] = {}
        for key, line in self.lines.items():
            before = since.get(key, CostLine()).as_dict()
            delta = CostLine(**{k: v - before[k] for k, v in line.as_dict().items()})  # type: ignore[arg-type]
            if any(delta.as_dict().values()):
                out[key] = delta
        return out

    def totals(self, since: Mapping[tuple[str, str], CostLine] | None = None) -> CostLine:
        total = CostLine()
        for line in self._lines_since(since).values():
            for name, value in line.as_dict().items():
                setattr(total, name, getattr(total, name) + value)
        return total

    def summary(self, since: Mapping[tuple[str, str], CostLine] | None = None) -> dict[str, Any]:
        """The cost keys of a run summary: totals, per model and per metric and model.

        `judge/usd`, `judge/usd_estimated` (what the estimate said of the same calls),
        `judge/refused`, `judge/batched_calls` (calls made in a vendor's batch, priced at
        the batch price), then `judge/cost/{metric}/{model}/{counter}`; `since`: a
        `snapshot` taken when the run started, so a shared pool reports each run's own.
        """
        lines = self._lines_since(since)
        total = self.totals(since)
        out: dict[str, Any] = {
            "judge/usd": round(total.usd, 8),
            "judge/usd_estimated": round(total.estimated_usd, 8),
            "judge/refused": total.refused,
            "judge/batched_calls": total.batched_calls,
        }
        if self.max_usd is not None:
            out["judge/max_usd"] = self.max_usd
        if self.max_calls is not None:
            out["judge/max_calls"] = self.max_calls
        if self.unpriced:
            out["judge/unpriced_models"] = sorted(self.unpriced)
        for (charge, model), line in sorted(lines.items()):
            for name, value in line.as_dict().items():
                shown = round(value, 8) if isinstance(value, float) else value
                out[f"judge/cost/{charge}/{model}/{name}"] = shown
        return out


# -- dry runs -------------------------------------------------------------------------


def reply_for_schema(schema: Mapping[str, object] | None) -> str:
    """A reply that fits `schema` (its first choice of every enum), as JSON text."""
    if schema is None:
        return json.dumps({"verdict": "yes", "reasoning": "dry run"})
    return json.dumps(_value_for(schema))


def _value_for(schema: Mapping[str, object]) -> object:
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    properties = schema.get("properties")
    if kind == "object" or isinstance(properties, Mapping):
        props = properties if isinstance(properties, Mapping) else {}
        return {str(k): _value_for(v) if isinstance(v, Mapping) else None for k, v in props.items()}
    if kind == "array":
        items = schema.get("items")
        return [_value_for(items)] if isinstance(items, Mapping) else []
    if kind in ("number", "integer"):
        low = schema.get("minimum")
        return low if isinstance(low, int | float) else 1
    if kind == "boolean":
        return True
    return "dry run"


class DryRunBackend:
    """A backend's name, model and endpoint, answering every call at once, for free.

    The reply fits the call's JSON schema (`reply_for_schema`); its tokens are the
    estimate's, so the meter prices a dry run as it would have priced the calls.
    """

    def __init__(
        self,
        inner: ModelBackend | None,
        *,
        backend: str | None = None,
        model: str | None = None,
        endpoint: str = "",
    ) -> None:
        """Over the real backend `inner`, or (None: its client could not be built, e.g.
        no API key) over what its model string names."""
        self.inner = inner
        self.backend = inner.backend if inner is not None else str(backend)
        self.model = inner.model if inner is not None else str(model)
        self.endpoint = str(getattr(inner, "endpoint", "") or "") if inner else endpoint

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        text = reply_for_schema(settings.json_schema)
        return BackendReply(text, 0, 0)

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()


class DryRunBatches(DryRunBackend):
    """A `DryRunBackend` of a judge that would send its calls in batches (`--judge-batch`):
    each batch is answered at once, for free, so the meter prices its calls as batched."""

    def __init__(self, inner: ModelBackend | None, **named: Any) -> None:
        super().__init__(inner, **named)
        self._batches: dict[str, dict[str, BackendReply | ModelCallError]] = {}

    def batch_request(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> dict[str, Any]:
        return {"json_schema": settings.json_schema}

    async def submit_batch(self, requests: Mapping[str, dict[str, Any]]) -> str:
        batch_id = f"dry-run-{len(self._batches) + 1}"
        self._batches[batch_id] = {
            key: BackendReply(reply_for_schema(body.get("json_schema")), 0, 0)
            for key, body in requests.items()
        }
        return batch_id

    async def collect_batch(self, batch_id: str) -> dict[str, BackendReply | ModelCallError] | None:
        return self._batches.pop(batch_id, {})


class ReadOnlyCache:
    """A cache read through to another one, that keeps what it is given for this run only."""

    def __init__(self, inner: ReplyCache) -> None:
        self.inner = inner
        self._mine: dict[str, str] = {}

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        found = self.inner.get_many(keys)
        found.update({k: self._mine[k] for k in keys if k in self._mine})
        return found

    def put(self, key: str, *, backend: str, model: str, reply: str) -> None:
        self._mine[key] = reply

    async def flush(self) -> None:
        return None

    @property
    def write_errors(self) -> list[str]:
        return []


__all__ = [
    "BUDGET_REACHED",
    "BudgetReached",
    "CallMeter",
    "CostLine",
    "DryRunBackend",
    "DryRunBatches",
    "ReadOnlyCache",
    "charged_to",
    "estimate_tokens",
    "reply_for_schema",
]
