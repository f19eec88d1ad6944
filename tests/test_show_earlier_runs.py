"""``show`` names an earlier run of the same configuration whose speedup this run's is further
from than both intervals allow (engine/analysis/show.earlier_lines, storage/history)."""

from __future__ import annotations

from gate_support import finished_run, spread
from sqlalchemy import update

from engine.analysis.show import format_run
from storage import open_database
from storage.history import earlier_same_config
from storage.models import Run
from storage.records import load_run


def _db(tmp_path):
    return open_database(f"sqlite:///{tmp_path / 's.db'}")


def test_a_run_apart_from_an_earlier_one_is_named(tmp_path):
    db = _db(tmp_path)
    first = finished_run(db, spread(2.0, 0.01, k=4, seed=0))
    second = finished_run(db, spread(2.0, 0.01, k=4, seed=1))
    third = finished_run(db, spread(2.6, 0.01, k=4, seed=2))
    assert earlier_same_config(db, load_run(db, third)["spec"], third) == [second, first]
    text = format_run(db, third, width=None)
    assert "earlier runs of this configuration (2, 1), further apart than both intervals" in text
    assert "default 2.6× ±" in text and "in run 2" in text and "in run 1" in text
    alike = format_run(db, second, width=None)
    assert "earlier runs of this configuration (1): every compiled speedup here repeats" in alike
    assert "earlier runs" not in format_run(db, first, width=None)


def test_other_configs_and_hostile_specs_are_not_compared(tmp_path):
    db = _db(tmp_path)
    finished_run(db, spread(2.0, 0.01, k=4, seed=0), batch=16)  # another config
    broken = finished_run(db, spread(2.0, 0.01, k=4, seed=1))
    with db.session() as s:
        s.execute(update(Run).where(Run.id == broken).values(spec="not a spec"))
    last = finished_run(db, spread(2.6, 0.01, k=4, seed=2))
    assert earlier_same_config(db, load_run(db, last)["spec"], last) == []  # other, broken
    assert "earlier runs" not in format_run(db, last, width=None)
    assert earlier_same_config(db, "mlp", last) == []
    assert earlier_same_config(db, {"model": ["mlp"]}, last) == []


def test_show_json_carries_the_same_comparison(tmp_path):
    import json

    from engine.analysis.show import run_json

    db = _db(tmp_path)
    first = finished_run(db, spread(2.0, 0.01, k=4, seed=0))
    second = finished_run(db, spread(2.6, 0.01, k=4, seed=2))
    found = json.loads(json.dumps(run_json(db, second), default=str, allow_nan=False))
    assert found["earlier_runs"]["runs"] == [first]
    (pair,) = found["earlier_runs"]["apart"]
    assert pair["variant"] == "default" and pair["run_id"] == first
    assert pair["earlier_speedup"] < 2.1 < 2.5 < pair["speedup"]
    assert pair["difference"] > pair["allowed"] > 0
    assert pair["cause"] is None  # these runs stored no device times
    assert run_json(db, first)["earlier_runs"] is None


def test_nothing_compared_is_not_called_a_repeat(tmp_path):
    """A run that ended before any compiled variant finished (cancelled after eager) has no
    speedup to compare: no "every compiled speedup here repeats" line, ``compared`` 0."""
    import json

    from engine.analysis.show import run_json
    from storage import queue, results

    db = _db(tmp_path)
    first = finished_run(db, spread(2.0, 0.01, k=4, seed=0))
    spec = load_run(db, first)["spec"]
    run_id = queue.enqueue_run(db, spec)
    assert queue.claim_run(db, run_id, "w") is not None
    eager = next(v for v in load_run(db, first)["variants"] if v["variant"] == "eager")
    results.save_variant_result(db, run_id, {k: v for k, v in eager.items()
                                             if k not in ("id", "run_id")})
    queue.finish_run(db, run_id, "cancelled")
    found = json.loads(json.dumps(run_json(db, run_id), default=str, allow_nan=False))
    assert found["earlier_runs"]["runs"] == [first] and found["earlier_runs"]["compared"] == 0
    text = format_run(db, run_id, width=None)
    assert "earlier runs" not in text and "repeats" not in text
    assert "No compiled variant was measured" in text and "Ship eager" not in text
    assert run_json(db, finished_run(db, spread(2.0, 0.01, k=4, seed=3)))[
        "earlier_runs"]["compared"] >= 1
