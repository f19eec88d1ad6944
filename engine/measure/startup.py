"""Start-up strategies side by side (spec option ``startup``): the time to the first compiled
call of the same variant when a process starts

* **cold**: on an empty inductor cache (the variant's first measuring process);
* **warm local cache**: on the cache directory the cold process filled (its first warm-cache
  process);
* **portable cache artifacts**: in a fresh process on an *empty* cache directory, after
  ``torch.compiler.load_cache_artifacts`` of the bytes that the cold process saved with
  ``torch.compiler.save_cache_artifacts`` (what a user ships to a fleet or a CI cache);
* **regional compilation**: in a fresh process on an empty cache, compiling each of the model's
  repeated blocks (``block.compile()``, the blocks of an ``nn.ModuleList``/``nn.Sequential``
  that share a class) instead of the whole model: dynamo compiles the block's code once and
  reuses it for every instance.

The time to first call counts what the user's process would wait for: loading artifacts (if
any), compiling and the first call, synchronised. The two extra strategies run in processes of
their own (phases ``startup_portable`` and ``startup_regional``), after the variant's measuring
processes; a strategy that cannot apply (no repeated blocks, a torch without the cache-artifact
API) is a result with its reason, not an error of the run.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PHASES = ("startup_portable", "startup_regional")


def artifacts_path(cache_dir: str | os.PathLike[str]) -> Path:
    """Where the cold process leaves its cache artifacts: beside its cache directory (the
    runner and the child both derive it from the directory they already share)."""
    return Path(str(cache_dir).rstrip("/") + ".artifacts")


def save_artifacts(res: dict[str, Any]) -> None:
    """In the cold process after its compile: ``torch.compiler.save_cache_artifacts()`` to
    ``artifacts_path(TORCHINDUCTOR_CACHE_DIR)``; the size and any failure go into ``res``."""
    import torch

    cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    info: dict[str, Any] = {}
    try:
        save = getattr(torch.compiler, "save_cache_artifacts", None)
        if save is None or not cache_dir:
            raise RuntimeError("torch.compiler.save_cache_artifacts is not in this torch")
        t0 = time.perf_counter()
        out = save()
        if not out:
            raise RuntimeError("torch recorded no cache artifacts for this compile")
        blob, cache_info = out
        artifacts_path(cache_dir).write_bytes(blob)
        info = {"bytes": len(blob), "save_s": time.perf_counter() - t0,
                "artifacts": {k: len(v) for k, v in getattr(cache_info, "artifacts", {}).items()}}
    except Exception as e:
        info = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    res["cache_artifacts"] = info


def repeated_blocks(model: Any) -> list[Any]:
    """The blocks regional compilation compiles: children of a ModuleList / Sequential that
    occur at least twice with the same class (transformer layers, ResNet stages' blocks)."""
    import torch

    blocks: list[Any] = []
    for module in model.modules():
        if isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential)):
            kids = list(module.children())
            by_class: dict[type, list[Any]] = {}
            for k in kids:
                by_class.setdefault(type(k), []).append(k)
            for same in by_class.values():
                if len(same) >= 2 and not any(b is s for b in blocks for s in same):
                    blocks += same
    # a block inside another chosen block is compiled with its parent
    return [b for b in blocks if not any(b is not o and _contains(o, b) for o in blocks)]


def _contains(outer: Any, inner: Any) -> bool:
    return any(m is inner for m in outer.modules())


def measure_strategy(phase: str, model: Any, inputs: tuple, run: dict[str, Any], variant: str,
                     timer: Any, compile_kwargs: dict[str, Any]) -> dict[str, Any]:
    """One start-up strategy in this fresh process: time to the first call, the caches' counts
    (engine/forensics) and a short per-call median (regional compilation runs other code)."""
    import torch

    from engine.measure import forensics

    out: dict[str, Any] = {"strategy": phase.removeprefix("startup_")}
    t0 = time.perf_counter()
    with forensics.CompileWatch(phase) as watch:
        if phase == "startup_portable":
            # this process's cache dir is "<cold dir>-portable", empty
            path = artifacts_path(os.environ.get("TORCHINDUCTOR_CACHE_DIR", "").rstrip("/")
                                  .removesuffix("-portable"))
            load = getattr(torch.compiler, "load_cache_artifacts", None)
            if load is None:
                return {**out, "error": "torch.compiler.load_cache_artifacts is not in this torch"}
            if not path.exists():
                return {**out, "error": "the cold process saved no cache artifacts"}
            load(path.read_bytes())
            out["load_s"] = time.perf_counter() - t0
            compiled = torch.compile(model, **compile_kwargs)
            fn: Callable[[], object] = lambda: compiled(*inputs)  # noqa: E731
        else:
            blocks = repeated_blocks(model)
            if not blocks:
                return {**out, "error": "no repeated blocks: regional compilation applies to "
                        "models built from repeated blocks (ModuleList / Sequential layers)"}
            for b in blocks:
                b.compile(**compile_kwargs)
            out["blocks"] = len(blocks)
            out["block_class"] = type(blocks[0]).__name__
            fn = lambda: model(*inputs)  # noqa: E731
        try:
            first_ms = timer.wall_ms(fn)
        except RuntimeError as e:
            return _known_failure(out, e, watch)
    out["time_to_first_call_s"] = time.perf_counter() - t0
    out["first_call_s"] = first_ms / 1e3
    out["compile_cache"] = watch.result()
    try:
        for _ in range(3):  # past cudagraph recording (reduce-overhead records on call 2)
            timer.wall_ms(fn)
        out["median_ms"] = statistics.median(timer.per_call_ms(fn) for _ in range(10))
    except RuntimeError as e:  # the first call worked: its time stays, the failure is said
        return _known_failure(out, e, None)
    return out


def _known_failure(out: dict[str, Any], e: RuntimeError, watch: Any) -> dict[str, Any]:
    """A failure torch raises for a reason we can explain (engine/known_errors.py) becomes the
    strategy's result: torch's message kept, the explanation beside it. Any other error goes
    on up (the process fails with it, as before)."""
    from engine import known_errors

    raw = f"{type(e).__name__}: {' '.join(str(e).split())[:600]}"
    why = known_errors.explain(raw, strategy=out.get("strategy"), blocks=out.get("blocks"))
    if why is None:
        raise e
    if watch is not None:
        out["compile_cache"] = watch.result()
    return {**out, "error": raw, "explanation": why}


def run_strategies(spec: dict[str, Any], variants: list[str], results: dict[str, dict[str, Any]],
                   root: Path, run_child: Callable[..., dict[str, Any]],
                   progress_for: Callable[[str, str], Callable[[str, float], None]],
                   should_cancel: Callable[[], bool],
                   on_result: Callable[[dict[str, Any]], None]) -> None:
    """The runner's hook: for each compiled variant that measured ok, the two extra processes,
    then ``results[v]["startup"]`` with all four strategies side by side."""
    for variant in variants:
        base = results.get(variant)
        if not base or base.get("status") != "ok":
            continue
        entry: dict[str, Any] = {
            "cold": {"time_to_first_call_s": base.get("first_call_cold_s")},
            "warm_local": {"time_to_first_call_s": base.get("first_call_warm_s")}}
        for phase in PHASES:
            if should_cancel():
                return
            cache = root / f"cache-{variant}-{phase.removeprefix('startup_')}"
            cache.mkdir(exist_ok=True)  # empty: nothing local to reuse
            child = run_child(spec, variant, phase, cache, root,
                              on_progress=progress_for(variant, "warm"),
                              should_cancel=should_cancel)
            name = phase.removeprefix("startup_")
            if child.get("status") == "ok":
                entry[name] = child.get("startup") or {"error": "no start-up result"}
            else:
                entry[name] = {"error": child.get("error") or "the process failed"}
        base["startup"] = entry
        on_result(base)
