"""Local judge backend: a GGUF model run in-process by llama.cpp through `xllamacpp`.

Model string `local:PATH.gguf`. The model is loaded lazily by the first call (or by
`load()`), once per backend, on the backend's own worker thread: llama.cpp blocks, and
one loaded model serves one generation at a time, so every call is queued on that one
thread. A queued call whose caller gave up (timeout, cancellation) never starts, and a
running one is stopped at its next token, so an abandoned call does not hold the model.

A JSON schema in the settings becomes a grammar constraint on sampling (llama.cpp's
`json_schema` request field), so a reply is always a JSON object of that schema unless
`max_tokens` cuts it short.

xllamacpp runs llama.cpp's server engine in-process; that engine also listens on a
random 127.0.0.1 port while the model is loaded. assay never talks to it.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from assay.errors import ConfigError
from assay.models.types import BackendReply, GenerationSettings, ModelCallError

_T = TypeVar("_T")

INSTALL_HINT = "pip install -e '.[local]'"
GGUF_MAGIC = b"GGUF"
#: context window in tokens; judge prompts are short and KV memory grows with it
DEFAULT_N_CTX = 4096
#: CPU threads for prompt processing and generation
DEFAULT_N_THREADS = 2
#: cap when the settings give none: a base model may otherwise run to the context end
DEFAULT_MAX_TOKENS = 1024


#: keys of `judge_model_config` this backend reads; the rest are generation settings
LOAD_OPTIONS = ("n_ctx", "n_threads")


def create_backend(
    name: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    config: Mapping[str, object] | None = None,
    timeout_s: float,
) -> LocalGGUFBackend:
    """The backend for `local:NAME` (`NAME` is the model file's path).

    `n_ctx` and `n_threads` may be given in `config` (a judge's `judge_model_config`).
    `timeout_s` is applied by the caller (`ModelClient`), whose cancellation stops a
    running generation, so the backend itself needs no timer. A file has no URL or key:
    `base_url` and `api_key` are refused.
    """
    if base_url is not None or api_key is not None:
        raise ConfigError(f"local model {name}: a GGUF file takes no base_url or API key")
    config = config or {}
    load: dict[str, int] = {}
    for key in LOAD_OPTIONS:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"judge_model_config.{key} of the local judge must be a positive integer,"
                f" got {value!r}"
            )
        load[key] = value
    return LocalGGUFBackend(name, **load)


def _import_xllamacpp() -> ModuleType:
    if "xllamacpp" not in sys.modules:
        # llama.cpp's CPU threads are OpenMP threads, which by default spin while idle;
        # on a busy machine (a test run, other judges) the spinning threads starve each
        # other and generation slows tenfold. OpenMP reads this once, when xllamacpp
        # loads it; a value the user set is kept.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise ConfigError(
            f"the local GGUF judge needs the 'xllamacpp' package ({exc});"
            f" install it with: {INSTALL_HINT}"
        ) from exc


def _check_gguf_file(path: Path) -> None:
    """Fail early, naming the file, instead of with llama.cpp's generic load error."""
    if not path.exists():
        raise ConfigError(f"local judge model file {path} does not exist")
    if not path.is_file():
        raise ConfigError(f"local judge model {path} is not a file (expected a .gguf file)")
    try:
        with path.open("rb") as fh:
            magic = fh.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise ConfigError(f"local judge model file {path} cannot be read: {exc}") from exc
    if magic != GGUF_MAGIC:
        raise ConfigError(
            f"local judge model file {path} is not a GGUF model"
            f" (it does not start with the GGUF magic bytes; got {magic!r})"
        )


class LocalGGUFBackend:
    """A `ModelBackend` running a GGUF model in this process on the CPU.

    `path` is the model file; `n_ctx` the context window in tokens (prompt plus reply)
    and `n_threads` the CPU threads llama.cpp uses. Raises ConfigError at once when
    xllamacpp is not installed or the file is missing or not GGUF; a file llama.cpp
    cannot load fails the calls with a non-retryable ModelCallError.
    """

    backend = "local"

    def __init__(
        self,
        path: str | Path,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int = DEFAULT_N_THREADS,
    ) -> None:
        if n_ctx < 1 or n_threads < 1:
            raise ConfigError(
                f"local judge n_ctx and n_threads must be positive, got {n_ctx} and {n_threads}"
            )
        self._xlc = _import_xllamacpp()
        self.path = Path(path).expanduser().resolve()
        _check_gguf_file(self.path)
        # The resolved path names the model in cache keys: the same file reached
        # through different relative paths shares its cached replies.
        self.model = str(self.path)
        # A file replaced in place (a new quantisation, a re-download) is another judge.
        stat = self.path.stat()
        self.endpoint = f"file:{self.path}?size={stat.st_size}&mtime_ns={stat.st_mtime_ns}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self._lock = threading.Lock()  # guards _server and _load_error
        self._server: Any = None
        self._load_error: str | None = None
        self._closed = False
        self._running: set[threading.Event] = set()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-gguf")

    # -- public API ----------------------------------------------------------------------

    async def load(self) -> None:
        """Load the model now rather than in the first call; raises ModelCallError."""
        await self._run(lambda stop: self._ensure_loaded())

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        """One reply to `messages`, constrained to `settings.json_schema` when given."""
        request: dict[str, Any] = {
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": settings.max_tokens or DEFAULT_MAX_TOKENS,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if settings.temperature is not None:
            request["temperature"] = settings.temperature
        if settings.json_schema is not None:
            request["json_schema"] = settings.json_schema
        return await self._run(lambda stop: self._generate(request, stop))

    async def aclose(self) -> None:
        """Stop running calls, unload the model and end the worker thread."""
        if self._closed:
            return
        self._closed = True
        for stop in list(self._running):
            stop.set()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._unload)
        self._executor.shutdown(wait=False)

    # -- worker-thread side --------------------------------------------------------------

    async def _run(self, work: Callable[[threading.Event], _T]) -> _T:
        if self._closed:
            raise ModelCallError(f"local judge {self.model} is closed", retryable=False)
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        self._running.add(stop)
        try:
            return await loop.run_in_executor(self._executor, work, stop)
        except asyncio.CancelledError:
            # The caller gave up: a queued call is dropped by the executor, a running
            # one sees `stop` at its next token.
            stop.set()
            raise
        finally:
            self._running.discard(stop)

    def _ensure_loaded(self) -> Any:
        with self._lock:
            if self._server is not None:
                return self._server
            if self._load_error is not None:
                # Loading is deterministic: retrying a failed load only wastes time.
                raise ModelCallError(self._load_error, retryable=False)
            if self._closed:
                raise ModelCallError(f"local judge {self.model} is closed", retryable=False)
            params = self._xlc.CommonParams()
            params.model.path = self.model
            params.n_ctx = self.n_ctx
            params.n_parallel = 1
            params.n_gpu_layers = 0
            params.cpuparams.n_threads = self.n_threads
            params.cpuparams_batch.n_threads = self.n_threads
            params.n_threads_http = 1
            params.warmup = False
            # Sizing to device memory loads the model twice; n_ctx is ours and CPU-only.
            params.fit_params = False
            params.verbosity = -1  # llama.cpp logs every request to stderr otherwise
            params.endpoint_metrics = True
            try:
                server = self._xlc.Server(params)
            except (RuntimeError, ValueError) as exc:
                self._load_error = f"llama.cpp could not load the GGUF model {self.model}: {exc}"
                raise ModelCallError(self._load_error, retryable=False) from exc
            # Server() returns before llama.cpp's task loop has started, and a Server
            # dropped in that window never stops (its destructor joins a loop that missed
            # the stop signal). A metrics request is answered by that loop, so once it
            # returns the server can be dropped at any time.
            server.handle_metrics()
            self._server = server
            return server

    def _generate(self, request: dict[str, object], stop: threading.Event) -> BackendReply:
        if stop.is_set():
            raise ModelCallError(
                "local judge call dropped before it started: its caller gave up or the"
                " backend was closed",
                retryable=False,
            )
        server = self._ensure_loaded()
        parts: list[str] = []
        usage: dict[str, Any] = {}
        errors: list[Mapping[str, Any]] = []

        def on_chunk(chunk: object) -> bool:
            # Called by llama.cpp for every token; exceptions raised here are swallowed
            # by xllamacpp, so this only collects. Returning True stops generation.
            if isinstance(chunk, Mapping):
                if isinstance(chunk.get("error"), Mapping):
                    errors.append(chunk["error"])
                for choice in chunk.get("choices") or ():
                    text = (choice.get("delta") or {}).get("content")
                    if isinstance(text, str):
                        parts.append(text)
                if isinstance(chunk.get("usage"), Mapping):
                    usage.update(chunk["usage"])
            return stop.is_set()

        with self._lock:
            try:
                server.handle_chat_completions(request, on_chunk)
            except ValueError as exc:
                # llama.cpp rejects a JSON schema it cannot turn into a grammar this way.
                raise ModelCallError(
                    f"local judge {self.model} rejected the request: {exc}", retryable=False
                ) from exc
        if errors:
            raise self._request_error(errors[0])
        if stop.is_set():
            raise ModelCallError("local judge call stopped: its caller gave up", retryable=False)
        return BackendReply(
            text="".join(parts),
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        )

    def _request_error(self, error: Mapping[str, object]) -> ModelCallError:
        status = error.get("code")
        message = str(error.get("message") or error)
        if error.get("type") == "exceed_context_size_error":
            message = (
                f"the prompt ({error.get('n_prompt_tokens')} tokens) does not fit the local"
                f" judge's context of {self.n_ctx} tokens; raise it with"
                ' judge_model_config {"n_ctx": N}'
            )
        return ModelCallError(
            f"local judge {self.model}: {message}",
            retryable=False,
            status=status if isinstance(status, int) else None,
        )

    def _unload(self) -> None:
        with self._lock:
            # Dropping the last reference stops llama.cpp's loop and frees the model.
            self._server = None
