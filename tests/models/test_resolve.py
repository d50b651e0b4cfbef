"""Model strings → backends: the forms, missing SDKs and the lazy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.models import resolve
from assay.models.resolve import BACKENDS, make_backend, parse_model


@pytest.mark.parametrize(
    ("model", "backend", "name"),
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("openai:qwen2.5:7b", "openai", "qwen2.5:7b"),  # Ollama tags keep their colon
        ("gemini-2.5-flash", "gemini", "gemini-2.5-flash"),  # ADK's default judge
        ("gemini:gemini-2.0-flash", "gemini", "gemini-2.0-flash"),
        ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("local:/models/judge.Q4_K_M.gguf", "local", "/models/judge.Q4_K_M.gguf"),
        ("  openai:m  ", "openai", "m"),
    ],
)
def test_model_strings_pick_the_backend(model: str, backend: str, name: str) -> None:
    spec = parse_model(model)
    assert (spec.backend, spec.name) == (backend, name)


@pytest.mark.parametrize("model", ["gpt-4o", "claude-3", "vertex:gemini", "", "gemini"])
def test_unknown_forms_list_the_valid_ones(model: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_model(model)
    text = str(info.value)
    assert f"unknown judge model {model!r}" in text
    for form in ("openai:NAME", "gemini-NAME or gemini:NAME", "anthropic:NAME", "local:PATH.gguf"):
        assert form in text


def test_a_prefix_without_a_name_or_a_local_non_gguf_is_refused() -> None:
    with pytest.raises(ConfigError, match="names no model after 'openai:'"):
        parse_model("openai:")
    with pytest.raises(ConfigError, match="GGUF model file"):
        parse_model("local:/models/judge.bin")


@pytest.mark.parametrize(
    ("model", "extra"),
    [
        ("openai:m", "openai"),
        ("gemini-2.5-flash", "gemini"),
        ("anthropic:claude", "anthropic"),
        ("local:/m.gguf", "local"),
    ],
)
def test_a_missing_sdk_names_the_pip_install(
    model: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk = BACKENDS[parse_model(model).backend].sdk
    # A None entry in sys.modules is how Python marks a module as not importable.
    monkeypatch.setitem(sys.modules, sdk, None)
    with pytest.raises(ConfigError) as info:
        make_backend(model, timeout_s=5)
    assert f"pip install -e '.[{extra}]'" in str(info.value)
    assert BACKENDS[parse_model(model).backend].package in str(info.value)


def test_an_sdk_too_broken_to_import_names_the_pip_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A backend module whose SDK import fails (an SDK too old, a missing dependency).
    package = tmp_path / "fake_backends"
    package.mkdir()
    (package / "anthropic.py").write_text("import sdk_that_is_not_there\n")
    monkeypatch.setattr(resolve, "_sdk_installed", lambda module: True)
    import assay.models.backends as backends_package

    monkeypatch.setattr(backends_package, "__path__", [str(package)])
    monkeypatch.delitem(sys.modules, "assay.models.backends.anthropic", raising=False)
    with pytest.raises(ConfigError) as info:
        make_backend("anthropic:claude", timeout_s=5)
    assert "pip install -e '.[anthropic]'" in str(info.value)
    assert "sdk_that_is_not_there" in str(info.value)


def test_the_extras_exist_in_pyproject() -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    for info in BACKENDS.values():
        assert info.extra in extras


def test_importing_assay_judges_imports_no_sdk() -> None:
    code = (
        "import sys, assay.judges, assay.engine, assay.cli;"
        "bad = [m for m in ('openai', 'anthropic', 'google.genai', 'xllamacpp')"
        " if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
