"""The store's tables (SQLAlchemy Core), the source of truth for Alembic migrations.

- `runs`: one row per evaluation run, its status, counts, config and summary (and the
  CES project and location of a service run).
- `case_results`: one row per completed case run; the full `CaseResult` document as
  JSON plus the columns queries filter on. The unique key (run, eval set, case, run
  index) means a case run is never stored twice, and is what resume skips.
- `resources`: CES-shaped resources (evaluations, evaluation datasets, personas,
  evaluation expectations, scheduled evaluation runs) under a CES project and location,
  with a display name unique within an app and kind, an etag and create/update times.
- `judge_cache`: judge replies keyed by a hash of backend, model, prompt, sample and
  generation settings.
- `judge_batches`: judge batches submitted to a vendor and the cache keys they hold,
  until collected.
- `api_keys`: the REST service's API keys, stored as a salted hash (never the key).
- `store_secrets`: random keys the services keep per store (the page-token signing key).
- `labels`: people's verdicts on one metric of one case run of a run (`store/labels.py`),
  one per person and item; `label_history` every label set or deleted, in order.
- `aligned_judges`: judges aligned to people's labels, by name and version.

Changing anything here needs a new migration under `migrations/versions/`;
tests/store/test_migrations.py fails until the two agree.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from assay.store.types import JSONValue, UTCDateTime

# Deterministic constraint names, so migrations (and SQLite batch rebuilds) can name
# what they alter.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

DEFAULT_APP = "default"
# The CES project and location of rows written without one (see store/namespace.py).
_PROJECT = text("'default'")
_LOCATION = text("'global'")


class RunStatus(StrEnum):
    """Lifecycle of a run: CES's RUNNING/COMPLETED/ERROR/CANCELLED plus INTERRUPTED.

    INTERRUPTED runs are resumable; CANCELLED ones were stopped on request and stay so.
    """

    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    INTERRUPTED = "INTERRUPTED"
    CANCELLED = "CANCELLED"


# The CES collections stored in `resources`, named as in the REST paths.
RESOURCE_KINDS = (
    "evaluations",
    "evaluationDatasets",
    "personas",
    "evaluationExpectations",
    "scheduledEvaluationRuns",
    # Finished long-running operations of the CES wire API (service/wire/ces_lro.py).
    "operations",
)

# A surrogate integer key keeps case rows in completion order and, on SQLite, makes
# the row id the key (INTEGER PRIMARY KEY) instead of a separate index.
_ROW_ID = BigInteger().with_variant(Integer(), "sqlite")

runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("app", String(128), nullable=False, server_default=text(f"'{DEFAULT_APP}'")),
    Column("name", Text),
    Column("status", String(16), nullable=False),
    Column("agent", Text),
    Column("eval_set_ids", JSONValue, nullable=False),
    Column("metrics", JSONValue, nullable=False),
    Column("config", JSONValue, nullable=False),
    Column("runs", Integer, nullable=False),
    # Number of case runs the engine announced (on_start); None until then.
    Column("total", Integer),
    Column("case_count", Integer, nullable=False, server_default=text("0")),
    Column("passed", Integer, nullable=False, server_default=text("0")),
    Column("failed", Integer, nullable=False, server_default=text("0")),
    Column("not_evaluated", Integer, nullable=False, server_default=text("0")),
    # Case runs whose execution failed (CES executionState ERROR).
    Column("errors", Integer, nullable=False, server_default=text("0")),
    Column("summary", JSONValue),
    Column("error", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("project", String(128), nullable=False, server_default=_PROJECT),
    Column("location", String(128), nullable=False, server_default=_LOCATION),
    # The process executing the run (`store/lease.py`: host, pid, its start time and a
    # random tag) and until when its heartbeat holds the run; a run whose owner is alive
    # is never resumed by another process. NULL lease: nobody holds it.
    Column("owner", String(256)),
    Column("lease_until", UTCDateTime),
    Index(None, "app", "created_at"),
    Index(None, "status"),
    Index(None, "project", "location", "app", "created_at"),
)

case_results = Table(
    "case_results",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column(
        "run_id",
        String(32),
        ForeignKey("runs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # "" when the result has no eval set, so the unique key still applies (NULLs
    # never compare equal in a unique constraint).
    Column("eval_set_id", String, nullable=False),
    Column("case_id", String, nullable=False),
    Column("run_index", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    # CES executionState: ERROR when the case could not be run or scored, else COMPLETED.
    Column("execution_state", String(16), nullable=False),
    Column("error_type", String(64)),
    Column("latency_s", Float),
    Column("created_at", UTCDateTime, nullable=False),
    Column("document", JSONValue, nullable=False),
    UniqueConstraint("run_id", "eval_set_id", "case_id", "run_index"),
    # Covers the counts by status and execution state (finish_run's recount).
    Index(None, "run_id", "status", "execution_state"),
    # A case's history across runs (CES lastTenResults).
    Index(None, "case_id"),
)

resources = Table(
    "resources",
    metadata,
    Column("project", String(128), primary_key=True, server_default=_PROJECT),
    Column("location", String(128), primary_key=True, server_default=_LOCATION),
    Column("app", String(128), primary_key=True),
    Column("kind", String(32), primary_key=True),
    Column("id", String(256), primary_key=True),
    Column("display_name", String(512), nullable=False),
    Column("body", JSONValue, nullable=False),
    Column("etag", String(64), nullable=False),
    Column("create_time", UTCDateTime, nullable=False),
    Column("update_time", UTCDateTime, nullable=False),
    UniqueConstraint("project", "location", "app", "kind", "display_name"),
)

judge_cache = Table(
    "judge_cache",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("backend", String(64), nullable=False),
    Column("model", String(256), nullable=False),
    Column("reply", JSONValue, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

# Judge batches submitted to a vendor's batch interface (`--judge-batch`): a resumed run
# collects an open one instead of submitting its requests again.
judge_batches = Table(
    "judge_batches",
    metadata,
    Column("batch_id", String(256), primary_key=True),
    Column("backend", String(64), nullable=False),
    Column("endpoint", String(1024), nullable=False),
    Column("model", String(256), nullable=False),
    # the reply-cache keys of its requests (each its custom_id in the batch)
    Column("request_keys", JSONValue, nullable=False),
    Column("submitted_at", UTCDateTime, nullable=False),
    Column("collected_at", UTCDateTime),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(256), nullable=False),
    Column("salt", String(64), nullable=False),
    # hex SHA-256 of salt + secret; the secret itself is shown once and never stored.
    Column("secret_hash", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime),
    Column("last_used_at", UTCDateTime),
)

store_secrets = Table(
    "store_secrets",
    metadata,
    Column("name", String(64), primary_key=True),
    # hex of random bytes; created once per store and never changed
    Column("value", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

labels = Table(
    "labels",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    # The case run labelled, as `case_results` keys it ("" when it has no eval set).
    Column("eval_set_id", String, nullable=False),
    Column("case_id", String, nullable=False),
    Column("run_index", Integer, nullable=False),
    Column("metric", String(256), nullable=False),
    # Who gave it: the API key's name in the service, the OS user locally.
    Column("author", String(256), nullable=False),
    # "pass" / "fail", or a score on the metric's scale written as given ("0.75").
    Column("label", String(64), nullable=False),
    Column("score", Float),
    # The verdict the label amounts to ("pass" / "fail"; a score against the threshold).
    Column("verdict", String(8), nullable=False),
    Column("note", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # One label per person and item: labelling again replaces that person's own.
    UniqueConstraint("run_id", "eval_set_id", "case_id", "run_index", "metric", "author"),
)

label_history = Table(
    "label_history",
    metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("eval_set_id", String, nullable=False),
    Column("case_id", String, nullable=False),
    Column("run_index", Integer, nullable=False),
    Column("metric", String(256), nullable=False),
    Column("author", String(256), nullable=False),
    # "set" (the label as it was then) or "delete" (label, verdict and note NULL)
    Column("action", String(8), nullable=False),
    Column("label", String(64)),
    Column("verdict", String(8)),
    Column("note", Text),
    Column("at", UTCDateTime, nullable=False),
    Index(None, "run_id", "case_id"),
)

aligned_judges = Table(
    "aligned_judges",
    metadata,
    # An aligned judge (`assay judge align`, `assay.judges.align`): a base judge model
    # with guidelines and labelled examples for one metric; versions count from 1 per
    # name, and a version is never changed once stored.
    Column("name", String(128), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("metric", String(256), nullable=False),
    Column("judge_model", Text, nullable=False),
    Column("guidelines", JSONValue, nullable=False),
    Column("examples", JSONValue, nullable=False),
    Column("kappa_before", Float),
    Column("kappa_after", Float),
    # how it was built and measured: folds, intervals, label counts
    Column("report", JSONValue, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)
