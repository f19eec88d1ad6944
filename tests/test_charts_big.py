"""Big data stays cheap: a run with 3 million steady-state samples gets every figure of the
compare page built and serialised (``fig.to_json()``, what Streamlit sends) in under 2 s in all
on this 2-core machine, each figure under 2 MB, and the figure says what it thinned.

Before dashboard/downsample.py the latency box plot alone took ~7 s and 40 MB here. The frames
are built the way storage.queries.load_runs returns them (docs/CONTRACTS.md "DataFrames"),
directly with numpy: going through SQLite would time storage, not the charts.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from dashboard import charts, charts_latency, charts_warmup, downsample

VARIANTS = ["eager", "default", "reduce-overhead", "max-autotune"]
KINDS = ["per_call", "pipelined", "eager_per_call", "eager_pipelined"]
LIMIT_S = 2.0
LIMIT_BYTES = 2 * 1024 * 1024


def _variants(run_id: int = 1) -> pd.DataFrame:
    rows = []
    for i, v in enumerate(VARIANTS):
        s = 1.0 if v == "eager" else 1.2 + 0.3 * i
        rows.append({
            "run_id": run_id, "variant": v, "status": "ok", "failure_kind": None, "error": None,
            "stderr_tail": None, "setup_s": 1.0, "first_call_cold_s": 0.01 if v == "eager" else 3.0,
            "first_call_warm_s": 0.9, "timer": "cuda_event", "median_ms": 0.1 / s,
            "mean_ms": 0.1 / s, "p10_ms": 0.09 / s, "p90_ms": 0.11 / s, "iqr_ms": 0.01,
            "n": 750_000, "noisy": False, "pipelined_median_ms": 0.08 / s, "eager_median_ms": 0.1,
            "eager_pipelined_median_ms": 0.08, "speedup": s, "speedup_ci_low": s * 0.98,
            "speedup_ci_high": s * 1.02, "break_even_calls": None if v == "eager" else 1000.0,
            "peak_allocated_bytes": 2**30, "peak_reserved_bytes": 2**31, "graph_count": 1,
            "graph_break_count": 0, "recompile_count": 0, "kernels_per_call": 4.0,
            "eager_kernels_per_call": 16.0, "device_busy_ms_per_call": 0.05,
            "wall_ms_per_call": 0.1 / s, "max_abs_err": 1e-6, "max_rel_err": 1e-6, "atol": 1e-4,
            "rtol": 1e-4, "correct": True, "compile_phases_s": {"inductor": 2.0},
            "cudagraph_skips": [], "host_other_busy_cores": 0.0})
    return pd.DataFrame(rows)


def _samples(total: int, run_id: int = 1, seed: int = 0) -> pd.DataFrame:
    """``total`` samples spread over every (variant, kind), as load_runs' long frame."""
    rng = np.random.default_rng(seed)
    per = total // (len(VARIANTS) * len(KINDS))
    n = per * len(VARIANTS) * len(KINDS)
    return pd.DataFrame({
        "run_id": np.full(n, run_id, dtype=np.int64),
        "variant": np.repeat(VARIANTS, per * len(KINDS)).astype(object),
        "kind": np.tile(np.repeat(KINDS, per), len(VARIANTS)).astype(object),
        "round_index": np.tile(np.arange(1, per + 1, dtype=np.int64), len(VARIANTS) * len(KINDS)),
        "ms": rng.lognormal(-2.3, 0.3, n),
    })


def _warmup(calls: int, run_id: int = 1) -> pd.DataFrame:
    return pd.DataFrame({
        "run_id": np.full(calls * len(VARIANTS), run_id, dtype=np.int64),
        "variant": np.repeat(VARIANTS, calls).astype(object),
        "call_index": np.tile(np.arange(1, calls + 1, dtype=np.int64), len(VARIANTS)),
        "ms": np.tile(np.r_[3000.0, np.full(calls - 1, 0.1)], len(VARIANTS)),
    })


def _data(samples: int, warmup_calls: int = 10) -> dict[str, pd.DataFrame]:
    return {
        "runs": pd.DataFrame({"run_id": [1], "model": ["mlp"], "sweep_dim": [None]}),
        "variants": _variants(),
        "warmup": _warmup(warmup_calls),
        "samples": _samples(samples),
        "recompiles": pd.DataFrame(columns=["run_id", "variant", "reason", "call_index",
                                            "dim_value"]),
        "graph_breaks": pd.DataFrame(columns=["run_id", "variant", "reason", "file", "line",
                                              "count"]),
        "sweep_points": pd.DataFrame(),
    }


def _page_figures(d: dict[str, pd.DataFrame]) -> dict[str, str]:
    """What the compare page builds and sends: every figure, plus the log-scale latency."""
    figures = dict(charts.compare_figures(d))
    figures["latency_log"] = charts_latency.latency_distribution(d["samples"], log_y=True)
    return {name: fig.to_json() for name, fig in figures.items()}


@pytest.fixture(scope="module")
def three_million() -> dict[str, pd.DataFrame]:
    d = _data(3_000_000)
    assert len(d["samples"]) == 3_000_000
    _page_figures(_data(1000))  # one-time costs every dashboard process has paid already
    return d


@pytest.mark.host_timing
def test_three_million_samples_build_and_serialise_in_under_2_s(three_million):
    # best of two: the machine is shared, a neighbour's burst must not fail the test
    times = []
    for _ in range(2):
        start = time.perf_counter()
        sent = _page_figures(three_million)
        times.append(time.perf_counter() - start)
    sizes = {name: len(text) for name, text in sent.items()}
    assert min(times) < LIMIT_S, (times, sizes)
    assert max(sizes.values()) < LIMIT_BYTES, sizes


def test_thinned_chart_says_so_and_keeps_the_extremes(three_million):
    samples = three_million["samples"]
    fig = charts_latency.latency_distribution(samples)
    subtitle = fig.layout.title.subtitle.text
    # 3 million samples over 4 variants x 4 kinds: 187 500 per box, 1.5 million drawn kinds
    assert subtitle.startswith(
        "each box drawn from 5,000 evenly spaced quantiles of its up to 187,500 samples")
    per_call = samples[samples["kind"] == "per_call"]
    drawn = next(t for t in fig.data if t.name == "per call")
    assert len(drawn.y) <= downsample.MAX_POINTS * len(VARIANTS)
    # the quantiles keep each box's minimum, maximum and (to within a step) its median
    assert max(drawn.y) == per_call["ms"].max() and min(drawn.y) == per_call["ms"].min()
    eager = per_call[per_call["variant"] == "eager"]["ms"]
    drawn_eager = np.array(drawn.y)[np.array(drawn.x) == "eager"]
    assert abs(np.median(drawn_eager) - eager.median()) / eager.median() < 0.01


def test_small_runs_are_drawn_whole():
    d = _data(4000)
    fig = charts_latency.latency_distribution(d["samples"])
    assert "quantiles" not in (fig.layout.title.subtitle.text or "")
    assert sum(len(t.y) for t in fig.data) == 2000  # per-call + pipelined: every sample


def test_a_million_call_warmup_curve_is_strided_and_says_so():
    fig = charts_warmup.warmup_curve(_warmup(1_000_000))
    assert "1 in 200 of up to 1,000,000 calls per line shown" in fig.layout.title.subtitle.text
    assert all(len(t.x) <= downsample.MAX_POINTS + 1 for t in fig.data)
    assert all(t.x[0] == 1 and t.x[-1] == 1_000_000 for t in fig.data)  # first and last kept
    assert len(fig.to_json()) < LIMIT_BYTES
