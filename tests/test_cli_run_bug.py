"""A bug inside the measuring loop must not leave a CLI run "running" (the worker already
finished such a run as failed; the CLI's own run did not: on the H200 a KeyError left one so)."""

from __future__ import annotations

from engine.cli.main import main
from engine.orchestrate import execute


def test_an_engine_bug_finishes_the_cli_run_as_failed(tmp_path, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise KeyError("default")

    monkeypatch.setattr(execute, "execute_run", broken)
    url = f"sqlite:///{tmp_path / 'r.db'}"
    assert main(["run", "--model", "mlp", "--dim", "batch=2", "--dim", "hidden=8", "--device",
                 "cpu", "--variants", "eager", "--db", url]) == 2
    assert "error: 'default'" in capsys.readouterr().err
    from storage.db import open_database
    from storage.records import load_run

    run = load_run(open_database(url), 1)
    assert run["status"] == "failed"
    assert "engine error" in run["error"] and "default" in run["error"]
