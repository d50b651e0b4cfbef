"""The test suite carries its own data: nothing under tests/ reads outside the repository.

A user's clone has nothing beside it, so a test that reaches for ``../shared`` (or any other
sibling folder) fails for them while passing here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# A path built upward out of the checkout: "..", a parent beyond the repository root, or the
# shared folder of the steering repository by name.
_OUTSIDE = re.compile(r"""["']\.\.["']|["']shared["']|\.\./shared""")


def test_no_test_reads_outside_the_repository() -> None:
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_realworld_fixtures_and_their_sources_are_in_the_repository() -> None:
    data = REPO / "tests" / "data" / "realworld"
    sources = (data / "SOURCES.md").read_text(encoding="utf-8")
    files = [p for p in data.rglob("*") if p.is_file() and p.name != "SOURCES.md"]
    assert len(files) >= 30
    missing = [str(p.relative_to(data)) for p in files if str(p.relative_to(data)) not in sources]
    assert missing == []


def test_test_modules_and_helpers_have_unique_names() -> None:
    # pytest imports test modules by basename (rootdir-relative, no packages): two
    # `test_registry.py` in different folders stop the whole run at collection, which a
    # targeted run of one folder does not show. Helper modules share the same namespace.
    seen: dict[str, list[str]] = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        inside = path.relative_to(REPO / "tests").parts
        if inside[0] == "data" or path.name in {"__init__.py", "conftest.py"}:
            continue
        if any((parent / "__init__.py").exists() for parent in path.parents if parent != REPO):
            continue  # inside a package: imported by its dotted name
        seen.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
