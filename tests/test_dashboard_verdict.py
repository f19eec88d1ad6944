"""Verdict text: what to ship for latency / throughput / short jobs, and plain warnings."""

from __future__ import annotations

import pandas as pd
from test_dashboard_data import bert_results, frames, mlp_results, variant_result

from dashboard.verdict import verdict_for_run
from engine.analysis.verdict import decide


def test_bert_reduce_overhead_wins_with_figures():
    v = verdict_for_run(frames({1: bert_results()})["variants"], 1)
    assert v.latency_choice == "reduce-overhead"
    assert v.latency.startswith("Ship reduce-overhead")
    assert "1.14 ms per call vs 5.97 ms eager" in v.latency
    assert "95% CI" in v.latency
    assert v.throughput_choice == "reduce-overhead"
    assert "pipelined" in v.throughput
    assert v.short_jobs_choice == "reduce-overhead"
    assert "3,521 calls" in v.short_jobs and "17 s with a cold cache" in v.short_jobs
    assert "run eager" in v.short_jobs
    assert v.slower_than_eager == []
    assert any("max-autotune did not finish (oom)" in w for w in v.warnings)


def test_compiled_slower_than_eager_is_said_plainly():
    v = verdict_for_run(frames({2: mlp_results()})["variants"], 2)
    assert v.latency_choice == "eager"
    assert "compiled is slower than eager" in v.latency
    assert "0.097 ms per call vs 0.064 ms eager" in v.latency
    assert v.throughput_choice == "eager"
    assert "never repaid" in v.short_jobs
    assert len(v.slower_than_eager) == 3
    assert all("is slower than eager per call" in s for s in v.slower_than_eager)
    assert "default is slower than eager per call: 0.177 ms vs 0.064 ms" in v.slower_than_eager[0]
    md = v.as_markdown()
    assert "**Slower than eager:**" in md


def test_ci_including_one_is_a_tie():
    results = [
        variant_result("eager", 1.0, 1.0, first_cold_s=0.002, first_warm_s=None),
        variant_result("default", 1.0, 0.99, first_cold_s=3.0, first_warm_s=1.0),
    ]
    results[1]["stats"]["speedup_ci_low"] = 0.97
    v = verdict_for_run(frames({1: results})["variants"], 1)
    assert v.latency_choice == "eager"
    assert "no compiled variant is measurably faster per call" in v.latency
    assert "includes 1.0" in v.latency
    assert v.short_jobs_choice == "eager" and "never repaid" in v.short_jobs


def test_incorrect_variant_never_recommended():
    results = bert_results()[:3]
    results[2] = variant_result("reduce-overhead", 5.97, 1.14, first_cold_s=17.0,
                                first_warm_s=4.5, correct=False)
    v = verdict_for_run(frames({1: results})["variants"], 1)
    assert v.latency_choice == "default"
    assert any("differs from eager beyond tolerance" in w for w in v.warnings)


def test_no_eager_and_no_results():
    results = bert_results()[1:3]
    v = verdict_for_run(frames({1: results})["variants"], 1)
    assert "No eager baseline" in v.latency
    empty = frames({1: bert_results()})["variants"].iloc[0:0]
    assert "No results yet" in verdict_for_run(empty, 1).latency


def test_only_eager_finished():
    results = [bert_results()[0], bert_results()[3]]
    v = verdict_for_run(frames({1: results})["variants"], 1)
    assert v.latency_choice == "eager" and "no compiled variant finished" in v.latency


def test_no_compiled_row_is_no_recommendation():
    """A run cancelled after eager (or eager alone): nothing compiled failed or was measured,
    so the verdict recommends nothing; a compiled variant that failed is a reason for eager."""
    v = verdict_for_run(frames({1: bert_results()[:1]})["variants"], 1)
    assert "No compiled variant was measured" in v.latency
    assert v.latency_choice is None and v.throughput_choice is None
    assert v.short_jobs_choice is None and "Ship eager" not in v.as_markdown()
    cancelled = {**bert_results()[1], "status": "cancelled", "failure_kind": "cancelled"}
    v = verdict_for_run(frames({1: [bert_results()[0], cancelled]})["variants"], 1)
    assert v.latency_choice is None and "No compiled variant was measured" in v.latency
    assert any("default did not finish (cancelled)" in w for w in v.warnings)


def test_verdict_ignores_other_runs():
    f = frames({1: bert_results(), 2: mlp_results()})
    assert verdict_for_run(f["variants"], 1).latency_choice == "reduce-overhead"
    assert verdict_for_run(f["variants"], 2).latency_choice == "eager"


def test_slower_within_ci_is_a_tie_not_slower():
    results = [
        variant_result("eager", 1.0, 1.0, first_cold_s=0.002, first_warm_s=None),
        variant_result("default", 1.0, 1.02, first_cold_s=3.0, first_warm_s=1.0),
    ]
    results[1]["stats"].update(speedup_ci_low=0.95, speedup_ci_high=3.6)
    v = verdict_for_run(frames({1: results})["variants"], 1)
    assert v.latency_choice == "eager"
    assert "no compiled variant is measurably faster" in v.latency
    assert "compiled is slower" not in v.latency
    assert v.slower_than_eager == []


def _rows(**default):
    eager = {"variant": "eager", "status": "ok", "median_ms": 5.9, "first_call_cold_s": 0.1}
    row = {"variant": "reduce-overhead", "status": "ok", "correct": True, "median_ms": 1.3,
           "eager_median_ms": 5.9, "speedup": 4.5, "speedup_ci_low": 3.0,
           "speedup_ci_high": 6.7, "n_processes": 3, "first_call_cold_s": 16.0,
           "break_even_calls": 3600}
    row.update(default)
    return [eager, row]


def test_disagreeing_processes_are_flagged_with_launch_bound_cause():
    v = decide(_rows(processes_disagree=True, process_speedups=[3.38, 4.66, 5.02],
                     eager_device_busy_ms_per_call=1.1), 1)
    caution = next(w for w in v.warnings if "disagree" in w)
    assert "3.38×, 4.66×, 5.02×" in caution
    assert "launch-bound" in caution and "1.1 ms of eager's 5.9 ms" in caution


def test_disagreeing_processes_on_a_busy_host_name_the_host():
    v = decide(_rows(processes_disagree=True, process_speedups=[2.0, 4.0],
                     host_other_busy_cores=3.0, eager_device_busy_ms_per_call=1.1), 1)
    assert any("disagree" in w and "host CPU was busy" in w for w in v.warnings)


def test_one_process_interval_is_marked():
    v = decide(_rows(n_processes=1), 1)
    assert any("measured in one process" in w for w in v.warnings)
    assert not any("one process" in w for w in decide(_rows(), 1).warnings)


def test_a_max_autotune_interval_says_it_holds_one_compile_only():
    """Its further processes reuse the cold compile's kernel choices: on the H200 three runs'
    intervals of the seed MLP excluded each other (0.72x vs 0.55x, 0.54x)."""
    v = decide(_rows(variant="max-autotune"), 1)
    assert any(w.startswith("max-autotune: its interval covers the kernels this run's "
                            "autotuning chose") for w in v.warnings)
    assert not any("autotuning" in w for w in decide(_rows(), 1).warnings)


def test_fastest_per_call_is_best_not_highest_ratio():
    """A variant with a higher ratio against a slower paired eager is not the fastest."""
    rows = _rows()
    rows.append({"variant": "default", "status": "ok", "correct": True, "median_ms": 2.0,
                 "eager_median_ms": 12.0, "speedup": 6.0, "speedup_ci_low": 5.0,
                 "speedup_ci_high": 7.0, "n_processes": 3})
    assert decide(rows, 1).latency_choice == "reduce-overhead"


def test_incorrect_fastest_is_skipped_in_the_cli_too():
    rows = _rows(correct=False, max_rel_err=0.2, rtol=0.05)
    v = decide(rows, 1)
    assert v.latency_choice == "eager"
    assert any("differs from eager beyond tolerance" in w for w in v.warnings)


def test_noisy_variants_share_one_caution():
    variants = frames({1: mlp_results()})["variants"].copy()
    variants["noisy"] = True
    v = verdict_for_run(variants, 1)
    noisy = [w for w in v.warnings if "noisy" in w]
    assert noisy == ["eager, default, reduce-overhead and max-autotune measurements are noisy "
                     "(IQR > 10 % of median); re-run on a quiet machine before trusting small "
                     "differences."]


def test_busy_host_is_flagged_once_with_the_worst_figure():
    df = pd.DataFrame([
        {"variant": "eager", "status": "ok", "median_ms": 0.06, "host_other_busy_cores": 0.0},
        {"variant": "default", "status": "ok", "median_ms": 0.15, "speedup": 0.4,
         "speedup_ci_low": 0.38, "speedup_ci_high": 0.42, "eager_median_ms": 0.06,
         "host_other_busy_cores": 1.3},
        {"variant": "max-autotune", "status": "ok", "median_ms": 0.13, "speedup": 0.5,
         "speedup_ci_low": 0.48, "speedup_ci_high": 0.52, "eager_median_ms": 0.06,
         "host_other_busy_cores": 0.7},
    ])
    v = verdict_for_run(df)
    busy = [w for w in v.warnings if "CPU cores busy" in w]
    assert len(busy) == 1
    assert "default and max-autotune were timed" in busy[0] and "1.3" in busy[0]
    quiet = df.assign(host_other_busy_cores=[0.0, 0.1, None])
    assert not [w for w in verdict_for_run(quiet).warnings if "CPU cores busy" in w]


def test_short_jobs_names_the_eager_first_call_that_break_even_used():
    """The H200 decode run read "against 298 ms for eager" (eager's process, CUDA start-up
    included) while its 916 calls were counted from eager's first call after start-up, 20.6 ms."""
    eager = {"variant": "eager", "status": "ok", "first_call_cold_s": 0.298, "median_ms": 19.9}
    ro = {"variant": "reduce-overhead", "status": "ok", "median_ms": 1.195,
          "eager_median_ms": 16.27, "speedup": 13.6, "speedup_ci_low": 1.8,
          "speedup_ci_high": 100.0, "n_processes": 2, "first_call_cold_s": 13.8,
          "break_even_calls": 916, "eager_first_call_ms": 20.6}
    text = decide([eager, ro]).short_jobs
    assert "after 916 calls" in text and "against 20.6 ms for eager" in text, text
    old = {k: v for k, v in ro.items() if k != "eager_first_call_ms"}  # stored before it
    assert "against 298 ms for eager" in decide([eager, old]).short_jobs


def test_throughput_needs_its_interval_to_clear_one():
    """ViT-B on the H200: latency's interval included 1.0, yet throughput said "Ship
    reduce-overhead" on a 1.14x pipelined point estimate. With the pipelined interval stored,
    an interval that includes 1.0 is not a win; without one the sentence says so."""
    eager = {"variant": "eager", "status": "ok", "first_call_cold_s": 0.9}
    ro = {"variant": "reduce-overhead", "status": "ok", "median_ms": 3.33,
          "eager_median_ms": 3.64, "speedup": 1.09, "speedup_ci_low": 0.95,
          "speedup_ci_high": 1.27, "n_processes": 4, "pipelined_median_ms": 3.12,
          "eager_pipelined_median_ms": 3.55, "pipelined_speedup": 1.14,
          "pipelined_ci_low": 0.97, "pipelined_ci_high": 1.33}
    v = decide([eager, ro])
    assert v.throughput_choice == "eager" and "measurably faster for back-to-back" in \
        v.throughput and "95% CI 0.97×–1.33× over 4 processes" in v.throughput, v.throughput
    clear = decide([eager, {**ro, "pipelined_ci_low": 1.05}])
    assert clear.throughput_choice == "reduce-overhead"
    old = {k: x for k, x in ro.items() if not k.startswith("pipelined_")} | {
        "pipelined_median_ms": 3.12}
    assert "no interval stored" in decide([eager, old]).throughput


def test_a_host_whose_speed_moved_between_processes_is_named():
    from engine.analysis.verdict import host_speed_caution

    def row(calls):
        return {"variant": "default", "status": "ok",
                "processes": [{"host_probe": {"module_call_us": c, "launch_us": 7.0}}
                              for c in calls]}

    assert host_speed_caution([row([0.8, 0.85, 0.9])]) is None
    said = host_speed_caution([row([0.8, 1.9]), row([0.82])])
    assert said and "0.80-1.90 µs" in said
    assert host_speed_caution([row(["x", None, -1])]) is None


def test_an_undecided_latency_says_what_is_open_and_what_would_close_it():
    from engine.analysis.verdict import undecided

    row = {"speedup_ci_low": 0.95, "speedup_ci_high": 1.08, "n_processes": 4,
           "time_s": {"compile": 20.0, "measure": 4.0}}
    text = undecided(row)
    assert "No difference larger than ±8% was measurable" in text
    # half-width sqrt(1.08/0.95) - 1 = 6.6 %: 4 x (ln 1.066 / ln 1.05)^2 = 6.9, so 3 more at 6 s each
    assert "About 3 more measuring processes (about 18 s)" in text
    wide = undecided({"speedup_ci_low": 0.7, "speedup_ci_high": 1.4, "n_processes": 3})
    assert "more than 16 more processes" in wide
    assert "too wide to say anything" in undecided({"speedup_ci_low": 0.01,
                                                    "speedup_ci_high": 90, "n_processes": 2})
    assert undecided({"speedup_ci_low": None}) == ""


def test_disagreeing_processes_that_drew_other_kernels_name_the_draw():
    eager, speeds = [4.0, 4.01, 4.02], [4.0 / 1.25, 4.01 / 1.25, 4.02 / 1.31]
    v = decide(_rows(processes_disagree=True, process_speedups=speeds, process_eager_ms=eager,
                     eager_device_busy_ms_per_call=1.1,
                     processes=[{"autotune_draw": d} for d in ("drawn", "replayed", "redrawn")]),
               1)
    caution = next(w for w in v.warnings if "disagree" in w)
    assert "Cause: 1 of its 3 processes autotuned its kernels anew" in caution
    assert "launch-bound" not in caution
