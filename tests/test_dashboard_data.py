"""Realistic VariantResults (docs/CONTRACTS.md) and the DataFrames storage derives from them.

Shared by the chart, verdict, report and AppTest tests. Figures follow DESIGN.md §4 (H200):
the seed MLP at batch 32 where every compiled mode is slower than eager, and BERT-base where
reduce-overhead wins.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

RUN_COLUMNS = [
    "run_id", "created_at", "started_at", "finished_at", "status", "model", "dims", "dims_label",
    "sweep_dim", "dtype", "device", "gpu", "torch_version", "best_speedup", "tags", "note",
    "error", "progress_variant", "progress_phase", "progress_fraction", "heartbeat_at",
    "environment", "spec",
]

ENVIRONMENT = {
    "host": "gpu-box-1", "os": "Linux 6.8", "cpu": "AMD EPYC 9654", "gpu_name": "NVIDIA H200",
    "gpu_count": 1, "driver": "570.86", "cuda": "12.8", "torch": "2.11.0", "triton": "3.6.0",
    "python": "3.11.9", "commit": "e0d35f8+dirty",
}


def _samples(median: float, n: int, seed: int, spread: float = 0.03) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in median * (1 + spread * rng.standard_normal(n))]


def variant_result(variant: str, eager_ms: float, ms: float, *, first_cold_s: float,
                   first_warm_s: float | None, pipelined_ms: float | None = None,
                   eager_pipelined_ms: float | None = None, seed: int = 0, n: int = 40,
                   device: str = "cuda", graph_breaks=(), recompiles=(), sweep=(),
                   kernels: float = 1.0, eager_kernels: float = 32.0,
                   correct: bool = True) -> dict:
    """One VariantResult with "stats" filled the way engine/analysis/stats.py would."""
    pipelined_ms = pipelined_ms if pipelined_ms is not None else ms * 0.8
    eager_pipelined_ms = eager_pipelined_ms if eager_pipelined_ms is not None else eager_ms * 0.8
    samples = _samples(ms, n, seed)
    eager_samples = samples if variant == "eager" else _samples(eager_ms, n, seed + 100)
    pip = _samples(pipelined_ms, n // 2, seed + 1)
    epip = pip if variant == "eager" else _samples(eager_pipelined_ms, n // 2, seed + 101)
    warmup = [first_cold_s * 1000, ms * (60 if variant == "reduce-overhead" else 3)]
    warmup += [ms * 1.05] * 8
    speed = eager_ms / ms
    eager_first_s = 0.002
    break_even = (1 + math.ceil((first_cold_s - eager_first_s) * 1000 / (eager_ms - ms))
                  if ms < eager_ms and variant != "eager" else None)  # as engine/analysis/stats.py
    gpu = device == "cuda"
    return {
        "variant": variant, "status": "ok", "failure_kind": None, "error": None,
        "stderr_tail": None, "setup_s": 1.2,
        "first_call_cold_s": eager_first_s if variant == "eager" else first_cold_s,
        "first_call_warm_s": None if variant == "eager" else first_warm_s,
        "warmup_ms": warmup, "samples_ms": samples, "eager_samples_ms": eager_samples,
        "pipelined_ms": pip, "eager_pipelined_ms": epip,
        "timer": "cuda_event" if gpu else "perf_counter",
        "peak_allocated_bytes": 180 * 2**20 if gpu else None,
        "peak_reserved_bytes": 256 * 2**20 if gpu else None,
        "graph_count": 1 + len(graph_breaks), "graph_break_count": len(graph_breaks),
        "graph_breaks": list(graph_breaks), "recompiles": list(recompiles),
        "cudagraph_skips": [], "compile_phases_s": {"dynamo": 0.4, "inductor": 2.1},
        "kernels_per_call": eager_kernels if variant == "eager" else kernels,
        "eager_kernels_per_call": eager_kernels,
        "device_busy_ms_per_call": ms * 0.7, "wall_ms_per_call": ms * 1.6,
        "max_abs_err": 0.0 if variant == "eager" else 2e-6, "max_rel_err": 1e-5,
        "atol": 1e-4, "rtol": 1e-4, "correct": correct, "sweep": list(sweep),
        "stats": {
            "median_ms": ms, "mean_ms": ms * 1.01, "p10_ms": ms * 0.97, "p90_ms": ms * 1.04,
            "iqr_ms": ms * 0.03, "n": n, "noisy": False,
            "pipelined_median_ms": pipelined_ms, "eager_median_ms": eager_ms,
            "eager_pipelined_median_ms": eager_pipelined_ms,
            "speedup": 1.0 if variant == "eager" else speed,
            "speedup_ci_low": None if variant == "eager" else speed * 0.96,
            "speedup_ci_high": None if variant == "eager" else speed * 1.04,
            "break_even_calls": break_even,
        },
    }


def failed_result(variant: str, kind: str = "oom", error: str = "CUDA out of memory") -> dict:
    return {
        "variant": variant, "status": "failed", "failure_kind": kind, "error": error,
        "stderr_tail": "Traceback (most recent call last):\n  ...\n"
                       "torch.OutOfMemoryError: CUDA out of memory. <b>not html</b>",
        "warmup_ms": [], "samples_ms": [], "eager_samples_ms": [], "pipelined_ms": [],
        "eager_pipelined_ms": [], "graph_breaks": [], "recompiles": [], "cudagraph_skips": [],
        "compile_phases_s": {}, "sweep": [], "stats": {},
    }


def mlp_results(device: str = "cuda") -> list[dict]:
    """Seed MLP b32 fp32 on H200: eager 0.064 ms; every compiled mode slower per call."""
    return [
        variant_result("eager", 0.064, 0.064, first_cold_s=0.002, first_warm_s=None,
                       device=device, kernels=3, eager_kernels=3),
        variant_result("default", 0.064, 0.177, first_cold_s=3.0, first_warm_s=0.9, seed=1,
                       device=device, kernels=3, eager_kernels=3),
        variant_result("reduce-overhead", 0.064, 0.097, first_cold_s=3.4, first_warm_s=1.0,
                       seed=2, device=device, kernels=3, eager_kernels=3),
        variant_result("max-autotune", 0.064, 0.146, first_cold_s=9.0, first_warm_s=1.5,
                       seed=3, device=device, kernels=3, eager_kernels=3),
    ]


def bert_results() -> list[dict]:
    """BERT-base bf16 b8 s128 on H200: reduce-overhead 5.2× faster; default breaks the graph."""
    gb = [{"reason": "call_function BuiltinVariable(print)", "file": "/models/bert.py",
           "line": 88, "count": 2}]
    rc = [{"reason": "tensor 'x' size mismatch at index 1. expected 128, actual 64",
           "call_index": 5, "dim_value": None}]
    return [
        variant_result("eager", 5.97, 5.97, first_cold_s=0.002, first_warm_s=None),
        variant_result("default", 5.97, 3.18, first_cold_s=16.0, first_warm_s=4.1, seed=1,
                       graph_breaks=gb, recompiles=rc),
        variant_result("reduce-overhead", 5.97, 1.14, first_cold_s=17.0, first_warm_s=4.5,
                       seed=2),
        failed_result("max-autotune"),
    ]


def sweep_results() -> list[dict]:
    sweep_default = [
        {"value": 32, "first_call_ms": 4000.0, "median_ms": 1.0, "p10_ms": 0.95,
         "p90_ms": 1.1, "n": 30, "recompiled": False, "eager_median_ms": 2.0},
        {"value": 64, "first_call_ms": 2500.0, "median_ms": 1.6, "p10_ms": 1.5, "p90_ms": 1.7,
         "n": 30, "recompiled": True, "eager_median_ms": 3.2},
        # paired eager faster than compiled at the largest value
        {"value": 128, "first_call_ms": 3.0, "median_ms": 2.9, "p10_ms": 2.8, "p90_ms": 3.1,
         "n": 30, "recompiled": False, "eager_median_ms": 2.5},
    ]
    sweep_eager = [{**p, "first_call_ms": p["median_ms"] * 2, "median_ms": p["median_ms"] * 2,
                    "p10_ms": p["p10_ms"] * 2, "p90_ms": p["p90_ms"] * 2, "recompiled": False,
                    "eager_median_ms": p["median_ms"] * 2}
                   for p in sweep_default]
    rc = [{"reason": "size of seq changed 32 -> 64", "call_index": None, "dim_value": 64}]
    return [
        variant_result("eager", 2.0, 2.0, first_cold_s=0.002, first_warm_s=None,
                       sweep=sweep_eager),
        variant_result("default", 2.0, 1.0, first_cold_s=4.0, first_warm_s=1.0,
                       sweep=sweep_default, recompiles=rc),
    ]


def frames(results_by_run: dict[int, list[dict]]) -> dict[str, pd.DataFrame]:
    """The load_runs() DataFrames (minus ``runs``) for VariantResults, as storage builds them."""
    variants, gbs, rcs, sweeps, warm, samples = [], [], [], [], [], []
    for run_id, results in results_by_run.items():
        for r in results:
            st = r.get("stats") or {}
            row = {k: r.get(k) for k in (
                "variant", "status", "failure_kind", "error", "stderr_tail", "setup_s",
                "first_call_cold_s", "first_call_warm_s", "timer", "peak_allocated_bytes",
                "peak_reserved_bytes", "graph_count", "graph_break_count", "kernels_per_call",
                "eager_kernels_per_call", "device_busy_ms_per_call", "wall_ms_per_call",
                "max_abs_err", "max_rel_err", "atol", "rtol", "correct", "compile_phases_s",
                "cudagraph_skips")}
            row.update({k: st.get(k) for k in (
                "median_ms", "mean_ms", "p10_ms", "p90_ms", "iqr_ms", "n", "noisy",
                "pipelined_median_ms", "eager_median_ms", "eager_pipelined_median_ms",
                "speedup", "speedup_ci_low", "speedup_ci_high", "break_even_calls")})
            row["run_id"] = run_id
            row["recompile_count"] = len(r.get("recompiles") or [])
            variants.append(row)
            v = r["variant"]
            gbs += [{"run_id": run_id, "variant": v, **g} for g in r.get("graph_breaks") or []]
            rcs += [{"run_id": run_id, "variant": v, **g} for g in r.get("recompiles") or []]
            sweeps += [{"run_id": run_id, "variant": v, **p} for p in r.get("sweep") or []]
            warm += [{"run_id": run_id, "variant": v, "call_index": i + 1, "ms": ms}
                     for i, ms in enumerate(r.get("warmup_ms") or [])]
            for kind, key in [("per_call", "samples_ms"), ("pipelined", "pipelined_ms"),
                              ("eager_per_call", "eager_samples_ms"),
                              ("eager_pipelined", "eager_pipelined_ms")]:
                samples += [{"run_id": run_id, "variant": v, "kind": kind, "round_index": i,
                             "ms": ms} for i, ms in enumerate(r.get(key) or [])]
    return {
        "variants": pd.DataFrame(variants),
        "graph_breaks": pd.DataFrame(gbs, columns=["run_id", "variant", "reason", "file", "line",
                                                   "count"]),
        "recompiles": pd.DataFrame(rcs, columns=["run_id", "variant", "reason", "call_index",
                                                 "dim_value"]),
        "sweep_points": pd.DataFrame(sweeps, columns=[
            "run_id", "variant", "value", "first_call_ms", "median_ms", "p10_ms", "p90_ms", "n",
            "recompiled", "eager_median_ms"]),
        "warmup": pd.DataFrame(warm, columns=["run_id", "variant", "call_index", "ms"]),
        "samples": pd.DataFrame(samples, columns=["run_id", "variant", "kind", "round_index",
                                                  "ms"]),
    }


def runs_frame(specs: dict[int, dict], **overrides) -> pd.DataFrame:
    rows = []
    for run_id, spec in specs.items():
        rows.append({
            "run_id": run_id, "created_at": pd.Timestamp("2025-01-02 10:00"),
            "started_at": None, "finished_at": None, "status": "done", "model": spec["model"],
            "dims": spec["dims"],
            "dims_label": ", ".join(f"{k}={v}" for k, v in spec["dims"].items()),
            "sweep_dim": (spec.get("sweep") or {}).get("dim"), "dtype": spec["dtype"],
            "device": spec["device"], "gpu": "NVIDIA H200", "torch_version": "2.11.0",
            "best_speedup": 5.2, "tags": ["nightly"], "note": "", "error": None,
            "progress_variant": None, "progress_phase": None, "progress_fraction": None,
            "heartbeat_at": None, "environment": ENVIRONMENT, "spec": spec, **overrides,
        })
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def spec(model: str = "mlp", **kw) -> dict:
    base = {
        "model": model, "dims": {"batch": 32, "hidden": 1024}, "sweep": None,
        "dtype": "float32", "device": "cuda",
        "variants": ["eager", "default", "reduce-overhead", "max-autotune"],
        "backend": "inductor", "dynamic": None, "fullgraph": False, "warmup_calls": 10,
        "min_samples": 30, "min_time_s": 0.5, "max_time_s": 10.0, "pipeline_k": 20,
        "timeout_s": 1800, "seed": 0, "profile": True, "warm_cache": True,
    }
    base.update(kw)
    return base


def test_frames_have_contract_columns():
    f = frames({1: bert_results()})
    for col in ("run_id", "variant", "status", "median_ms", "speedup", "break_even_calls",
                "first_call_cold_s", "kernels_per_call", "recompile_count"):
        assert col in f["variants"].columns
    assert set(f["samples"]["kind"]) == {"per_call", "pipelined", "eager_per_call",
                                         "eager_pipelined"}
    assert len(f["variants"]) == 4
