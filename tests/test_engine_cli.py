"""The engine end to end through the CLI, on the CPU: real child processes, a temp SQLite DB."""

from __future__ import annotations

import pytest
from conftest import FAST, FIXTURES, run_cli

from storage import open_database, queries

USER = str(FIXTURES / "user_models.py")


def _load(db_url: str, run_id: int):
    return queries.load_runs(open_database(db_url), [run_id])


def _run_id(proc) -> int:
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return int(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_tiny_model_eager_and_real_inductor_compile(db_url):
    """One real inductor compile (slow on 2 cores: the compile itself is the point here)."""
    p = run_cli("run", "--model", "mlp", "--dim", "batch=4", "--dim", "hidden=16",
                "--variants", "eager,default", *FAST, "--min-samples", "8", "--json",
                db_url=db_url, timeout=420)
    run_id = _run_id(p)
    assert "leaked semaphore" not in p.stderr, p.stderr[-2000:]  # engine/orchestrate/forked.py
    data = _load(db_url, run_id)
    run = data["runs"].iloc[0]
    assert run["status"] == "done", run["error"]
    v = data["variants"].set_index("variant")
    assert list(v.index) == ["eager", "default"]
    assert (v["status"] == "ok").all(), v["error"].tolist()
    d = v.loc["default"]
    assert d["first_call_cold_s"] * 1e3 > d["median_ms"]  # compile makes call 1 slow
    assert d["first_call_warm_s"] is not None and d["first_call_warm_s"] > 0
    assert d["first_call_warm_s"] < d["first_call_cold_s"]  # the cache helps
    assert d["n"] >= 8
    assert d["graph_count"] == 1 and d["graph_break_count"] == 0
    assert d["correct"] and d["max_rel_err"] <= d["rtol"]
    assert d["timer"] == "perf_counter"
    assert d["speedup"] > 0 and d["speedup_ci_low"] <= d["speedup"] <= d["speedup_ci_high"]
    samples = data["samples"]
    per_call = samples[(samples.variant == "default") & (samples.kind == "per_call")]
    paired = samples[(samples.variant == "default") & (samples.kind == "eager_per_call")]
    assert len(per_call) == len(paired) == d["n"]
    warm = data["warmup"]
    assert len(warm[warm.variant == "default"]) == 3
    env = run["environment"]
    for key in ("host", "os", "cpu", "python", "torch", "commit"):
        assert env.get(key), key
    shown = run_cli("show", str(run_id), db_url=db_url)
    assert shown.returncode == 0
    assert "default" in shown.stdout and "Verdict" in shown.stdout


@pytest.mark.slow  # a real run through the CLI: 17-26 s here
def test_graph_break_model_reports_each_break_with_file_and_line(db_url):
    p = run_cli("run", "--model", "graph_breaks", "--dim", "hidden=16", "--variants",
                "eager,default", "--backend", "eager", "--no-warm-cache", *FAST, "--json",
                db_url=db_url)
    data = _load(db_url, _run_id(p))
    breaks = data["graph_breaks"]
    src = (FIXTURES.parent.parent / "engine/models/breaks.py").read_text().splitlines()
    lines = {i + 1 for i, text in enumerate(src) if "# BREAK:" in text}
    assert len(lines) == 3
    assert set(breaks["line"]) == lines
    assert all(f.endswith("engine/models/breaks.py") for f in breaks["file"])
    reasons = " ".join(breaks["reason"]).lower()
    assert "item()" in reasons
    d = data["variants"].set_index("variant").loc["default"]
    assert d["graph_break_count"] >= 3 and d["graph_count"] >= 2


@pytest.mark.slow  # a real run through the CLI: 17-26 s here
def test_sweep_of_varying_length_model_shows_recompile(db_url):
    p = run_cli("run", "--model", "varying_seq", "--dim", "seq=8,16,32", "--dim", "hidden=16",
                "--dim", "heads=2", "--variants", "eager,default", "--backend", "eager",
                "--no-warm-cache", *FAST, "--json", db_url=db_url)
    data = _load(db_url, _run_id(p))
    pts = data["sweep_points"]
    comp = pts[pts.variant == "default"].sort_values("value")
    assert list(comp["value"]) == [8, 16, 32]
    assert list(comp["recompiled"]) == [False, True, False]  # static, then dynamic once
    rec = data["recompiles"]
    assert len(rec) == 1 and rec.iloc[0]["dim_value"] == 16
    assert "size mismatch" in rec.iloc[0]["reason"]


@pytest.mark.slow  # a real run through the CLI: 17-26 s here
def test_plugin_model_from_operator_folder(db_url):
    env = {"COMPILELAB_PLUGIN_DIR": str(FIXTURES / "plugins")}
    listed = run_cli("models", env=env)
    assert "plugin:tiny_plugin" in listed.stdout and "Tiny plugin MLP" in listed.stdout
    p = run_cli("run", "--model", "plugin:tiny_plugin", "--dim", "hidden=8", "--variants",
                "eager,default", "--backend", "eager", "--no-warm-cache", *FAST, "--json",
                db_url=db_url, env=env)
    data = _load(db_url, _run_id(p))
    assert data["runs"].iloc[0]["status"] == "done"
    assert data["runs"].iloc[0]["dims"] == {"batch": 4, "hidden": 8}
    assert (data["variants"]["status"] == "ok").all()


@pytest.mark.slow  # a real run through the CLI: 17-26 s here
def test_user_model_file_from_cli(db_url):
    p = run_cli("run", "--model", f"{USER}:tiny", "--variants", "eager,default", "--backend",
                "aot_eager", "--no-warm-cache", *FAST, "--json", db_url=db_url)
    data = _load(db_url, _run_id(p))
    assert (data["variants"]["status"] == "ok").all()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "no_such_model"], "unknown model"),
        (["--model", "mlp", "--dim", "colour=3"], "has no dim 'colour'"),
        (["--model", "mlp", "--dim", "batch=0"], "must be > 0"),
        (["--model", "mlp", "--dim", "batch=-4"], "must be > 0"),
        (["--model", "mlp", "--dim", "hidden=100000"], "out of range"),
        (["--model", "mlp", "--dim", "batch=abc"], "whole numbers"),
        (["--model", "mlp", "--dtype", "float64"], "not supported"),
        (["--model", "plugin:tiny_plugin", "--dtype", "bfloat16"], "not supported"),
        (["--model", "mlp", "--device", "cuda"], "no CUDA GPU"),
        (["--model", "mlp", "--device", "tpu"], "device must be one of"),
        (["--model", "mlp", "--variants", "eager,turbo"], "unknown variant"),
        (["--model", "mlp", "--dim", "hidden=16,32"], "changes the model itself"),
        (["--model", "/no/such/file.py:factory"], "does not exist"),
        (["--model", f"{USER}:not_a_model"], "must return (torch.nn.Module"),
        (["--model", f"{USER}:missing_fn"], "is not a function"),
        (["--model", "plugin:nothing_here"], "no plugin model"),
        (["--model", "mlp", "--require-gpu", "NVIDIA H200"], "add --queue"),
    ],
)
def test_bad_input_is_refused_clearly_and_nothing_is_stored(db_url, args, message):
    env = {"COMPILELAB_PLUGIN_DIR": str(FIXTURES / "plugins")}
    p = run_cli("run", *args, *FAST, db_url=db_url, env=env)
    assert p.returncode == 2
    assert message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert queries.list_runs(open_database(db_url)).empty


@pytest.mark.slow
def test_segfault_oom_and_compile_failure_are_failed_results(db_url):
    """The other failures of issue 2: a compiled child killed by SIGSEGV, one that runs out of
    memory while compiling (torch.OutOfMemoryError, as the caching allocator raises it), and a
    compile that fails (fullgraph=True on a model with graph breaks). Each is stored as failed
    with its kind, reason and stderr tail; eager finishes and the run completes."""
    cases = [
        ([f"{USER}:segfaults_when_compiled"], "crash", "SIGSEGV", None),
        ([f"{USER}:runs_out_of_memory_when_compiled"], "oom",
         "out of memory while compiling: CUDA out of memory", "OutOfMemoryError"),
        (["graph_breaks", "--dim", "hidden=16", "--fullgraph"], "compile_error",
         "Unsupported while compiling", "Unsupported"),
    ]
    for model, kind, text, in_stderr in cases:
        p = run_cli("run", "--model", *model, "--variants", "eager,default", "--backend",
                    "eager", "--no-warm-cache", "--timeout", "60", *FAST, "--json",
                    db_url=db_url)
        data = _load(db_url, _run_id(p))
        assert data["runs"].iloc[0]["status"] == "done"
        v = data["variants"].set_index("variant")
        assert v.loc["eager", "status"] == "ok"
        assert (v.loc["default", "status"], v.loc["default", "failure_kind"]) == ("failed", kind)
        assert text in v.loc["default", "error"], v.loc["default", "error"]
        if in_stderr:
            assert in_stderr in v.loc["default", "stderr_tail"]


@pytest.mark.slow
def test_crashing_and_hanging_variants_are_failed_results(db_url):
    """A compiled child that calls os.abort() and one that hangs past its timeout: both stored
    as failed with their reason; eager is stored too and the run completes."""
    for factory, kind, text in (("aborts_when_compiled", "crash", "SIGABRT"),
                                ("hangs_when_compiled", "timeout", "timed out after 20 s")):
        p = run_cli("run", "--model", f"{USER}:{factory}", "--variants", "eager,default",
                    "--backend", "eager", "--no-warm-cache", "--timeout", "20", *FAST,
                    "--json", db_url=db_url)
        data = _load(db_url, _run_id(p))
        run = data["runs"].iloc[0]
        assert run["status"] == "done"  # the run completes; the variant failed
        v = data["variants"].set_index("variant")
        assert v.loc["eager", "status"] == "ok"
        assert v.loc["default", "status"] == "failed"
        assert v.loc["default", "failure_kind"] == kind
        assert text in v.loc["default", "error"]


def test_queued_run_records_what_it_needs(db_url):
    p = run_cli("run", "--model", "mlp", "--queue", "--json", "--require-gpu", "NVIDIA H200",
                "--require-torch", "2.11", *FAST, db_url=db_url)
    assert p.returncode == 0, p.stderr
    run = queries.list_runs(open_database(db_url)).iloc[0]
    assert run["status"] == "queued"
    assert (run["spec"]["require_gpu"], run["spec"]["require_torch"]) == ("NVIDIA H200", "2.11")


def test_a_closed_pipe_ends_the_cli_quietly():
    """`python -m engine show 1 | head` closed the pipe and got a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        p = subprocess.run([sys.executable, "-m", "engine", "models"], cwd=root, stdout=write,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr
    assert p.returncode == 141


def test_the_cli_says_a_provisional_verdict_then_the_final_one():
    """engine/orchestrate/execute.py's verdict line: provisional while a figure may move, final after."""
    from engine.orchestrate.execute import verdict_line

    eager = {"variant": "eager", "status": "ok", "median_ms": 2.0, "eager_median_ms": 2.0,
             "speedup": 1.0, "provisional": True}
    compiled = {"variant": "default", "status": "ok", "median_ms": 1.0, "eager_median_ms": 2.0,
                "speedup": 2.0, "speedup_ci_low": 1.9, "speedup_ci_high": 2.1,
                "n_processes": 1, "provisional": True}
    assert verdict_line([eager]) is None  # nothing to compare yet
    first = verdict_line([eager, compiled])
    assert first.startswith("provisional verdict: Ship default")
    done = verdict_line([{**eager, "provisional": False}, {**compiled, "provisional": False}])
    assert done.startswith("verdict (final): Ship default")
