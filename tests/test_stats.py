"""Tests for engine/analysis/stats.py against distributions whose answers are known in advance."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from contract.schema import STATS_KEYS
from engine.analysis.stats import (
    Summary,
    break_even_calls,
    history_prior,
    speedup_ci,
    summarize,
)
from engine.analysis.variant_stats import add_stats

Z90 = 1.2815515655446004  # standard normal 90th percentile
Z75 = 0.6744897501960817  # standard normal 75th percentile


# --------------------------------------------------------------------------- summarize


def test_summarize_normal_matches_population_quantiles():
    rng = np.random.default_rng(1)
    s = summarize(rng.normal(10.0, 1.0, 50_000))
    assert isinstance(s, Summary)
    assert s.n == 50_000
    assert s.median == pytest.approx(10.0, abs=0.03)
    assert s.mean == pytest.approx(10.0, abs=0.03)
    assert s.p10 == pytest.approx(10.0 - Z90, abs=0.04)
    assert s.p90 == pytest.approx(10.0 + Z90, abs=0.04)
    assert s.iqr == pytest.approx(2 * Z75, abs=0.04)
    assert s.noisy  # IQR/median = 0.135 > 0.10


def test_summarize_lognormal_known_median_and_spread():
    rng = np.random.default_rng(2)
    mu, sigma = math.log(2.0), 0.05
    s = summarize(rng.lognormal(mu, sigma, 50_000))
    assert s.median == pytest.approx(2.0, rel=0.003)
    assert s.mean == pytest.approx(2.0 * math.exp(sigma**2 / 2), rel=0.003)
    expected_iqr = 2.0 * (math.exp(Z75 * sigma) - math.exp(-Z75 * sigma))
    assert s.iqr == pytest.approx(expected_iqr, rel=0.03)
    assert s.mean > s.median  # right-skewed, as real timings are
    assert not s.noisy  # IQR/median ~ 0.067


def test_summarize_constant_series_has_zero_spread():
    s = summarize([0.25] * 40)
    assert s == Summary(median=0.25, mean=0.25, p10=0.25, p90=0.25, iqr=0.0, n=40, noisy=False)


@pytest.mark.parametrize(
    ("samples", "noisy"),
    [
        ([90.0, 95.5, 100.0, 104.5, 110.0], False),  # IQR/median = 0.09
        ([90.0, 95.0, 100.0, 105.0, 110.0], False),  # exactly 0.10: not above the threshold
        ([89.0, 94.5, 100.0, 105.5, 111.0], True),  # 0.11
    ],
)
def test_noise_flag_on_both_sides_of_ten_percent(samples, noisy):
    s = summarize(samples)
    assert s.median == 100.0
    assert s.noisy is noisy


def test_summarize_percentiles_are_ordered_and_order_independent():
    rng = np.random.default_rng(3)
    x = rng.lognormal(0.0, 0.5, 999)
    a, b = summarize(x), summarize(x[::-1].copy())
    assert a == b
    assert a.p10 <= a.median <= a.p90


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [1.0, float("inf")], [[1.0, 2.0]]])
def test_summarize_rejects_empty_or_non_finite(bad):
    with pytest.raises(ValueError):
        summarize(bad)


# --------------------------------------------------------------------------- speedup_ci


def _paired_rounds(rng, n, true_ratio, *, noise=0.08, drift=0.3):
    """Interleaved rounds: a drift factor shared by each round, independent noise per call.

    eager and compiled noise have the same distribution, so median(eager)/median(compiled)
    over the population is exactly ``true_ratio``.
    """
    shared = np.exp(rng.normal(0.0, drift, n))
    eager = 1.0 * shared * np.exp(rng.normal(0.0, noise, n))
    compiled = (1.0 / true_ratio) * shared * np.exp(rng.normal(0.0, noise, n))
    return eager, compiled


def test_speedup_point_estimate_is_ratio_of_medians():
    eager = [2.0, 4.0, 100.0]  # median 4
    compiled = [1.0, 2.0, 3.0]  # median 2
    speedup, low, high = speedup_ci(eager, compiled, n_boot=200)
    assert speedup == 2.0
    assert low <= speedup <= high


def test_speedup_of_identical_series_is_exactly_one():
    x = np.random.default_rng(4).lognormal(0.0, 0.2, 300)
    assert speedup_ci(x, x) == (1.0, 1.0, 1.0)  # paired: every replicate cancels exactly


def test_speedup_ci_covers_true_ratio_about_95_percent():
    rng = np.random.default_rng(12345)
    true_ratio = 1.5
    trials, covered = 500, 0
    for t in range(trials):
        eager, compiled = _paired_rounds(rng, 201, true_ratio, noise=0.08, drift=0.05)
        _, low, high = speedup_ci(eager, compiled, n_boot=1000, seed=t)
        covered += low <= true_ratio <= high
    coverage = covered / trials
    # 0.956 with these seeds.  Binomial sd at 95 % over 500 trials is 1 %: the band is about
    # 3 sd either side, and a 90 % interval passed off as 95 % (0.91 here) falls outside it.
    assert 0.925 <= coverage <= 0.985, coverage


def test_speedup_ci_excludes_one_when_difference_is_clear():
    eager, compiled = _paired_rounds(np.random.default_rng(5), 200, 1.10, noise=0.05)
    speedup, low, high = speedup_ci(eager, compiled)
    assert speedup == pytest.approx(1.10, rel=0.03)
    assert low > 1.0
    # ... and compiled slower than eager gives an interval wholly below 1.
    _, low, high = speedup_ci(compiled, eager)
    assert high < 1.0


def test_speedup_ci_includes_one_when_there_is_no_difference():
    eager, compiled = _paired_rounds(np.random.default_rng(6), 200, 1.0)
    _, low, high = speedup_ci(eager, compiled)
    assert low < 1.0 < high


def test_pairing_makes_the_interval_narrower_under_drift():
    rng = np.random.default_rng(7)
    eager, compiled = _paired_rounds(rng, 300, 1.3, noise=0.05, drift=0.5)
    _, low, high = speedup_ci(eager, compiled)
    # Same values, pairing destroyed: what an independent bootstrap would see.
    _, ulow, uhigh = speedup_ci(eager, rng.permutation(compiled))
    assert (high - low) < 0.5 * (uhigh - ulow)


def test_speedup_ci_is_deterministic_for_a_seed():
    eager, compiled = _paired_rounds(np.random.default_rng(8), 150, 1.2)
    assert speedup_ci(eager, compiled, seed=3) == speedup_ci(eager, compiled, seed=3)
    assert speedup_ci(eager, compiled, seed=3) != speedup_ci(eager, compiled, seed=4)


def test_wider_confidence_gives_wider_interval():
    eager, compiled = _paired_rounds(np.random.default_rng(9), 150, 1.2)
    _, l90, h90 = speedup_ci(eager, compiled, ci=0.90)
    _, l99, h99 = speedup_ci(eager, compiled, ci=0.99)
    assert l99 <= l90 and h90 <= h99 and (h99 - l99) > (h90 - l90)


def test_speedup_ci_rejects_unpaired_or_bad_input():
    with pytest.raises(ValueError, match="paired"):
        speedup_ci([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        speedup_ci([], [])
    with pytest.raises(ValueError):
        speedup_ci([1.0, 2.0], [0.0, 0.0])
    with pytest.raises(ValueError):
        speedup_ci([1.0, 2.0], [1.0, 2.0], ci=1.5)


@pytest.mark.host_timing
def test_speedup_ci_is_fast_for_2000_replicates_of_1000_rounds():
    eager, compiled = _paired_rounds(np.random.default_rng(10), 1000, 1.2)
    speedup_ci(eager, compiled)  # first call pays for page faults of fresh buffers
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        speedup_ci(eager, compiled, n_boot=2000)
        best = min(best, time.perf_counter() - t0)
    # ~25 ms on a 2-core CI machine; the loose bound catches a fall back to Python loops
    # without failing on a busy machine.
    assert best < 0.15, f"{best * 1000:.0f} ms"


# --------------------------------------------------------------------------- break_even_calls


def _brute_force_break_even(fe, fc, pe, pc, limit=100_000):
    """Linear search over n = 1..limit-1 (vectorised); None if no n up to the limit works."""
    n = np.arange(1, limit, dtype=np.float64)
    ok = np.flatnonzero(fc + (n - 1) * pc <= fe + (n - 1) * pe)
    return int(ok[0]) + 1 if ok.size else None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # 3000 ms extra, 0.5 ms saved per call: 6000 more calls, 6001 in all.
        # n=6001: eager 10 + 6000*1 = 6010; compiled 3010 + 6000*0.5 = 6010 (equal: even).
        ((10.0, 3010.0, 1.0, 0.5), 6001),
        # extra 5, saving 2: ceil(2.5) = 3 more calls -> 4.
        ((1.0, 6.0, 3.0, 1.0), 4),
        # extra 1, saving 0.3 - 0.2 = 0.1 (0.09999999999999998 in floats, so the quotient is
        # 10.000000000000002): exactly 10 more calls -> 11, not 12.
        ((1.0, 2.0, 0.3, 0.2), 11),
        # BERT-base reduce-overhead on H200 (DESIGN.md): 16 s first call, 5.97 -> 1.14 ms.
        # extra = 16000 - 5.97 = 15994.03, saving = 4.83, 15994.03 / 4.83 = 3311.39 -> 3313.
        ((5.97, 16000.0, 5.97, 1.14), 3313),
        # Immediately: compiled first call no slower than eager's, even if slower per call.
        ((100.0, 90.0, 1.0, 2.0), 1),
        ((100.0, 100.0, 1.0, 1.0), 1),
        # Never: compiled slower per call (seed MLP b32: 0.064 vs 0.177 ms, 3 s compile) ...
        ((0.064, 3000.0, 0.064, 0.177), None),
        # ... or exactly as fast per call, with a compile to pay for.
        ((1.0, 500.0, 1.0, 1.0), None),
    ],
)
def test_break_even_hand_computed(args, expected):
    assert break_even_calls(*args) == expected


def test_break_even_matches_brute_force():
    rng = np.random.default_rng(11)
    for _ in range(300):
        fe, fc = rng.uniform(0.1, 50.0, 2)
        pe, pc = rng.uniform(0.1, 5.0, 2)
        got = break_even_calls(fe, fc, pe, pc)
        assert got == _brute_force_break_even(fe, fc, pe, pc), (fe, fc, pe, pc)


def test_break_even_rejects_non_finite():
    with pytest.raises(ValueError):
        break_even_calls(1.0, float("nan"), 1.0, 0.5)


# --------------------------------------------------------------------------- add_stats


def _contract_stats_keys() -> list[str]:
    text = (Path(__file__).resolve().parents[1] / "docs" / "CONTRACTS.md").read_text()
    block = text.split('"stats": {', 1)[1].split("}", 1)[0]
    return re.findall(r'"(\w+)":', block)


def _ok_result(variant="default", n=60, ratio=2.0, cold_s=3.0, seed=13, procs=3):
    """A compiled result of ``procs`` processes of ``n`` paired samples (blocks of 10)."""
    rng = np.random.default_rng(seed)
    processes = []
    for _ in range(procs):
        eager, compiled = _paired_rounds(rng, n, ratio, noise=0.03, drift=0.02)
        processes.append({"samples_ms": compiled.tolist(), "eager_samples_ms": eager.tolist(),
                          "pipelined_ms": (compiled[::10] * 0.9).tolist(),
                          "eager_pipelined_ms": (eager[::10] * 0.8).tolist(), "block": 10})
    return {
        "variant": variant,
        "status": "ok",
        "failure_kind": None,
        "first_call_cold_s": cold_s,
        "warmup_ms": [cold_s * 1000.0, 2.0, 0.6, 0.5],
        "samples_ms": [x for p in processes for x in p["samples_ms"]],
        "processes": processes,
    }


def _eager_result(ms=2.0, n=30):
    samples = [ms] * n
    return {"variant": "eager", "status": "ok", "samples_ms": samples,
            "processes": [{"samples_ms": samples, "eager_samples_ms": samples,
                           "pipelined_ms": [ms * 0.9] * 3, "eager_pipelined_ms": [ms * 0.9] * 3,
                           "block": 10}]}


def _geo(xs):
    return float(np.exp(np.mean(np.log(xs))))


def test_stats_keys_are_exactly_the_contracts():
    assert list(STATS_KEYS) == _contract_stats_keys()
    r = add_stats(_ok_result(), {})
    assert list(r["stats"]) == _contract_stats_keys()
    failed = add_stats({"variant": "default", "status": "failed"}, {})
    assert list(failed["stats"]) == _contract_stats_keys()


def test_one_eager_for_the_run_and_speedup_is_eager_over_compiled():
    """The run's eager is the geometric mean over every process that timed eager (its own and
    each compiled variant's); every row shows it, and speedup == eager / median on each."""
    a, b, e = _ok_result(seed=1), _ok_result("max-autotune", ratio=0.5, seed=2), _eager_result()
    results = {"eager": e, "default": a, "max-autotune": b}
    medians = [2.0] + [float(np.median(p["eager_samples_ms"]))
                       for r in (a, b) for p in r["processes"]]
    shown = {n: add_stats(dict(r), results)["stats"] for n, r in results.items()}
    for name, st in shown.items():
        assert st["eager_median_ms"] == pytest.approx(_geo(medians)), name
        assert st["speedup"] == pytest.approx(st["eager_median_ms"] / st["median_ms"]), name
    assert shown["eager"]["median_ms"] == shown["eager"]["eager_median_ms"]
    assert shown["eager"]["n_processes"] == 7
    st = shown["default"]
    assert st["measured_median_ms"] == pytest.approx(
        _geo([np.median(p["samples_ms"]) for p in a["processes"]]))
    assert st["paired_eager_median_ms"] == pytest.approx(
        _geo([np.median(p["eager_samples_ms"]) for p in a["processes"]]))
    assert st["speedup"] == pytest.approx(st["paired_eager_median_ms"] / st["measured_median_ms"])
    assert st["speedup"] == pytest.approx(2.0, rel=0.05)
    assert shown["max-autotune"]["speedup"] == pytest.approx(0.5, rel=0.05)
    # the pipelined figures are formed the same way
    assert st["pipelined_speedup"] == pytest.approx(
        st["eager_pipelined_median_ms"] / st["pipelined_median_ms"])


def test_add_stats_fills_ok_result():
    r = _ok_result()
    out = add_stats(r, {}, eager_first_call_ms=5.0)
    assert out is r  # in place, and returned
    st = r["stats"]
    samples = np.array(r["samples_ms"])
    assert st["mean_ms"] == pytest.approx(samples.mean())
    assert st["n"] == 180 and st["n_processes"] == 3
    assert st["iqr_ms"] > 0 and st["noisy"] is False
    assert st["speedup_ci_low"] < st["speedup"] < st["speedup_ci_high"]
    assert st["speedup_ci_low"] > 1.5
    assert st["decision"] == "faster" and st["provisional"] is True
    assert st["speedup_df"] == 2 and st["variance_prior"] is None  # nobody to borrow from
    comp = st["variance_components"]
    assert sum(comp[k] for k in comp if k.endswith("_share")) == pytest.approx(1.0)
    expected = break_even_calls(5.0, 3000.0, st["eager_median_ms"], st["median_ms"])
    assert st["break_even_calls"] == expected and expected > 1000
    assert st["pipelined_ci_low"] < st["pipelined_speedup"] < st["pipelined_ci_high"]
    json.dumps(r)  # plain Python types only, ready to store
    broken = _ok_result()
    broken["processes"][0]["pipelined_ms"] = [1.0]
    unpaired = add_stats(broken, {})["stats"]
    assert unpaired["pipelined_speedup"] is None and unpaired["speedup"] is not None


def test_the_runners_reason_and_final_time_move_into_stats():
    r = {**_ok_result(), "stop_reason": "interval excludes 1.0", "final_at": 1765000000.0}
    st = add_stats(r, {})["stats"]
    assert st["stop_reason"] == "interval excludes 1.0" and st["final_at"] == 1765000000.0
    assert st["provisional"] is False and "stop_reason" not in r and "final_at" not in r


def test_add_stats_eager_first_call_defaults_to_eager_median():
    st = add_stats(_ok_result(), {})["stats"]
    assert st["break_even_calls"] == break_even_calls(
        st["eager_median_ms"], 3000.0, st["eager_median_ms"], st["median_ms"]
    )


def test_add_stats_never_when_compiled_is_slower():
    r = add_stats(_ok_result(ratio=0.5), {}, eager_first_call_ms=5.0)
    assert r["stats"]["speedup"] < 1.0
    assert r["stats"]["speedup_ci_high"] < 1.0 and r["stats"]["decision"] == "slower"
    assert r["stats"]["break_even_calls"] is None


@pytest.mark.parametrize("status", ["failed", "cancelled", None])
def test_add_stats_failed_results_get_none_stats(status):
    r = {"variant": "max-autotune", "status": status, "failure_kind": "oom", "samples_ms": []}
    if status is None:
        del r["status"]
    st = add_stats(r, {})["stats"]
    assert st == {**dict.fromkeys(STATS_KEYS), "provisional": True}


def test_add_stats_ok_without_samples_does_not_raise():
    r = {"variant": "default", "status": "ok", "samples_ms": [], "eager_samples_ms": None}
    assert add_stats(r, {})["stats"] == {**dict.fromkeys(STATS_KEYS), "provisional": True}


def test_add_stats_eager_variant_is_its_own_baseline():
    st = add_stats(_eager_result(), {})["stats"]
    assert (st["speedup"], st["speedup_ci_low"], st["speedup_ci_high"]) == (1.0, 1.0, 1.0)
    assert st["eager_median_ms"] == st["median_ms"] == 2.0
    assert st["break_even_calls"] is None  # not applicable to the baseline


def test_add_stats_unpaired_lengths_give_point_estimate_without_interval():
    r = _ok_result()
    r["processes"][0]["eager_samples_ms"] = r["processes"][0]["eager_samples_ms"][:-5]
    st = add_stats(r, {})["stats"]
    assert st["speedup"] == pytest.approx(st["eager_median_ms"] / st["median_ms"])
    assert st["speedup_ci_low"] is None and st["speedup_ci_high"] is None


def test_a_variant_borrows_the_runs_shared_variance_only_where_it_agrees():
    """Variants of one run lend each other their spread (more degrees of freedom, a narrower
    interval); a variant whose own spread is far from theirs borrows nothing."""
    alike = {n: _ok_result(n, seed=s) for n, s in (("a", 3), ("b", 4), ("c", 5))}
    st = add_stats(dict(alike["a"]), alike)["stats"]
    assert st["variance_prior"] == "2 other variants of this run" and st["speedup_df"] > 2
    solo = add_stats(dict(alike["a"]), {})["stats"]
    assert (st["speedup_ci_high"] / st["speedup_ci_low"]
            < solo["speedup_ci_high"] / solo["speedup_ci_low"])
    wild = _ok_result("d", seed=6)
    for i, p in enumerate(wild["processes"]):  # offsets of x1, x1.5, x0.67 between processes
        p["eager_samples_ms"] = [x * 1.5 ** (i % 3 - (i == 2) * 3) for x in p["eager_samples_ms"]]
    st = add_stats(wild, {**alike, "d": wild})["stats"]
    assert st["variance_prior"] is None and st["speedup_df"] == 2


def test_history_prior_reads_only_clean_numbers():
    prior = history_prior([[1.0, 1.1, 0.9], "junk", [1.0], [2.0, -1.0], [1.0, float("nan")],
                           [True, 1.0], [1.2, 1.3]])
    assert prior is not None and prior.df == 3
    assert history_prior([]) is None and history_prior([[1.0, 1.0]]) is None


def test_the_t_quantile_and_chi_square_tail_are_scipy_stats_own():
    """engine/analysis/stats.py takes them from scipy.special (a lighter import on every run's path):
    the same numbers as scipy.stats' t.ppf and chi2.sf, so no interval moved."""
    from scipy import special, stats

    for df in (1, 2, 3, 4, 5, 7, 10, 15, 30, 99):
        for p in (0.95, 0.975, 0.995):
            assert special.stdtrit(df, p) == stats.t.ppf(p, df)
        for q in (0.0, 0.5, 3.0, 7.8, 40.0):
            assert special.chdtrc(df, q) == stats.chi2.sf(q, df)
