"""What the tests of assay's compiled code share (`assay._native`): whether this install
must have compiled every module (`.ci/run` sets ASSAY_REQUIRE_COMPILED=1), and a
kernel's import, which skips the test module where the kernel was not built.
Importable from every test (the top-level conftest puts this folder on sys.path)."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

from assay import _native

REQUIRED = os.environ.get("ASSAY_REQUIRE_COMPILED", "") not in ("", "0")
"""Set by .ci/run: the install there must have compiled every module."""


def kernel(module: str, name: str, what: str) -> Any:
    """`name` from the kernel `module`; where it was not built, an AssertionError under
    ASSAY_REQUIRE_COMPILED, else the calling test module is skipped (`what` is said)."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:  # installed without compiling
        pass
    if REQUIRED:
        raise AssertionError(f"{what} was not compiled (ASSAY_REQUIRE_COMPILED)")
    pytest.skip(
        f"{what} is not compiled here (no C compiler at install, or {_native.PURE_ENV}=1)",
        allow_module_level=True,
    )
