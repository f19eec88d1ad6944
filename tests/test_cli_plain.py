"""The CLI speaks plainly (issue 40, item 9): a typo'd model gets "did you mean", the short dtype
names work, a usage error is one line, ``cancel`` says what it did."""

from __future__ import annotations

import pytest

from engine.cli.main import main
from storage import open_database, queries, queue


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own checks
        return int(e.code)


def test_a_model_typo_is_answered_with_the_close_name(tmp_path, capsys):
    assert _exit(["run", "--model", "mpl", "--queue", "--db",
                  f"sqlite:///{tmp_path / 'lab.db'}"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'mpl': did you mean mlp?" in err and "pointwise_chain" not in err
    assert _exit(["run", "--model", "zzzzzz", "--queue", "--db",
                  f"sqlite:///{tmp_path / 'lab.db'}"]) == 2
    assert "known models: mlp" in capsys.readouterr().err  # nothing close: the whole list


@pytest.mark.parametrize(("typed", "stored"), [("bf16", "bfloat16"), ("fp16", "float16"),
                                               ("FP32", "float32"), ("half", "float16")])
def test_short_dtype_names_are_read_as_torchs(typed, stored, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    assert main(["run", "--model", "mlp", "--dtype", typed, "--queue", "--db", url]) == 0
    db = open_database(url)
    try:
        assert queries.list_runs(db).iloc[0]["spec"]["dtype"] == stored
    finally:
        db.dispose()


def test_a_usage_error_is_one_line_with_where_to_look(capsys):
    assert _exit(["run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "--model" in err
    assert "(usage: python -m engine run --help)" in err
    assert _exit(["show"]) == 2 and capsys.readouterr().err.count("\n") == 1


def test_cancel_says_what_it_did(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    db = open_database(url)
    try:
        queued = queue.enqueue_run(db, {"model": "mlp"})
        running = queue.enqueue_run(db, {"model": "mlp"})
        done = queue.enqueue_run(db, {"model": "mlp"})
        for rid in (running, done):
            queue.claim_run(db, rid, "w")
        queue.finish_run(db, done, "done")
    finally:
        db.dispose()
    said = {}
    for rid in (queued, running, done):
        assert main(["cancel", str(rid), "--db", url]) == 0
        said[rid] = capsys.readouterr().out.strip()
    assert said[queued] == f"run {queued}: cancelled"
    assert said[running].startswith(f"run {running}: running (cancel requested")
    assert said[done] == f"run {done}: done (already finished: nothing to cancel)"


def test_the_run_heading_writes_dims_as_show_does():
    from engine.cli.run import run_heading

    spec = {"model": "mlp", "dims": {"batch": 32, "hidden": 1024}, "dtype": "float16",
            "device": "cpu", "variants": ["eager", "default"]}
    assert run_heading(38, spec) == \
        "run 38: mlp (batch=32, hidden=1024) float16 on cpu: eager, default"


def test_gate_says_a_ratio_below_one_in_words(tmp_path, capsys):
    """Two shipped MLP runs (every mode slower than eager): the gate's Markdown read
    'geomean speedup 0.593x → 0.555x' and 'memory compression ratio 0.409x', numbers a meeting
    took for a speedup and a saving."""
    from pathlib import Path

    from storage import import_bundle

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    db = open_database(url)
    try:
        bundle = Path(__file__).resolve().parents[1] / "data" / "h200_bundle.json"
        ids = import_bundle(db, bundle.read_text())
    finally:
        db.dispose()
    assert main(["gate", "--baseline", str(ids[5]), "--candidate", str(ids[4]),
                 "--db", url]) == 0
    out = capsys.readouterr().out
    assert "| default | 100% → 100% | 0.593x (slower) → 0.555x (slower) |" in out
    assert "0.409x (uses more memory) → 0.409x (uses more memory) |" in out
    assert "| memory, eager ÷ compiled |" in out
    assert "compression" not in out and "not statistically established" not in out


def test_help_texts_carry_no_source_markup(capsys):
    for argv in (["gate", "--help"], ["recommend", "--help"]):
        assert _exit(argv) == 0
        out = capsys.readouterr().out
        assert "``" not in out
    assert "a finished run's id" in out  # recommend's RUN is explained


@pytest.mark.slow
def test_a_reader_that_goes_away_does_not_fail_the_run(tmp_path):
    """``run ... 2>&1 | head -1``: the progress lines meet a closed pipe; the run is measured
    and stored done all the same (a broken pipe failed it as an engine error)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "engine", "run", "--model", "mlp", "--dim", "batch=4",
           "--dim", "hidden=32", "--device", "cpu", "--variants", "eager,default",
           "--backend", "aot_eager", "--processes", "2", "--max-processes", "2",
           "--min-samples", "5", "--min-time", "0", "--max-time", "0.2", "--db", url]
    reader, writer = os.pipe()
    proc = subprocess.Popen(cmd, cwd=root, stdout=writer, stderr=writer,
                            env={**os.environ, "PYTHONPATH": str(root)})
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        pipe.readline()  # the first line, then the reader goes away, as head does
    proc.wait(timeout=240)
    db = open_database(url)
    try:
        run = queries.list_runs(db).iloc[0]
        assert run["status"] == "done", run.get("error")
    finally:
        db.dispose()
