"""Runs and case results, on SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_samples import error_result, every_step_result, row_result, weather_result

from assay.core.results import Status
from assay.errors import StoreError
from assay.store import (
    DuplicateCaseResultError,
    RunNotFoundError,
    Store,
    case_key,
)
from assay.store.runs import new_run_id


def _start(store: Store, **overrides: object) -> str:
    args: dict[str, object] = {
        "eval_set_ids": ["weather", "rows"],
        "metrics": ["tool_trajectory_avg_score", "response_match_score"],
        "config": {"criteria": {"response_match_score": 0.8}, "judge": {"num_samples": 3}},
        "agent": "examples.weather:root_agent",
        "runs": 1,
    }
    args.update(overrides)
    return store.start_run(**args)  # type: ignore[arg-type]


def test_start_run_records_what_runs(store: Store) -> None:
    before = datetime.now(UTC)
    run_id = _start(store, name="nightly", runs=3)
    run = store.get_run(run_id)
    assert run.id == run_id
    assert run.status == "RUNNING"
    assert run.name == "nightly"
    assert run.eval_set_ids == ["weather", "rows"]
    assert run.metrics == ["tool_trajectory_avg_score", "response_match_score"]
    assert run.config == {"criteria": {"response_match_score": 0.8}, "judge": {"num_samples": 3}}
    assert run.agent == "examples.weather:root_agent"
    assert run.runs == 3
    assert (run.case_count, run.passed, run.failed, run.not_evaluated) == (0, 0, 0, 0)
    assert run.summary == {} and run.finished_at is None and run.app == "default"
    assert run.created_at.tzinfo is UTC
    assert before - timedelta(seconds=1) <= run.created_at <= datetime.now(UTC)


def test_case_results_round_trip_as_to_dict(store: Store) -> None:
    run_id = _start(store)
    results = [weather_result(), every_step_result(), error_result(), row_result(7)]
    store.add_case_results(run_id, results)
    assert store.case_results(run_id) == [r.to_dict() for r in results]


def test_results_are_kept_in_the_order_stored(store: Store) -> None:
    run_id = _start(store)
    for batch in ([row_result(5), row_result(1)], [row_result(3)], [row_result(0)]):
        store.add_case_results(run_id, batch)
    assert [d["case_id"] for d in store.case_results(run_id)] == [
        "row-5",
        "row-1",
        "row-3",
        "row-0",
    ]


def test_counts_follow_the_stored_results(store: Store) -> None:
    run_id = _start(store)
    store.add_case_results(run_id, [row_result(i) for i in range(5)])
    store.add_case_results(
        run_id,
        [row_result(5, status=Status.FAILED), weather_result(), error_result()],
    )
    run = store.get_run(run_id)
    assert (run.case_count, run.passed, run.failed, run.not_evaluated) == (8, 5, 2, 1)
    assert run.errors == 1


def test_a_case_run_is_never_stored_twice(store: Store) -> None:
    run_id = _start(store)
    store.add_case_results(run_id, [row_result(1), row_result(2)])
    with pytest.raises(
        DuplicateCaseResultError,
        match=r"case 'row-2' of eval set 'rows' \(run index 0\): already stored",
    ):
        store.add_case_results(run_id, [row_result(3), row_result(2)])
    # The failed batch is all-or-nothing: row-3 was not stored either.
    assert [d["case_id"] for d in store.case_results(run_id)] == ["row-1", "row-2"]
    assert store.get_run(run_id).case_count == 2


def test_duplicates_within_one_batch_are_refused(store: Store) -> None:
    run_id = _start(store)
    with pytest.raises(DuplicateCaseResultError, match="given twice in one batch"):
        store.add_case_results(run_id, [row_result(1), row_result(1)])
    assert store.case_results(run_id) == []


def test_same_case_in_other_run_index_set_or_run_is_distinct(store: Store) -> None:
    run_id = _start(store)
    store.add_case_results(
        run_id,
        [
            weather_result("c", eval_set_id="a"),
            weather_result("c", eval_set_id="b"),
            weather_result("c", eval_set_id="a", run_index=1),
            weather_result("c", eval_set_id=None),
        ],
    )
    other = _start(store)
    store.add_case_results(other, [weather_result("c", eval_set_id="a")])
    assert store.completed_case_keys(run_id) == {
        ("a", "c", 0),
        ("b", "c", 0),
        ("a", "c", 1),
        ("", "c", 0),
    }
    assert store.completed_case_keys(other) == {("a", "c", 0)}


def test_results_without_eval_set_are_unique_too(store: Store) -> None:
    run_id = _start(store)
    store.add_case_results(run_id, [every_step_result()])
    with pytest.raises(DuplicateCaseResultError):
        store.add_case_results(run_id, [every_step_result()])


def test_replace_overwrites_and_recounts(store: Store) -> None:
    run_id = _start(store)
    store.add_case_results(run_id, [error_result("flaky"), row_result(1)])
    assert store.get_run(run_id).errors == 1
    retried = weather_result("flaky", status=Status.PASSED)
    store.add_case_results(run_id, [retried], replace=True)
    docs = store.case_results(run_id)
    assert [d["case_id"] for d in docs] == ["flaky", "row-1"]
    assert docs[0] == retried.to_dict()
    run = store.get_run(run_id)
    assert (run.case_count, run.passed, run.not_evaluated, run.errors) == (2, 2, 0, 0)


def test_completed_keys_can_leave_out_errors_for_resume(store: Store) -> None:
    run_id = _start(store)
    results = [row_result(1), error_result("broken"), row_result(2, run_index=1)]
    store.add_case_results(run_id, results)
    assert store.completed_case_keys(run_id) == {case_key(r) for r in results}
    assert store.completed_case_keys(run_id, include_errors=False) == {
        ("rows", "row-1", 0),
        ("rows", "row-2", 1),
    }


def test_finish_run_stores_summary_and_recounts(store: Store) -> None:
    run_id = _start(store)
    store.add_case_results(run_id, [row_result(1), row_result(2, status=Status.FAILED)])
    summary = {
        "row_count": 2,
        "trajectory_exact_match/mean": 0.5,
        "trajectory_exact_match/std": float("nan"),
    }
    store.finish_run(run_id, summary=summary, status="COMPLETED")
    run = store.get_run(run_id)
    assert run.status == "COMPLETED"
    assert run.summary == {
        "row_count": 2,
        "trajectory_exact_match/mean": 0.5,
        "trajectory_exact_match/std": None,
    }
    assert run.finished_at is not None and run.finished_at >= run.created_at
    assert (run.case_count, run.passed, run.failed) == (2, 1, 1)


def test_finish_run_with_error_keeps_message_and_old_summary(store: Store) -> None:
    run_id = _start(store)
    store.finish_run(run_id, summary={"row_count": 0}, status="INTERRUPTED")
    store.reopen_run(run_id)
    assert store.get_run(run_id).status == "RUNNING"
    assert store.get_run(run_id).finished_at is None
    store.finish_run(run_id, summary=None, status="ERROR", error="judge quota exhausted")
    run = store.get_run(run_id)
    assert (run.status, run.error, run.summary) == (
        "ERROR",
        "judge quota exhausted",
        {"row_count": 0},
    )


@pytest.mark.parametrize("status", ["RUNNING", "DONE", "completed"])
def test_finish_run_refuses_other_statuses(store: Store, status: str) -> None:
    run_id = _start(store)
    with pytest.raises(StoreError, match="expected one of COMPLETED, ERROR, INTERRUPTED"):
        store.finish_run(run_id, summary={}, status=status)
    assert store.get_run(run_id).status == "RUNNING"


def test_unknown_run_ids_raise_run_not_found(store: Store) -> None:
    for call in (
        lambda: store.get_run("nope"),
        lambda: store.add_case_results("nope", [row_result(1)]),
        lambda: store.finish_run("nope", summary={}, status="COMPLETED"),
        lambda: store.case_results("nope"),
        lambda: store.completed_case_keys("nope"),
        lambda: store.delete_run("nope"),
        lambda: store.set_total("nope", 3),
    ):
        with pytest.raises(RunNotFoundError, match="'nope'"):
            call()


def test_list_runs_newest_first_with_limit(store: Store) -> None:
    ids = [_start(store, name=f"run {i}") for i in range(4)]
    assert [r.id for r in store.list_runs()] == ids[::-1]
    assert [r.id for r in store.list_runs(limit=2)] == ids[:1:-1]
    other_app = _start(store, app="support-bot")
    assert [r.id for r in store.list_runs(app="support-bot")] == [other_app]


def test_find_run_by_prefix_or_latest(store: Store) -> None:
    first = _start(store)
    second = _start(store)
    assert store.find_run("latest").id == second
    assert store.find_run(first).id == first
    # Ids from one process share a time prefix; the tail tells them apart.
    common = 0
    while first[common] == second[common]:
        common += 1
    assert store.find_run(second[: common + 1]).id == second
    with pytest.raises(StoreError, match="ambiguous"):
        store.find_run(first[:common])
    with pytest.raises(RunNotFoundError):
        store.find_run("zzzz")
    with pytest.raises(RunNotFoundError):
        store.find_run("%")  # LIKE wildcards are matched literally
    with pytest.raises(RunNotFoundError, match="no run reference given"):
        store.find_run("")


def test_find_latest_in_empty_store(store: Store) -> None:
    with pytest.raises(RunNotFoundError, match="no runs yet"):
        store.find_run("latest")


def test_delete_run_removes_its_results_only(store: Store) -> None:
    gone, kept = _start(store), _start(store)
    store.add_case_results(gone, [row_result(1), row_result(2)])
    store.add_case_results(kept, [row_result(1)])
    store.delete_run(gone)
    with pytest.raises(RunNotFoundError):
        store.get_run(gone)
    assert [r.id for r in store.list_runs()] == [kept]
    assert len(store.case_results(kept)) == 1
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM case_results").scalar() == 1


def test_set_total_is_reported(store: Store) -> None:
    run_id = _start(store)
    store.set_total(run_id, 40)
    assert store.get_run(run_id).total == 40


def test_run_ids_are_unique_short_and_time_ordered() -> None:
    ids = [new_run_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert all(len(i) == 16 and i.isalnum() and i.islower() for i in ids)


def test_concurrent_writers_lose_nothing(store: Store) -> None:
    run_id = _start(store)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for batch in range(5):
                start = worker * 1000 + batch * 10
                store.add_case_results(run_id, [row_result(i) for i in range(start, start + 10)])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.get_run(run_id).case_count == 200
    assert len(store.completed_case_keys(run_id)) == 200


_WRITER = """
import sys
sys.path.insert(0, {samples!r})
from store_samples import row_result
from assay.store import Store
with Store.open({url!r}) as store:
    for batch in range(20):
        start = {worker} * 1000 + batch * 5
        store.add_case_results({run_id!r}, [row_result(i) for i in range(start, start + 5)])
"""


def test_processes_write_one_sqlite_file_at_once(tmp_path: Path) -> None:
    # SQLite is where cross-process locking can go wrong (WAL, busy timeout).
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    with Store.open(url) as store:
        run_id = _start(store)
        samples = str(Path(__file__).parent)
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _WRITER.format(samples=samples, url=url, worker=w, run_id=run_id),
                ],
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(2)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        assert store.get_run(run_id).case_count == 200
        assert len(store.completed_case_keys(run_id)) == 200


def test_latencies_are_stored_as_floats_whatever_number_they_were_given_as(
    store: Store,
) -> None:
    """On SQLite the FLOAT column's affinity stores ints as floats itself (SQLAlchemy's
    per-row float() is skipped there, `_bulk._stored_as_given`); PostgreSQL binds them
    through it. Both read back the floats."""
    import dataclasses

    from sqlalchemy import select

    from assay.store.schema import case_results

    run_id = _start(store)
    latencies = [2, 2.5, None, 0]
    store.add_case_results(
        run_id,
        [dataclasses.replace(row_result(i), latency_s=v) for i, v in enumerate(latencies)],
    )
    with store.engine.connect() as conn:
        stored = (
            conn.execute(select(case_results.c.latency_s).order_by(case_results.c.id))
            .scalars()
            .all()
        )
    assert stored == [2.0, 2.5, None, 0.0]
    assert [type(v) for v in stored] == [float, float, type(None), float]


def test_load_stored_run_reads_a_run_of_an_existing_store_only(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    """What `assay runs show`, `assay report` and `assay cases add --from-run` read: the
    named run of a store that exists (a mistyped SQLite path is refused, not created)."""
    from assay.store.reading import load_stored_run

    run_id = _start(store)
    store.add_case_results(run_id, [weather_result()])
    info, result = load_stored_run(store_url, "latest")
    assert info.id == result.run_id == run_id
    assert [c.case_id for c in result.cases] == [weather_result().case_id]
    with pytest.raises(RunNotFoundError):
        load_stored_run(store_url, "zzzz")
    missing = tmp_path / "typo" / "assay.db"
    with pytest.raises(StoreError, match="does not exist"):
        load_stored_run(f"sqlite:///{missing}", "latest")
    assert not missing.parent.exists()
