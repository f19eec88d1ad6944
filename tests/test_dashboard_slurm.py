"""The New run page's "Run on: Slurm" through AppTest, with the stand-in sbatch, scontrol and
scancel of tests/test_slurm_cli.py on PATH: the job is submitted, its state and pending reason
shown, a cancel cancels the job; a bad setting is one line and nothing is queued."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_dashboard_app import app, button, no_exceptions, texts
from test_slurm_cli import fake_slurm  # noqa: F401  (a fixture)

from storage import queries, slurm_jobs


@pytest.fixture
def slurm_env(app_db, fake_slurm, tmp_path, monkeypatch):  # noqa: F811
    (tmp_path / "none.toml").write_text("")
    for key, value in fake_slurm.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("COMPILELAB_SLURM_PARTITION", raising=False)
    return app_db, Path(fake_slurm["FAKE_SLURM"])


def shown(elements) -> str:
    """The elements' text as a reader sees it (safe.md's Markdown escapes removed)."""
    return texts(elements).replace("\\", "")


def _slurm_page():
    at = app("new_run")
    at.selectbox(key="device").set_value("cpu")
    at.radio(key="run-on").set_value("Slurm")
    return at.run()


def test_run_on_slurm_submits_the_job_and_shows_it(slurm_env):
    db, notes = slurm_env
    at = _slurm_page()
    no_exceptions(at)
    assert "Slurm: partition (cluster default), exclusive node" in shown(at.caption)
    button(at, "Queue run").click().run()
    no_exceptions(at)
    run = queries.list_runs(db).iloc[0]
    assert run["status"] == "queued"
    assert slurm_jobs.job_of(db, int(run["run_id"]))["job_id"] == 4242
    assert "--allow-user-models" not in notes.joinpath("script").read_text()  # never from a browser
    assert "Slurm job 4242 · PENDING (Priority) · partition debug" in shown(at.caption)
    button(at, "Cancel run").click().run()
    no_exceptions(at)
    assert queries.list_runs(db).iloc[0]["status"] == "cancelled"
    assert notes.joinpath("scancel").read_text().split() == ["4242"]


def test_a_bad_slurm_setting_is_one_line_and_nothing_is_queued(slurm_env, monkeypatch):
    db, _ = slurm_env
    monkeypatch.setenv("COMPILELAB_SLURM_ACCOUNT", "perf team")
    at = _slurm_page()
    assert "Slurm setting account (environment COMPILELAB_SLURM_ACCOUNT)" in shown(at.error)
    button(at, "Queue run").click().run()
    no_exceptions(at)
    assert "Nothing was queued: Slurm setting account" in shown(at.error)
    assert queries.list_runs(db).empty
