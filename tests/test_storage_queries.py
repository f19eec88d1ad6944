"""list_runs filters and columns, best speedup, and speed on a 10 000-run history."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import insert, update

from storage.db import Database, open_database
from storage.models import Run, RunTag, VariantResult, utcnow
from storage.queries import RUN_COLUMNS, list_runs, load_runs
from storage.queue import claim_next_run, enqueue_run, finish_run, request_cancel
from storage.results import build_variant_result, save_variant_result, set_environment, set_tags
from tests.test_storage_support import (
    ENVIRONMENT,
    failed_result,
    run_spec,
    variant_result,
)


def _set_created(db: Database, run_id: int, moment: datetime) -> None:
    with db.session(write=True) as session:
        session.execute(update(Run).where(Run.id == run_id).values(created_at=moment))


def _finished_run(db: Database, spec: dict, results: list[dict], env: dict | None = None) -> int:
    run_id = enqueue_run(db, spec)
    claim_next_run(db, "w")
    for result in results:
        save_variant_result(db, run_id, result)
    finish_run(db, run_id, "done", environment=env or ENVIRONMENT)
    return run_id


def test_columns_types_and_best_speedup(db):
    sweep = run_spec(sweep={"dim": "batch", "values": [32, 64]})
    run_id = _finished_run(
        db,
        sweep,
        [
            variant_result("eager"),  # speedup 1.0 but not a compile variant
            variant_result("default", stats={"speedup": 1.8}),
            variant_result("reduce-overhead", stats={"speedup": 2.4}),
            failed_result("max-autotune") | {"stats": {"speedup": 9.9}},  # failed: ignored
        ],
    )
    no_results = enqueue_run(db, run_spec(model="resnet50"))
    runs = list_runs(db)
    assert list(runs.columns) == RUN_COLUMNS
    assert runs["run_id"].tolist() == [no_results, run_id]  # newest first
    done = runs.iloc[1]
    assert done["best_speedup"] == 2.4
    assert done["dims"] == {"batch": 32, "hidden": 1024}
    assert done["dims_label"] == "batch=32/64, hidden=1024"  # a sweep shows every value
    assert done["sweep_dim"] == "batch"
    assert done["spec"] == sweep
    assert (done["gpu"], done["torch_version"], done["status"]) == (
        "NVIDIA H200",
        "2.11.0+cu128",
        "done",
    )
    assert isinstance(done["created_at"], pd.Timestamp) and done["created_at"].tzinfo is not None
    queued = runs.iloc[0]
    assert pd.isna(queued["best_speedup"]) and queued["sweep_dim"] is None
    assert queued["gpu"] is None and pd.isna(queued["finished_at"])


def test_filters(db):
    now = utcnow()
    a = _finished_run(db, run_spec(model="mlp", device="cuda"), [variant_result("default")])
    b = _finished_run(
        db,
        run_spec(model="bert", device="cuda"),
        [variant_result("default")],
        env={**ENVIRONMENT, "gpu": "NVIDIA A100-SXM4-80GB"},
    )
    c = enqueue_run(db, run_spec(model="mlp", device="cpu"))
    set_environment(db, c, {"torch": "2.13.0+cpu", "gpu": None})
    set_tags(db, a, ["baseline"])
    set_tags(db, b, ["baseline", "pr-7"])
    _set_created(db, a, now - timedelta(days=3))
    _set_created(db, b, now - timedelta(days=1))

    def ids(**filters) -> list[int]:
        return list_runs(db, **filters)["run_id"].tolist()

    assert ids() == [c, b, a]
    assert ids(model="mlp") == [c, a]
    assert ids(model=["mlp", "bert"]) == [c, b, a]
    assert ids(device="cpu") == [c]
    assert ids(gpu="NVIDIA H200") == [a]
    assert ids(gpu="cpu") == [c]
    assert ids(status="queued") == [c]
    assert ids(status=["done"]) == [b, a]
    assert ids(tag="baseline") == [b, a]
    assert ids(tag="pr-7") == [b]
    assert ids(tag="nothing") == []
    assert ids(since=now - timedelta(days=2)) == [c, b]
    assert ids(until=now - timedelta(days=2)) == [a]
    assert ids(since=(now - timedelta(days=1)).date(), until=(now - timedelta(days=1)).date()) == [
        b
    ]
    assert ids(until=date(2000, 1, 1)) == []
    assert ids(since=datetime(2000, 1, 1)) == [c, b, a]  # naive datetimes are UTC
    assert ids(model="mlp", status="done", tag="baseline") == [a]
    assert ids(limit=2) == [c, b]
    empty = list_runs(db, model="nothing")
    assert list(empty.columns) == RUN_COLUMNS and empty.empty


def test_cancel_requested_is_a_column_every_viewer_sees(db):
    running = enqueue_run(db, run_spec())
    calm = enqueue_run(db, run_spec())
    assert claim_next_run(db, "w")[0] == running
    assert request_cancel(db, running) == "running"
    runs = list_runs(db).set_index("run_id")
    assert runs.loc[running, "status"] == "running"
    assert runs.loc[running, "cancel_requested"] is True  # a Python bool: `is True` works
    assert runs.loc[calm, "cancel_requested"] is False
    loaded = load_runs(db, [running, calm])["runs"]
    assert loaded["cancel_requested"].tolist() == [True, False]
    assert loaded["cancel_requested"].dtype == object
    # The worker then finishes the run as cancelled; the flag stays as history.
    assert finish_run(db, running, "cancelled", worker_id="w")
    runs = list_runs(db).set_index("run_id")
    assert runs.loc[running, "status"] == "cancelled"
    assert runs.loc[running, "cancel_requested"] is True


def test_load_runs_keeps_the_requested_order_and_skips_unknown_ids(db):
    a = _finished_run(db, run_spec(), [variant_result("eager")])
    b = _finished_run(db, run_spec(), [variant_result("eager")])
    frames = load_runs(db, [b, 12345, a, b])
    assert frames["runs"]["run_id"].tolist() == [b, a]
    assert frames["variants"]["run_id"].tolist() == [b, a]
    assert all(list(frame.columns) for frame in load_runs(db, []).values())


# ---- speed on a long history (SQLite, the one-machine default) ----

N_RUNS = 10_000
VARIANTS = ("eager", "default", "reduce-overhead", "max-autotune")


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    db = build_big_database(tmp_path_factory.mktemp("big") / "big.db")
    yield db
    db.dispose()


def build_big_database(path: Path) -> Database:
    """10 000 finished runs with 4 realistic variants each, written in bulk."""
    db = open_database(f"sqlite:///{path}")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    models = ["mlp", "bert", "resnet50", "layernorm_chain", "plugin:attention"]
    runs, tags, variants = [], [], []
    template = {name: build_variant_result(variant_result(name)) for name in VARIANTS}
    columns = [c.key for c in VariantResult.__table__.columns if c.key not in ("id", "run_id")]
    for i in range(1, N_RUNS + 1):
        spec = run_spec(model=models[i % len(models)], dims={"batch": 2 ** (i % 7), "hidden": 1024})
        runs.append(
            {
                "id": i,
                "created_at": start + timedelta(minutes=i),
                "started_at": None,
                "finished_at": start + timedelta(minutes=i, seconds=40),
                "status": "done",
                "model": spec["model"],
                "dims": spec["dims"],
                "dtype": "float32",
                "device": "cuda",
                "spec": spec,
                "note": "",
                "environment": ENVIRONMENT,
                "gpu": ENVIRONMENT["gpu"],
                "torch_version": ENVIRONMENT["torch"],
                "attempts": 1,
                "cancel_requested": False,
            }
        )
        tags.append({"run_id": i, "tag": f"batch-{i % 10}"})
        for name in VARIANTS:
            row = {c: getattr(template[name], c) for c in columns}
            variants.append(row | {"run_id": i, "variant": name, "speedup": 1 + (i % 13) / 10})
    with db.engine.begin() as conn:  # Core executemany: the ORM's per-row work is not needed
        conn.execute(insert(Run.__table__), runs)
        conn.execute(insert(RunTag.__table__), tags)
        conn.execute(insert(VariantResult.__table__), variants)
    return db


def _best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@pytest.mark.host_timing
def test_list_runs_and_load_runs_are_fast_on_10k_runs(big_db):
    runs = list_runs(big_db)
    assert len(runs) == N_RUNS
    assert runs["best_speedup"].iloc[0] == 1 + (N_RUNS % 13) / 10
    elapsed = _best_of(lambda: list_runs(big_db))
    assert elapsed < 0.8, f"list_runs of {N_RUNS} runs took {elapsed:.2f} s"
    elapsed = _best_of(lambda: list_runs(big_db, model="bert", tag="batch-3", limit=200))
    assert elapsed < 0.2, f"filtered list_runs took {elapsed:.2f} s"

    ids = [17, 4_000, 9_999, 123]
    frames = load_runs(big_db, ids)
    assert frames["runs"]["run_id"].tolist() == ids
    assert len(frames["variants"]) == 16
    assert len(frames["samples"]) == 4 * sum(
        len(variant_result(v)[k])
        for v in VARIANTS
        for k in ("samples_ms", "pipelined_ms", "eager_samples_ms", "eager_pipelined_ms")
    )
    elapsed = _best_of(lambda: load_runs(big_db, ids))
    assert elapsed < 0.3, f"load_runs of 4 runs took {elapsed:.2f} s"


def test_host_load_comes_from_extra_and_show_says_when_it_was_busy(db):
    from engine.analysis.show import format_run

    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w")
    save_variant_result(db, run_id, variant_result("eager", host_other_busy_cores=0.1))
    save_variant_result(db, run_id, variant_result("reduce-overhead", host_other_busy_cores=1.4))
    finish_run(db, run_id, "done", environment=ENVIRONMENT)
    variants = load_runs(db, [run_id])["variants"]
    assert variants["host_other_busy_cores"].tolist() == [0.1, 1.4]
    text = format_run(db, run_id)
    assert "host busy [reduce-overhead]: other processes kept 1.4 CPU cores busy" in text
    assert "host busy [eager]" not in text


def test_show_keeps_the_dirty_mark_of_the_commit(db):
    """The commit is shortened to 10 hex digits, but "+dirty" (the code that ran differed from
    that commit) must survive: the H200 run of 2026-12-02 printed a bare "c4e9715da9"."""
    from engine.analysis.show import format_run

    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w")
    save_variant_result(db, run_id, variant_result("eager"))
    finish_run(db, run_id, "done", environment={
        **ENVIRONMENT, "commit": "c4e9715da9b17c51c3079045bf878bfee747f2ca+dirty"})
    assert "commit c4e9715da9+dirty" in format_run(db, run_id)
