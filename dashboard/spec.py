"""New-run form logic (pure): raw widget values -> a RunSpec dict, or errors keyed by field.

The page renders each error beside its field and queues nothing while any error remains.
The RunSpec shape is the one in docs/CONTRACTS.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contract.schema import RunSpec
from contract.text import TextError, normalize_tags
from dashboard.catalogue import DimChoice, ModelChoice
from engine.grid import GridError, expand, parse_options

COMPILE_VARIANTS = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# Training only: the optimizer step compiled too (engine/spec.py TRAIN_VARIANTS).
OPT_VARIANTS = ("eager+opt", *(v + "+opt" for v in COMPILE_VARIANTS))
STEPS = ("inference", "train")
OPTIMIZERS = ("adamw", "sgd")
OPTIMIZER_IMPLS = ("default", "foreach", "fused")
AUTOCASTS = ("none", "bfloat16", "float16")
CUDAGRAPH_VARIANTS = ("reduce-overhead", "max-autotune")
BACKENDS = ("inductor", "aot_eager", "eager")
DYNAMIC_CHOICES = {"auto (None)": None, "True (dynamic shapes)": True, "False (static)": False}
MAX_SWEEP_VALUES = 32


_DEFAULTS = RunSpec.defaults()


@dataclass
class RunRequest:
    """Everything the new-run form collects, as the widgets return it."""

    model: str
    dims: dict[str, Any]
    dtype: str
    device: str
    variants: list[str]  # compile variants; eager is always added
    # Defaults from the one contract (contract/schema.py RunSpec), not repeated here.
    backend: str = _DEFAULTS["backend"]
    dynamic: bool | None = _DEFAULTS["dynamic"]
    fullgraph: bool = _DEFAULTS["fullgraph"]
    warmup_calls: int = _DEFAULTS["warmup_calls"]
    min_samples: int = _DEFAULTS["min_samples"]
    min_time_s: float = _DEFAULTS["min_time_s"]
    max_time_s: float = _DEFAULTS["max_time_s"]
    pipeline_k: int = _DEFAULTS["pipeline_k"]
    timeout_s: float = _DEFAULTS["timeout_s"]
    seed: int = _DEFAULTS["seed"]
    profile: bool = _DEFAULTS["profile"]
    warm_cache: bool = _DEFAULTS["warm_cache"]
    keep_trace: bool = _DEFAULTS["keep_trace"]
    step: str = _DEFAULTS["step"]
    optimizer: str = _DEFAULTS["optimizer"]
    optimizer_impl: str = _DEFAULTS["optimizer_impl"]
    lr: float = _DEFAULTS["lr"]
    autocast: str = _DEFAULTS["autocast"]
    accuracy_steps: int = _DEFAULTS["accuracy_steps"]
    sweep_dim: str | None = None
    sweep_values: str = ""
    sweep_weights: str = ""  # how often each swept value is seen (engine/measure/shape_mix.py)
    # grid (engine/grid.py): option name -> values picked ("none", "true", "false"); an option
    # with values here is written in each variant's name and overrides the single setting above
    grid: dict[str, list[str]] = field(default_factory=dict)
    grid_limit: int = _DEFAULTS["grid_limit"]
    tags: str = ""
    note: str = ""
    # Only a worker with this GPU model / torch release claims the run (None: any).
    require_gpu: str | None = None
    require_torch: str | None = None


@dataclass
class Validation:
    spec: dict | None
    errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and self.spec is not None


def _expand_grid(req: RunRequest, variants: list[str], errors: dict[str, str]) -> list[str]:
    """The compile variants crossed with the grid's option values (engine/grid.py); the
    engine's validator then applies the grid-size limit and each config's rules."""
    items = [f"{name}={','.join(values)}" for name, values in req.grid.items() if values]
    if not items or "variants" in errors:
        return variants
    try:
        return expand(variants, parse_options(items))
    except GridError as exc:
        errors["grid"] = str(exc)
        return variants


def parse_tags(text: str) -> tuple[list[str], str | None]:
    """Comma-separated tags, trimmed and de-duplicated (order kept), checked by the one rule for
    user text (``contract.text``) that the CLI and bundles use too: ``<`` or ``=`` are allowed
    (and escaped where shown), control characters and over-long tags are not."""
    parts = [t for t in (text or "").split(",") if t.strip()]
    try:
        return normalize_tags(parts), None
    except (TextError, TypeError) as e:
        return list(dict.fromkeys(t.strip() for t in parts)), f"Tags: {e}"


def _in_range(value: float, dim: DimChoice) -> bool:
    return (dim.min is None or value >= dim.min) and (dim.max is None or value <= dim.max)


def check_dim_value(value: Any, dim: DimChoice) -> tuple[int | float | None, str | None]:
    """Coerce one dim value and check it against the declared range."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None, f"{dim.name} must be a number."
    if not math.isfinite(f):
        return None, f"{dim.name} must be a finite number."
    if dim.is_int:
        if not f.is_integer():
            return None, f"{dim.name} must be a whole number."
        f = int(f)
    if not _in_range(f, dim):
        return None, f"{dim.name} must be between {dim.range_text()} (got {f:g})."
    return f, None


def parse_sweep_values(text: str, dim: DimChoice) -> tuple[list[int | float], str | None]:
    """Comma-separated sweep values, each validated against the dim's range; sorted."""
    raw = [t.strip() for t in (text or "").replace(";", ",").split(",") if t.strip()]
    if len(raw) < 2:
        return [], f"Give at least two comma-separated values for {dim.name}, e.g. 32, 64, 128."
    if len(raw) > MAX_SWEEP_VALUES:
        return [], f"At most {MAX_SWEEP_VALUES} sweep values (got {len(raw)})."
    values = []
    for t in raw:
        v, err = check_dim_value(t, dim)
        if err:
            return [], f"Sweep value {t!r}: {err}"
        values.append(v)
    if len(set(values)) != len(values):
        dup = next(v for v in values if values.count(v) > 1)
        return [], f"Sweep value {dup:g} is given twice."
    return sorted(values), None


EngineCheck = Callable[[dict], dict]


def build_spec(req: RunRequest, model: ModelChoice, devices: list[str],
               engine_check: EngineCheck | None = None) -> Validation:
    """Validate a request against the model's declared dims/dtypes and the worker's devices.

    ``engine_check`` (``engine.spec.normalise`` through dashboard.data) then gets the last word:
    it returns the complete spec that is queued, or raises an error whose ``field`` says where
    to show it — so the dashboard never queues what the worker would reject.
    """
    errors: dict[str, str] = {}
    warnings: list[str] = []
    dims: dict[str, Any] = {}
    for d in model.dims:
        v, err = check_dim_value(req.dims.get(d.name, d.default), d)
        if err:
            errors[f"dim.{d.name}"] = err
        else:
            dims[d.name] = v

    if req.dtype not in model.dtypes:
        errors["dtype"] = f"{model.name} supports {', '.join(model.dtypes)}."
    if req.device not in devices:
        errors["device"] = ("No connected worker has a GPU; CPU runs still work."
                            if req.device == "cuda"
                            else f"Device must be one of {', '.join(devices)}.")

    compile_variants = [v for v in dict.fromkeys(req.variants) if v != "eager"]
    train = req.step == "train"
    allowed = COMPILE_VARIANTS + (OPT_VARIANTS if train else ())
    unknown = [v for v in compile_variants if v not in allowed]
    if req.step not in STEPS:
        errors["step"] = f"Step must be one of {', '.join(STEPS)}."
    if unknown:
        errors["variants"] = (f"{unknown[0]!r} compiles the optimizer step: choose step "
                              "'train' for it." if unknown[0] in OPT_VARIANTS
                              else f"Unknown variant {unknown[0]!r}.")
    elif not compile_variants:
        errors["variants"] = "Pick at least one compile variant to compare with eager."
    elif req.backend != "inductor" and set(compile_variants) - {"default", "default+opt",
                                                                  "eager+opt"}:
        errors["variants"] = (f"Modes apply to the inductor backend only; with backend "
                              f"{req.backend!r} choose just 'default'.")
    if req.backend not in BACKENDS:
        errors["backend"] = f"Backend must be one of {', '.join(BACKENDS)}."

    def int_field(key: str, lo: int, hi: int, label: str) -> int | None:
        value = getattr(req, key)
        if value is None or not float(value).is_integer() or not lo <= value <= hi:
            errors[key] = f"{label} must be a whole number between {lo} and {hi}."
            return None
        return int(value)

    def float_field(key: str, lo: float, hi: float, label: str) -> float | None:
        value = getattr(req, key)
        if value is None or not math.isfinite(float(value)) or not lo <= value <= hi:
            errors[key] = f"{label} must be between {lo:g} and {hi:g}."
            return None
        return float(value)

    # Bounds as engine/spec.py enforces them (it re-checks before anything is queued).
    warmup = int_field("warmup_calls", 3, 1000, "Warm-up calls")
    if warmup is None and "reduce-overhead" in compile_variants and (req.warmup_calls or 0) < 3:
        errors["warmup_calls"] = ("reduce-overhead records CUDA graphs on call 2 and replays "
                                  "from call 3: use at least 3 warm-up calls.")
    min_samples = int_field("min_samples", 3, 100_000, "Minimum samples")
    min_time = float_field("min_time_s", 0.0, 3600.0, "Minimum time (s)")
    max_time = float_field("max_time_s", 0.1, 3600.0, "Maximum time (s)")
    if min_time is not None and max_time is not None and max_time < min_time:
        errors["max_time_s"] = "Maximum time must be at least the minimum time."
    pipeline_k = int_field("pipeline_k", 1, 10_000, "Pipelined calls K")
    timeout = float_field("timeout_s", 1.0, 86_400.0, "Timeout per variant (s)")
    seed = int_field("seed", 0, 2**31 - 1, "Seed")
    if timeout is not None and max_time is not None and timeout < max_time + 60:
        warnings.append("The timeout leaves little room for compiling: a cold inductor compile "
                        "takes seconds to minutes on top of the measuring budget.")

    sweep = None
    if req.sweep_dim:
        dim = model.dim(req.sweep_dim)
        if dim is None:
            errors["sweep"] = f"{model.name} has no dim {req.sweep_dim!r}."
        elif not dim.input_only:
            names = ", ".join(d.name for d in model.sweepable) or "none"
            errors["sweep"] = (f"{dim.name} changes the model itself; sweep an input dim "
                               f"({names}).")
        else:
            values, err = parse_sweep_values(req.sweep_values, dim)
            if err:
                errors["sweep"] = err
            else:
                sweep = {"dim": dim.name, "values": values}

    compile_variants = _expand_grid(req, compile_variants, errors)
    tags, tag_err = parse_tags(req.tags)
    if tag_err:
        errors["tags"] = tag_err

    if req.device == "cpu":
        cg = [v for v in compile_variants if v in CUDAGRAPH_VARIANTS]
        if cg:
            warnings.append(f"{', '.join(cg)} use CUDA graphs, which need a GPU: on CPU they "
                            "measure inductor without graphs.")
        if req.dtype == "float16":
            warnings.append("float16 on CPU is slow in eager and a poor guide to GPU behaviour.")

    if errors:
        return Validation(None, errors, warnings, tags)
    spec = {
        "model": model.name,
        "dims": dims,
        "sweep": sweep,
        "dtype": req.dtype,
        "device": req.device,
        "variants": ["eager", *compile_variants],
        "backend": req.backend,
        "dynamic": req.dynamic,
        "fullgraph": bool(req.fullgraph),
        "warmup_calls": warmup,
        "min_samples": min_samples,
        "min_time_s": min_time,
        "max_time_s": max_time,
        "pipeline_k": pipeline_k,
        "timeout_s": timeout,
        "seed": seed,
        "profile": bool(req.profile),
        "warm_cache": bool(req.warm_cache),
        "keep_trace": bool(req.keep_trace),
        "step": req.step,
        "require_gpu": req.require_gpu or None,
        "require_torch": req.require_torch or None,
        "grid_limit": req.grid_limit,
    }
    if sweep and req.sweep_weights.strip():
        try:
            spec["shape_weights"] = [float(w) for w in req.sweep_weights.split(",") if w.strip()]
        except ValueError:
            return Validation(None, {"sweep": "Weights must be numbers like 6, 3, 1."},
                              warnings, tags)
    if train:  # the optimizer options mean nothing to an inference run: left at their defaults
        spec.update(optimizer=req.optimizer, optimizer_impl=req.optimizer_impl, lr=req.lr,
                    autocast=req.autocast, accuracy_steps=req.accuracy_steps)
    if engine_check is not None:
        try:
            spec = engine_check(spec)
        except ValueError as exc:
            where = getattr(exc, "field", None) or "form"
            if where == "dims":
                where = next((f"dim.{d.name}" for d in model.dims if d.name in str(exc)), "form")
            return Validation(None, {where: str(exc)}, warnings, tags)
    return Validation(spec, {}, warnings, tags)
