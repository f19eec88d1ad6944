"""New-run form logic (pure): widget values -> a raw RunSpec, judged by the one validator.

The form holds no rule of its own about a run: its defaults are ``RunSpec``'s and its widgets'
limits are ``BOUNDS`` (contract/schema.py), and every verdict on the spec is
``engine.spec.normalise``'s, each error under the field it names (``SpecError.field``: ``dims.batch``,
``sweep``, ``max_time_s``...) so the page shows it beside that widget.  What the form adds is
what a spec cannot know: reading the sweep values, weights and tags typed as text, and which
devices the connected workers have.  The RunSpec shape is the one in docs/CONTRACTS.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contract.schema import BOUNDS, RunSpec
from contract.text import TextError, normalize_tags
from dashboard.catalogue import ModelChoice
from engine import spec as engine_spec
from engine.grid import GridError, expand, parse_options

# The validator's own lists, offered by the form's widgets.
COMPILE_VARIANTS = tuple(v for v in engine_spec.VARIANTS if v != "eager")
OPT_VARIANTS = engine_spec.TRAIN_VARIANTS  # training only: the optimizer step compiled too
STEPS = engine_spec.STEPS
OPTIMIZERS = engine_spec.OPTIMIZERS
OPTIMIZER_IMPLS = engine_spec.OPTIMIZER_IMPLS
AUTOCASTS = engine_spec.AUTOCASTS
CUDAGRAPH_VARIANTS = ("reduce-overhead", "max-autotune")
# The backends the form offers (the validator knows more; the CLI can name them).
BACKENDS = ("inductor", "aot_eager", "eager")
DYNAMIC_CHOICES = {"auto (None)": None, "True (dynamic shapes)": True, "False (static)": False}


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


def _number(text: str) -> int | float | None:
    """A number as typed: a whole one as int (what a dim is), else the float, for the validator
    to judge; None when it is not a finite number."""
    try:
        f = float(text)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(f):
        return None
    return int(f) if f.is_integer() else f


def _as_typed(value: Any) -> Any:
    """A widget's number as the spec wants it (2.0 -> 2); anything else as it is, for the
    validator to refuse in its own words."""
    n = _number(value)
    return value if n is None else n


def number_widget(key: str) -> dict[str, Any]:
    """``value``, ``min_value`` and ``max_value`` of the widget for numeric option ``key``: its
    default (``RunSpec``) and the range the validator enforces (``BOUNDS``), so the form offers
    exactly what the validator accepts."""
    b, default = BOUNDS[key], _DEFAULTS[key]
    cast = int if b.integer else float
    return {"value": None if default is None else cast(default), "min_value": cast(b.lo),
            "max_value": cast(b.hi)}


def parse_sweep_values(text: str) -> tuple[list[int | float], str | None]:
    """Comma-separated sweep values as numbers, in the order typed (the validator judges them:
    how many, their range, a repeat)."""
    values = []
    for t in (t.strip() for t in (text or "").replace(";", ",").split(",")):
        if not t:
            continue
        v = _number(t)
        if v is None:
            return [], f"Sweep value {t[:20]!r} is not a number."
        values.append(v)
    return values, None


def parse_weights(text: str) -> tuple[list[float] | None, str | None]:
    """Optional comma-separated weights of the sweep's values (engine/measure/shape_mix.py)."""
    if not (text or "").strip():
        return None, None
    try:
        return [float(w) for w in text.split(",") if w.strip()], None
    except ValueError:
        return None, "Weights must be numbers like 6, 3, 1."


EngineCheck = Callable[[dict], dict]


def field_errors(raw: dict[str, Any], check: EngineCheck) -> tuple[dict | None, dict[str, str]]:
    """The validator's verdict on ``raw``: the complete spec, or every field it refuses.

    ``check`` stops at the first problem; so the refused field is set back to its default
    (dropped from the raw spec, a refused dim from the dims) and the spec checked again, until
    it passes or a problem names no field that can be set back.  Every message is the
    validator's own."""
    errors: dict[str, str] = {}
    trial = {**raw, "dims": dict(raw.get("dims") or {})}
    for _ in range(len(trial) + len(trial["dims"]) + 1):
        try:
            spec = check(trial)
        except ValueError as exc:
            where = getattr(exc, "field", None) or "form"
            if where in errors:
                break  # setting it back did not help: its message is already shown
            errors[where] = str(exc)
            name = where.removeprefix("dims.")
            if where.startswith("dims.") and name in trial["dims"]:
                del trial["dims"][name]
            elif where in trial and where != "model":
                del trial[where]
            else:
                break
        else:
            return (None if errors else spec), errors
    return None, errors


def _form_spec(req: RunRequest, model: ModelChoice, errors: dict[str, str]) -> dict[str, Any]:
    """The raw spec the form's widgets ask for (the validator fills and judges the rest)."""
    sweep = None
    if req.sweep_dim:
        values, err = parse_sweep_values(req.sweep_values)
        if err:
            errors["sweep"] = err
        sweep = {"dim": req.sweep_dim, "values": values}
    weights, err = parse_weights(req.sweep_weights) if sweep else (None, None)
    if err:
        errors["sweep"] = err
    # The swept dim takes the sweep's values, not its widget's (one value per setting).
    dims = {d.name: _as_typed(req.dims.get(d.name, d.default)) for d in model.dims
            if not sweep or d.name != sweep["dim"]}
    spec = {
        "model": model.name, "dims": dims,
        "sweep": sweep, "dtype": req.dtype, "device": req.device,
        "variants": [v for v in req.variants if v != "eager"],
        "backend": req.backend, "dynamic": req.dynamic, "fullgraph": bool(req.fullgraph),
        "warmup_calls": req.warmup_calls, "min_samples": req.min_samples,
        "min_time_s": req.min_time_s, "max_time_s": req.max_time_s,
        "pipeline_k": req.pipeline_k, "timeout_s": req.timeout_s, "seed": req.seed,
        "profile": bool(req.profile), "warm_cache": bool(req.warm_cache),
        "keep_trace": bool(req.keep_trace), "step": req.step,
        "require_gpu": req.require_gpu or None, "require_torch": req.require_torch or None,
        "grid_limit": req.grid_limit, "shape_weights": weights,
    }
    if req.step == "train":  # the optimizer options mean nothing to an inference run
        spec.update(optimizer=req.optimizer, optimizer_impl=req.optimizer_impl, lr=req.lr,
                    autocast=req.autocast, accuracy_steps=req.accuracy_steps)
    return spec


def _advice(req: RunRequest, spec: dict[str, Any]) -> list[str]:
    """What is valid but probably not what the user wants."""
    warnings = []
    if spec["timeout_s"] < spec["max_time_s"] + 60:
        warnings.append("The timeout leaves little room for compiling: a cold inductor compile "
                        "takes seconds to minutes on top of the measuring budget.")
    if req.device == "cpu":
        cg = [v for v in spec["variants"] if v.split("@")[0] in CUDAGRAPH_VARIANTS]
        if cg:
            warnings.append(f"{', '.join(cg)} use CUDA graphs, which need a GPU: on CPU they "
                            "measure inductor without graphs.")
        if req.dtype == "float16":
            warnings.append("float16 on CPU is slow in eager and a poor guide to GPU behaviour.")
    return warnings


def build_spec(req: RunRequest, model: ModelChoice, devices: list[str],
               engine_check: EngineCheck | None = None) -> Validation:
    """The spec to queue, or the errors keyed by field (``engine_check``: the validator,
    ``engine.spec.normalise`` unless given; the dashboard passes ``data.engine_normalise``)."""
    errors: dict[str, str] = {}
    raw = _form_spec(req, model, errors)
    raw["variants"] = _expand_grid(req, raw["variants"], errors)
    if req.device not in devices:  # what the connected workers have, which a spec cannot know
        errors["device"] = ("No connected worker has a GPU; CPU runs still work."
                            if req.device == "cuda"
                            else f"Device must be one of {', '.join(devices)}.")
    tags, tag_err = parse_tags(req.tags)
    if tag_err:
        errors["tags"] = tag_err
    spec, refused = field_errors(raw, engine_check or engine_spec.normalise)
    errors = {**refused, **errors}  # the form's own reading of a field, where it has one
    if errors or spec is None:
        return Validation(None, errors, [], tags)
    return Validation(spec, {}, _advice(req, spec), tags)
