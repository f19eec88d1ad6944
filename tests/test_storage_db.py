"""Opening the database: URL resolution, migrations from empty, pragmas, concurrent first opens."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from storage.db import (
    DEFAULT_URL,
    ENV_VAR,
    SchemaError,
    current_revision,
    head_revision,
    open_database,
    resolve_url,
)
from storage.models import Base
from tests.test_storage_support import BACKENDS, backend_url


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
        # The hand-written initial revision and the models describe the same schema.
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        # Reopening an up-to-date database is a no-op.
        open_database(storage_url).dispose()
        assert current_revision(db.engine) == head_revision()
    finally:
        db.dispose()


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
