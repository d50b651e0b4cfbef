"""The `all` extra installs every optional feature, and the README lists every extra.

An extra added without joining `all` (or without a README line) fails here, so
`pip install -e '.[all]'` keeps meaning "everything".
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Extras that are tooling, not features a user installs assay for.
NOT_FEATURES = {"all", "dev", "ui-test"}


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _self_references(requirements: list[str]) -> set[str]:
    named: set[str] = set()
    for requirement in requirements:
        match = re.fullmatch(r"assay\[([^\]]+)\]", requirement.strip())
        assert match is not None, f"`all` should only name assay's own extras: {requirement!r}"
        named |= {name.strip() for name in match.group(1).split(",")}
    return named


def test_all_names_every_feature_extra() -> None:
    extras = _extras()
    features = set(extras) - NOT_FEATURES
    assert _self_references(extras["all"]) == features


def test_dev_installs_what_all_installs() -> None:
    # The tests exercise every optional feature, so dev carries each one's packages.
    extras = _extras()
    dev = {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in extras["dev"]}
    for name in _self_references(extras["all"]):
        for requirement in extras[name]:
            package = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()
            assert package in dev, f"extra {name!r} needs {package!r}, missing from dev"


def test_readme_lists_every_extra() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Optional features (extras)", 1)[1].split("\n#", 1)[0]
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE))
    missing = (set(_extras()) - {"ui-test"}) - listed
    assert not missing, f"README's extras table lacks {sorted(missing)}"
