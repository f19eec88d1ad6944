"""Compile forensics: cache counters per compile (engine/measure/forensics.py) and the lost-time account
(engine/measure/losttime.py). Fast tests feed the analysis torch-shaped input; the slow ones run real
inductor compiles on tiny models in fresh child processes, as the engine does."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.measure import forensics, losttime

ROOT = Path(__file__).resolve().parent.parent
BREAKS = str(ROOT / "engine" / "models" / "breaks.py")


# ---------------------------------------------------------------- cache forensics, fast
def test_cache_log_install_imports_nothing():
    """Installed before a timed first call: importing inductor there would take part of the
    compiler's import out of the compile time (checked in a fresh interpreter)."""
    import subprocess
    import sys

    code = ("import sys, torch\nfrom engine.measure import forensics\nbefore = set(sys.modules)\n"
            "forensics.CompileWatch('cold').__enter__()\n"
            "print(sorted(m for m in set(sys.modules) - before if m.startswith(('torch._inductor', "
            "'torch._functorch', 'torch._dynamo'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def test_cache_log_reads_torch_messages_and_judge_flags_a_warm_miss(tmp_path):
    """torch's own INFO lines (codecache.py, autograd_cache.py) become events; a warm-cache
    compile with a bypass is flagged with torch's reason, a miss with what the cache dir says."""
    log = forensics.CacheLog(str(tmp_path))
    fx = logging.getLogger("torch._inductor.codecache")
    old = (fx.level, fx.propagate)
    try:
        log.install()
        fx.info("fx graph cache miss for key %s", "fabcdef0123456789")
        fx.info("Bypassing FX Graph Cache because '%s'", "Can't cache torchbind objects")
        logging.getLogger("torch._functorch._aot_autograd.autograd_cache").info(
            "AOTAutograd cache hit for key %s", "aqq")
    finally:
        fx.removeHandler(log)
        logging.getLogger("torch._functorch._aot_autograd.autograd_cache").removeHandler(log)
        fx.setLevel(old[0])
        fx.propagate = old[1]
    states = [(e["cache"], e["state"]) for e in log.events]
    assert states == [("fxgraph", "miss"), ("fxgraph", "bypass"), ("autograd", "hit")]
    assert log.events[0]["on_disk"] is False
    reasons = forensics.miss_reasons(log.events)
    assert any("not in the cache" in r for r in reasons)
    assert any("Can't cache torchbind objects" in r for r in reasons)

    result = {"compile_cache": [
        {"phase": "cold", "counters": {"fxgraph_cache_miss": 2}, "reasons": []}]}
    forensics.judge(result)
    assert "warm_cache_missed" not in result  # nothing warm to judge yet
    forensics.merge_cache(result, {"compile_cache": [
        {"phase": "warm_cache", "counters": {"fxgraph_cache_hit": 2, "fxgraph_cache_miss": 0},
         "reasons": []}]})
    assert result["warm_cache_missed"] is False and result["warm_cache_miss_reason"] is None
    forensics.merge_cache(result, {"compile_cache": [
        {"phase": "warm_cache", "counters": {"fxgraph_cache_hit": 1, "fxgraph_cache_bypass": 1},
         "reasons": reasons}]})
    assert result["warm_cache_missed"] is True
    assert "torchbind" in result["warm_cache_miss_reason"]
    assert [c["phase"] for c in result["compile_cache"]] == ["cold", "warm_cache", "warm_cache"]


def test_compile_watch_counts_the_difference_under_torchs_names():
    """The watch keeps what changed during the compile, as integers, and always the core
    counters (0 rather than missing)."""
    from torch._dynamo.utils import counters

    counters["inductor"]["fxgraph_cache_hit"] += 5  # before the watch: not this compile's
    with forensics.CompileWatch("warm_cache") as watch:
        counters["inductor"]["fxgraph_cache_hit"] += 2
        counters["aot_autograd"]["autograd_cache_miss"] += 1
        counters["inductor"]["pattern_matcher_count"] += 3  # not a cache counter
    out = watch.result()
    assert out["phase"] == "warm_cache"
    n = out["counters"]
    assert n["fxgraph_cache_hit"] == 2 and n["autograd_cache_miss"] == 1
    assert n["fxgraph_cache_miss"] == 0 and "pattern_matcher_count" not in n
    assert all(isinstance(v, int) for v in n.values())


# ---------------------------------------------------------------- lost-time account, fast
def _ev(kind, name, start, end):
    return {"kind": kind, "name": name, "start": start, "end": end, "thread": 1}


def _breaks_timeline(calls=2):
    """The shape torch's profiler gives for the graph-break model under inductor: four nested
    frames; frame k's own time after its graph is the break that ends it."""
    ev = []
    for i in range(calls):
        t = i * 1000.0
        ev += [_ev("call", losttime.CALL, t, t + 1000),
               _ev("lookup", "TorchDynamo Cache Lookup", t + 10, t + 20),
               _ev("region", "Torch-Compiled Region: 0/0", t + 20, t + 990),
               _ev("graph", "## Call CompiledFxGraph fa ##", t + 30, t + 80),
               # 80..200: print (120 us)
               _ev("lookup", "TorchDynamo Cache Lookup", t + 200, t + 210),
               _ev("region", "Torch-Compiled Region: 1/0", t + 210, t + 980),
               _ev("graph", "## Call CompiledFxGraph fb ##", t + 220, t + 260),
               # 260..560: .item() waits for the device (300 us)
               _ev("lookup", "TorchDynamo Cache Lookup", t + 560, t + 570),
               _ev("region", "Torch-Compiled Region: 2/0", t + 570, t + 970),
               _ev("graph", "## Call CompiledFxGraph fc ##", t + 580, t + 680),
               # 680..760: the data-dependent if (80 us)
               _ev("lookup", "TorchDynamo Cache Lookup", t + 760, t + 770),
               _ev("region", "Torch-Compiled Region: 3/0", t + 770, t + 960),
               _ev("graph", "## Call CompiledFxGraph fd ##", t + 780, t + 950)]
    return {"events": ev, "kernels": [], "calls": calls}


FRAMES = {"0/0": {"co_name": "forward", "file": BREAKS, "line": 16, "compile_s": 1.0},
          "1/0": {"co_name": "torch_dynamo_resume_in_forward_at_18", "file": BREAKS, "line": 18,
                  "compile_s": 1.0},
          "2/0": {"co_name": "torch_dynamo_resume_in_forward_at_19", "file": BREAKS, "line": 19,
                  "compile_s": 1.0},
          "3/0": {"co_name": "torch_dynamo_resume_in_forward_at_21", "file": BREAKS, "line": 21,
                  "compile_s": 1.0}}
EXPLAINED = [
    {"reason": "Failed to trace builtin operator: `print(...)`", "file": BREAKS, "line": 18},
    {"reason": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "file": BREAKS,
     "line": 19},
    {"reason": "generic_jump TensorVariable(): `if x.sum() > 0:`", "file": BREAKS, "line": 21}]


def test_account_names_each_break_with_its_line_and_measured_share():
    out = losttime.account(_breaks_timeline(), FRAMES, EXPLAINED, wall_ms=2.0)
    items = {(i["kind"], i.get("line")): i for i in out["items"]}
    # each frame's own time outside its graph and nested frames / the 1000 us call:
    # 970 - 50 - 780 = 140, 770 - 40 - 410 = 320, 400 - 100 - 200 = 100
    assert items[("graph_break", 18)]["share"] == pytest.approx(0.14)
    assert items[("graph_break", 19)]["share"] == pytest.approx(0.32)
    assert items[("graph_break", 21)]["share"] == pytest.approx(0.10)
    assert items[("graph_break", 19)]["ms_per_call"] == pytest.approx(0.64)  # 32 % of 2 ms
    assert "breaks.py:19" in items[("graph_break", 19)]["what"]
    assert ".item()" in items[("graph_break", 19)]["action"]
    assert "print" in items[("graph_break", 18)]["action"]
    assert "torch.where" in items[("graph_break", 21)]["action"]
    assert items[("guards", None)]["share"] == pytest.approx(0.04)  # 4 lookups x 10 us
    assert items[("in_graphs", None)]["share"] == pytest.approx(0.36)
    # python: 10 + 10 us around the outer lookup and region, + the last frame's glue 20
    assert items[("python", None)]["share"] == pytest.approx(0.04)
    # the categories partition the call
    assert sum(i["share"] for i in out["items"]) == pytest.approx(1.0)
    kinds = [i["kind"] for i in out["items"]]
    assert kinds[0] == "graph_break" and out["items"][0]["line"] == 19  # ranked: largest first
    assert kinds[-1] == "in_graphs"


def test_account_without_graph_markers_says_so_and_device_idle_on_gpu():
    tl = _breaks_timeline(1)
    tl["events"] = [e for e in tl["events"] if e["kind"] != "graph"]
    out = losttime.account(tl, FRAMES, EXPLAINED, wall_ms=1.0)
    assert "does not mark" in out["note"]
    tl = _breaks_timeline(1)
    tl["kernels"] = [[30, 80], [50, 90], [580, 680]]  # 60 + 100 us busy of 1000
    out = losttime.account(tl, FRAMES, EXPLAINED, wall_ms=1.0, cuda=True)
    idle = next(i for i in out["items"] if i["kind"] == "launch_bound")
    assert idle["share"] == pytest.approx(0.84)
    assert "reduce-overhead" in idle["action"]


def test_cudagraph_coverage_counts_captured_and_skipped_graphs():
    ev = [_ev("call", losttime.CALL, 0, 100),
          _ev("graph", "## Call CompiledFxGraph aaa ##", 10, 40),
          _ev("cg_launch", "cudaGraphLaunch", 20, 30),
          _ev("graph", "## Call CompiledFxGraph bbb ##", 50, 90)]
    cov = losttime.cudagraph_coverage({"events": ev}, [{"reason": "mutated inputs"}],
                                      {"cudagraph_skip_count": 1})
    assert (cov["graphs"], cov["captured"], cov["skipped"]) == (2, 1, 1)
    assert cov["share_in_captured"] == pytest.approx(0.30)
    assert cov["skip_reasons"] == ["mutated inputs"] and cov["cudagraph_skips"] == 1
    out = losttime.account({"events": ev}, {}, [], wall_ms=1.0, cudagraphs=True)
    assert next(i for i in out["items"] if i["kind"] == "uncaptured_cudagraph")["share"] == \
        pytest.approx(0.40)


def test_recompile_item_counts_attempts_after_the_first():
    frames = {"0/0": {"compile_s": 2.0}, "0/1": {"compile_s": 0.5}, "1/0": {"compile_s": 1.0}}
    item = losttime.recompile_item(frames, first_call_s=4.0)
    assert item["count"] == 1 and item["compile_s"] == 0.5
    assert item["share_of_first_call"] == pytest.approx(0.125)
    assert losttime.recompile_item({"0/0": {}}, 1.0) is None


# ---------------------------------------------------------------- real compiles, slow
CHILD = """
import json, sys
from engine.measure.child import Progress, measure
from engine.spec import normalise
model, variant, phase, dims, backend = sys.argv[1:6]
run = normalise({"model": model, "variants": ["eager", variant], "dims": json.loads(dims),
                 "device": "cpu", "warmup_calls": 3, "min_samples": 3, "min_time_s": 0.0,
                 "max_time_s": 0.2, "pipeline_k": 2, "backend": backend})
res = measure({"run": run, "variant": variant, "phase": phase}, Progress(None))
print(json.dumps({k: res.get(k) for k in ("status", "error", "compile_cache", "lost_time",
                                          "graph_breaks", "cudagraph_coverage")}))
"""


def child(model, variant, phase, dims, cache_dir, backend="inductor"):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_CACHE_DIR": str(cache_dir)}
    p = subprocess.run([sys.executable, "-c", CHILD, model, variant, phase, json.dumps(dims),
                        backend], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["status"] == "ok", out
    return out


@pytest.mark.slow
def test_inductor_warm_cache_compile_hits_and_cold_misses(tmp_path):
    """Item 7 of the issue: a real inductor compile on a tiny model. The cold compile (empty
    cache dir) misses the FX graph cache; a fresh process on the same dir hits it; a fresh
    process on another empty dir misses again and is flagged with the reason."""
    dims = {"batch": 2, "hidden": 8}
    cold = child("mlp", "default", "cold", dims, tmp_path / "a")["compile_cache"][0]
    assert cold["phase"] == "cold"
    assert cold["counters"]["fxgraph_cache_miss"] >= 1 and cold["counters"]["fxgraph_cache_hit"] == 0
    warm = child("mlp", "default", "warm_cache", dims, tmp_path / "a")["compile_cache"][0]
    assert warm["counters"]["fxgraph_cache_hit"] >= 1 and warm["counters"]["fxgraph_cache_miss"] == 0
    assert warm["counters"]["autograd_cache_hit"] >= 1
    assert all(f.get("inductor_fx_local_cache_hit_count", 1) >= 1 for f in warm["frames"])
    result = {"compile_cache": [cold]}
    forensics.merge_cache(result, {"compile_cache": [warm]})
    assert result["warm_cache_missed"] is False
    elsewhere = child("mlp", "default", "warm_cache", dims, tmp_path / "b")["compile_cache"][0]
    forensics.merge_cache(result, {"compile_cache": [elsewhere]})
    assert result["warm_cache_missed"] is True
    assert "not in the cache" in result["warm_cache_miss_reason"]


@pytest.mark.slow
def test_graph_break_model_lost_time_names_its_three_breaks(tmp_path):
    """Under inductor each of the catalogue model's three breaks (print, .item(), the
    data-dependent if) is an item of the account with its file:line and a measured share."""
    out = child("graph_breaks", "default", "cold", {"batch": 4, "hidden": 16}, tmp_path)
    breaks = {i["line"]: i for i in out["lost_time"]["items"] if i["kind"] == "graph_break"}
    assert sorted(breaks) == [18, 19, 21], out["lost_time"]
    for line, word in ((18, "print"), (19, ".item()"), (21, "torch.where")):
        assert breaks[line]["file"].endswith("engine/models/breaks.py")
        assert 0 < breaks[line]["share"] < 1 and breaks[line]["ms_per_call"] > 0
        assert word in breaks[line]["action"]


def test_roofline_counts_matmul_flops_and_estimates_bytes():
    import torch

    from engine.measure import roofline

    model = torch.nn.Linear(64, 32, bias=False)
    x = torch.randn(8, 64)
    out = roofline.figures(model, (x,), median_ms=1.0, device="cpu")
    assert out["flops_per_call"] == 2 * 8 * 64 * 32
    assert out["bytes_per_call_estimate"] == 4 * (64 * 32 + 8 * 64 + 8 * 32)
    assert out["achieved_tflops"] == pytest.approx(2 * 8 * 64 * 32 / 1e-3 / 1e12)
    assert "peak_tflops_bf16" not in out  # ceilings only on a GPU


@pytest.mark.slow  # three child processes: about a minute on 2 busy cores
def test_cli_plumbing_stores_cache_counters_per_compile_in_show_json(db_url):
    """aot_eager (the compiler is not the point): every compile of the variant, cold then warm,
    reaches ``show --json`` with torch's core cache counters as integers, and the lost-time
    account and its note travel with it."""
    from tests.conftest import FAST, run_cli

    p = run_cli("run", "--model", "mlp", "--dim", "batch=2", "--dim", "hidden=8",
                "--variants", "eager,default", "--backend", "aot_eager", *FAST, db_url=db_url)
    assert p.returncode == 0, p.stderr[-2000:]
    p = run_cli("show", "1", "--json", db_url=db_url)
    assert p.returncode == 0, p.stderr[-2000:]
    v = next(x for x in json.loads(p.stdout)["variants"] if x["variant"] == "default")
    assert [c["phase"] for c in v["compile_cache"]] == ["cold", "warm_cache"]
    for c in v["compile_cache"]:
        assert set(forensics.CORE) <= set(c["counters"])
        assert all(type(n) is int for n in c["counters"].values())
    assert v["warm_cache_missed"] is False  # aot_eager uses no FX graph cache: nothing missed
    assert "lost_time" in v and isinstance(v["lost_time"]["items"], list)
    text = run_cli("show", "1", db_url=db_url).stdout
    assert "compile cache [default]: cold:" in text


def test_frames_from_metrics_keeps_a_named_frame_when_torch_records_it_again(monkeypatch):
    """On the H200 (torch 2.11) the compile metrics held "3/0" twice, the second record without
    a code name; the account then lost the data-dependent break (its time read as Python)."""
    import sys
    import types

    def metric(cid, co_name, line):
        return types.SimpleNamespace(compile_id=cid, co_name=co_name,
                                     co_filename=BREAKS if co_name else None,
                                     co_firstlineno=line, entire_frame_compile_time_s=1.0)

    records = [metric("0/0", "forward", 16), metric("0/0", None, None),
               metric("1/0", "torch_dynamo_resume_in_forward_at_18", 18),
               metric("2/0", "torch_dynamo_resume_in_forward_at_19", 19),
               metric("3/0", "torch_dynamo_resume_in_forward_at_21", 21), metric("3/0", None, None)]
    fake = types.SimpleNamespace(get_compilation_metrics=lambda: records)
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", fake)
    frames = losttime.frames_from_metrics()
    assert frames["3/0"]["co_name"] == "torch_dynamo_resume_in_forward_at_21"
    assert frames["0/0"]["file"] == BREAKS
    out = losttime.account(_breaks_timeline(), frames, EXPLAINED, wall_ms=2.0)
    lines = sorted(i["line"] for i in out["items"] if i["kind"] == "graph_break")
    assert lines == [18, 19, 21]
