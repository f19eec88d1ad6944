"""Triton and autotune caches per compile (issue 41): torch's own counter names, the kernels'
autotune cache decisions, and how they reach ``show`` (text and --json) and the dashboard's
cache table. On this CPU machine inductor writes C++ kernels, so a real Triton cache is never
exercised here: the plumbing is fed a recorded max-autotune compile under torch's names, and
one test checks those names against the installed torch's source."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pandas as pd
import pytest

from engine.analysis import forensics_report
from engine.measure import forensics

# A max-autotune variant on a GPU: the cold compile bundles its kernels and autotunes; the
# warm-cache one finds the graph, its kernels and every kernel's best config in the cache.
RECORDED = [
    {"phase": "cold", "counters": {
        "fxgraph_cache_miss": 2, "autograd_cache_miss": 1, "triton_bundler_save_kernel": 38,
        "async_compile_cache_miss": 19, "select_algorithm_autotune": 4},
     "autotune_cache_state": {"miss": 12, "only 1 config": 7}, "reasons": []},
    {"phase": "warm_cache", "counters": {
        "fxgraph_cache_hit": 2, "autograd_cache_hit": 1,
        "triton_bundler_read_and_emit_kernel": 38, "async_compile_cache_hit": 0,
        "select_algorithm_autotune": 0},
     "autotune_cache_state": {"hit": 12, "only 1 config": 7}, "reasons": []}]


def test_the_triton_counter_names_are_torchs_own():
    """Every name in ``forensics.TRITON`` is a counter the installed torch increments in
    ``counters["inductor"]`` (a rename in a later release fails here, not silently at 0),
    and the per-kernel state is the field torch writes."""
    import torch

    root = Path(torch.__file__).parent / "_inductor"
    source = "\n".join(p.read_text(errors="ignore") for p in root.rglob("*.py"))
    for name in forensics.TRITON:
        assert re.search(r'counters\["inductor"\]\[\s*"' + name + r'"\s*\]', source), name
    assert re.search(r'autotune_cache_info\["autotune_cache_state"\] = "hit"', source)
    assert re.search(r'autotune_cache_info\["autotune_cache_state"\] = "miss"', source)


def test_compile_watch_keeps_triton_counters_and_the_kernels_autotune_decisions(monkeypatch):
    """Counters changed during the compile, under torch's names, 0 when untouched; kernels of
    the modules loaded during the compile counted per decision, those loaded before not."""
    from torch._dynamo.utils import counters
    from torch._inductor.codecache import PyCodeCache

    def kernel(state):
        return types.SimpleNamespace(autotune_cache_info={"autotune_cache_state": state})

    before = types.ModuleType("old")
    before.k = kernel("miss")
    monkeypatch.setattr(PyCodeCache, "modules", [before])
    counters["inductor"]["triton_bundler_read_and_emit_kernel"] += 3  # not this compile's
    with forensics.CompileWatch("warm_cache") as watch:
        counters["inductor"]["triton_bundler_read_and_emit_kernel"] += 5
        counters["inductor"]["select_algorithm_autotune"] += 0
        mod = types.ModuleType("new")
        mod.a, mod.b, mod.c = kernel("hit"), kernel("hit"), kernel("only 1 config")
        mod.same = mod.a  # one kernel under two names counts once
        mod.not_a_kernel = types.SimpleNamespace(autotune_cache_info=None)
        PyCodeCache.modules.append(mod)
    out = watch.result()
    assert out["counters"]["triton_bundler_read_and_emit_kernel"] == 5
    assert out["counters"]["triton_bundler_save_kernel"] == 0  # present, not missing
    assert set(forensics.TRITON) <= set(out["counters"])
    assert out["autotune_cache_state"] == {"hit": 2, "only 1 config": 1}


def test_show_says_what_the_triton_and_autotune_caches_did():
    row = {"variant": "max-autotune", "compile_cache": RECORDED}
    text = forensics_report.cache_line(row)
    assert "cold: fxgraph_cache_miss=2" in text
    assert "triton_bundler_save_kernel=38" in text and "select_algorithm_autotune=4" in text
    assert "12 kernels autotuned (miss)" in text
    warm = text.split("warm_cache:")[1]
    assert "triton_bundler_read_and_emit_kernel=38" in warm
    assert "12 kernels found their best config in the cache (hit)" in warm
    assert "select_algorithm_autotune" not in warm  # 0: nothing benchmarked again
    # a hostile stored entry (a string count, a bool) is left out, not crashed on
    assert forensics_report.autotune_states({"autotune_cache_state": {"hit": "9", "miss": True,
                                                                      "x": 2}}) == {"x": 2}


def test_show_says_when_a_warm_compile_benchmarked_its_algorithm_choices_again():
    """What torch 2.11 did on an H100 for the seed MLP: FX graph and AOTAutograd hits, every
    Triton kernel's best config found, and still two GEMM selections benchmarked."""
    warm = {**RECORDED[1], "counters": {**RECORDED[1]["counters"],
                                        "select_algorithm_autotune": 2}}
    text = forensics_report.cache_line({"variant": "max-autotune",
                                        "compile_cache": [RECORDED[0], warm]})
    assert "algorithm choices benchmarked again [max-autotune]" in text
    assert "algorithm choices benchmarked again" not in forensics_report.cache_line(
        {"variant": "max-autotune", "compile_cache": RECORDED})


def test_dashboard_cache_table_has_triton_and_autotune_columns():
    from dashboard import charts_forensics

    df = pd.DataFrame([{"run_id": 3, "variant": "max-autotune", "status": "ok",
                        "compile_cache": RECORDED}])
    t = charts_forensics.cache_table(df)
    assert list(t["compile"]) == ["cold", "warm_cache"]
    assert list(t["triton_bundler_read_and_emit_kernel"]) == [0, 38]
    assert list(t["autotune_cache_state=hit"]) == [0, 12]
    assert list(t["autotune_cache_state=miss"]) == [12, 0]
    assert t["select_algorithm_autotune"].dtype.kind == "i"


def test_show_json_carries_the_recorded_counters(tmp_path):
    """Through storage, as a worker stores a result: ``show --json`` gives every compile's
    counters and autotune decisions back as integers, and ``show`` prints them."""
    from engine.analysis.show import format_run, run_json
    from engine.spec import normalise
    from storage import claim_run, enqueue_run, finish_run, open_database, save_variant_result

    db = open_database(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        spec = normalise({"model": "mlp", "dims": {"batch": 2}, "device": "cpu",
                          "variants": ["eager", "max-autotune"]})
        run_id = enqueue_run(db, spec)
        claim_run(db, run_id, "w")
        save_variant_result(db, run_id, {"variant": "eager", "status": "ok",
                                         "samples_ms": [1.0]})
        save_variant_result(db, run_id, {"variant": "max-autotune", "status": "ok",
                                         "samples_ms": [1.0], "compile_cache": RECORDED})
        finish_run(db, run_id, "done", environment={})
        v = next(x for x in run_json(db, run_id)["variants"] if x["variant"] == "max-autotune")
        assert v["compile_cache"][1]["autotune_cache_state"] == {"hit": 12, "only 1 config": 7}
        assert v["compile_cache"][1]["counters"]["triton_bundler_read_and_emit_kernel"] == 38
        assert "12 kernels found their best config in the cache (hit)" in format_run(
            db, run_id, width=None)  # whole lines: the phrase is not wrapped
    finally:
        db.dispose()


@pytest.mark.parametrize("states", [{}, None, "hit"])
def test_no_autotune_decisions_says_nothing(states):
    entry = {"phase": "cold", "counters": {"fxgraph_cache_miss": 1},
             "autotune_cache_state": states}
    assert "autotune" not in forensics_report.cache_line({"variant": "d",
                                                          "compile_cache": [entry]})


def test_warm_processes_that_say_the_same_are_said_once_with_a_count():
    """Three warm-cache processes without cache activity printed 'warm_cache: no cache
    activity' three times on one line of show."""
    warm = {"phase": "warm_cache", "counters": {}}
    line = forensics_report.cache_line({"variant": "d", "compile_cache": [
        {"phase": "cold", "counters": {"fxgraph_cache_miss": 2}}, warm, dict(warm), dict(warm),
        {"phase": "warm_cache", "counters": {"fxgraph_cache_hit": 2}}]})
    assert line.count("warm_cache: no cache activity") == 1
    assert "warm_cache: no cache activity (×3 processes)" in line
    assert "warm_cache: fxgraph_cache_hit=2" in line and "hit=2 (×" not in line


def test_frame_metrics_leave_out_cuda_graph_recordings(monkeypatch):
    """CUDA-graph trees log each recording as a run-time compilation-metrics record under the
    frame's compile id: it is not a frame, so the compile's frames do not list it."""
    import sys

    records = [types.SimpleNamespace(compile_id="0/0", co_name="forward", is_runtime=False,
                                     inductor_fx_local_cache_hit_count=1),
               types.SimpleNamespace(compile_id="0/0", co_name=None, is_runtime=True,
                                     runtime_cudagraphify_time_us=54)]
    fake = types.SimpleNamespace(get_compilation_metrics=lambda: list(records))
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", fake)
    frames = forensics.frame_metrics()
    assert [f["co_name"] for f in frames] == ["forward"]
    assert forensics.is_runtime_metric(records[1]) and not forensics.is_runtime_metric(records[0])
