"""Which google-adk release assay follows where ADK's behaviour changed between releases.

assay follows the google-adk the user has installed, with 2.13 as the floor (an older
or absent google-adk counts as 2.13). `ASSAY_ADK_VERSION` (e.g. `2.14`) forces the
version, to reproduce another release's numbers or to test both behaviours.

What changes with the version:

- thought parts: google-adk 2.13 reads a Content's text with its thought parts (text
  parts marked `thought: true`) joined in, so they reach ROUGE and the judges' prompts
  as if the agent had said them; later releases (ADK's main branch after 2.13) leave
  them out. assay reads ADK eval sets the same way (`thoughts_are_text`).
"""

from __future__ import annotations

import os
import re
from functools import cache
from importlib import metadata

from assay.errors import ConfigError

#: the oldest google-adk whose behaviour assay reproduces
FLOOR = (2, 13)
#: the environment variable forcing the version (`major.minor`)
ENV = "ASSAY_ADK_VERSION"
_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")


def _parse(text: str) -> tuple[int, int] | None:
    found = _VERSION.match(text)
    return (int(found[1]), int(found[2])) if found else None


@cache
def _installed() -> tuple[int, int] | None:
    try:
        return _parse(metadata.version("google-adk"))
    except metadata.PackageNotFoundError:
        return None


def adk_version() -> tuple[int, int]:
    """The (major, minor) google-adk release to follow: `ASSAY_ADK_VERSION`, else the
    installed one, never below `FLOOR`."""
    forced = os.environ.get(ENV)
    version = _parse(forced) if forced else _installed()
    if forced and version is None:
        raise ConfigError(f"{ENV}={forced!r}: expected a google-adk version such as 2.13")
    return max(version or FLOOR, FLOOR)


def thoughts_are_text() -> bool:
    """Whether a Content's thought parts count as its text (google-adk 2.13 only)."""
    return adk_version() <= FLOOR
