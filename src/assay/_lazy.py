"""Package attributes imported when first used (PEP 562): `import assay`, `assay.engine`
and `assay.judges` stay light, and a name's module is imported only when the name is.

Standard library only: `assay/__init__` uses it before anything else is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: each name of `exports` is looked up in the
    module it maps to, on first use, and kept in `namespace` (the package's globals) so
    the next use finds it directly."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
