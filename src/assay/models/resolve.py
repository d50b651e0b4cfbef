"""From a model string to a model backend.

The model string picks the backend (SPEC §5):

- `openai:NAME`: any OpenAI-compatible chat endpoint through the `openai` SDK (base URL
  and key from `OPENAI_BASE_URL` / `OPENAI_API_KEY`, or `base_url` in the options);
- `gemini-*` (ADK's default judge `gemini-2.5-flash`) or `gemini:NAME`: Gemini through
  `google-genai` (`GEMINI_API_KEY` / `GOOGLE_API_KEY`, or the Vertex AI variables);
- `anthropic:NAME`: Claude through `anthropic` (`ANTHROPIC_API_KEY`);
- `local:PATH.gguf`: a GGUF model run in-process through `xllamacpp`.

Backend modules are imported only when their backend is built, so assay imports
without any SDK; a missing SDK is a ConfigError naming the `pip install` to run.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.redact import remember_url

if TYPE_CHECKING:
    from assay.models.types import ModelBackend

MODEL_FORMS = (
    "openai:NAME (any OpenAI-compatible endpoint)",
    "gemini-NAME or gemini:NAME",
    "anthropic:NAME",
    "local:PATH.gguf",
)


@dataclass(frozen=True)
class _BackendInfo:
    module: str  # the backend module under assay.models.backends
    sdk: str  # the module its SDK provides, to tell a missing SDK apart
    extra: str  # the assay extra that installs the SDK
    package: str  # the SDK's name on PyPI


BACKENDS: dict[str, _BackendInfo] = {
    "openai": _BackendInfo("openai_compat", "openai", "openai", "openai"),
    "gemini": _BackendInfo("gemini", "google.genai", "gemini", "google-genai"),
    "anthropic": _BackendInfo("anthropic", "anthropic", "anthropic", "anthropic"),
    "local": _BackendInfo("local_gguf", "xllamacpp", "local", "xllamacpp"),
}


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model string: which backend, and the model name (or file) it gets."""

    backend: str
    name: str
    raw: str


def _forms() -> str:
    return "; ".join(MODEL_FORMS)


def parse_model(model: str) -> ModelSpec:
    """Parse a judge model string; ConfigError listing the valid forms if it is none."""
    raw = model
    model = model.strip()
    prefix, sep, rest = model.partition(":")
    if sep and prefix in BACKENDS:
        name = rest.strip()
        if not name:
            raise ConfigError(f"judge model {raw!r} names no model after '{prefix}:'")
        if prefix == "local" and not name.lower().endswith(".gguf"):
            raise ConfigError(
                f"judge model {raw!r}: a local judge is a GGUF model file, local:PATH.gguf"
            )
        return ModelSpec(prefix, name, raw)
    if model.startswith("gemini-"):
        return ModelSpec("gemini", model, raw)
    raise ConfigError(f"unknown judge model {raw!r}; valid forms are: {_forms()}")


def _sdk_installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package ("google") is missing
        return False


def missing_sdk_message(backend: str) -> str:
    info = BACKENDS[backend]
    return (
        f"the {backend} judge backend needs the {info.package!r} package, which is not"
        f" installed: pip install -e '.[{info.extra}]'"
    )


def check_sdk(backend: str, *, label: str | None = None) -> None:
    """ConfigError naming the extra to install when `backend`'s SDK is not installed."""
    if not _sdk_installed(BACKENDS[backend].sdk):
        message = missing_sdk_message(backend)
        raise ConfigError(f"{label}: {message}" if label else message)


def make_backend(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    config: Mapping[str, object] | None = None,
    timeout_s: float,
) -> ModelBackend:
    """Build the backend `model` names (not yet connected: no call is made here).

    `base_url` and `api_key` override the SDK's environment variables; `config` holds a
    backend's load options (the local backend's `n_ctx`, `n_threads`). Raises
    ConfigError for an unknown model string, a missing SDK (naming the extra to
    install) or missing credentials.
    """
    spec = parse_model(model)
    info = BACKENDS[spec.backend]
    if not _sdk_installed(info.sdk):
        raise ConfigError(missing_sdk_message(spec.backend))
    module_name = f"assay.models.backends.{info.module}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if exc.name == module_name:
            raise ConfigError(
                f"this installation of assay has no {spec.backend} judge backend ({exc})"
            ) from exc
        # The SDK is there but something it needs is not (or is too old).
        raise ConfigError(f"{missing_sdk_message(spec.backend)} ({exc})") from exc
    factory: Any = module.create_backend
    if base_url is not None:
        remember_url(base_url)  # a key in the URL is masked in what the endpoint answers
    backend: ModelBackend = factory(
        spec.name, base_url=base_url, api_key=api_key, config=config, timeout_s=timeout_s
    )
    return backend
