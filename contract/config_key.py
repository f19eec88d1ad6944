"""What makes two runs measure "the same configuration", so one can be the baseline of another.

A run's **config** is its RunSpec (contract/schema.py) without the options that only decide how
long or how carefully it is measured (sample counts, time budgets, number of processes, timeouts,
profiling) and without ``variants``: variants are compared one by one, so a run of
``eager,default`` and one of ``eager,default,reduce-overhead`` share a config and are compared on
``default``.  Everything else — model, dims, sweep, dtype, device, backend, dynamic, fullgraph,
seed, and any option added to RunSpec later — is part of the config: an option we have not
thought about is assumed to change what is measured, which is the safe default.

The **config key** is a short SHA-256 of the config's canonical JSON; ``config_label`` is how it
is shown.  Pure Python, so storage, the engine and the dashboard all use this one definition.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# Options that change how a configuration is measured, not what is measured.
MEASUREMENT_OPTIONS = frozenset({
    "variants", "warmup_calls", "min_samples", "min_time_s", "max_time_s", "pipeline_k",
    "timeout_s", "profile", "warm_cache", "cross_check", "processes", "max_processes",
    "target_halfwidth", "process_budget_s", "grid_limit", "mix_requests", "concurrency",
    "compile_slots",
    "startup", "require_gpu", "require_torch", "accuracy_steps", "accuracy_multiplier",
    "accuracy_floor", "keep_trace",
})
# Options added after config keys were first stored (pinned baselines): left out while at their
# default, so the keys of runs that do not use them stay what they were.
OMITTED_AT_DEFAULT = frozenset({"shape_weights", "step", "optimizer", "optimizer_impl", "lr",
                                "autocast"})


def config_of(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The config part of a spec (see the module notes), with RunSpec's defaults filled in so
    that a spec stored before an option existed matches one that states the default."""
    from contract.schema import RunSpec

    defaults = RunSpec.defaults()
    full = {**defaults, **dict(spec)}
    return {k: full[k] for k in sorted(full) if k not in MEASUREMENT_OPTIONS
            and not (k in OMITTED_AT_DEFAULT and full[k] == defaults[k])}


def config_key(spec: Mapping[str, Any]) -> str:
    """16 hex digits identifying the config of ``spec`` (collisions: 1 in 2**64)."""
    text = json.dumps(config_of(spec), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def stored_config_key(spec: Any) -> str | None:
    """``config_key`` of a spec read back from storage or a bundle, or None when it is not a
    mapping whose config can be keyed (hostile rows are left out, never raised on)."""
    if not isinstance(spec, Mapping):
        return None
    try:
        return config_key(spec)
    except (TypeError, ValueError):
        return None


def config_label(spec: Mapping[str, Any]) -> str:
    """``mlp batch=32,hidden=1024 float32 cuda`` plus the options that differ from default."""
    from contract.schema import RunSpec

    cfg, defaults = config_of(spec), RunSpec.defaults()
    dims = cfg.get("dims") if isinstance(cfg.get("dims"), dict) else {}
    parts = [str(cfg.get("model")), ",".join(f"{k}={v}" for k, v in dims.items()) or "-",
             str(cfg.get("dtype")), str(cfg.get("device"))]
    sweep = cfg.get("sweep")
    if isinstance(sweep, dict):
        parts.append(f"sweep {sweep.get('dim')}={','.join(map(str, sweep.get('values') or []))}")
    for name in ("backend", "dynamic", "fullgraph", "seed"):
        if cfg.get(name) != defaults.get(name):
            parts.append(f"{name}={cfg.get(name)}")
    known = {"model", "dims", "sweep", "dtype", "device", "backend", "dynamic", "fullgraph",
             "seed"}
    for name in sorted(set(cfg) - known):  # options added later: shown when not default
        if cfg[name] != defaults.get(name):
            parts.append(f"{name}={cfg[name]}")
    return " ".join(parts)
