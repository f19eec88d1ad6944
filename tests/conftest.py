"""Shared test helpers: run the CLI as a user would, in a subprocess, against a temp database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import engine.spec  # noqa: F401  (installs the validator storage checks imported specs with)
from tests.test_storage_support import BACKENDS, backend_url

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Budgets small enough for a 2-core CI machine; the protocol is the same as on a GPU.
# One measuring process per compiled variant (two with the warm-cache compile): the tests that
# are about several processes ask for them.
FAST = ["--warmup-calls", "3", "--min-samples", "5", "--min-time", "0", "--max-time", "1",
        "--pipeline-k", "3", "--processes", "1", "--max-processes", "1"]


def run_cli(*args: str, db_url: str | None = None, env: dict | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    cmd = [sys.executable, "-m", "engine", *args]
    if db_url and args and args[0] in ("run", "show", "cancel", "worker"):
        cmd += ["--db", db_url]
    return subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'test.db'}"


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path):
    """An opened storage database on each backend (PostgreSQL only where
    COMPILELAB_TEST_PG_URL points at a server; skipped otherwise, with the reason)."""
    from storage import open_database

    with backend_url(request.param, tmp_path) as url:
        database = open_database(url)
        yield database
        database.dispose()


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fresh SQLite database for Streamlit AppTests: the app finds it through COMPILELAB_DB;
    no plugin folder, no shared-mode passwords or role unless a test sets them; Streamlit's
    caches cleared before and after (they outlive one AppTest)."""
    import streamlit as st

    from dashboard import auth
    from storage import open_database

    monkeypatch.setenv("COMPILELAB_DB", f"sqlite:///{tmp_path / 'lab.db'}")
    monkeypatch.setenv("COMPILELAB_STATE_DIR", str(tmp_path / "state"))  # sign-in lockouts
    for name in ("COMPILELAB_PLUGIN_DIR", auth.PASSWORD_ENV, auth.READONLY_PASSWORD_ENV,
                 auth.ROLE_ENV):
        monkeypatch.delenv(name, raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    database = open_database()
    yield database
    st.cache_data.clear()
    st.cache_resource.clear()
    database.dispose()
