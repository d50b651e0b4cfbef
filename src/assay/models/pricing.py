"""The price table and token counts: what a model call costs, in US dollars.

The table (`assay/models/data/prices.json`) lists US-dollar prices per million input and
output tokens; `--prices FILE` (same shape) is laid over it. A model's entry may also give
its batch prices (`batch_input_per_million`, `batch_output_per_million`: what a call
through the vendor's batch interface costs, `--judge-batch`; when absent, half the live
price, the published rule of OpenAI, Anthropic and Gemini) and its cached-input price
(`cached_input_per_million`: what the input tokens the vendor read from its prompt cache
cost; when absent, the input price). It prices an agent's usage
(the `max_cost` metric) and the judges' own calls (`assay.models.cost`). Model names are
matched after dropping a provider prefix (`openai:`, `models/`) and, failing an exact
match, by the longest known name that a dated variant starts with (`gpt-4o-2024-08-06`
is priced as `gpt-4o`).

Tokens of a prompt not yet sent are counted with OpenAI's tokenizer (`tiktoken`) when
it is installed and its encoding is already on disk (assay never downloads it);
otherwise they are estimated as one token per four characters of text plus four per
message (`estimate_tokens`), the rule of thumb OpenAI documents for English text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: characters per token of the estimate used when no tokenizer is available
CHARS_PER_TOKEN = 4
#: tokens each chat message adds for its role and separators
TOKENS_PER_MESSAGE = 4
#: what a batched call costs against a live one when the table gives no batch price
#: (OpenAI's Batch API, Anthropic's Message Batches and Gemini's batch mode: 50% off)
BATCH_DISCOUNT = 0.5


class ModelPrice(BaseModel):
    """US dollars per million tokens: live, batched (optional) and cached input (optional)."""

    model_config = ConfigDict(extra="forbid")

    input_per_million: float = Field(ge=0, allow_inf_nan=False)
    output_per_million: float = Field(ge=0, allow_inf_nan=False)
    #: a call through the batch interface; None: `BATCH_DISCOUNT` of the live price
    batch_input_per_million: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    batch_output_per_million: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    #: input tokens read from the vendor's prompt cache; None: the input price
    cached_input_per_million: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    def rates(self, *, batch: bool = False) -> tuple[float, float, float]:
        """US dollars per million input, output and cached input tokens of one call.

        A batched call's cached input tokens cost the lower of the cached price and the
        batch input price (Anthropic's discounts stack; OpenAI's may not: never less)."""
        cached = self.cached_input_per_million
        if not batch:
            inp = self.input_per_million
            return inp, self.output_per_million, inp if cached is None else cached
        given_in, given_out = self.batch_input_per_million, self.batch_output_per_million
        inp = self.input_per_million * BATCH_DISCOUNT if given_in is None else given_in
        out = self.output_per_million * BATCH_DISCOUNT if given_out is None else given_out
        return inp, out, inp if cached is None else min(cached, inp)

    def usd(
        self, input_tokens: int, output_tokens: int, *, cached_tokens: int = 0, batch: bool = False
    ) -> float:
        """The price of one call that used these tokens (`cached_tokens`: the part of
        `input_tokens` read from the prompt cache); `batch`: made in a batch."""
        inp, out, cached = self.rates(batch=batch)
        cached_tokens = max(0, min(cached_tokens, input_tokens))
        return (
            (input_tokens - cached_tokens) * inp + cached_tokens * cached + output_tokens * out
        ) / 1_000_000


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    about: str | None = None
    models: dict[str, ModelPrice]


@cache
def shipped_prices() -> dict[str, ModelPrice]:
    """The price table shipped with assay."""
    text = resources.files("assay.models").joinpath("data/prices.json").read_text("utf-8")
    return PriceTable.model_validate_json(text).models


def read_price_file(path: str) -> dict[str, ModelPrice]:
    """A user's price table; ValueError naming the file and what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read prices file {path}: {exc.strerror}") from None
    try:
        return PriceTable.model_validate(json.loads(text)).models
    except json.JSONDecodeError as exc:
        raise ValueError(f"prices file {path} is not JSON: {exc.msg} (line {exc.lineno})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(
            f"prices file {path}: {where}: {first['msg']} (expected "
            '{"models": {"MODEL": {"input_per_million": N, "output_per_million": N}}},'
            " optionally batch_input_per_million, batch_output_per_million,"
            " cached_input_per_million)"
        ) from None


def price_table(path: str | None = None) -> dict[str, ModelPrice]:
    """The shipped table, with the file at `path` (if any) laid over it."""
    table = dict(shipped_prices())
    if path is not None:
        table.update(read_price_file(path))
    return table


def find_price(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The price of `model` (see the module docstring for how names are matched)."""
    name = model.split(":", 1)[-1].removeprefix("models/").strip()
    for candidate in (model, name, name.lower()):
        if candidate in table:
            return table[candidate]
    prefixes = [k for k in table if name.lower().startswith(k.lower() + "-")]
    return table[max(prefixes, key=len)] if prefixes else None


# -- token counts ---------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """The documented estimate: one token per four characters, at least one."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN)) if text else 0


#: where tiktoken fetches its `o200k_base` encoding from (and names its cached copy by)
_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def _tiktoken_cached() -> bool:
    """tiktoken's copy of the encoding is on disk (else it would download it)."""
    import hashlib
    import os
    import tempfile

    folder = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    return os.path.isfile(os.path.join(folder, hashlib.sha1(_O200K_URL.encode()).hexdigest()))


@cache
def _tiktoken_encoder() -> Callable[[str], int] | None:
    """tiktoken's `o200k_base` counter when tiktoken and its encoding are on disk; never
    a download (a run must not wait on the network to count tokens)."""
    try:
        import tiktoken
    except ImportError:
        return None
    if not _tiktoken_cached():
        return None
    try:
        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # a damaged cached copy: estimate instead
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def token_counter() -> tuple[str, Callable[[str], int]]:
    """The name of the way tokens are counted here, and the counter."""
    encoder = _tiktoken_encoder()
    if encoder is not None:
        return "tiktoken o200k_base", encoder
    return f"estimate ({CHARS_PER_TOKEN} characters per token)", estimate_tokens


def prompt_tokens(messages: Sequence[Mapping[str, object]]) -> int:
    """Input tokens of a chat prompt: its texts plus each message's overhead."""
    _, count = token_counter()
    total = 0
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        total += count(text) + TOKENS_PER_MESSAGE
    return total
