"""What the `assay judge` commands (calibrate, align, stability, probe) read alike: the
judge's options, `--criterion` as the metric's options, and the judge's call limits.

`JudgeCalls` gathers the options calibrate, stability and probe share (declared once:
a command takes it as one parameter of `cli.common.grouped_options`); `figure` is how
their reports show a statistic."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.store import Store

JudgeOption = Annotated[
    str,
    typer.Option(
        "--judge",
        help="The judge: openai:NAME, gemini-NAME / gemini:NAME, anthropic:NAME or"
        " local:PATH.gguf.",
    ),
]
MetricOption = Annotated[
    str, typer.Option("--metric", "-m", help="The judged metric, e.g. final_response_match_v2.")
]
SamplesOption = Annotated[
    int | None, typer.Option("--samples", help="Judge samples per item (metric default).")
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option("--base-url", help="Endpoint of the judge API (OpenAI-compatible servers)."),
]
CriterionOption = Annotated[
    str | None,
    typer.Option("--criterion", help="The metric's options as a JSON object (e.g. rubrics)."),
]
CacheStoreOption = Annotated[
    str | None,
    typer.Option("--store", help="Store URL holding the judge cache (default .assay/assay.db)."),
]
NoStoreOption = Annotated[
    bool, typer.Option("--no-store", help="Keep judge replies in memory only.")
]
NoCacheOption = Annotated[
    bool,
    typer.Option("--no-cache", help="Call the judge even for cached replies (still cached)."),
]
ConcurrencyOption = Annotated[
    int, typer.Option("--judge-concurrency", help="Judge calls in flight.")
]
TimeoutOption = Annotated[
    float, typer.Option("--judge-timeout", help="Seconds to wait for one judge reply.")
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print the report as JSON instead of tables.")
]


def figure(value: float | None, fmt: str = ".3f") -> str:
    """A statistic as the judge commands' tables show it ("n/a" when undefined)."""
    return "n/a" if value is None else format(value, fmt)


def parse_criterion(text: str | None) -> dict[str, Any] | None:
    """`--criterion` as the metric's options (a JSON object); ConfigError otherwise."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--criterion is not valid JSON: {exc.msg} at column {exc.colno}"
        ) from None
    except RecursionError:
        raise ConfigError("--criterion is nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ConfigError("--criterion must be a JSON object of the metric's options")
    return value


def check_call_limits(concurrency: int, timeout_s: float) -> None:
    """`--judge-concurrency` at least 1 and `--judge-timeout` positive."""
    if concurrency < 1:
        raise ConfigError(f"--judge-concurrency must be at least 1, got {concurrency}")
    if timeout_s <= 0:
        raise ConfigError(f"--judge-timeout must be positive, got {timeout_s}")


@dataclass(frozen=True)
class JudgeCalls:
    """How a judge command calls its judge: the endpoint, the metric's options, where
    the judge's replies are cached, and the calls' limits."""

    base_url: BaseUrlOption = None
    criterion: CriterionOption = None
    store: CacheStoreOption = None
    no_store: NoStoreOption = False
    no_cache: NoCacheOption = False
    judge_concurrency: ConcurrencyOption = 8
    judge_timeout: TimeoutOption = 60.0

    @property
    def use_cache(self) -> bool:
        return not self.no_cache

    def metric_options(self) -> dict[str, Any] | None:
        """`--criterion` read (see `parse_criterion`)."""
        return parse_criterion(self.criterion)

    def check_limits(self) -> None:
        """`--judge-concurrency` and `--judge-timeout` checked (see `check_call_limits`)."""
        check_call_limits(self.judge_concurrency, self.judge_timeout)

    @contextmanager
    def cache_store(self) -> Iterator[Store | None]:
        """The store of the judge cache (`--store`), closed after; None with `--no-store`."""
        if self.no_store:
            yield None
            return
        from assay.store import Store

        with Store.open(self.store) as db:
            yield db
