"""Run specs: defaults, normalisation and validation with messages meant for the user.

The same checks serve the CLI, the dashboard (before it queues a request) and the worker. The
checks that need torch (is there a GPU, can it run this dtype, does a user factory really return a
module and inputs) only run when asked, so the dashboard can validate without importing torch.
"""

from __future__ import annotations

from typing import Any

from engine.catalogue import CatalogueError, check_dim_value, get_model, load_factory
from engine.contract import RunSpec

VARIANTS = ("eager", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DEVICES = ("cpu", "cuda")
DEFAULTS: dict[str, Any] = RunSpec.defaults()


class SpecError(ValueError):
    """Bad input; ``field`` names what to fix so a form can show the message beside it."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _num(spec: dict[str, Any], key: str, lo: float, hi: float, integer: bool = False) -> None:
    v = spec[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and v != int(v)):
        raise SpecError(f"{key} must be a {'whole ' if integer else ''}number, got {v!r}", key)
    if not lo <= v <= hi:
        raise SpecError(f"{key}={v} is out of range [{lo}, {hi}]", key)
    spec[key] = int(v) if integer else float(v)


def normalise(raw: dict[str, Any], *, check_device: bool = False,
              check_factory: bool = False) -> dict[str, Any]:
    """Return a complete spec (defaults filled, dims resolved) or raise SpecError."""
    unknown = set(raw) - set(DEFAULTS) - {"model"}
    if unknown:
        raise SpecError(f"unknown option(s): {', '.join(sorted(unknown))}")
    if not raw.get("model"):
        raise SpecError("a model is required", "model")
    spec = {**RunSpec.defaults(), **raw}
    try:
        info = get_model(str(spec["model"]))
    except CatalogueError as e:
        raise SpecError(str(e), "model") from None
    try:
        spec["dims"] = info.resolve_dims(dict(spec["dims"] or {}))
    except CatalogueError as e:
        raise SpecError(str(e), "dims") from None

    sweep = spec["sweep"]
    if sweep:
        dim_name, values = sweep.get("dim"), list(sweep.get("values") or [])
        try:
            d = info.dim(str(dim_name)) if info.dims else None
        except CatalogueError as e:
            raise SpecError(str(e), "sweep") from None
        if d is not None and not d.input_only:
            raise SpecError(f"sweep: dim {dim_name!r} changes the model itself; sweep an input "
                            f"dim ({', '.join(x.name for x in info.dims if x.input_only)})",
                            "sweep")
        if len(values) < 2:
            raise SpecError("sweep: give at least two values, e.g. seq=32,64,128", "sweep")
        for v in values:
            try:
                check_dim_value(d, v) if d else check_dim_value(info.dim(dim_name), v)
            except CatalogueError as e:
                raise SpecError(f"sweep: {e}", "sweep") from None
        spec["sweep"] = {"dim": dim_name, "values": [int(v) for v in values]}
        spec["dims"][dim_name] = int(values[0])

    if spec["dtype"] not in info.dtypes:
        raise SpecError(f"dtype {spec['dtype']!r} is not supported by {info.name} "
                        f"(supported: {', '.join(info.dtypes)})", "dtype")
    if spec["device"] not in DEVICES:
        raise SpecError(f"device must be one of {', '.join(DEVICES)}, got {spec['device']!r}",
                        "device")
    variants = list(dict.fromkeys(spec["variants"] or []))
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise SpecError(f"unknown variant(s) {', '.join(bad)}; choose from {', '.join(VARIANTS)}",
                        "variants")
    if "eager" not in variants:
        variants.insert(0, "eager")  # every comparison needs the eager baseline
    variants.sort(key=VARIANTS.index)
    spec["variants"] = variants
    if spec["backend"] != "inductor" and any(v not in ("eager", "default") for v in variants):
        raise SpecError("compile modes other than 'default' need backend 'inductor'", "variants")
    if spec["dynamic"] not in (None, True, False):
        raise SpecError("dynamic must be None, True or False", "dynamic")
    spec["fullgraph"] = bool(spec["fullgraph"])
    spec["cross_check"] = bool(spec["cross_check"])
    _num(spec, "warmup_calls", 3, 1000, integer=True)
    _num(spec, "min_samples", 3, 100000, integer=True)
    _num(spec, "min_time_s", 0, 3600)
    _num(spec, "max_time_s", 0.1, 3600)
    _num(spec, "pipeline_k", 1, 10000, integer=True)
    _num(spec, "timeout_s", 1, 24 * 3600)
    _num(spec, "seed", 0, 2**31 - 1, integer=True)
    _num(spec, "processes", 1, 100, integer=True)
    _num(spec, "max_processes", 1, 100, integer=True)
    _num(spec, "target_halfwidth", 0, 10)
    _num(spec, "process_budget_s", 0, 24 * 3600)
    if spec["max_processes"] < spec["processes"]:
        spec["max_processes"] = spec["processes"]  # asking for N processes means at least N
    if spec["max_time_s"] < spec["min_time_s"]:
        raise SpecError("max_time_s must be >= min_time_s", "max_time_s")
    if check_device:
        check_device_dtype(spec["device"], spec["dtype"])
    if check_factory and info.source != "builtin":
        check_user_factory(info.factory, spec["dims"])
    return spec


def check_device_dtype(device: str, dtype: str) -> None:
    """Is there such a device here, and can it run this dtype? (imports torch)"""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise SpecError("device 'cuda' was requested but no CUDA GPU is visible here "
                        "(torch.cuda.is_available() is False); use --device cpu", "device")
    if device == "cuda" and dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
        raise SpecError("this GPU cannot run bfloat16; use float16 or float32", "dtype")
    try:
        t = torch.ones(4, 4, device=device, dtype=getattr(torch, dtype))
        (t @ t).sum().item()
    except Exception as e:
        raise SpecError(f"device {device} cannot run {dtype}: {e}", "dtype") from None


def check_user_factory(ref: str, dims: dict[str, int]) -> None:
    """Call a user/plugin factory once to check it returns (nn.Module, tuple_of_inputs)."""
    import torch

    try:
        built = load_factory(ref)(**dims)
    except CatalogueError as e:
        raise SpecError(str(e), "model") from None
    except Exception as e:
        raise SpecError(f"user model {ref!r} raised {type(e).__name__}: {e}", "model") from None
    ok = (isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], torch.nn.Module)
          and isinstance(built[1], (tuple, list)))
    if not ok:
        raise SpecError(f"user model {ref!r} must return (torch.nn.Module, tuple_of_inputs), "
                        f"got {type(built).__name__}", "model")
