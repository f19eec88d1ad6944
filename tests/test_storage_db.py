"""Opening the database: URL resolution, migrations from empty, pragmas, concurrent first opens."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, MetaData, func, insert, inspect, select, text

from storage.db import (
    DEFAULT_URL,
    ENV_VAR,
    HEAD_REVISION,
    SchemaError,
    alembic_config,
    create_db_engine,
    current_revision,
    head_revision,
    open_database,
    resolve_url,
)
from storage.models import Base, utcnow
from storage.queries import load_runs
from storage.queue import claim_next_run, enqueue_run
from storage.results import build_variant_result, save_variant_result
from tests.test_storage_support import (
    BACKENDS,
    ENVIRONMENT,
    backend_url,
    run_spec,
    variant_result,
)


@pytest.fixture(params=BACKENDS)
def storage_url(request: pytest.FixtureRequest, tmp_path: Path):
    with backend_url(request.param, tmp_path) as url:
        yield url


def test_url_comes_from_argument_then_environment_then_default(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, "sqlite:///from-env.db")
    assert resolve_url("sqlite:///arg.db").database == "arg.db"
    assert resolve_url().database == "from-env.db"
    monkeypatch.delenv(ENV_VAR)
    assert resolve_url().render_as_string() == DEFAULT_URL


def test_postgres_urls_get_psycopg_driver():
    assert resolve_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert resolve_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert resolve_url("postgresql+psycopg2://u@h/db").drivername == "postgresql+psycopg2"


def test_default_database_is_created_in_cwd(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    db = open_database()
    try:
        assert (tmp_path / "compilelab.db").exists()
    finally:
        db.dispose()


def test_the_head_revision_constant_is_alembics_head():
    """``HEAD_REVISION`` lets an up-to-date database open without importing Alembic; a new
    migration must move it too, or every open would take the slow path (and this fails)."""
    assert head_revision() == HEAD_REVISION


def test_opening_an_up_to_date_database_imports_no_alembic(tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    open_database(url).dispose()  # creates and migrates (Alembic)
    code = ("import sys; from storage import open_database; open_database(sys.argv[1]).dispose();"
            " print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))")
    out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "[]"


def test_migrates_empty_database_to_head(storage_url):
    db = open_database(storage_url)
    try:
        assert current_revision(db.engine) == head_revision()
        tables = set(inspect(db.engine).get_table_names())
        assert {
            "runs",
            "run_tags",
            "variant_results",
            "graph_breaks",
            "recompiles",
            "sweep_points",
            "alembic_version",
        } <= tables
        columns = {c["name"] for c in inspect(db.engine).get_columns("sweep_points")}
        assert "eager_median_ms" in columns  # revision 0002
        # The hand-written revisions and the models describe the same schema.
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        # Reopening an up-to-date database is a no-op.
        open_database(storage_url).dispose()
        assert current_revision(db.engine) == head_revision()
    finally:
        db.dispose()


def _migrate(engine: Engine, revision: str, *, down: bool = False) -> None:
    """Move the schema to ``revision`` in one transaction, as storage.db does for head."""
    with engine.begin() as conn:
        cfg = alembic_config(connection=conn)
        (command.downgrade if down else command.upgrade)(cfg, revision)


def _fill_at_0001(engine: Engine) -> tuple[int, dict]:
    """A finished run with results, written into a database still at revision 0001.

    Everything goes in through Core on the *reflected* 0001 tables, with the columns 0001 had
    (today's entities would read and write runs.require_gpu and sweep_points.eager_median_ms).
    """
    spec = run_spec(sweep={"dim": "batch", "values": [32, 64]})
    old = MetaData()
    with engine.begin() as conn:
        old.reflect(conn)
        assert "require_gpu" not in old.tables["runs"].c  # really at 0001
        now = utcnow()
        run_id = conn.execute(insert(old.tables["runs"]).values(
            created_at=now, started_at=now, finished_at=now, status="done",
            model=spec["model"], dims=spec["dims"], dtype=spec["dtype"], device=spec["device"],
            spec=spec, note="old", environment=ENVIRONMENT, attempts=1,
            cancel_requested=False)).inserted_primary_key[0]
        conn.execute(insert(old.tables["run_tags"]).values(run_id=run_id, tag="before-0002"))
    result = variant_result("reduce-overhead")
    entity = build_variant_result(result)
    with engine.begin() as conn:
        assert "eager_median_ms" not in old.tables["sweep_points"].c
        variants = old.tables["variant_results"]
        values = {c.key: getattr(entity, c.key) for c in variants.c if c.key not in ("id",)}
        variant_id = conn.execute(
            insert(variants).values({**values, "run_id": run_id})
        ).inserted_primary_key[0]
        for table, key in (
            ("graph_breaks", "graph_breaks"),
            ("recompiles", "recompiles"),
            ("sweep_points", "sweep"),
        ):
            columns = old.tables[table].c
            for position, item in enumerate(result[key]):
                row = {k: v for k, v in item.items() if k in columns}
                row.update(variant_result_id=variant_id, position=position)
                conn.execute(insert(old.tables[table]).values(row))
    return run_id, result


def test_upgrade_from_0001_keeps_the_data(storage_url):
    engine = create_db_engine(resolve_url(storage_url))
    try:
        _migrate(engine, "0001")
        assert current_revision(engine) == "0001"
        run_id, result = _fill_at_0001(engine)
    finally:
        engine.dispose()

    db = open_database(storage_url)  # upgrades 0001 -> head
    try:
        assert current_revision(db.engine) == head_revision()
        frames = load_runs(db, [run_id])
        run = frames["runs"].iloc[0]
        assert (run["status"], run["note"], run["tags"]) == ("done", "old", ["before-0002"])
        assert run["environment"] == ENVIRONMENT and run["cancel_requested"] is False
        row = frames["variants"].iloc[0]
        assert (row["variant"], row["median_ms"], row["speedup"]) == (
            "reduce-overhead",
            0.097,
            0.66,
        )
        assert frames["samples"]["ms"].size == sum(
            len(result[k])
            for k in ("samples_ms", "pipelined_ms", "eager_samples_ms", "eager_pipelined_ms")
        )
        assert len(frames["graph_breaks"]) == 2 and len(frames["recompiles"]) == 1
        sweep = frames["sweep_points"]
        old_columns = ["value", "first_call_ms", "median_ms", "p10_ms", "p90_ms", "n", "recompiled"]
        assert sweep[old_columns].to_dict("records") == [
            {k: point[k] for k in old_columns} for point in result["sweep"]
        ]
        assert sweep["eager_median_ms"].isna().all()  # 0001 never stored it

        # New results of the same run keep the paired eager median.
        save_variant_result(db, run_id, variant_result("reduce-overhead"))
        sweep = load_runs(db, [run_id])["sweep_points"]
        assert sweep["eager_median_ms"].tolist() == [0.064, 0.083]
    finally:
        db.dispose()


def test_downgrade_to_0001_drops_only_the_new_column(storage_url):
    db = open_database(storage_url)
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w")
    save_variant_result(db, run_id, variant_result("reduce-overhead"))
    db.dispose()
    engine = create_db_engine(resolve_url(storage_url))
    try:
        _migrate(engine, "0001", down=True)
        assert current_revision(engine) == "0001"
        columns = {c["name"] for c in inspect(engine).get_columns("sweep_points")}
        assert "eager_median_ms" not in columns and "median_ms" in columns
        with engine.connect() as conn:
            medians = conn.execute(text("SELECT median_ms FROM sweep_points ORDER BY position"))
            assert [m for (m,) in medians] == [0.097, 0.121]
            assert conn.execute(select(func.count()).select_from(text("variant_results"))).scalar()
    finally:
        engine.dispose()
    open_database(storage_url).dispose()  # and back up to head


def test_runs_page_filters_are_indexed(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'x.db'}")
    indexed = {tuple(ix["column_names"]) for ix in inspect(db.engine).get_indexes("runs")}
    assert {("created_at",), ("model",), ("status", "created_at", "id")} <= indexed
    db.dispose()


def test_sqlite_connections_use_wal_busy_timeout_and_foreign_keys(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'x.db'}")
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    db.dispose()


def test_database_newer_than_code_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    db = open_database(url)
    with db.session(write=True) as session:
        session.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    db.dispose()
    with pytest.raises(SchemaError, match="newer Compile Lab"):
        open_database(url)


def test_session_rolls_back_on_error(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(RuntimeError), db.session(write=True) as session:
        session.execute(text("UPDATE alembic_version SET version_num = 'oops'"))
        raise RuntimeError("boom")
    assert current_revision(db.engine) == head_revision()
    db.dispose()


def _open_at_once(url: str, barrier, results) -> None:
    barrier.wait(timeout=60)
    try:
        db = open_database(url)
        results.put(current_revision(db.engine))
        db.dispose()
    except Exception as exc:  # reported to the parent, which fails the test
        results.put(f"error: {exc!r}")


def test_concurrent_first_opens_of_a_new_database(storage_url):
    """Several processes (workers, dashboard) may create the same database at the same moment."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [
        ctx.Process(target=_open_at_once, args=(storage_url, barrier, results)) for _ in range(4)
    ]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=90) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    assert outcomes == [head_revision()] * 4


_WORKER_HOST_SCRIPT = """
import sys

class NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            raise ImportError("pandas is not installed on this GPU host")

sys.meta_path.insert(0, NoPandas())
from storage import open_database, queue, results

db = open_database(sys.argv[1])
run_id = queue.enqueue_run(db, {"model": "mlp", "dims": {}})
assert queue.claim_next_run(db, "gpu0")[0] == run_id
assert queue.heartbeat(db, run_id, "gpu0", phase="measuring")
results.save_variant_result(db, run_id, {"variant": "eager", "status": "ok"})
assert queue.finish_run(db, run_id, "done", worker_id="gpu0")
assert "pandas" not in sys.modules
print("ok")
"""


def test_the_worker_path_needs_no_pandas(tmp_path):
    """requirements-engine.txt has no pandas: a GPU host imports storage without it."""
    done = subprocess.run(
        [sys.executable, "-c", _WORKER_HOST_SCRIPT, f"sqlite:///{tmp_path / 'w.db'}"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
