"""Runs of one configuration whose speedups differ by more than their intervals allow are named
on the compare page and in the report (dashboard/mixing.repeat_notice, engine/analysis/repeat)."""

from __future__ import annotations

import math

import pandas as pd

from dashboard import report
from dashboard.mixing import repeat_notice
from engine.analysis import repeat

SPEC = {"model": "bert_base", "dims": {"batch": 8, "seq": 128}, "dtype": "bfloat16",
        "device": "cuda", "variants": ["eager", "reduce-overhead"]}


def _frames(figures: dict[int, tuple], specs: dict[int, dict] | None = None):
    runs = pd.DataFrame([{"run_id": rid, "spec": (specs or {}).get(rid, SPEC), "model": "bert_base",
                          "dims_label": "batch=8", "dtype": "bfloat16", "device": "cuda"}
                         for rid in figures])
    rows = []
    for rid, (s, lo, hi) in figures.items():
        rows.append({"run_id": rid, "variant": "eager", "status": "ok", "speedup": 1.0,
                     "speedup_ci_low": None, "speedup_ci_high": None})
        rows.append({"run_id": rid, "variant": "reduce-overhead", "status": "ok", "speedup": s,
                     "speedup_ci_low": lo, "speedup_ci_high": hi})
    return runs, pd.DataFrame(rows)


# three H100 runs of BERT-base reduce-overhead: 1 and 2 repeat, 4 is apart from both
H100 = {1: (3.21, 3.19, 3.23), 2: (3.25, 3.21, 3.29), 4: (3.37, 3.34, 3.39)}


def test_the_pair_test():
    a, b = {"speedup": 3.21, "speedup_ci_low": 3.19, "speedup_ci_high": 3.23}, \
        {"speedup": 3.37, "speedup_ci_low": 3.34, "speedup_ci_high": 3.39}
    gap, bound = repeat.pair_gap(a, b)
    assert math.isclose(gap, 0.16) and math.isclose(bound, 1.5 * math.hypot(0.02, 0.025))
    assert repeat.apart(a, b)
    assert not repeat.apart(a, {**a, "speedup": 3.23})


def test_runs_that_do_not_repeat_are_named_with_their_figures():
    text = repeat_notice(*_frames(H100))
    assert "reduce-overhead 3.21× ±0.6 % in #1 against 3.37× ±0.7 % in #4 (5.0 % apart)" in text
    assert "in #2 against" in text and "#1 against 3.25" not in text  # 1-2 repeat
    assert "decide on these runs together" in text


def test_repeating_runs_and_other_configs_say_nothing():
    assert repeat_notice(*_frames({1: H100[1], 2: H100[2]})) is None
    other = {**SPEC, "dims": {"batch": 16, "seq": 128}}
    assert repeat_notice(*_frames({1: H100[1], 4: H100[4]}, {4: other})) is None
    # measuring options are not the config: more processes, same configuration
    more = {**SPEC, "processes": 6}
    assert repeat_notice(*_frames({1: H100[1], 4: H100[4]}, {4: more})) is not None


def test_hostile_rows_give_no_sentence_and_no_error():
    # each would read apart from run 1's 3.21x [3.19, 3.23] if taken for numbers
    bad = [("3.9", 3.8, 4.0), (3.9, "3.8", 4.0), (True, 3.8, 4.0), (float("nan"), 3.2, 3.4), (3.3, 3.4, 3.2), (3.3, -1.0, 3.4),
           (math.inf, 3.2, math.inf), (None, None, None)]
    assert repeat_notice(*_frames({1: H100[1], 4: (3.9, 3.8, 4.0)}))  # as numbers: apart
    for fig in bad:
        assert repeat_notice(*_frames({1: H100[1], 4: fig})) is None, fig
        assert repeat.figure({"speedup": fig[0], "speedup_ci_low": fig[1],
                              "speedup_ci_high": fig[2]}) == "–"
    assert repeat_notice(*_frames(H100, {4: "not a spec", 2: {"model": ["x"]}})) is None
    assert repeat_notice(pd.DataFrame(), pd.DataFrame()) is None


def test_the_report_prints_it_as_text():
    from test_dashboard_data import bert_results, frames, runs_frame, spec, variant_result

    faster = [variant_result("reduce-overhead", 5.97, 1.0, first_cold_s=17.0,
                             first_warm_s=4.5, seed=2) if r["variant"] == "reduce-overhead"
              else r for r in bert_results()]
    f = frames({1: bert_results(), 2: faster})
    runs = runs_frame({1: spec("bert"), 2: spec("bert")})
    said = repeat_notice(runs, f["variants"])
    assert said and "reduce-overhead" in said and "in #1 against" in said
    html = report.build_report(runs, f["variants"], [], [])
    assert "<b>Runs that do not repeat.</b>" in html and "in #1 against" in html
    other = runs_frame({1: spec("bert"), 2: spec("bert", dtype="bfloat16")})
    assert "Runs that do not repeat." not in report.build_report(other, f["variants"], [], [])


# the H100 runs' stored device times per call: reduce-overhead's kernels moved, eager's held
DEVICE = {1: (1.2866, 0.8485), 2: (1.3099, 0.8511), 4: (1.2502, 0.8483)}


def test_the_notice_says_the_kernels_moved_where_the_device_times_show_it():
    runs, variants = _frames(H100)
    for rid, (dev, eager_dev) in DEVICE.items():
        at = variants["run_id"] == rid
        variants.loc[at, "device_busy_ms_per_call"] = dev
        variants.loc[at, "eager_device_busy_ms_per_call"] = eager_dev
    text = repeat_notice(runs, variants)
    assert ("in #4 (5.0 % apart; its kernels took 1.29 and 1.25 ms of device time per call, "
            "2.9 % apart, while eager's held within 0.0 %: the runs' compiles chose other "
            "kernels)") in text


def test_kernels_moved_only_where_eager_held_and_the_figures_are_numbers():
    a = {"device_busy_ms_per_call": 1.31, "eager_device_busy_ms_per_call": 0.851}
    b = {"device_busy_ms_per_call": 1.25, "eager_device_busy_ms_per_call": 0.848}
    assert "compiles chose other kernels" in repeat.kernels_moved(a, b)
    assert repeat.kernels_moved(a, {**b, "device_busy_ms_per_call": 1.30}) is None  # < 2 %
    assert repeat.kernels_moved(a, {**b, "eager_device_busy_ms_per_call": 0.80}) is None  # host
    for bad in (None, "1.25", float("nan"), -1.0, True):
        assert repeat.kernels_moved(a, {**b, "device_busy_ms_per_call": bad}) is None


# the H200's BERT-base runs 2 and 3 (2026-12-07): reduce-overhead's compiled call held, the
# run's eager moved with the host
RUN2 = {"median_ms": 1.2635, "eager_median_ms": 5.0086}
RUN3 = {"median_ms": 1.2355, "eager_median_ms": 4.2281}


def test_eager_moved_where_eager_moved_and_the_compiled_call_held():
    said = repeat.eager_moved(RUN2, RUN3)
    assert said.startswith("eager took 5.009 and 4.228 ms per call, 18.5 % apart, while the "
                           "compiled call held within 2.3 % (1.264 and 1.236 ms)")
    assert "18.5 % apart" in repeat.eager_moved(RUN3, RUN2)  # whichever run comes first
    assert repeat.eager_moved(RUN2, {**RUN3, "median_ms": 1.10}) is None  # compiled moved too
    assert repeat.eager_moved(RUN2, {**RUN3, "eager_median_ms": 5.00}) is None  # < 2 %
    for bad in (None, "4.2", float("nan"), -1.0, True, 0):
        assert repeat.eager_moved(RUN2, {**RUN3, "eager_median_ms": bad}) is None


def test_cause_says_both_where_both_moved_and_nothing_where_neither():
    a = {**RUN2, "device_busy_ms_per_call": 1.26, "eager_device_busy_ms_per_call": 0.851}
    b = {**RUN3, "device_busy_ms_per_call": 1.21, "eager_device_busy_ms_per_call": 0.848}
    both = repeat.cause(a, b)
    assert "compiles chose other kernels; eager took 5.009" in both
    assert repeat.cause(RUN2, RUN2) is None


def test_the_gate_says_when_a_speedup_moved_because_eager_did():
    """A speedup 'regression' whose compiled call held is said to be eager's move (the gate's
    verdict stays what its test gives; the note says what the figures show)."""
    from engine.analysis.gate import Thresholds, compare_speedup

    def row(eager_ms, ms, speeds):
        return {"speedup": eager_ms / ms, "speedup_ci_low": eager_ms / ms * 0.98,
                "speedup_ci_high": eager_ms / ms * 1.02, "process_speedups": speeds,
                "n_processes": len(speeds), "median_ms": ms, "eager_median_ms": eager_ms}

    base = row(5.0086, 1.2635, [3.95, 3.97, 3.96, 3.96])
    cand = row(4.2281, 1.2355, [3.41, 3.43, 3.42, 3.42])
    change = compare_speedup(base, cand, Thresholds(), config="bert", variant="ro")
    assert change.verdict == "regression"
    assert "eager moved, as a launch-bound eager does with the host's speed" in change.note
    same = compare_speedup(base, row(5.0086, 1.2635, [3.95, 3.97, 3.96, 3.96]), Thresholds(),
                           config="bert", variant="ro")
    assert same.verdict == "unchanged" and same.note == ""


# the H100 BERT-base runs of 2026-12-07 (runs 2 and 3): reduce-overhead's processes read the
# host probe's module call at 0.829 and 0.917 µs (median over each variant's processes)
PROBE2 = {**RUN2, "host_probe": {"module_call_us": 0.829, "launch_us": 6.16}}
PROBE3 = {**RUN3, "host_probe": {"module_call_us": 0.917, "launch_us": 7.12}}


def test_host_moved_where_the_probe_read_another_speed():
    said = repeat.host_moved(PROBE2, PROBE3)
    assert said == ("the host probe read a module call at 0.829 and 0.917 µs, 11 % apart: "
                    "the runs timed on a host of another speed")
    assert "11 % apart" in repeat.host_moved(PROBE3, PROBE2)  # whichever run comes first
    near = {**PROBE3, "host_probe": {"module_call_us": 0.86}}  # 3.6 %: said nothing
    assert repeat.host_moved(PROBE2, near) is None
    both = repeat.cause(PROBE2, PROBE3)
    assert "eager moved" in both and both.endswith("a host of another speed")


def test_host_moved_reads_nothing_from_hostile_probes():
    for bad in (None, "0.9", [0.9], {"module_call_us": "0.9"}, {"module_call_us": float("nan")},
                {"module_call_us": -1.0}, {"module_call_us": True}, {"module_call_us": 10**400},
                {}, {"launch_us": 7.0}):
        assert repeat.host_moved(PROBE2, {**PROBE3, "host_probe": bad}) is None
        assert repeat.host_moved({**PROBE2, "host_probe": bad}, PROBE3) is None


def test_figures_so_far_apart_that_the_ratio_overflows_say_nothing():
    tiny = {**PROBE2, "host_probe": {"module_call_us": 5e-324}}
    huge = {**PROBE3, "host_probe": {"module_call_us": 1e308}}
    assert repeat.host_moved(tiny, PROBE3) is None and repeat.host_moved(PROBE2, huge) is None
    assert repeat.eager_moved({**RUN2, "eager_median_ms": 5e-324}, RUN3) is None
