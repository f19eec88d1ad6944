"""The run queue: enqueue/claim order, heartbeat and cancel, stale recovery, requeue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from storage.db import Database
from storage.models import Run, utcnow
from storage.queries import list_runs, load_runs
from storage.queue import (
    WORKER_LOST_ERROR,
    RunNotFound,
    claim_next_run,
    claim_run,
    enqueue_run,
    finish_run,
    heartbeat,
    recover_stale_runs,
    request_cancel,
    requeue_run,
    silence_note,
    silent_for_s,
)
from tests.test_storage_support import ENVIRONMENT, failed_result, run_spec, variant_result


def _run(db: Database, run_id: int) -> Run:
    with db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run


def _age_heartbeat(db: Database, run_id: int, seconds: float) -> None:
    with db.session(write=True) as session:
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(heartbeat_at=utcnow() - timedelta(seconds=seconds))
        )


def test_enqueue_stores_spec_and_filter_columns(db):
    spec = run_spec(model="bert", dims={"batch": 8, "seq": 128}, dtype="bfloat16")
    run_id = enqueue_run(db, spec, tags=["baseline", " baseline ", "pr-12"], note="first")
    run = _run(db, run_id)
    assert (run.status, run.model, run.dims, run.dtype, run.device) == (
        "queued",
        "bert",
        {"batch": 8, "seq": 128},
        "bfloat16",
        "cuda",
    )
    assert run.spec == spec
    assert run.note == "first"
    assert run.created_at.tzinfo is not None
    assert run.progress_phase == "queued"
    assert list_runs(db)["tags"].iloc[0] == ["baseline", "pr-12"]


def test_enqueue_rejects_spec_without_model(db):
    with pytest.raises(ValueError, match="model"):
        enqueue_run(db, {"dims": {}})


def test_claims_oldest_first_and_each_run_once(db):
    ids = [enqueue_run(db, run_spec(seed=i)) for i in range(3)]
    claimed = [claim_next_run(db, "worker-a") for _ in range(3)]
    assert [c[0] for c in claimed] == ids
    assert [c[1]["seed"] for c in claimed] == [0, 1, 2]
    assert claim_next_run(db, "worker-a") is None
    run = _run(db, ids[0])
    assert (run.status, run.worker_id, run.attempts) == ("running", "worker-a", 1)
    assert run.started_at is not None and run.heartbeat_at is not None


def test_claim_run_takes_one_specific_queued_run(db):
    first, second = enqueue_run(db, run_spec()), enqueue_run(db, run_spec(seed=7))
    assert claim_run(db, second, "cli-1") == run_spec(seed=7)
    assert claim_run(db, second, "cli-2") is None  # already taken
    assert claim_next_run(db, "worker")[0] == first


def test_heartbeat_records_progress_and_answers_cancel(db):
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    assert heartbeat(db, run_id, "w1", variant="default", phase="compiling", fraction=0.25)
    # A bare keep-alive beat keeps the last known progress.
    assert heartbeat(db, run_id, "w1")
    run = _run(db, run_id)
    assert (run.progress_variant, run.progress_phase, run.progress_fraction) == (
        "default",
        "compiling",
        0.25,
    )
    assert request_cancel(db, run_id) == "running"
    assert _run(db, run_id).cancel_requested
    assert heartbeat(db, run_id, "w1", phase="measuring") is False
    assert finish_run(db, run_id, "cancelled", error="cancelled by the user", worker_id="w1")
    run = _run(db, run_id)
    assert (run.status, run.error) == ("cancelled", "cancelled by the user")
    assert run.finished_at is not None


def test_heartbeat_fits_long_progress_text_into_its_columns(db):
    """A phase longer than its column (PostgreSQL refuses it where SQLite keeps it) is cut with
    an ellipsis; the beat still lands and still answers."""
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    long_phase = "building · at least 26 s left, start-up is taking longer than expected"
    assert heartbeat(db, run_id, "w1", variant="v" * 100, phase=long_phase, fraction=0.1)
    run = _run(db, run_id)
    assert run.progress_phase == long_phase[:63] + "…" and len(run.progress_variant) == 64
    assert run.progress_variant.endswith("…")


def test_heartbeat_from_a_worker_that_lost_the_run_is_refused(db):
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    assert heartbeat(db, run_id, "someone-else") is False
    assert heartbeat(db, 999_999, "w1") is False


def test_cancel_of_queued_run_is_immediate(db):
    run_id = enqueue_run(db, run_spec())
    assert request_cancel(db, run_id) == "cancelled"
    assert claim_next_run(db, "w1") is None
    assert _run(db, run_id).finished_at is not None
    # Cancelling again, or finishing a cancelled run, changes nothing.
    assert request_cancel(db, run_id) == "cancelled"
    assert finish_run(db, run_id, "done") is False
    with pytest.raises(RunNotFound):
        request_cancel(db, 424242)


def test_finish_run_sets_environment_and_denormalised_columns(db):
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    assert finish_run(db, run_id, "done", environment=ENVIRONMENT, worker_id="w1")
    run = _run(db, run_id)
    assert (run.status, run.gpu, run.torch_version) == ("done", "NVIDIA H200", "2.11.0+cu128")
    assert run.environment == ENVIRONMENT
    with pytest.raises(ValueError, match="status"):
        finish_run(db, run_id, "running")


def test_finish_run_by_a_worker_that_lost_the_run_is_ignored(db):
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    assert finish_run(db, run_id, "done", worker_id="w2") is False
    assert _run(db, run_id).status == "running"


def test_stale_run_is_requeued_once_then_fails_as_worker_lost(db):
    run_id = enqueue_run(db, run_spec())
    assert claim_next_run(db, "w1")[0] == run_id
    assert recover_stale_runs(db, 60) == []  # heartbeat is fresh
    _age_heartbeat(db, run_id, 120)
    assert recover_stale_runs(db, 60) == [run_id]
    run = _run(db, run_id)
    assert (run.status, run.worker_id, run.attempts, run.heartbeat_at) == ("queued", None, 1, None)
    # The old worker wakes up: it no longer owns the run.
    assert heartbeat(db, run_id, "w1") is False

    assert claim_next_run(db, "w2")[0] == run_id
    assert _run(db, run_id).attempts == 2
    _age_heartbeat(db, run_id, 120)
    assert recover_stale_runs(db, 60) == [run_id]
    run = _run(db, run_id)
    assert (run.status, run.error) == ("failed", WORKER_LOST_ERROR)
    assert run.finished_at is not None
    assert claim_next_run(db, "w3") is None


def test_stale_run_with_a_pending_cancel_ends_cancelled(db):
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    request_cancel(db, run_id)
    _age_heartbeat(db, run_id, 120)
    assert recover_stale_runs(db, 60) == [run_id]
    assert _run(db, run_id).status == "cancelled"


def test_requeue_run_hands_the_run_back_without_counting_an_attempt(db):
    first = enqueue_run(db, run_spec())
    second = enqueue_run(db, run_spec())
    assert claim_next_run(db, "w1")[0] == first
    assert requeue_run(db, first, "w2") is False  # not w2's run
    assert requeue_run(db, first, "w1") is True
    run = _run(db, first)
    assert (run.status, run.attempts, run.worker_id) == ("queued", 0, None)
    # A re-queued run keeps its place: it is still the oldest.
    assert claim_next_run(db, "w2")[0] == first
    assert claim_next_run(db, "w2")[0] == second


def test_finish_run_saves_held_results_with_the_end_and_only_for_its_owner(db):
    """A cancelled run's held results land in the transaction that ends it: a reader that sees
    the run final sees them too (the last one of a variant wins); a worker that lost the run
    writes neither."""
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w1")
    early = failed_result("default", "cancelled")
    late = {**early, "error": "cancelled by the user (second process)"}
    assert finish_run(db, run_id, "cancelled", worker_id="w2", results=[early]) is False
    assert load_runs(db, [run_id])["variants"].empty
    assert finish_run(db, run_id, "cancelled", error="cancelled by the user", worker_id="w1",
                      results=[variant_result("eager"), early, late])
    variants = load_runs(db, [run_id])["variants"].set_index("variant")
    assert _run(db, run_id).status == "cancelled"
    assert sorted(variants.index) == ["default", "eager"]
    assert variants.loc["default", "error"] == late["error"]


def test_a_running_run_is_called_silent_only_past_the_threshold():
    """``silent_for_s``: the reader's side of recovery. Hostile or missing heartbeats, other
    statuses and a heartbeat ahead of this clock are never called silent."""
    from datetime import UTC, datetime

    import pandas as pd

    from storage.queue_recovery import SILENT_AFTER_S

    now = datetime(2026, 12, 7, 22, 0, tzinfo=UTC)
    ago = now - timedelta(seconds=SILENT_AFTER_S + 60)
    assert silent_for_s("running", ago, now) == pytest.approx(SILENT_AFTER_S + 60)
    assert silent_for_s("running", ago.replace(tzinfo=None), now) == pytest.approx(
        SILENT_AFTER_S + 60)  # SQLite hands back naive UTC
    assert silent_for_s("running", pd.Timestamp(ago), now) == pytest.approx(SILENT_AFTER_S + 60)
    for status, beat in [("running", now - timedelta(seconds=SILENT_AFTER_S - 1)),
                         ("done", ago), ("queued", ago), ("running", None),
                         ("running", pd.NaT), ("running", "2026-12-07T20:00:00"),
                         ("running", now + timedelta(hours=1)), (["running"], ago)]:
        assert silent_for_s(status, beat, now) is None, (status, beat)
    assert silence_note(14 * 60).startswith("no heartbeat for 14 min: ")
    assert "worker --once" in silence_note(14 * 60)
    assert "6.0 h" in silence_note(6 * 3600) and "3 days" in silence_note(3 * 86400)
    assert "slurm reconcile" in silence_note(600, slurm=True)
