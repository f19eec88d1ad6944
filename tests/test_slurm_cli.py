"""``run --slurm``, ``show``, ``cancel`` and the job's ``worker --once --run-id`` through the CLI, with
stand-ins for sbatch, scontrol and scancel on PATH (shell scripts that answer as Slurm 22.05
does and write down what they were given). The real Slurm: tests/test_slurm_cluster.py."""

from __future__ import annotations

import json
import os
import sqlite3
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

from engine.slurm.script import spec_digest
from storage import open_database, queue, slurm_jobs

FAKES = {
    "sbatch": r"""
        cat > "$FAKE_SLURM/script"
        printf '%s\n' "$@" > "$FAKE_SLURM/args"
        env > "$FAKE_SLURM/env"
        case " $* " in
        *--partition=nosuch*)
            echo "sbatch: error: invalid partition specified: nosuch" >&2
            echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
            exit 1 ;;
        esac
        echo 4242
    """,
    "scontrol": r"""
        [ "$4" = 4242 ] || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
        echo "JobId=4242 JobName=compilelab-run-1 JobState=$(cat "$FAKE_SLURM/state") \
    Reason=Priority Restarts=0 ExitCode=0:0 Partition=debug NodeList=(null) StdOut=/x/y.out"
    """,
    "scancel": r"""
        echo "$@" >> "$FAKE_SLURM/scancel"
        echo CANCELLED > "$FAKE_SLURM/state"
    """,
}


@pytest.fixture
def fake_slurm(tmp_path: Path) -> dict[str, str]:
    """PATH with the stand-ins first; their notes in tmp_path/slurm; logs in tmp_path/logs."""
    bin_dir, notes = tmp_path / "bin", tmp_path / "slurm"
    bin_dir.mkdir()
    notes.mkdir()
    (notes / "state").write_text("PENDING\n")
    for name, body in FAKES.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + textwrap.dedent(body))
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM": str(notes),
            "COMPILELAB_SLURM_LOG_DIR": str(tmp_path / "logs"),
            "COMPILELAB_SLURM_CONFIG": str(tmp_path / "none.toml")}


def _no_config(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    (tmp_path / "none.toml").write_text("")
    return env


def test_run_slurm_json_prints_the_run_id_and_show_names_the_job(fake_slurm, db_url, tmp_path):
    env = _no_config(fake_slurm, tmp_path)
    p = run_cli("run", "--model", "mlp", "--dim", "batch=8", "--device", "cpu",
                "--variants", "eager,default", "--slurm", "--json", db_url=db_url, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "1"
    notes = Path(fake_slurm["FAKE_SLURM"])
    args = notes.joinpath("args").read_text().splitlines()
    assert "--exclusive" in args and "--job-name=compilelab-run-1" in args
    assert "--export=COMPILELAB_DB" in args
    assert f"COMPILELAB_DB={db_url}" in notes.joinpath("env").read_text().splitlines()
    assert "--run-id 1 --spec-sha256" in notes.joinpath("script").read_text()

    shown = run_cli("show", "1", "--json", db_url=db_url, env=env)
    run = json.loads(shown.stdout)
    assert run["status"] == "queued" and run["slurm_job_id"] == 4242
    assert (run["slurm"]["state"], run["slurm"]["reason"]) == ("PENDING", "Priority")
    text = run_cli("show", "1", db_url=db_url, env=env).stdout
    assert "slurm: job 4242 PENDING (Priority), partition debug" in text

    cancelled = run_cli("cancel", "1", db_url=db_url, env=env)
    assert cancelled.stdout.strip() == "run 1: cancelled; Slurm job 4242 cancelled (scancel)"
    assert notes.joinpath("scancel").read_text().split() == ["4242"]


@pytest.mark.parametrize(("extra_env", "says"), [
    ({"COMPILELAB_SLURM_PARTITION": "nosuch"},
     "error: sbatch refused the job of run 1: Invalid partition name specified (partition "
     "nosuch) (run 1 is stored as failed, nothing is queued)"),
    ({"PATH": "/nonexistent"}, "error: Slurm is not installed here: no sbatch on PATH"),
    ({"COMPILELAB_SLURM_EXCLUSIVE": "sometimes"},
     "error: Slurm setting exclusive (environment COMPILELAB_SLURM_EXCLUSIVE): expected true or "
     "false, got 'sometimes'"),
])
def test_bad_settings_are_one_line_a_nonzero_exit_and_nothing_queued(
        fake_slurm, db_url, tmp_path, extra_env, says):
    env = {**_no_config(fake_slurm, tmp_path), **extra_env}
    p = run_cli("run", "--model", "mlp", "--device", "cpu", "--slurm", "--json",
                db_url=db_url, env=env)
    assert p.returncode == 2 and p.stdout == ""
    (line,) = p.stderr.strip().splitlines()  # one line, no traceback
    assert line.startswith(says), line
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as c:
        statuses = [s for (s,) in c.execute("select status from runs")]
    assert statuses == (["failed"] if "refused" in says else [])  # nothing queued


def test_slurm_and_queue_together_are_refused(fake_slurm, db_url, tmp_path):
    p = run_cli("run", "--model", "mlp", "--slurm", "--queue", db_url=db_url,
                env=_no_config(fake_slurm, tmp_path))
    assert p.returncode == 2 and "choose one" in p.stderr


def test_the_job_refuses_a_spec_changed_after_submission(db_url):
    db = open_database(db_url)
    spec = {"model": "mlp", "dims": {"batch": 8}, "device": "cpu", "variants": ["eager"]}
    rid = queue.enqueue_run(db, spec, executor="slurm")
    p = run_cli("worker", "--once", "--run-id", str(rid), "--spec-sha256", "0" * 64,
                db_url=db_url, env={"SLURM_JOB_ID": "77"})
    assert p.returncode == 0, p.stderr
    run = json.loads(run_cli("show", str(rid), "--json", db_url=db_url).stdout)
    assert run["status"] == "failed"
    assert run["error"] == ("refused by Slurm job 77: the run's spec in the database is not the "
                            "one that was submitted (it changed after submission)")
    assert spec_digest(spec) != "0" * 64
    # Nothing left to do for a run that is no longer queued (cancelled before the job started).
    again = run_cli("worker", "--once", "--run-id", str(rid), db_url=db_url)
    assert again.returncode == 0 and f"run {rid} is failed: nothing to do" in again.stderr


def test_a_job_that_cannot_reach_the_database_exits_3(tmp_path):
    p = run_cli("worker", "--once", "--run-id", "1", "--db-wait", "0",
                db_url=f"sqlite:///{tmp_path / 'missing.db'}")
    assert p.returncode == 3
    assert "cannot reach the database after 0 s" in p.stderr
    assert not (tmp_path / "missing.db").exists()  # nothing created


def test_slurm_settings_command(fake_slurm, tmp_path):
    env = {**_no_config(fake_slurm, tmp_path), "COMPILELAB_SLURM_PARTITION": "gpu",
           "COMPILELAB_SLURM_JOB_DB": "postgresql://me:hunter2@db/x"}
    p = run_cli("slurm", "settings", env=env)
    assert p.returncode == 0, p.stderr
    assert "partition = 'gpu'" in p.stdout and "hunter2" not in p.stdout
    missing = run_cli("slurm", "settings", env={**env, "PATH": "/nonexistent"})
    assert missing.returncode == 2 and "Slurm is not installed here" in missing.stderr


def test_slurm_reconcile_command(fake_slurm, db_url, tmp_path):
    env = _no_config(fake_slurm, tmp_path)
    assert run_cli("run", "--model", "mlp", "--device", "cpu", "--slurm", "--json",
                   db_url=db_url, env=env).returncode == 0
    Path(fake_slurm["FAKE_SLURM"], "state").write_text("NODE_FAIL\n")
    p = run_cli("slurm", "reconcile", "--db", db_url, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("run 1: failed: node failure: its node failed while it ran "
                               "Slurm job 4242")
    assert slurm_jobs.job_of(open_database(db_url), 1)["state"] == "NODE_FAIL"
    quiet = run_cli("slurm", "reconcile", "--db", db_url, env=env)
    assert "nothing to reconcile" in quiet.stdout
