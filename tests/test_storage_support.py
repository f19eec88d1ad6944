"""Shared helpers of the storage tests (no tests here): databases per backend, realistic data.

Every storage test that makes sense on both backends takes the ``storage_url`` fixture built
from ``BACKENDS``: SQLite always, PostgreSQL when ``COMPILELAB_TEST_PG_URL`` points at a server
(each test then gets its own schema, dropped afterwards, so the server's data is left alone).
"""

from __future__ import annotations

import copy
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from storage.db import resolve_url

PG_ENV = "COMPILELAB_TEST_PG_URL"
PG_SKIP_REASON = f"set {PG_ENV} to a PostgreSQL URL to run the PostgreSQL variant"

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgresql",
        id="postgresql",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not os.environ.get(PG_ENV), reason=PG_SKIP_REASON),
        ],
    ),
]


@contextmanager
def pg_schema_url(base_url: str) -> Iterator[str]:
    """A URL whose connections use a fresh, private schema (dropped on exit)."""
    schema = f"cl_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(resolve_url(base_url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = resolve_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()


@contextmanager
def backend_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A database URL of ``backend`` that no other test uses."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'storage-test.db'}"
    else:
        with pg_schema_url(os.environ[PG_ENV]) as url:
            yield url


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def run_spec(**overrides: Any) -> dict[str, Any]:
    """A RunSpec as the dashboard sends it (docs/CONTRACTS.md), defaults filled in."""
    spec: dict[str, Any] = {
        "model": "mlp",
        "dims": {"batch": 32, "hidden": 1024},
        "sweep": None,
        "dtype": "float32",
        "device": "cuda",
        "variants": ["eager", "default", "reduce-overhead"],
        "backend": "inductor",
        "dynamic": None,
        "fullgraph": False,
        "warmup_calls": 10,
        "min_samples": 30,
        "min_time_s": 0.5,
        "max_time_s": 10.0,
        "pipeline_k": 20,
        "timeout_s": 1800,
        "seed": 0,
        "profile": True,
        "warm_cache": True,
    }
    spec.update(overrides)
    return spec


ENVIRONMENT: dict[str, Any] = {
    "host": "gpu-host-1",
    "os": "Linux-6.8.0-x86_64-with-glibc2.39",
    "cpu": "AMD EPYC 9654 96-Core Processor",
    "cpu_count": 32,
    "python": "3.11.9",
    "commit": "e0d35f8ed118865ce9bdc2824246b10d29109af5",
    "torch": "2.11.0+cu128",
    "cuda": "12.8",
    "triton": "3.6.0",
    "gpu": "NVIDIA H200",
    "gpu_count": 1,
    "driver": "570.124.06",
    "cuda_available": True,
    "host_gpu_count": 1,
}

_COMPILED = {
    "variant": "reduce-overhead",
    "status": "ok",
    "failure_kind": None,
    "error": None,
    "stderr_tail": None,
    "setup_s": 1.23,
    "first_call_cold_s": 3.02,
    "first_call_warm_s": 0.91,
    "warmup_ms": [3020.5, 21.4, 0.31, 0.098, 0.097, 0.097, 0.096, 0.098, 0.097, 0.097],
    "samples_ms": [0.097, 0.096, 0.098, 0.097, 0.101, 0.097, 0.096, 0.095, 0.097, 0.099],
    "eager_samples_ms": [0.064, 0.065, 0.064, 0.063, 0.066, 0.064, 0.064, 0.065, 0.064, 0.064],
    "pipelined_ms": [0.052, 0.051, 0.052, 0.053],
    "eager_pipelined_ms": [0.031, 0.030, 0.031, 0.031],
    "timer": "cuda_event",
    "peak_allocated_bytes": 25_165_824,
    "peak_reserved_bytes": 41_943_040,
    "graph_count": 2,
    "graph_break_count": 1,
    "graph_breaks": [
        {"reason": "call to print()", "file": "/models/mlp.py", "line": 42, "count": 3},
        {"reason": "data-dependent branch", "file": "/models/mlp.py", "line": 57, "count": 1},
    ],
    "recompiles": [
        {
            "reason": "tensor 'x' size mismatch at index 0. expected 32, actual 64",
            "call_index": 5,
            "dim_value": 64,
            "phase": None,
        },
    ],
    "cudagraph_skips": [{"reason": "mutated inputs (1 instances)"}],
    "compile_phases_s": {"dynamo": 0.41, "aot_autograd": 0.33, "inductor": 2.1},
    "kernels_per_call": 1.0,
    "eager_kernels_per_call": 32.0,
    "device_busy_ms_per_call": 0.05,
    "wall_ms_per_call": 0.08,
    "max_abs_err": 1.2e-6,
    "max_rel_err": 3.4e-5,
    "atol": 1e-4,
    "rtol": 1e-4,
    "correct": True,
    "sweep": [
        {
            "value": 32,
            "first_call_ms": 3020.5,
            "median_ms": 0.097,
            "p10_ms": 0.095,
            "p90_ms": 0.099,
            "n": 30,
            "recompiled": False,
            "eager_median_ms": 0.064,
        },
        {
            "value": 64,
            "first_call_ms": 880.0,
            "median_ms": 0.121,
            "p10_ms": 0.118,
            "p90_ms": 0.125,
            "n": 30,
            "recompiled": True,
            "eager_median_ms": 0.083,
        },
    ],
    "stats": {
        "median_ms": 0.097,
        "mean_ms": 0.0973,
        "p10_ms": 0.096,
        "p90_ms": 0.099,
        "iqr_ms": 0.001,
        "n": 10,
        "noisy": False,
        "pipelined_median_ms": 0.052,
        "eager_median_ms": 0.064,
        "eager_pipelined_median_ms": 0.031,
        "speedup": 0.66,
        "speedup_ci_low": 0.64,
        "speedup_ci_high": 0.68,
        "break_even_calls": None,
    },
}


def variant_result(variant: str = "reduce-overhead", **overrides: Any) -> dict[str, Any]:
    """A realistic VariantResult with stats (numbers in the range DESIGN.md §4 reports)."""
    result = copy.deepcopy(_COMPILED)
    result["variant"] = variant
    if variant == "eager":
        result.update(
            first_call_warm_s=None,
            samples_ms=list(result["eager_samples_ms"]),
            pipelined_ms=list(result["eager_pipelined_ms"]),
            graph_count=0,
            graph_break_count=0,
            graph_breaks=[],
            recompiles=[],
            cudagraph_skips=[],
            compile_phases_s={},
            kernels_per_call=32.0,
            sweep=[],
        )
        result["stats"].update(
            median_ms=0.064, speedup=1.0, speedup_ci_low=1.0, speedup_ci_high=1.0
        )
    stats = overrides.pop("stats", None)
    result.update(overrides)
    if stats:
        result["stats"].update(stats)
    return result


def failed_result(variant: str = "max-autotune", kind: str = "oom") -> dict[str, Any]:
    """What the runner stores for a child that died: status, reason, stderr tail, nothing else."""
    return {
        "variant": variant,
        "status": "failed",
        "failure_kind": kind,
        "error": "CUDA out of memory. Tried to allocate 2.00 GiB",
        "stderr_tail": "Traceback (most recent call last):\n  ...\ntorch.OutOfMemoryError: CUDA "
        "out of memory.\n",
        "setup_s": 1.1,
    }
