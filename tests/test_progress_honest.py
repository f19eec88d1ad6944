"""Progress that agrees with the run's state (issue 40, item 3): a variant whose figures are
provisional (more measuring processes may come) is not counted as finished ("Variants finished
2/2" showed while it measured for 12 s more), the sidebar names the running runs, and a worker
is not "busy with" a run that has ended (it said so until the worker's next heartbeat)."""

from __future__ import annotations

import json

import pytest
from test_dashboard_app import app, no_exceptions
from test_dashboard_data import mlp_results, spec

from dashboard import hardware
from storage import queue, results
from storage.workers import Capabilities, beat_worker, live_workers, queue_summary, register_worker


@pytest.fixture
def db(app_db):
    return app_db


def _running_with_a_provisional_variant(db) -> int:
    run_id = queue.enqueue_run(db, spec("mlp", variants=["eager", "default"]))
    queue.claim_run(db, run_id, "w")
    eager, default = json.loads(json.dumps(mlp_results()[:2]))
    default["stats"]["provisional"] = True  # one process in, more may come
    results.save_variant_result(db, run_id, eager)
    results.save_variant_result(db, run_id, default)
    return run_id


def test_a_provisional_variant_is_not_counted_finished(db):
    run_id = _running_with_a_provisional_variant(db)
    at = app("new_run", watch=str(run_id))
    no_exceptions(at)
    bar = next(str(p.proto.text) for p in at.get("progress"))
    assert "variants final 1/2 (default provisional)" in bar, bar
    captions = "\n".join(str(c.value) for c in at.caption).replace("\\", "")  # safe.md
    assert "default: ok (provisional)" in captions, captions


def test_the_queue_line_names_the_running_runs_and_busy_means_running(db):
    register_worker(db, "w1", Capabilities(devices=("cpu",), torch_version="2.13"), host="box",
                    pid=1)
    run_id = queue.enqueue_run(db, spec("mlp"))
    queue.claim_run(db, run_id, "w1")
    beat_worker(db, "w1", run_id)
    state = hardware.queue_state(queue_summary(db), live_workers(db))
    assert state.text() == f"1 running (#{run_id}), 0 queued"
    assert f"busy with run #{run_id}" in hardware.describe_worker(state.workers[0])
    queue.finish_run(db, run_id, "done")  # the worker has not beaten since
    state = hardware.queue_state(queue_summary(db), live_workers(db))
    assert state.text() == "queue empty"
    assert "busy" not in hardware.describe_worker(state.workers[0])
