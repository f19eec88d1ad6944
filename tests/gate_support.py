"""Helpers of the gate, suite and history CLI tests (no tests here): finished runs written
through storage as a worker would write them, with chosen per-process speedups."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from storage import claim_run, enqueue_run, finish_run, save_variant_result

ENV = {"host": "h", "gpu": "NVIDIA H200", "torch": "2.11.0", "driver": "570", "commit": "abc"}


def spread(center: float, rel: float, k: int = 4, seed: int = 0) -> list[float]:
    """k per-process speedups log-normally scattered around ``center`` (exact log mean)."""
    z = np.random.default_rng(seed).standard_normal(k)
    z = (z - z.mean()) / z.std(ddof=1)
    return [float(x) for x in center * np.exp(rel * z)]


def _variant(name: str, speedups: list[float], compile_s: float, peak: int) -> dict[str, Any]:
    logs = np.log(speedups)
    est = float(np.exp(logs.mean()))
    half = float(np.std(logs, ddof=1)) / math.sqrt(len(logs)) * 3.2
    return {"variant": name, "status": "ok", "correct": True, "first_call_cold_s": compile_s,
            "peak_allocated_bytes": peak, "samples_ms": [1.0, 1.0],
            "stats": {"speedup": est, "speedup_ci_low": est * math.exp(-half),
                      "speedup_ci_high": est * math.exp(half), "median_ms": 1.0 / est,
                      "n_processes": len(speedups), "process_speedups": speedups,
                      "within_process_spread": 0.005}}


def finished_run(db: Any, speedups: list[float] | None = None, *, model: str = "mlp",
                 batch: int = 8, tags: tuple[str, ...] = (), compile_s: float = 3.0,
                 env: dict[str, Any] | None = None, failed_variant: bool = False) -> int:
    """A done run of eager + default with the given per-process speedups of default."""
    from engine.spec import normalise

    spec = normalise({"model": model, "dims": {"batch": batch}, "dtype": "float32",
                      "device": "cpu", "variants": ["eager", "default"]})
    run_id = enqueue_run(db, spec, tags=list(tags))
    claim_run(db, run_id, "test-worker")
    save_variant_result(db, run_id, {"variant": "eager", "status": "ok", "correct": True,
                                     "peak_allocated_bytes": 100, "samples_ms": [1.0],
                                     "stats": {"speedup": 1.0}})
    if failed_variant:
        save_variant_result(db, run_id, {"variant": "default", "status": "failed",
                                         "failure_kind": "compile_error", "error": "boom"})
    else:
        save_variant_result(db, run_id, _variant("default", speedups or spread(2.0, 0.02),
                                                 compile_s, 50))
    finish_run(db, run_id, "done", environment=env or ENV)
    return run_id
