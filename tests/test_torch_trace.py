"""Kept TORCH_TRACE logs (spec keep_trace, engine/measure/torch_trace.py, storage/artifacts.py,
``python -m engine trace``). Fast tests work on files and the database; the slow one runs the
tiny MLP end to end with aot_eager (the compiler is not the point) and reads torch's own log."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect

from contract.config_key import config_key
from engine.measure import torch_trace
from engine.spec import SpecError, normalise
from storage import artifacts, delete_runs, open_database
from storage.db import (
    alembic_config,
    create_db_engine,
    current_revision,
    head_revision,
    resolve_url,
)
from storage.queue import claim_next_run, enqueue_run, finish_run
from storage.results import save_variant_result
from tests.conftest import FAST, run_cli
from tests.test_storage_support import run_spec, variant_result

LINE = ('V1203 15:53:08.708000 8714 torch/_dynamo/convert_frame.py:1] {"dynamo_start": '
        '{"stack": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}\n')


# ---------------------------------------------------------------- the engine side, fast


def test_only_the_cold_process_of_a_compiled_variant_of_a_keep_trace_run_logs(tmp_path):
    spec = {"keep_trace": True}
    env = torch_trace.child_env(spec, "reduce-overhead", "cold", tmp_path)
    assert env == {"TORCH_TRACE": str(tmp_path / "trace-reduce-overhead")}
    assert Path(env["TORCH_TRACE"]).is_dir()
    assert torch_trace.child_env(spec, "eager", "cold", tmp_path) == {}
    assert torch_trace.child_env(spec, "default", "warm_cache", tmp_path) == {}
    assert torch_trace.child_env({"keep_trace": False}, "default", "cold", tmp_path) == {}
    # a hostile variant name never leaves the work directory
    bad = torch_trace.trace_dir(tmp_path, "../../etc")
    assert bad.parent == tmp_path and "/" not in bad.name


def test_collect_gzips_the_largest_log_and_names_the_others(tmp_path):
    (tmp_path / "dedicated_log_torch_trace_a.log").write_text(LINE * 200)
    (tmp_path / "dedicated_log_torch_trace_b.log").write_text(LINE)
    meta, data = torch_trace.collect(tmp_path, "default")
    assert gzip.decompress(data).decode() == LINE * 200
    assert meta["size"] == len(data) and meta["truncated"] is False
    assert meta["log_bytes"] == len(LINE) * 200
    assert [o["bytes"] for o in meta["other_logs"]] == [len(LINE)]


def test_collect_cuts_at_a_line_under_the_cap_and_says_so(tmp_path):
    import random

    rng = random.Random(0)  # incompressible payload: the cap really bites
    lines = [LINE.rstrip("\n") + " " + "".join(rng.choices("abcdefghij0123456789", k=300))
             + "\n" for _ in range(400)]
    (tmp_path / "x.log").write_text("".join(lines))
    meta, data = torch_trace.collect(tmp_path, "default", cap=20_000)
    assert len(data) <= 20_000 and meta["truncated"] is True
    text = gzip.decompress(data).decode()
    assert text and text.endswith("\n") and text == "".join(lines[:text.count("\n")])
    assert "truncated" in meta["note"] and str(meta["kept_log_bytes"]) in meta["note"]


def test_collect_without_a_log_says_why(tmp_path):
    meta, data = torch_trace.collect(tmp_path, "default")
    assert data is None and "no trace log" in meta["error"]
    meta, data = torch_trace.collect(tmp_path / "missing", "default")
    assert data is None and meta["error"]


def test_keep_hands_the_bytes_over_and_records_what_was_kept(tmp_path):
    d = torch_trace.trace_dir(tmp_path, "default")
    d.mkdir()
    (d / "t.log").write_text(LINE * 3)
    got = []
    result = {"variant": "default", "status": "failed"}  # a failed compile keeps its log too
    torch_trace.keep({"keep_trace": True}, tmp_path, "default", result,
                     lambda *a: got.append(a))
    (variant, kind, meta, data), = got
    assert (variant, kind) == ("default", "torch_trace")
    assert gzip.decompress(data).decode() == LINE * 3
    assert result["torch_trace"]["size"] == len(data)
    result = {"variant": "default", "status": "ok"}

    def refuse(*_a):
        raise ValueError("disk full")

    torch_trace.keep({"keep_trace": True}, tmp_path, "default", result, refuse)
    assert "could not be stored: disk full" in result["torch_trace"]["error"]


def test_keep_trace_is_a_validated_measurement_option():
    spec = normalise({"model": "mlp", "keep_trace": True})
    assert spec["keep_trace"] is True
    assert config_key(spec) == config_key({**spec, "keep_trace": False})
    with pytest.raises(SpecError, match="keep_trace"):
        normalise({"model": "mlp", "keep_trace": "yes"})


# ---------------------------------------------------------------- storage, fast


def _finished_run(db):
    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w")
    save_variant_result(db, run_id, variant_result("default"))
    finish_run(db, run_id, "done", worker_id="w")
    return run_id


def test_artifacts_are_stored_listed_read_and_deleted_with_their_run(db):
    run_id = _finished_run(db)
    data = gzip.compress(LINE.encode())
    artifacts.save_artifact(db, run_id, "default", "torch_trace", "../../evil name.gz", data,
                            note="truncated: x")
    artifacts.save_artifact(db, run_id, "default", "torch_trace", "t.gz", data)  # replaces
    (a,) = artifacts.list_artifacts(db, run_id)
    assert (a["variant"], a["size"], a["note"]) == ("default", len(data), None)
    assert a["name"] == f"run{run_id}-default-torch_trace.log.gz"
    meta, back = artifacts.read_artifact(db, run_id, "default")
    assert back == data and meta["name"] == a["name"]
    with pytest.raises(artifacts.ArtifactNotFound, match="variants with one: default"):
        artifacts.read_artifact(db, run_id, "eager")
    with pytest.raises(LookupError, match="no run"):
        artifacts.read_artifact(db, run_id + 99, "default")
    with pytest.raises(ValueError, match="unknown artifact kind"):
        artifacts.save_artifact(db, run_id, "default", "shell", "x", data)
    assert delete_runs(db, [run_id]) == 1
    assert artifacts.list_artifacts(db, run_id) == []  # ON DELETE CASCADE


def test_download_names_never_come_from_stored_text():
    name = artifacts.download_name(3, "../../etc/passwd\n<b>", "torch_trace")
    assert "/" not in name and "\n" not in name and "<" not in name and not name.startswith(".")
    assert name.startswith("run3-") and name.endswith(".log.gz")


def test_reading_refuses_an_oversized_artifact_without_loading_it(db, monkeypatch):
    run_id = _finished_run(db)
    artifacts.save_artifact(db, run_id, "default", "torch_trace", "t", b"x" * 1000)
    monkeypatch.setattr(artifacts, "MAX_BYTES", 999)
    with pytest.raises(ValueError, match="over the 999 limit"):
        artifacts.read_artifact(db, run_id, "default")


def test_migration_0005_adds_and_removes_the_artifacts_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    open_database(url).dispose()
    engine = create_db_engine(resolve_url(url))
    try:
        assert "artifacts" in inspect(engine).get_table_names()
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0004")
        assert current_revision(engine) == "0004"
        assert "artifacts" not in inspect(engine).get_table_names()
        assert "runs" in inspect(engine).get_table_names()
    finally:
        engine.dispose()
    db = open_database(url)  # back up to head
    try:
        assert current_revision(db.engine) == head_revision()  # later migrations apply too
        run_id = _finished_run(db)
        artifacts.save_artifact(db, run_id, "default", "torch_trace", "t", b"abc")
        assert artifacts.read_artifact(db, run_id, "default")[1] == b"abc"
    finally:
        db.dispose()


# ---------------------------------------------------------------- the CLI, fast


def test_trace_command_exit_codes(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    db = open_database(url)
    run_id = _finished_run(db)
    data = gzip.compress(LINE.encode())
    artifacts.save_artifact(db, run_id, "default", "torch_trace", "t", data)
    db.dispose()
    out = tmp_path / "t.log.gz"
    p = run_cli("trace", str(run_id), "default", "-o", str(out), "--db", url)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == data and "tlparse" in p.stderr
    p = run_cli("trace", str(run_id), "default", "-o", str(out), "--db", url)
    assert p.returncode == 2 and "--force" in p.stderr  # never overwritten silently
    p = run_cli("trace", str(run_id), "eager", "-o", str(tmp_path / "e"), "--db", url)
    assert p.returncode == 2 and "no torch_trace for variant 'eager'" in p.stderr
    assert not (tmp_path / "e").exists()
    p = run_cli("trace", str(run_id + 5), "default", "-o", str(tmp_path / "n"), "--db", url)
    assert p.returncode == 2 and "no run with id" in p.stderr
    p = run_cli("trace", str(run_id), "default", "-o", str(tmp_path / "no" / "dir" / "x"),
                "--db", url)
    assert p.returncode == 2 and "cannot write" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("show", str(run_id), "--json", db_url=url)
    assert json.loads(p.stdout)["artifacts"][0]["size"] == len(data)
    p = run_cli("show", str(run_id), db_url=url)
    assert p.returncode == 0, p.stderr
    assert f"TORCH_TRACE [default]: kept as run{run_id}-default-torch_trace.log.gz" in p.stdout
    # a bundle carries results, not artifacts, and says so
    p = run_cli("export", str(run_id), "-o", str(tmp_path / "b.json"), "--db", url)
    assert p.returncode == 0, p.stderr
    assert "torch_trace" in p.stderr and "not in the bundle" in p.stderr


# ---------------------------------------------------------------- end to end, slow


@pytest.mark.slow  # two runs of the tiny MLP, one process each: about 45 s on 2 busy cores
def test_keep_trace_stores_torchs_structured_log_and_a_run_without_it_stores_none(db_url,
                                                                                 tmp_path):
    common = ["--model", "mlp", "--dim", "batch=2", "--dim", "hidden=8", "--variants",
              "eager,default", "--backend", "aot_eager", "--no-warm-cache", *FAST]
    p = run_cli("run", *common, "--keep-trace", db_url=db_url)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "TORCH_TRACE [default]: kept as run1-default-torch_trace.log.gz" in p.stdout
    shown = json.loads(run_cli("show", "1", "--json", db_url=db_url).stdout)
    (a,) = shown["artifacts"]
    assert (a["variant"], a["kind"]) == ("default", "torch_trace")
    v = next(x for x in shown["variants"] if x["variant"] == "default")
    assert v["torch_trace"]["size"] == a["size"] and v["torch_trace"]["truncated"] is False
    out = tmp_path / "t.log.gz"
    p = run_cli("trace", "1", "default", "-o", str(out), "--db", db_url)
    assert p.returncode == 0, p.stderr
    text = gzip.decompress(out.read_bytes()).decode()
    # torch's structured log as tlparse reads it: glog prefix, then one JSON envelope a line
    envelopes = [json.loads(line[line.index("] ") + 2:]) for line in text.splitlines()
                 if line.startswith("V") and "] {" in line]
    kinds = {k for e in envelopes for k in e}
    assert "dynamo_start" in kinds and ("compilation_metrics" in kinds
                                        or "dynamo_output_graph" in kinds), sorted(kinds)

    p = run_cli("run", *common, db_url=db_url)
    assert p.returncode == 0, p.stderr[-2000:]
    shown = json.loads(run_cli("show", "2", "--json", db_url=db_url).stdout)
    assert shown["artifacts"] == []
    assert all(not x.get("torch_trace") for x in shown["variants"])


CHILD = """
import os, sys
import torch  # imported before TORCH_TRACE is set, as in a fork of the preloaded server
from engine.measure import torch_trace
os.environ["TORCH_TRACE"] = sys.argv[1]
assert torch_trace.enable_in_child() is None
torch.compile(lambda x: x.sin() + 1, backend="eager")(torch.ones(3))
torch_trace.flush()
os._exit(0)  # as the child ends: no interpreter teardown to flush for us
"""


def test_a_child_that_imported_torch_first_still_writes_the_trace(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    p = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], cwd=ROOT, timeout=300,
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT),
                                                            "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-2000:]
    meta, data = torch_trace.collect(tmp_path, "default")
    assert data is not None, meta
    assert '"dynamo_start"' in gzip.decompress(data).decode()
