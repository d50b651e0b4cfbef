"""One hierarchy for every error assay reports to a user.

Messages say what was wrong, where (file, case, JSON path) and what was expected, so a
user can fix the input without reading a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import TypeVar

_E = TypeVar("_E", bound=StrEnum)


class AssayError(Exception):
    """Base of every error assay raises on purpose."""

    exit_code = 2


class AssayWarning(UserWarning):
    """Something assay accepted but wants the user to know (ignored config keys, …).

    The CLI prints each as one `warning:` line on stderr; in Python they are ordinary
    warnings (`warnings.simplefilter("error", AssayWarning)` turns them into errors).
    """


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices` to `word`, or "" if none is
    close (difflib's ratio of 0.6 or more)."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def warn(message: str) -> None:
    """Issue an `AssayWarning` attributed to the caller's caller."""
    import warnings

    warnings.warn(message, AssayWarning, stacklevel=3)


class InputError(AssayError):
    """A data file (eval set, dataset, trace) could not be loaded.

    Carries the location so callers and the CLI can show it consistently.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        case_id: str | None = None,
        path: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.file = file
        self.case_id = case_id
        self.path = path
        self.expected = expected
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file:
            where.append(f"file {self.file}")
        if self.case_id is not None:
            where.append(f"case {self.case_id!r}")
        if self.path:
            where.append(f"at {self.path}")
        text = self.detail
        if self.expected:
            text += f" (expected {self.expected})"
        return f"{', '.join(where)}: {text}" if where else text

    def located(self, *, file: str | None = None, case_id: str | None = None) -> InputError:
        """Return a copy (of the same class) with missing location parts filled in."""
        return type(self)(
            self.detail,
            file=self.file or file,
            case_id=self.case_id if self.case_id is not None else case_id,
            path=self.path,
            expected=self.expected,
        )


class UnknownFormatError(InputError):
    """The format of a file could not be detected or is not supported."""


class ConfigError(AssayError):
    """An evaluation config (criteria, metric options, CLI flags) is invalid."""

    @classmethod
    def unknown(
        cls, kind: str, name: str, valid: Iterable[str], *, listed_by: str | None = None
    ) -> ConfigError:
        """`unknown KIND 'NAME' (did you mean 'X'?)`, then where the valid names are
        listed (`listed_by`, a command) or, without one, the names themselves."""
        names = sorted(set(valid))
        text = f"unknown {kind} {name!r}{did_you_mean(name, names)}"
        if listed_by is not None:
            return cls(f"{text}; `{listed_by}` lists the {len(names)} {kind}s")
        return cls(f"{text}; valid {kind}s are: {', '.join(names)}")


def parse_choice(cls: type[_E], value: str | _E, kind: str) -> _E:
    """`value` as a member of the string enum `cls`, in any case (`fake`, `FAKE`).

    Raises ConfigError naming `kind` and the choices.
    """
    if isinstance(value, cls):
        return value
    try:
        return cls(str(value).strip().upper())
    except ValueError:
        choices = ", ".join(str(m.value).lower() for m in cls)
        raise ConfigError(f"unknown {kind} {value!r}; use one of {choices}") from None


class AgentError(AssayError):
    """An agent could not be loaded or called.

    `remote` is what the agent's side said about it in full (an HTTP agent's error
    body, which may hold its traceback); the message keeps only its start.
    """

    def __init__(self, message: str, *, remote: str | None = None) -> None:
        super().__init__(message)
        self.remote = remote


class QuotaExhaustedError(AgentError):
    """A model endpoint kept refusing calls for lack of quota (HTTP 429 after retries).

    Adapters and the user simulator raise it so the engine reports the case with the CES
    error type `QUOTA_EXHAUSTED` instead of a generic runtime failure.
    """


class StoreError(AssayError):
    """The results store could not be opened or written."""


class ConversionLossError(InputError):
    """Writing an eval set in a format would drop fields that format cannot hold.

    `losses` lists `(case_id, field)` pairs (case_id `None` for the set itself); the
    message names each case and field, so the user can decide to convert with `--lossy`.
    """

    def __init__(
        self,
        message: str,
        *,
        losses: list[tuple[str | None, str]] | None = None,
        file: str | None = None,
        case_id: str | None = None,
        path: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.losses = list(losses or [])
        super().__init__(message, file=file, case_id=case_id, path=path, expected=expected)

    def located(
        self, *, file: str | None = None, case_id: str | None = None
    ) -> ConversionLossError:
        return ConversionLossError(
            self.detail,
            losses=self.losses,
            file=self.file or file,
            case_id=self.case_id if self.case_id is not None else case_id,
            path=self.path,
            expected=self.expected,
        )


#: Import names of the optional dependencies, with the package and the extra that
#: installs each (pyproject.toml's optional-dependencies; tests/test_missing_extras.py
#: checks every extra is here).
OPTIONAL_IMPORTS: dict[str, tuple[str, str]] = {
    "google.adk": ("google-adk", "adk"),
    "google.genai": ("google-genai", "gemini"),
    "google.cloud.ces_v1beta": ("google-cloud-ces", "ces"),
    "google.cloud.ces": ("google-cloud-ces", "ces"),
    "grpc": ("grpcio", "ces"),
    "grpc_status": ("grpcio-status", "ces"),
    "openai": ("openai", "openai"),
    "anthropic": ("anthropic", "anthropic"),
    "xllamacpp": ("xllamacpp", "local"),
    "fastapi": ("fastapi", "service"),
    "uvicorn": ("uvicorn", "service"),
    "mcp": ("mcp", "service"),
    "mlflow": ("mlflow-skinny", "mlflow"),
    "sqlparse": ("sqlparse", "mlflow"),
    "pandas": ("pandas", "pandas"),
    "psycopg": ("psycopg[binary]", "postgres"),
    "pyarrow": ("pyarrow", "parquet"),
    "ray": ("ray", "ray"),
}


def missing_import_hint(name: str) -> str:
    """What to install for a module that failed to import (`ModuleNotFoundError.name`).

    Names one of assay's extras when the module belongs to one (`pip install -e
    '.[adk]'`); a bare `google` (no Google package at all) most often means ADK.
    """
    if name == "google":
        return "pip install -e '.[adk]' for an ADK agent (google-adk)"
    for prefix, (package, extra) in sorted(OPTIONAL_IMPORTS.items(), key=lambda kv: -len(kv[0])):
        if name == prefix or name.startswith(prefix + ".") or prefix.startswith(name + "."):
            return f"pip install -e '.[{extra}]' ({package})"
    return f"pip install {name.split('.', 1)[0]}"
