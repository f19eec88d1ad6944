"""Shared mode (dashboard/auth.py) through AppTest: the password page, the editor and read-only
roles, and deleting runs with a confirmation step.

Read-only may browse, compare and export (CSV, bundle, HTML report) but not queue, cancel, edit
notes or tags, import or delete.
"""

from __future__ import annotations

import pytest
from test_dashboard_app import app, button, no_exceptions, seed_done, texts
from test_dashboard_data import mlp_results, spec

from dashboard import auth
from dashboard import signin_throttle as auth_throttle
from storage import queries, queue

EDITOR_PW = "correct horse battery staple"
VIEWER_PW = "just looking ✓"


@pytest.fixture
def db(app_db):
    return app_db  # tests/conftest.py


@pytest.fixture
def shared(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPILELAB_STATE_DIR", str(tmp_path / "state"))  # the lockout file
    monkeypatch.setenv(auth.PASSWORD_ENV, EDITOR_PW)
    monkeypatch.setenv(auth.READONLY_PASSWORD_ENV, VIEWER_PW)
    monkeypatch.delenv(auth.ROLE_ENV, raising=False)


def _sign_in(at, password: str):
    at.text_input(key="auth-password").input(password)
    button(at, "Sign in").click()
    return at.run()


def _labels(at) -> list[str]:
    return [b.label for b in at.button]


def test_without_passwords_there_is_no_login_and_everything_is_allowed(db):
    at = app("new_run")
    no_exceptions(at)
    assert "Queue run" in _labels(at)
    assert not [t for t in at.text_input if t.key == "auth-password"]


def test_password_page_blocks_every_page_until_signed_in(db, shared):
    seed_done(db, spec("mlp"), mlp_results())
    for page in ("runs", "compare", "new", "sweep"):
        at = app()
        no_exceptions(at)
        assert at.text_input(key="auth-password") is not None
        assert "Sign in" in _labels(at)
        assert not at.dataframe and not at.get("plotly_chart"), page
    at = _sign_in(app(), "wrong")
    no_exceptions(at)
    assert "Wrong password." in texts(at.error)
    assert not at.dataframe
    assert auth.AUTHENTICATED_KEY not in at.session_state


def test_editor_password_opens_everything(db, shared):
    rid = seed_done(db, spec("mlp"), mlp_results())
    at = _sign_in(app(), EDITOR_PW)
    no_exceptions(at)
    assert at.session_state[auth.AUTHENTICATED_KEY] is True
    assert at.session_state[auth.ROLE_KEY] == auth.EDITOR
    assert at.dataframe, "the Runs page is shown after signing in"
    at.switch_page("views/compare.py")
    at.query_params["runs"] = str(rid)
    at.run()
    no_exceptions(at)
    assert "Save note and tags" in _labels(at)
    assert "Sign out" in _labels(at)
    button(at, "Sign out").click().run()
    assert "Sign in" in _labels(at)


def test_readonly_password_browses_and_exports_but_changes_nothing(db, shared):
    rid = seed_done(db, spec("mlp"), mlp_results())
    queued = queue.enqueue_run(db, spec("mlp"))
    at = _sign_in(app(), VIEWER_PW)
    no_exceptions(at)
    assert at.session_state[auth.ROLE_KEY] == auth.VIEWER
    assert "Read-only" in texts(at.caption)
    assert not [u for u in at.get("file_uploader")], "no bundle import for viewers"
    at.switch_page("views/compare.py")
    at.query_params["runs"] = f"{rid},{queued}"
    at.run()
    no_exceptions(at)
    labels = _labels(at)
    assert "Save note and tags" not in labels
    cancel = [b for b in at.button if b.label == "Cancel run"]
    assert cancel and all(b.disabled for b in cancel)
    assert len(at.get("download_button")) >= 3  # CSV, bundle, HTML report
    at.switch_page("views/new_run.py").run()
    no_exceptions(at)
    assert "Queue run" not in _labels(at)
    assert "queuing a run needs the editor password" in texts(at.info)
    assert len(queries.list_runs(db)) == 2


def test_role_readonly_makes_even_the_editor_password_read_only(db, monkeypatch):
    monkeypatch.setenv(auth.PASSWORD_ENV, EDITOR_PW)
    monkeypatch.delenv(auth.READONLY_PASSWORD_ENV, raising=False)
    monkeypatch.setenv(auth.ROLE_ENV, "readonly")
    at = _sign_in(app(), EDITOR_PW)
    assert at.session_state[auth.ROLE_KEY] == auth.VIEWER
    at.switch_page("views/new_run.py").run()
    assert "Queue run" not in _labels(at)


def test_role_readonly_without_password_is_an_open_read_only_display(db, monkeypatch):
    monkeypatch.setenv(auth.ROLE_ENV, "readonly")
    seed_done(db, spec("mlp"), mlp_results())
    at = app("runs")
    no_exceptions(at)
    assert at.dataframe and "Sign in" not in _labels(at)
    assert not [b for b in at.button if b.label.startswith("Delete")]


def test_role_for_compares_both_passwords(db, shared):
    assert auth.role_for(EDITOR_PW) == auth.EDITOR
    assert auth.role_for(VIEWER_PW) == auth.VIEWER
    assert auth.role_for("") is None
    assert auth.role_for(EDITOR_PW + " ") is None
    assert auth.role_for("\ud800") is None  # a lone surrogate from a form: no crash


# --------------------------------------------------------------------------- issue 39


def _from(monkeypatch, address: str | None) -> None:
    """Every later session connects from ``address`` (what st.context.ip_address reports)."""
    monkeypatch.setattr(auth, "client_address", lambda: address)


def test_guessing_from_fresh_sessions_locks_the_address_not_the_others(db, shared, monkeypatch,
                                                                      caplog):
    """Item 2: the delay grew only within one session, so a fresh session per guess reset it.
    Failures now count per address across sessions: the tenth locks it (logged with the
    address), the right password then fails from there but works from elsewhere, and the
    operator's unlock lets it in again."""
    monkeypatch.setattr(auth.time, "sleep", lambda s: None)  # the per-session delay, not tested
    _from(monkeypatch, "203.0.113.7")
    for i in range(auth_throttle.FAILURES_BEFORE_LOCK):
        at = _sign_in(app(), f"guess {i}")
        assert auth.AUTHENTICATED_KEY not in at.session_state
    assert "locked" in texts(at.error)
    assert "sign-in failed from 203.0.113.7" in caplog.text
    assert "sign-in locked for 203.0.113.7" in caplog.text
    at = _sign_in(app(), EDITOR_PW)
    assert auth.AUTHENTICATED_KEY not in at.session_state and "locked" in texts(at.error)
    _from(monkeypatch, "198.51.100.9")
    assert _sign_in(app(), EDITOR_PW).session_state[auth.ROLE_KEY] == auth.EDITOR
    _from(monkeypatch, "203.0.113.7")
    assert auth.throttle().unlock("203.0.113.7") == ["203.0.113.7"]
    assert _sign_in(app(), EDITOR_PW).session_state[auth.ROLE_KEY] == auth.EDITOR


def test_a_signed_in_session_driven_from_another_address_is_signed_out(db, shared, monkeypatch):
    """Item 4 (password page): a second client presenting an editor's session id got that
    editor session; the session is now bound to the address it signed in from."""
    _from(monkeypatch, "203.0.113.7")
    at = _sign_in(app(), EDITOR_PW)
    assert at.session_state[auth.ROLE_KEY] == auth.EDITOR
    _from(monkeypatch, "198.51.100.9")
    at.run()
    no_exceptions(at)
    assert "Sign in" in _labels(at) and "Queue run" not in _labels(at)
    assert auth.AUTHENTICATED_KEY not in at.session_state


# --------------------------------------------------------------------------- delete


def _select(at, run_id: int):
    """Select one row of the Runs table, as a click does (AppTest cannot click grid rows)."""
    row = list(at.dataframe[0].value["run_id"]).index(run_id)
    at.session_state["runs-table"] = {"selection": {"rows": [row], "columns": []}}
    at.run()
    no_exceptions(at)
    return at


def test_delete_selected_runs_asks_first_then_deletes(db):
    keep = seed_done(db, spec("mlp"), mlp_results())
    doomed = seed_done(db, spec("mlp"), mlp_results())
    at = _select(app("runs"), doomed)
    button(at, "Delete 1 run(s)…").click().run()
    no_exceptions(at)
    assert f"Delete #{doomed} and all their results?" in texts(at.warning)
    assert len(queries.list_runs(db)) == 2  # asking deletes nothing
    button(at, "Keep them").click().run()
    assert len(queries.list_runs(db)) == 2
    button(at, "Delete 1 run(s)…").click().run()
    button(at, "Delete permanently").click().run()
    no_exceptions(at)
    assert list(queries.list_runs(db)["run_id"]) == [keep]
    assert f"Deleted 1 run(s): #{doomed}" in texts(at.success)


def test_delete_refuses_a_running_run(db):
    running = queue.enqueue_run(db, spec("mlp"))
    assert queue.claim_run(db, running, "w") is not None
    at = _select(app("runs"), running)
    button(at, "Delete 1 run(s)…").click().run()
    no_exceptions(at)
    assert "cancel them first" in texts(at.warning)
    assert button(at, "Delete permanently").disabled
    assert len(queries.list_runs(db)) == 1
