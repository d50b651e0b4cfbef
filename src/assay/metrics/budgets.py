"""Budgets: `max_latency`, `max_tokens`, `max_cost` — pass/fail limits on what a run used.

Each scores 1 when within the budget and 0 when over it, per invocation (the case score
is then the share of invocations within budget) or, with `per: "case"`, once for the
whole case against the sum over its invocations. A value that was not recorded gives
no score (`NOT_EVALUATED` with the reason), never a pass. Default threshold 1.0.

`max_cost` prices the recorded token usage with a table of US-dollar prices per million
input and output tokens: the one shipped in `assay/models/data/prices.json`, overlaid
by a `prices_file` (same shape) and then by inline `prices`. The model is the
criterion's `model` option, else the case's `metadata["model"]`. A model the table does
not know is not evaluated with a message saying how to add it — never a cost of 0.
Model names are matched after dropping a provider prefix (`openai:`, `models/`) and,
failing an exact match, by the longest known name that a dated variant starts with
(`gpt-4o-2024-08-06` is priced as `gpt-4o`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Score
from assay.errors import ConfigError
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.registry import register
from assay.models.pricing import ModelPrice, find_price, read_price_file, shipped_prices

Per = Literal["invocation", "case"]


class _BudgetOptions(MetricOptions):
    per: Per = "invocation"


class _Budget(Metric, ABC):
    """Sum-able usage against a limit; subclasses say how to read and price a turn."""

    family: ClassVar[str] = "budgets"
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    default_threshold: ClassVar[float | None] = 1.0
    unit: ClassVar[str] = ""

    @abstractmethod
    def limit(self) -> float: ...

    @abstractmethod
    def used(self, turn: Turn, case: EvalCase) -> tuple[float | None, str | None]:
        """(what the turn used, None) or (None, why it is unknown)."""
        ...

    def show(self, value: float) -> str:
        return f"{value:g}{self.unit}"

    def _verdict(self, value: float, what: str) -> Score:
        limit = self.limit()
        within = value <= limit
        word = "within" if within else "over"
        return Score(
            1.0 if within else 0.0,
            f"{what} {self.show(value)}, {word} the budget of {self.show(limit)}",
            details={"used": value},
        )

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        value, why = self.used(actual, case)
        if value is None:
            return Score(None, why)
        return self._verdict(value, "used")

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        if getattr(self.options, "per", "invocation") == "invocation":
            return super().score_case(case, actual, expected)
        values: list[float] = []
        for i, turn in enumerate(actual):
            value, why = self.used(turn, case)
            if value is None:
                reason = f"turn {i + 1}: {why}"
                return self.make_result(None, [Score(None, reason)], explanation=reason)
            values.append(value)
        verdict = self._verdict(math.fsum(values), f"the case's {len(values)} turn(s) used")
        return self.make_result(verdict.value, [verdict], explanation=verdict.explanation)


class LatencyOptions(_BudgetOptions):
    seconds: float = Field(gt=0)


@register
class MaxLatency(_Budget):
    """1 if the invocation (or, with `per: case`, the whole case) took at most `seconds`."""

    name: ClassVar[str] = "max_latency"
    description: ClassVar[str] = "1 if the invocation took at most `seconds` (or the case)"
    needs: ClassVar[frozenset[str]] = frozenset({"latency"})
    options_model: ClassVar[type[MetricOptions]] = LatencyOptions
    unit: ClassVar[str] = " s"

    def limit(self) -> float:
        assert isinstance(self.options, LatencyOptions)
        return self.options.seconds

    def used(self, turn: Turn, case: EvalCase) -> tuple[float | None, str | None]:
        if turn.latency_s is None:
            return None, "no latency recorded for this invocation"
        return turn.latency_s, None

    def show(self, value: float) -> str:
        return f"{value:.3g} s"


class TokenOptions(_BudgetOptions):
    tokens: int = Field(gt=0)
    count: Literal["total", "input", "output"] = "total"


@register
class MaxTokens(_Budget):
    """1 if the invocation's (or case's) input + output tokens are at most `tokens`."""

    name: ClassVar[str] = "max_tokens"
    description: ClassVar[str] = "1 if the tokens used (`count`: total/input/output) ≤ `tokens`"
    needs: ClassVar[frozenset[str]] = frozenset({"usage"})
    options_model: ClassVar[type[MetricOptions]] = TokenOptions
    unit: ClassVar[str] = " tokens"

    def limit(self) -> float:
        assert isinstance(self.options, TokenOptions)
        return float(self.options.tokens)

    def used(self, turn: Turn, case: EvalCase) -> tuple[float | None, str | None]:
        assert isinstance(self.options, TokenOptions)
        if turn.usage is None:
            return None, "no token usage recorded for this invocation"
        usage = turn.usage
        count = self.options.count
        value = {
            "total": usage.input_tokens + usage.output_tokens,
            "input": usage.input_tokens,
            "output": usage.output_tokens,
        }[count]
        return float(value), None


# -- prices -------------------------------------------------------------------------------


class CostOptions(_BudgetOptions):
    usd: float = Field(gt=0)
    model: str | None = None
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    prices_file: str | None = None

    @field_validator("prices_file")
    @classmethod
    def _readable(cls, path: str | None) -> str | None:
        if path is not None:
            read_price_file(path)
        return path


@register
class MaxCost(_Budget):
    """1 if the invocation's (or case's) token usage costs at most `usd` US dollars."""

    name: ClassVar[str] = "max_cost"
    description: ClassVar[str] = "1 if the tokens used cost at most `usd` dollars (price table)"
    needs: ClassVar[frozenset[str]] = frozenset({"usage", "model"})
    options_model: ClassVar[type[MetricOptions]] = CostOptions

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        self.table = self._table({})

    def _table(self, run_prices: Mapping[str, ModelPrice]) -> dict[str, ModelPrice]:
        # Later layers win: shipped < the run's --prices < the criterion's file < inline.
        opts = self.options
        assert isinstance(opts, CostOptions)
        table = {**shipped_prices(), **run_prices}
        if opts.prices_file:
            table.update(read_price_file(opts.prices_file))
        table.update(opts.prices)
        return table

    def use_run_prices(self, prices: Mapping[str, ModelPrice]) -> None:
        """Overlay a run-wide price table (`assay eval --prices FILE`) on the shipped one."""
        self.table = self._table(prices)

    def limit(self) -> float:
        assert isinstance(self.options, CostOptions)
        return self.options.usd

    def show(self, value: float) -> str:
        return f"${value:.6f}".rstrip("0").rstrip(".")

    def used(self, turn: Turn, case: EvalCase) -> tuple[float | None, str | None]:
        assert isinstance(self.options, CostOptions)
        if turn.usage is None:
            return None, "no token usage recorded for this invocation"
        model = self.options.model or case.metadata.get("model")
        if not isinstance(model, str) or not model:
            return None, 'no model to price: give max_cost a "model" option'
        price = find_price(model, self.table)
        if price is None:
            return None, (
                f"no price known for model {model!r}: add it with max_cost's "
                '"prices" option or a "prices_file"'
            )
        usage = turn.usage
        cost = (
            usage.input_tokens * price.input_per_million
            + usage.output_tokens * price.output_per_million
        ) / 1_000_000
        return cost, None


def apply_run_prices(metrics: Sequence[Metric], path: str) -> None:
    """Give every `max_cost` metric of a run the price table in `path`.

    Raises ConfigError naming `--prices` when the file cannot be used.
    """
    try:
        prices = read_price_file(path)
    except ValueError as exc:
        raise ConfigError(f"--prices: {exc}") from None
    for metric in metrics:
        if isinstance(metric, MaxCost):
            metric.use_run_prices(prices)


def price_table_models() -> list[str]:
    """The model names of the shipped table (for docs and `assay metrics`)."""
    return sorted(shipped_prices())


__all__: list[Any] = [
    "MaxCost", "MaxLatency", "MaxTokens", "ModelPrice", "apply_run_prices", "find_price",
    "price_table_models", "read_price_file", "shipped_prices",
]  # fmt: skip
