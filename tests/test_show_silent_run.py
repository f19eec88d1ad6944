"""``show`` of a run whose process died without ending it (the machine vanished, kill -9 with
no worker on the database): the status says it stopped heartbeating and what settles it."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from engine.analysis.show import format_run, run_json
from storage import open_database, queue
from storage.models import Run, utcnow
from storage.slurm_jobs import record_submission
from tests.test_storage_support import run_spec


def _running(db, minutes: float) -> int:
    run_id = queue.enqueue_run(db, run_spec())
    assert queue.claim_run(db, run_id, "cli:gone-host:4242") is not None
    with db.session(write=True) as session:
        session.execute(update(Run).where(Run.id == run_id)
                        .values(heartbeat_at=utcnow() - timedelta(minutes=minutes)))
    return run_id


def test_a_silent_running_run_says_so_and_a_live_one_does_not(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 's.db'}")
    silent, live = _running(db, 14), _running(db, 0)
    text = format_run(db, silent, width=None)
    assert "| status running (no heartbeat for 14 min: the process running it seems to have " \
           "stopped without ending the run; a worker on this database recovers it" in text
    assert run_json(db, silent)["heartbeat_at"]  # show --json carries the reading
    assert "| status running\n" in format_run(db, live, width=None)
    record_submission(db, silent, 12, partition="gpu", time_limit_min=30, log_path=None)
    assert "the Slurm reconciler ends it" in format_run(db, silent, width=None)
    queue.finish_run(db, silent, "failed", error="worker lost")
    assert "no heartbeat" not in format_run(db, silent, width=None)
