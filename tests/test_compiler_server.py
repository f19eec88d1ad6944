"""The compiler-preloaded process server (engine/orchestrate/compiler_server.py): only for processes whose
first call nobody reports, never waited for, and its forks hold the compiler but no CUDA."""

from __future__ import annotations

import os
import sys
import time

import pytest

from engine.orchestrate import compiler_server, preloads
from engine.orchestrate.process import wants_compiler_server


def test_only_eager_and_further_processes_may_use_it():
    assert wants_compiler_server("eager", "cold", 0)
    assert not wants_compiler_server("default", "cold", 0)  # the reported cold compile
    assert not wants_compiler_server("default", "warm_cache", 1)  # the reported warm one
    assert wants_compiler_server("default", "warm_cache", 2)
    assert wants_compiler_server("max-autotune", "warm_cache", 3)


def test_not_started_for_a_model_that_needs_a_library(monkeypatch):
    """BERT-base's server would import transformers too and be ready too late to pay."""
    monkeypatch.setattr(compiler_server, "_SERVER", None)
    compiler_server.start(libraries=True)
    assert not compiler_server.started() and not compiler_server.pending()


def test_not_started_is_neither_usable_nor_pending(monkeypatch):
    monkeypatch.setattr(compiler_server, "_SERVER", None)
    assert not compiler_server.usable() and not compiler_server.pending()


def test_preloads_put_the_compiler_before_the_exit_hook():
    got = preloads.compiler_preloads(False)
    assert got[-1] == "engine.orchestrate.preload" and got[-2] == "engine.orchestrate.preload_compiler"
    assert got[0] == "engine.measure.child"


def _probe() -> None:
    import torch

    ok = "torch._inductor.compile_fx" in sys.modules and not torch.cuda.is_initialized()
    os._exit(0 if ok else 3)


@pytest.mark.slow
def test_a_real_run_forks_further_processes_with_the_compiler_imported():
    """Started, the server gets ready; a fork holds the compiler and no CUDA; in a side-by-side
    run (aot_eager, CPU) the further processes skip the compiler import, the reported ones
    (cold, first warm-cache) still pay it inside their own process."""
    from engine.orchestrate.runner import run_variants
    from engine.spec import normalise

    compiler_server.start(libraries=False)
    deadline = time.monotonic() + 180
    while not compiler_server.usable() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert compiler_server.usable()
    proc = compiler_server.process(target=_probe)
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0

    spec = normalise({"model": "mlp", "dims": {"batch": 4, "hidden": 32},
                      "variants": ["eager", "default"], "backend": "aot_eager",
                      "processes": 3, "max_processes": 3, "min_samples": 10,
                      "min_time_s": 0.05, "warmup_calls": 3, "concurrency": 8,
                      "profile": False})
    results = run_variants(spec)
    assert [r["status"] for r in results] == ["ok", "ok"], results

    def imports(p: dict) -> float:
        return sum(ph["end"] - ph["start"] for ph in p["phases"]
                   if ph["name"] == "compiler import")

    procs = results[1]["processes"]
    assert len(procs) == 3
    assert imports(procs[0]) > 0.5 and imports(procs[1]) > 0.5, procs  # reported: paid
    assert imports(procs[2]) < 0.2, procs[2]["phases"]  # further: preloaded
