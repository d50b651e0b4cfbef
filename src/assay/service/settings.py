"""A service run's settings: what the request asked, snapshotted into the stored run.

Stored under the run config's `service` key (camelCase, as the CES request spells it)
when the run starts and read back by the executor of whichever server runs or resumes
it, so a run never depends on resources edited after it started. `version` says which
shape a stored document has: a server reading a newer version than it knows refuses
the run with a message instead of guessing (documents written before versioning have
none and are version 1).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.errors import AssayError
from assay.store.eval_results import SERVICE_KEY
from assay.store.runs import RunInfo

SETTINGS_VERSION = 1


class RunOwner(BaseModel):
    """The server executing a run: host, process id, executor instance."""

    model_config = ConfigDict(extra="allow")

    host: str | None = None
    pid: int | None = None
    instance: str | None = None


class JudgeBudget(BaseModel):
    """Caps on what one run's judges may spend (None: no cap of that kind).

    The server's (`assay serve --max-judge-usd-per-run`, `--max-judge-calls-per-run`)
    applies to every run it starts; a run request may ask for a lower one
    (`assayJudgeBudget`). The run's own is stored in its settings, so a resumed run
    keeps the cap it started with.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    max_usd: float | None = Field(default=None, alias="maxUsd", gt=0, allow_inf_nan=False)
    max_calls: int | None = Field(default=None, alias="maxCalls", ge=1)

    @property
    def capped(self) -> bool:
        return self.max_usd is not None or self.max_calls is not None

    def within(self, server: JudgeBudget) -> JudgeBudget:
        """This budget where it is set, else the server's (a request's, over the server's)."""
        return JudgeBudget(
            max_usd=self.max_usd if self.max_usd is not None else server.max_usd,
            max_calls=self.max_calls if self.max_calls is not None else server.max_calls,
        )

    def document(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


NO_BUDGET = JudgeBudget()

BUDGET_FIELD = "assayJudgeBudget"
"""The run request's assay extension asking for a lower judge budget than the server's."""


def requested_budget(value: object, server: JudgeBudget, field: str = BUDGET_FIELD) -> JudgeBudget:
    """The judge budget a run request asks for (`value`: its `assayJudgeBudget`), within
    the server's `server`: INVALID_ARGUMENT naming the field for a value that is not a
    positive finite number (`maxUsd`) or a positive integer (`maxCalls`), or that asks
    for more than the server allows. None: the server's budget."""
    from assay.service.errors import InvalidArgument

    if value is None:
        return server
    if not isinstance(value, Mapping):
        raise InvalidArgument.field(field, "expected an object {maxUsd, maxCalls}")
    unknown = sorted(set(value) - {"maxUsd", "maxCalls"})
    if unknown:
        raise InvalidArgument.field(
            f"{field}.{unknown[0]}", "unknown field of a judge budget; expected maxUsd, maxCalls"
        )
    usd = _positive_usd(value.get("maxUsd"), f"{field}.maxUsd")
    calls = _positive_calls(value.get("maxCalls"), f"{field}.maxCalls")
    if usd is not None and server.max_usd is not None and usd > server.max_usd:
        raise InvalidArgument.field(
            f"{field}.maxUsd",
            f"{usd:g} is above this server's cap of {server.max_usd:g} US dollars per run"
            " (assay serve --max-judge-usd-per-run); ask for that or less",
        )
    if calls is not None and server.max_calls is not None and calls > server.max_calls:
        raise InvalidArgument.field(
            f"{field}.maxCalls",
            f"{calls} is above this server's cap of {server.max_calls} judge calls per run"
            " (assay serve --max-judge-calls-per-run); ask for that or fewer",
        )
    return JudgeBudget(max_usd=usd, max_calls=calls).within(server)


def _positive_usd(value: object, field: str) -> float | None:
    from assay.service.errors import InvalidArgument

    if value is None:
        return None
    number = math.nan
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer past any float: no cap a request needs
            number = math.inf
    if not math.isfinite(number) or number <= 0:
        raise InvalidArgument.field(
            field, f"expected a positive number of US dollars, got {_shown(value)}"
        )
    return number


def _positive_calls(value: object, field: str) -> int | None:
    from assay.service.errors import InvalidArgument

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument.field(
            field, f"expected a whole number of judge calls from 1, got {_shown(value)}"
        )
    return value


def _shown(value: object) -> str:
    """A client's value in an error message, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class ServiceRunSettings(BaseModel):
    """One evaluation run of the service (`POST .../evaluations:run`), as stored."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    version: int = SETTINGS_VERSION
    evaluation_ids: list[str] = Field(default_factory=list, alias="evaluationIds")
    evaluations: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The evaluation resources' bodies by id, as they were when the run started."""
    metrics: list[str] = Field(default_factory=list)
    run_count: int | None = Field(default=None, alias="runCount")
    tool_behavior: str = Field(default="REAL", alias="toolBehavior")
    config: dict[str, Any] = Field(default_factory=dict)
    golden_run_method: str = Field(default="STABLE", alias="goldenRunMethod")
    personas: dict[str, dict[str, Any]] = Field(default_factory=dict)
    app_version: str | None = Field(default=None, alias="appVersion")
    evaluation_dataset: str | None = Field(default=None, alias="evaluationDataset")
    judge_model: str | None = Field(default=None, alias="judgeModel")
    user_model: str | None = Field(default=None, alias="userModel")
    scheduled_evaluation_run: str | None = Field(default=None, alias="scheduledEvaluationRun")
    """The schedule that started the run (apps/{app}/scheduledEvaluationRuns/{id})."""
    operation_deleted: bool | None = Field(default=None, alias="operationDeleted")
    """Set once the run's operation was deleted (DeleteOperation): it is no longer listed."""
    total_count: int | None = Field(default=None, alias="totalCount")
    owner: RunOwner | None = None
    judge_budget: JudgeBudget | None = Field(default=None, alias="judgeBudget")
    """The run's caps on its judges (the server's, or a lower one the request asked
    for), kept by a resumed run; None (and documents stored before caps): no cap."""

    @classmethod
    def of_run(cls, run: RunInfo) -> ServiceRunSettings:
        """The settings stored with `run` (AssayError naming the run if unreadable)."""
        doc = run.config.get(SERVICE_KEY)
        if not isinstance(doc, dict):
            raise AssayError(f"run {run.id} is not an evaluation run of the service")
        version = doc.get("version", SETTINGS_VERSION)
        if not isinstance(version, int) or version > SETTINGS_VERSION:
            raise AssayError(
                f"run {run.id} was started by a newer assay (settings version {version!r},"
                f" this one reads up to {SETTINGS_VERSION}): resume it with that version"
            )
        try:
            return cls.model_validate(doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise AssayError(f"run {run.id}: stored setting {where}: {first['msg']}") from None

    def document(self) -> dict[str, Any]:
        """The stored form (camelCase; unset optional fields left out, as before)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# -- Work per request (issue #31) ---------------------------------------------------------
# Limits on the text a request may ask the server to score, and on the CPU it may use.
# Answered 400 INVALID_ARGUMENT naming the field and the limit (docs/security.md).


@dataclass(frozen=True)
class WorkLimits:
    """How much scoring one request may ask for (Vertex `evaluateInstances`)."""

    max_tokens_per_instance: int = 50_000
    """Tokens in one instance's text fields together (prediction, reference, ...)."""
    max_tokens_per_request: int = 500_000
    """Tokens in all the instances of one request together."""
    max_instances_per_request: int = 1_000
    cpu_seconds_per_request: float = 30.0
    """CPU time one request's scoring may take (checked between instances and inside the
    metrics whose work outgrows their input, rougeLsum's sentence pairs)."""
    scoring_threads: int = 2
    """Requests scored at once; the others wait their turn (the event loop never scores)."""


WORK_LIMITS = WorkLimits()

_TOKEN = re.compile(r"[a-z0-9]+|[^a-z0-9\s]", re.IGNORECASE)


def count_tokens(text: str) -> int:
    """Tokens as the limits count them: runs of ASCII letters and digits, and every
    other character but white space on its own (at least what any text metric makes)."""
    return sum(1 for _ in _TOKEN.finditer(text))


# ---- limits on what one request may bring (issue #31) ------------------------------------
# Declared once here and enforced on every surface (REST /v1, CES /v1beta and gRPC,
# Vertex, MCP, file imports); docs/security.md lists them with their defaults.


class ServiceLimits(BaseModel):
    """Limits on the input of one request, the same on every surface of the service."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # -- bytes, depth and documents (files and input) --
    max_depth: int = Field(default=100, ge=2, le=1_000)
    """Nesting of objects and arrays in any JSON or YAML value a client sends (protobuf's
    own parsers stop at 100; orjson at 254)."""
    max_document_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    """Size of a file read by an import (`gcs_uri`) or given inline (`csv_content`)."""
    max_document_nodes: int = Field(default=4_000_000, ge=1)
    """Values in an imported YAML document with its aliases expanded (an alias bomb is
    refused before it is built)."""
    max_path_chars: int = Field(default=4_096, ge=1)
    """Length of a file path a client names (Linux's PATH_MAX)."""
    max_name_bytes: int = Field(default=255, ge=1)
    """Length in UTF-8 bytes of one component of such a path (Linux's NAME_MAX)."""
    max_csv_cell_chars: int = Field(default=131_072, ge=1)
    """Characters in one cell of an imported CSV (Python csv's default field limit)."""
    import_batch: int = Field(default=1_000, ge=1)
    """Evaluations an import writes to the store per transaction."""
    allowed_models: tuple[str, ...] = ()
    """Models a request may name (`judgeModel`, `userModel`) besides the server's own
    `--judge-model`: `assay serve --allow-model MODEL` (repeatable). A model not listed
    is refused, so no request makes the server open a path or call an endpoint of its
    choosing."""


DEFAULT_LIMITS = ServiceLimits()
