"""A further process's autotuned kernels draw anew (engine/measure/autotune_draw.py): which
variants and processes, the mechanism against the installed torch, and what is stored."""

from __future__ import annotations

import math
import os
import pickle
import types

import numpy as np
import pytest

from contract.results import ProcessResult
from engine.analysis.stats import ProcessRounds, history_prior, paired_speedup, unit_log_ratios
from engine.analysis.variant_stats import add_stats, process_units
from engine.measure import autotune_draw
from engine.orchestrate import process
from engine.orchestrate.fold import first_process, merge_process

CUDA = {"device": "cuda", "backend": "inductor"}


@pytest.mark.parametrize(("run", "variant", "applies"), [
    (CUDA, "default", True),
    (CUDA, "reduce-overhead", True),
    ({"device": "cuda:1"}, "default@dyn=1", True),
    (CUDA, "default+opt", True),
    (CUDA, "default@frz=1", True),
    (CUDA, "max-autotune", False),
    (CUDA, "max-autotune-no-cudagraphs", False),
    (CUDA, "default@cdt=1", False),
    (CUDA, "eager", False),
    ({"device": "cuda", "backend": "aot_eager"}, "default", False),
    ({"device": "cpu"}, "default", False),
])
def test_only_gpu_inductor_variants_without_max_autotune_draw(run, variant, applies):
    assert autotune_draw.applies(run, variant) is applies
    draw, _ = autotune_draw.for_process(run, variant, "cold", False)
    assert draw == ("drawn" if applies else None)
    assert [autotune_draw.asked("warm_cache" if i else "cold", i) for i in range(4)] == [
        False, False, True, True]


def _restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``redraw`` patches in torch, put back after the test."""
    from torch._inductor.runtime.autotune_cache import AutotuneCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    for cls, name in ((AutotuneCache, "read_best"), (AutotuneCache, "save"),
                      (CachingAutotuner, "benchmark_all_configs")):
        monkeypatch.setattr(cls, name, getattr(cls, name))


def _config(block: int, warps: int) -> types.SimpleNamespace:
    # what inductor reads of a triton.Config (this machine's torch has no triton)
    return types.SimpleNamespace(kwargs={"XBLOCK": block}, num_warps=warps, num_stages=1,
                                 num_ctas=1, maxnreg=None)


def _files(root: str) -> list[str]:
    return sorted(f for _, _, fs in os.walk(root) for f in fs if f.endswith(".best_config"))


def test_a_redrawing_process_reads_no_stored_choice_and_writes_none(tmp_path, monkeypatch):
    """Against the installed torch: a choice saved by the cold compile is a hit for a replaying
    process; after ``redraw`` the same lookup misses (the kernel autotunes at its first call),
    and the process's own winner is not written, also through an autotune cache unpickled after
    the redraw (a warm load restores the cold compile's pickled autotuners)."""
    pytest.importorskip("torch")
    from torch._inductor.runtime.triton_heuristics import check_autotune_cache

    _restored_after(monkeypatch)
    kernel = tmp_path / "ab" / "cabcdef.py"
    kernel.parent.mkdir()
    kernel.write_text("# a kernel's source\n")
    meta, configs = {"autotune_local_cache": True}, [_config(512, 8), _config(1024, 4)]
    tried, cache, info = check_autotune_cache(configs, str(kernel), meta)
    assert (len(tried), info["autotune_cache_state"]) == (2, "miss")
    cache.save(configs[1], 10**6, found_by_coordesc=False)  # the cold compile's winner
    assert len(_files(str(tmp_path))) == 1
    tried, _, info = check_autotune_cache(configs, str(kernel), meta)
    assert (tried, info["autotune_cache_state"]) == ([configs[1]], "hit")  # replayed
    pickled = pickle.dumps(cache.save)

    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    benchmark = CachingAutotuner.benchmark_all_configs
    assert autotune_draw.for_process(CUDA, "default", "warm_cache", True) == (
        "redrawn", None)
    assert CachingAutotuner.benchmark_all_configs.__wrapped__ is benchmark  # takes turns
    tried, again, info = check_autotune_cache(configs, str(kernel), meta)
    assert (len(tried), info["autotune_cache_state"]) == (2, "miss")  # autotunes anew
    os.remove(again.local_cache[1])
    again.save(configs[0], 10**6, found_by_coordesc=False)
    pickle.loads(pickled)(configs[0], 10**6, found_by_coordesc=False)
    assert _files(str(tmp_path)) == []  # its winner stays in the process


def test_a_torch_without_the_hooks_replays_and_says_why(monkeypatch):
    pytest.importorskip("torch")
    from torch._inductor.runtime.autotune_cache import AutotuneCache

    monkeypatch.delattr(AutotuneCache, "read_best")
    draw, why = autotune_draw.for_process(CUDA, "default", "warm_cache", True)
    assert draw == "replayed" and why == "torch has no AutotuneCache.read_best"


def test_the_second_warm_process_on_is_asked_to_redraw(tmp_path, monkeypatch):
    import json

    monkeypatch.setattr(process.forked, "usable", lambda: False)
    monkeypatch.setattr(process.subprocess, "Popen", lambda *a, **k: types.SimpleNamespace(
        pid=os.getpid()))
    asked = {}
    for phase, index in (("cold", 0), ("warm_cache", 1), ("warm_cache", 2), ("warm_cache", 3)):
        h = process.ChildProcess({}, "default", phase, tmp_path / "cache", tmp_path, index=index)
        asked[index] = json.loads(h.spec_path.read_text())["redraw_autotune"]
    assert asked == {0: False, 1: False, 2: True, 3: True}


def _child(draw: str | None, **extra) -> dict:
    return {"variant": "default", "first_call_warm_s": 1.0, "autotune_draw": draw, **extra,
            "processes": [{"samples_ms": [1.0], "eager_samples_ms": [2.0]}]}


def test_each_process_keeps_its_draw_and_junk_is_left_out():
    cold = {**_child("drawn"), "first_call_cold_s": 9.0}
    first_process(cold)
    assert "autotune_draw" not in cold  # the cold process's own entry holds it
    merge_process(cold, _child("replayed"))
    merge_process(cold, _child("redrawn"))
    merge_process(cold, _child("replayed", autotune_draw_note="torch's AutotuneCache has no "
                               "save\n<b>"))
    merge_process(cold, _child("<script>"))
    procs = [ProcessResult.from_json(p) for p in cold["processes"]]
    assert [p.autotune_draw for p in procs] == ["drawn", "replayed", "redrawn", "replayed", None]
    assert procs[3].autotune_draw_note == "torch's AutotuneCache has no save <b>"


def test_show_says_which_processes_drew_anew():
    from engine.analysis.forensics_report import draw_line, lines

    row = {"variant": "default", "processes": [
        {"autotune_draw": "drawn"}, {"autotune_draw": "replayed"}, {"autotune_draw": "redrawn"},
        {"autotune_draw": "replayed", "autotune_draw_note": "torch's AutotuneCache has no save"}]}
    assert draw_line(row) == (
        "  autotuned kernels [default]: the cold compile's draw, replayed by 2 processes, "
        "drawn anew by 1; not drawn anew: torch's AutotuneCache has no save")
    assert draw_line(row) in lines([row])
    assert draw_line({"variant": "default", "processes": [{"phase": "cold"}, "junk"]}) is None


def test_the_dashboards_cache_table_says_each_compiles_draw():
    import pandas as pd

    from dashboard import charts_forensics

    compiles = [{"phase": "cold", "counters": {}}] + [{"phase": "warm_cache", "counters": {}}] * 3
    procs = [{"autotune_draw": d} for d in ("drawn", "replayed", "redrawn", "junk")]
    df = pd.DataFrame([{"run_id": 3, "variant": "default", "status": "ok",
                        "compile_cache": compiles, "processes": procs}])
    def shown() -> list:
        return [x if isinstance(x, str) else None
                for x in charts_forensics.cache_table(df)["autotuned kernels"]]

    assert shown() == ["drawn", "replayed", "redrawn", None]
    df.at[0, "processes"] = procs[:2]  # a further process failed: not told apart, not guessed
    assert shown() == [None] * 4


def _disagreeing(draws: list[str], eager: list, speeds: list) -> dict:
    return {"variant": "reduce-overhead", "status": "ok", "processes_disagree": True,
            "processes": [{"autotune_draw": d} for d in draws], "process_eager_ms": eager,
            "process_speedups": speeds}


def test_the_verdict_names_the_redraw_when_the_compiled_time_moved_and_eager_held():
    from engine.analysis.disagreement import redraw_cause

    # eager 4.00-4.02 ms; compiled 1.25, 1.25, 1.31, 1.25 ms: the third process drew other kernels
    row = _disagreeing(["drawn", "replayed", "redrawn", "redrawn"], [4.0, 4.01, 4.02, 4.0],
                       [4.0 / 1.25, 4.01 / 1.25, 4.02 / 1.31, 4.0 / 1.25])
    text = redraw_cause(row)
    assert text.startswith("2 of its 4 processes autotuned its kernels anew")
    assert ("kernel draws read 1.25 ms to 1.31 ms per call (4.8% apart) while the processes "
            "sharing a draw held within 0.0% and eager within 0.5%") in text


@pytest.mark.parametrize(("draws", "eager", "speeds"), [
    (["drawn", "replayed", "replayed"], [4.0, 4.0, 4.0], [3.2, 3.2, 3.0]),  # nothing redrawn
    (["drawn", "replayed", "redrawn"], [4.0, 4.0, 4.0], [3.2, 3.2, 3.17]),  # moved < 2 %
    (["drawn", "replayed", "redrawn"], [4.0, 4.0, 4.4], [3.2, 3.2, 3.2]),  # eager moved too
    (["drawn", "redrawn"], [4.0, "4.0"], [3.2, 3.0]),  # a hand-edited row
    (["drawn", "redrawn"], [4.0, 4.0, 4.0], [3.2, 3.0, 3.0]),  # lengths differ
    # the two processes sharing a draw are the ones apart: not the draw
    (["drawn", "replayed", "redrawn"], [4.0, 4.0, 4.0], [3.2, 4.0 / 1.31, 3.2]),
    (["redrawn", "redrawn"], [4.0, 4.0], [3.2, 3.0]),  # no shared draw to hold against
])
def test_no_redraw_is_named_where_the_figures_do_not_say_so(draws, eager, speeds):
    from engine.analysis.disagreement import redraw_cause

    assert redraw_cause(_disagreeing(draws, eager, speeds)) is None


def test_show_marks_the_processes_that_drew_anew():
    from engine.analysis.show import process_lines

    row = {"variant": "default", "process_speedups": [3.2, 3.21, 3.05],
           "stop_reason": "interval excludes 1.0",
           "processes": [{"autotune_draw": "drawn"}, {"autotune_draw": "replayed"},
                         {"autotune_draw": "redrawn"}]}
    assert "  processes [default]: 3.20x, 3.21x, 3.05x (drawn anew) (stopped: interval " \
           "excludes 1.0)" in process_lines([row])
    row["processes"] = row["processes"][:2]  # not matched: no marks, no guess
    assert "  processes [default]: 3.20x, 3.21x, 3.05x (stopped: interval excludes 1.0)" in \
        process_lines([row])


def test_a_hostile_stored_draw_reaches_no_terminal_or_page_as_written():
    """Rows are written by anyone who can write the database: a draw that is not one of the
    three words is no draw, and a note is one escaped line of at most 300 characters."""
    from engine.analysis.disagreement import redraw_cause
    from engine.analysis.forensics_report import draw_line

    row = {"variant": "default", "processes": [
        {"autotune_draw": "drawn"},
        {"autotune_draw": "redrawn", "autotune_draw_note": "\x1b]0;owned\x07" + "x\n" * 400},
        {"autotune_draw": "<img src=x onerror=alert(1)>"}, {"autotune_draw": True}],
        "process_eager_ms": [4.0, 4.0, 4.0, 4.0], "process_speedups": [3.2, 3.0, 3.2, 3.2]}
    text = draw_line(row)
    assert "\x1b" not in text and "\x07" not in text and "\n" not in text and "<img" not in text
    assert text.startswith("  autotuned kernels [default]: the cold compile's draw, drawn anew "
                           "by 1; not drawn anew: ")
    assert len(text.split("not drawn anew: ", 1)[1]) <= 300
    assert "autotuned its kernels anew" in redraw_cause(row)  # one honest redraw still counts


@pytest.mark.parametrize(("draw", "states", "said"), [
    ("redrawn", {"miss": 5, "only 1 config": 30}, ("redrawn", None)),
    ("redrawn", {"miss": 4, "hit": 1}, ("replayed", "1 autotuned kernel still read the choice "
                                                   "from the cache")),
    ("redrawn", {"hit": 5}, ("replayed", "5 autotuned kernels still read the choice from the "
                                         "cache")),
    ("redrawn", {"only 1 config": 30}, (None, None)),  # nothing autotuned: no draw
    ("redrawn", {}, (None, None)),
    ("drawn", {"miss": 5}, ("drawn", None)),
    ("drawn", {}, (None, None)),
    ("replayed", {"hit": 5}, ("replayed", None)),
    ("replayed", {"miss": 5}, ("redrawn", None)),  # the cache had no choice: it drew its own
    (None, {"hit": 5}, (None, None)),
])
def test_a_draw_is_what_the_first_calls_kernels_did(draw, states, said):
    assert autotune_draw.confirmed(draw, states) == said


def test_a_hook_pickled_in_a_redrawing_process_loads_anywhere(monkeypatch):
    """A kernel compiled in a redrawing process goes to the shared cache with its save hook:
    it must unpickle in a process without the redraw (as torch's own ``save``)."""
    pytest.importorskip("torch")
    from torch._inductor.runtime.autotune_cache import AutotuneCache

    saved = {n: getattr(AutotuneCache, n) for n in ("read_best", "save")}
    _restored_after(monkeypatch)
    cache = AutotuneCache("a" * 64)
    assert autotune_draw.redraw() is None
    pickled = pickle.dumps((cache.save, cache.read_best))
    for name, fn in saved.items():  # a process without the redraw
        setattr(AutotuneCache, name, fn)
    save, read_best = pickle.loads(pickled)
    assert save.__func__ is saved["save"] and read_best.__func__ is saved["read_best"]


def test_a_redraws_config_benchmarks_take_turns_across_the_run(tmp_path, monkeypatch):
    """Redrawing processes compile side by side; while one benchmarks configs it holds the
    run's lock, so another's benchmarks wait (and without a run folder nothing is locked)."""
    import fcntl

    def try_lock() -> bool:
        with open(tmp_path / autotune_draw.LOCK_NAME, "a+b") as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

    def benchmark_all_configs(self, *args, **kwargs):
        if kwargs.get("again"):  # a benchmark inside a benchmark must not wait for itself
            return wrapped(self)
        return try_lock(), args, kwargs

    monkeypatch.setenv("COMPILELAB_RUN_DIR", str(tmp_path))
    wrapped = autotune_draw._taking_turns(benchmark_all_configs)
    assert wrapped(object(), again=True) == (False, (), {})
    assert wrapped.__name__ == "benchmark_all_configs"
    assert wrapped(object(), 1, k=2) == (False, (1,), {"k": 2})  # held while benchmarking
    assert try_lock()  # and released after
    monkeypatch.delenv("COMPILELAB_RUN_DIR")
    assert autotune_draw._taking_turns(benchmark_all_configs)(object()) == (True, (), {})


def _proc(speedup: float, draw: str | None) -> dict:
    """A process whose rounds read ``speedup`` with a little round-to-round noise."""
    compiled = [1.0, 1.01, 0.99, 1.0] * 10
    return {"samples_ms": compiled, "eager_samples_ms": [speedup * c for c in compiled],
            "block": 10, "autotune_draw": draw}


@pytest.mark.parametrize(("draws", "units"), [
    (["drawn", "replayed", "redrawn", "redrawn"], [0, 0, 2, 3]),
    (["drawn", "replayed", "redrawn"], [0, 0, 2]),
    (["drawn", "replayed", "replayed"], None),  # nothing drawn anew: processes stay the units
    ([None, None, None], None),  # a CPU run: nothing autotunes
    (["drawn", None, "redrawn", "redrawn"], None),  # the replay unknown: no pair to join
    (["drawn", "replayed", "redrawn", None], [0, 0, 2, 3]),
])
def test_processes_that_replayed_one_draw_count_once(draws, units):
    procs = [ProcessResult.from_json(_proc(2.0, d)) for d in draws]
    assert process_units(procs) == units


def test_the_interval_is_over_draws_where_processes_drew_anew():
    """The cold draw's two processes average into one unit: the point is the mean of three
    draws, not four processes, and the t quantile has two degrees of freedom."""
    speeds = [2.0, 2.0, 2.4, 2.2]
    draws = ["drawn", "replayed", "redrawn", "redrawn"]
    eager = {"variant": "eager", "status": "ok", "samples_ms": [1.0] * 10,
             "processes": [{"samples_ms": [1.0] * 10, "block": 10}]}
    result = {"variant": "default", "status": "ok",
              "processes": [_proc(s, d) for s, d in zip(speeds, draws, strict=True)],
              "samples_ms": [1.0] * 40}
    s = add_stats(dict(result), {"eager": eager, "default": result})["stats"]
    assert s["speedup"] == pytest.approx(math.exp(np.mean(np.log([2.0, 2.4, 2.2]))), rel=1e-3)
    assert s["speedup_df"] == 2.0
    assert "3 kernel draws (4 processes" in s["interval_method"]
    assert s["process_speedups"] == pytest.approx(speeds, rel=1e-3)
    plain = {**result, "processes": [_proc(x, None) for x in speeds]}
    p = add_stats(dict(plain), {"eager": eager, "default": plain})["stats"]
    assert p["speedup_df"] == 3.0 and "per-process" in p["interval_method"]
    assert p["speedup_ci_high"] / p["speedup_ci_low"] < s["speedup_ci_high"] / s["speedup_ci_low"]


def test_unit_ids_must_match_the_processes():
    with pytest.raises(ValueError, match="unit ids"):
        unit_log_ratios([0.1, 0.2], [0])
    rounds = [ProcessRounds.from_samples([2.0] * 10, [1.0] * 10, 10)] * 2
    with pytest.raises(ValueError, match="one kernel draw"):
        paired_speedup(rounds, units=[0, 0])


def test_a_redrawing_variant_is_planned_three_draws_and_others_as_before():
    """On a GPU, default and reduce-overhead redraw: four processes each (the cold one and the
    first warm-cache one share a draw), none left speculative; max-autotune replays: three, and
    its first further process starts with the batch, speculative, as before."""
    from engine.orchestrate.runner import _Run
    from engine.spec import normalise

    spec = normalise({"model": "mlp", "device": "cuda",
                      "variants": ["eager", "default", "reduce-overhead", "max-autotune"],
                      "concurrency": 16})
    run = _Run(spec, lambda *a: None, lambda r: None, lambda *a: None, None, None)
    plan = {(j.variant, j.index): j.speculative for j in run.plan}
    for v in ("default", "reduce-overhead"):
        assert run.need[v] == 4
        assert [plan.get((v, i)) for i in range(5)] == [False, False, False, False, None]
    assert run.need["max-autotune"] == 3
    assert [plan.get(("max-autotune", i)) for i in range(5)] == [False, False, False, True, None]
    cpu = _Run(normalise({**spec, "device": "cpu", "variants": ["eager", "default"]}),
               lambda *a: None, lambda r: None, lambda *a: None, None, None)
    assert cpu.need == {"default": 3}
    assert autotune_draw.min_processes(3, 3) == 3  # max_processes is the user's to set
    assert autotune_draw.min_processes(5, 8) == 5
    # one or two processes (a quick look) reach no redraw: left as asked, not raised to four
    assert autotune_draw.min_processes(1, 4) == 1 and autotune_draw.min_processes(2, 4) == 2


def test_the_pipelined_interval_and_the_history_count_draws_too():
    """The throughput figure is formed as the speedup is (over draws), and an earlier run's
    stored draws group its processes the same way when it lends its variance."""
    speeds = [2.0, 2.0, 2.4, 2.2]
    draws = ["drawn", "replayed", "redrawn", "redrawn"]
    procs = [{**_proc(s, d), "pipelined_ms": [1.0] * 4, "eager_pipelined_ms": [s] * 4}
             for s, d in zip(speeds, draws, strict=True)]
    eager = {"variant": "eager", "status": "ok", "samples_ms": [1.0] * 10,
             "processes": [{"samples_ms": [1.0] * 10, "block": 10}]}
    result = {"variant": "default", "status": "ok", "processes": procs, "samples_ms": [1.0] * 40}
    s = add_stats(dict(result), {"eager": eager, "default": result})["stats"]
    assert s["pipelined_speedup"] == pytest.approx(s["speedup"], rel=1e-3)
    assert s["pipelined_ci_low"] == pytest.approx(s["speedup_ci_low"], rel=1e-2)
    by_draw = history_prior([(speeds, draws)])
    apart = history_prior([speeds])
    assert by_draw.df == 2 and apart.df == 3
    assert by_draw.var == pytest.approx(np.var(np.log([2.0, 2.4, 2.2]), ddof=1))
    # draws that do not line up with the speeds, or junk, leave the processes apart
    assert history_prior([(speeds, draws[:3])]).df == 3
    assert history_prior([(speeds, [True, [], "drawn", None])]).df == 3


def test_a_redrawing_variant_borrows_only_from_earlier_runs_that_redrew(monkeypatch):
    """Earlier runs that replayed one draw in every process would lend a spread without the
    draw in it: on a GPU, default borrows only from runs whose processes redrew; max-autotune
    (never redraws) borrows from all."""
    import storage.history
    from engine.orchestrate.execute import _variance_priors

    redrew = ([2.0, 2.0, 2.4, 2.2], ["drawn", "replayed", "redrawn", "redrawn"])
    replayed = ([2.0, 2.1, 1.9], ["drawn", "replayed", "replayed"])
    found = {"default": [replayed], "max-autotune": [replayed]}
    monkeypatch.setattr(storage.history, "recent_process_speedups", lambda *a, **k: found)
    spec = {"model": "mlp", "device": "cuda", "backend": "inductor"}
    priors = _variance_priors(None, spec, {"host": "h"}, print)
    assert set(priors) == {"max-autotune"}
    found["default"] = [replayed, redrew]
    priors = _variance_priors(None, spec, {"host": "h"}, print)
    assert priors["default"].df == 2  # the redrawing run alone, over its three draws


def test_the_time_budget_never_ends_a_variant_below_its_own_minimum(monkeypatch):
    """max-autotune reaches its three processes first and starts the further-process clock;
    with no budget left, default (four for its draws) still gets its fourth, then stops."""
    from engine.analysis import stats
    from engine.orchestrate import runner
    from engine.spec import normalise

    spec = normalise({"model": "mlp", "device": "cuda", "process_budget_s": 0,
                      "variants": ["eager", "default", "max-autotune"], "concurrency": 16})
    run = runner._Run(spec, lambda *a: None, lambda r: None, lambda *a: None, None, None)
    monkeypatch.setattr(run, "stats_of", lambda result: {"stats": {}})
    monkeypatch.setattr(stats, "stop_reason", lambda *a, **k: None)  # never decided
    run.results = {"default": {}, "max-autotune": {}}
    run.done_count = {"default": 3, "max-autotune": 3}
    assert run.stop_reason("max-autotune") == "time budget"
    assert run.stop_reason("default") is None  # below its minimum of four
    run.done_count["default"] = 4
    assert run.stop_reason("default") == "time budget"


@pytest.mark.parametrize(("counts", "said"), [
    ({}, None),  # the shipped defaults: four processes, three draws
    ({"processes": 3, "max_processes": 3}, "two kernel draws"),
    ({"processes": 2, "max_processes": 2}, "one kernel draw"),
    ({"processes": 1, "max_processes": 1, "warm_cache": False}, "one kernel draw"),
    ({"processes": 2, "max_processes": 4}, None),  # more processes may still come
])
def test_a_plan_of_fewer_than_three_draws_is_said(counts, said):
    """A GPU run whose ``max_processes`` leaves its redrawing variants one or two kernel draws
    gets a note naming them (valid as asked, so not refused); max-autotune, which replays,
    and a CPU run get none."""
    from engine.spec import normalise

    spec = normalise({"model": "mlp", "device": "cuda", "variants": [
        "eager", "default", "reduce-overhead", "max-autotune"], **counts})
    note = autotune_draw.few_draws_note(spec)
    if said is None:
        assert note is None
        return
    assert said in note and "default, reduce-overhead " in note and "max-autotune" not in note
    assert f"--max-processes {spec['max_processes']}" in note
    assert autotune_draw.few_draws_note({**spec, "device": "cpu"}) is None
    assert autotune_draw.few_draws_note({**spec, "variants": ["eager", "max-autotune"]}) is None


def test_the_cli_says_so_before_the_run(tmp_path, monkeypatch, capsys):
    """``engine run --max-processes 3`` on a GPU prints the note on stderr before queuing."""
    from engine.cli import run as cli_run
    from engine.cli.main import main
    from engine.spec import normalise

    # this host has no GPU: the spec is checked as the CLI does, less the device probe
    monkeypatch.setattr(cli_run, "normalise",
                        lambda raw, **kw: normalise(raw, **{**kw, "check_device": False}))
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert main(["run", "--model", "mlp", "--device", "cuda", "--queue", "--db", db,
                 "--processes", "3", "--max-processes", "3"]) == 0
    err = capsys.readouterr().err
    assert "note: --max-processes 3 leaves default two kernel draws" in err
    assert main(["run", "--model", "mlp", "--device", "cuda", "--queue", "--db", db]) == 0
    assert "kernel draw" not in capsys.readouterr().err


def test_a_suite_says_so_for_each_run_it_concerns(tmp_path, capsys):
    """``engine suite run`` prints the note for each queued run whose counts leave few draws."""
    from engine.cli.main import main

    suite = tmp_path / "s.toml"
    suite.write_text('name = "draws"\n[defaults]\nmodel = "mlp"\ndevice = "cuda"\n'
                     '[[configs]]\nmax_processes = 3\nprocesses = 3\n[[configs]]\n')
    assert main(["suite", "run", str(suite), "--queue", "--db",
                 f"sqlite:///{tmp_path / 's.db'}"]) == 0
    err = capsys.readouterr().err
    assert "note: run 1 (mlp): max_processes = 3 leaves default two kernel draws" in err
    assert "run 2" not in err.replace("queued runs 1, 2", "")
