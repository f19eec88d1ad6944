"""Run specs: defaults, normalisation and validation with messages meant for the user.

The same checks serve the CLI, the dashboard (before it queues a request) and the worker. The
checks that need torch (is there a GPU, can it run this dtype, does a user factory really return a
module and inputs) only run when asked, so the dashboard can validate without importing torch.
"""

from __future__ import annotations

import math
import os
from typing import Any

from contract import spec_check
from contract.schema import BOUNDS, RunSpec
from contract.spec_check import SpecError
from contract.text import one_line
from engine import grid, spec_rules
from engine.environment import PROJECT_ROOT
from engine.grid import split_variant
from engine.measure import shape_mix
from engine.models.catalogue import CatalogueError, get_model
from engine.models.info import check_dim_value
from engine.spec_stored import is_reference, stored_model_info

VARIANTS = ("eager", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# Training only: the same modes with the optimizer step compiled too (torch.compile on
# ``opt.step``); "eager+opt" compiles the optimizer step alone. Beside the plain modes they show
# what compiling the model buys and what compiling the optimizer adds.
OPT_SUFFIX = grid.OPT_SUFFIX
TRAIN_VARIANTS = tuple(v + OPT_SUFFIX for v in VARIANTS)
ALL_VARIANTS = tuple(v for pair in zip(VARIANTS, TRAIN_VARIANTS, strict=True) for v in pair)
STEPS = ("inference", "train")
OPTIMIZERS = ("sgd", "adamw")
OPTIMIZER_IMPLS = ("default", "foreach", "fused")
AUTOCASTS = ("none", "bfloat16", "float16")
DEVICES = ("cpu", "cuda")
DEFAULTS: dict[str, Any] = RunSpec.defaults()
# Short names people type for a dtype, each read as torch's own name (which is what is stored).
DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16",
                 "bf16": "bfloat16", "fp64": "float64", "double": "float64",
                 **{name: name for name in ("float32", "float16", "bfloat16", "float64")}}




# Backends a spec may name without torch at hand (the dashboard and the worker validate without
# importing it): torch's own registered names and the common third-party ones. With
# ``check_device`` (the CLI), the list torch itself reports on this machine is the authority.
KNOWN_BACKENDS = frozenset({
    "inductor", "eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner",
    "cudagraphs", "openxla", "tvm", "onnxrt", "tensorrt", "torch_tensorrt", "ipex", "hpu_backend",
})
USER_MODELS_ENV = "COMPILELAB_ALLOW_USER_MODELS"
MAX_TEXT = 512  # model reference, backend, dtype, ... (the runs table holds 512 for model)
MAX_DIMS = 64
MAX_SWEEP_VALUES = 1000


def _show(v: Any) -> str:
    """A short, safe rendering of a value from a possibly hostile spec, for a message."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v).bit_length() > 64:
        return "a very large integer"
    if isinstance(v, (dict, list)):
        return f"a {'JSON object' if isinstance(v, dict) else 'list'}"
    return one_line(repr(v), 60)


def _text(spec: dict[str, Any], key: str) -> str:
    v = spec[key]
    if not isinstance(v, str) or not v or len(v) > MAX_TEXT:
        raise SpecError(f"{key} must be a short non-empty string, got {_show(v)}", key)
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in v):
        raise SpecError(f"{key} contains control characters or invalid Unicode: {_show(v)}", key)
    return v


def fmt_bound(x: float) -> str:
    """A range end as a user types it: 2147483647, 0.1, 1e-12."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _num(spec: dict[str, Any], key: str) -> None:
    """A numeric option within its range (``contract.schema.BOUNDS``, which the New run form's
    widgets read too)."""
    v, b = spec[key], BOUNDS[key]
    bad = (isinstance(v, bool) or not isinstance(v, (int, float))
           or (isinstance(v, float) and not math.isfinite(v))
           or (b.integer and isinstance(v, float) and v != int(v)))
    if bad:
        raise SpecError(f"{key} must be a {'whole ' if b.integer else ''}number, got {_show(v)}",
                        key)
    if not b.lo <= v <= b.hi:
        why = f": {b.why}" if b.why and v < b.lo else ""
        raise SpecError(f"{key}={_show(v)} is out of range [{fmt_bound(b.lo)}, "
                        f"{fmt_bound(b.hi)}]{why}", key)
    spec[key] = int(v) if b.integer else float(v)


def _flag(spec: dict[str, Any], key: str) -> None:
    if not isinstance(spec[key], bool):
        raise SpecError(f"{key} must be true or false, got {_show(spec[key])}", key)


def user_models_allowed_by_env() -> bool:
    """The operator's switch for a worker: ``COMPILELAB_ALLOW_USER_MODELS=1``."""
    return os.environ.get(USER_MODELS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def normalise(raw: Any, *, check_device: bool = False, check_factory: bool = False,
              allow_user_models: bool = False, stored: bool = False) -> dict[str, Any]:
    """Return a complete spec (defaults filled, dims resolved) or raise SpecError.

    The one validator for the CLI, the dashboard and the worker. ``raw`` may be anything a
    database row holds (the worker trusts nothing it reads): every field is type-checked and
    nothing is imported. File and module references (``path/file.py:factory``,
    ``pkg.mod:factory``) are refused unless ``allow_user_models``: the CLI passes True (its user
    typed the reference), a worker only when its operator allowed it (``--allow-user-models`` or
    ``COMPILELAB_ALLOW_USER_MODELS=1``), the dashboard never. They are refused before the file is
    even looked at. ``stored``: a spec stored elsewhere (a bundle's run, imported): every rule
    holds except that this machine need not have the model (engine/spec_stored.py)."""
    spec = _complete(raw)
    model = _text(spec, "model")
    info = _model_info(model, spec["dims"], stored=stored, allow_user_models=allow_user_models)
    given = spec["dims"] if isinstance(spec["dims"], dict) else {}
    _check_dims(spec, info)
    _check_sweep(spec, info, given)
    _check_dtype_device(spec, info)
    configs = _check_variants(spec, check_device)
    _check_options(spec)
    _check_grid(spec, configs)
    if spec["max_processes"] < spec["processes"]:
        spec["max_processes"] = spec["processes"]  # asking for N processes means at least N
    if spec["max_time_s"] < spec["min_time_s"]:
        raise SpecError(f"max_time_s ({spec['max_time_s']:g} s) must be at least min_time_s "
                        f"({spec['min_time_s']:g} s)", "max_time_s")
    _check_step(spec)
    _check_requirements(spec)
    if "decode" in info.tags and spec["step"] != "inference":
        raise SpecError(f"{info.name} measures token generation (inference): use step "
                        "'inference'", "step")
    if check_device:
        from engine.orchestrate import device_check

        device_check.check(spec["backend"], spec["device"], spec["dtype"])
    if check_factory and info.source == "registry":
        check_registry_model(model, spec["dims"])
    elif check_factory and info.source != "builtin":
        check_user_factory(info.factory, spec["dims"])
    return spec


def _complete(raw: Any) -> dict[str, Any]:
    """``raw`` with every default filled, once it is an object of known options and a model."""
    if not isinstance(raw, dict):
        raise SpecError(f"a run spec must be a JSON object, got {_show(raw)}")
    odd = [k for k in raw if not isinstance(k, str)]
    unknown = sorted(one_line(repr(k), 40) for k in (set(raw) - set(DEFAULTS) - {"model"}))
    if odd or unknown:
        shown = ", ".join(unknown[:5]) + (", …" if len(unknown) > 5 else "")
        raise SpecError(f"unknown option(s): {shown}")
    if not raw.get("model"):
        raise SpecError("a model is required", "model")
    return {**RunSpec.defaults(), **raw}


def _model_info(model: str, dims: Any, *, stored: bool, allow_user_models: bool) -> Any:
    """What the catalogue (or, for a stored spec, the spec itself) says of ``model``; a file or
    module reference is refused before it is looked at unless user models are allowed."""
    if not stored and is_reference(model) and not allow_user_models:
        raise SpecError(
            f"model {_show(model)} is a file or module reference; this worker runs only catalogue "
            "models and plugin:NAME from its operator's plugin folder (its operator may allow "
            f"references with `python -m engine worker --allow-user-models` or {USER_MODELS_ENV}=1)",
            "model")
    try:
        return stored_model_info(model, dims) if stored else get_model(model)
    except CatalogueError as e:
        raise SpecError(one_line(e), "model") from None


def _check_dtype_device(spec: dict[str, Any], info: Any) -> None:
    for key in ("dtype", "autocast"):  # fp16, bf16...: stored under torch's own name
        if isinstance(spec[key], str):
            spec[key] = DTYPE_ALIASES.get(spec[key].strip().lower(), spec[key])
    if not isinstance(spec["dtype"], str) or spec["dtype"] not in info.dtypes:
        raise SpecError(f"dtype {_show(spec['dtype'])} is not supported by {info.name} "
                        f"(supported: {', '.join(info.dtypes)})", "dtype")
    if not isinstance(spec["device"], str) or spec["device"] not in DEVICES:
        raise SpecError(f"device must be one of {', '.join(DEVICES)}, got {_show(spec['device'])}",
                        "device")


def _check_variants(spec: dict[str, Any], check_device: bool) -> dict[str, tuple[str, dict]]:
    """The variants (eager added, sorted by mode) and the backend they need."""
    variants = _variant_list(spec["variants"])
    configs = _check_variant_names(variants)
    if "eager" not in variants:
        variants.insert(0, "eager")  # every comparison needs the eager baseline
        configs["eager"] = ("eager", {})
    # by mode, the grid's own order kept within a mode (sort is stable)
    variants.sort(key=lambda v: ALL_VARIANTS.index(configs[v][0]))
    spec["variants"] = variants
    backend = _text(spec, "backend")
    if not check_device and backend not in KNOWN_BACKENDS:
        raise SpecError(f"unknown backend {_show(backend)}; known: "
                        f"{', '.join(sorted(KNOWN_BACKENDS))}", "backend")
    if backend != "inductor" and any(split_variant(v)[0] not in ("eager", "default")
                                     for v in variants):
        raise SpecError("compile modes other than 'default' need backend 'inductor'", "variants")
    return configs


_NUMBERS = ("warmup_calls", "min_samples", "min_time_s", "max_time_s", "pipeline_k",
            "timeout_s", "seed", "processes", "max_processes", "target_halfwidth",
            "process_budget_s", "concurrency", "compile_slots", "grid_limit", "mix_requests")


def _check_options(spec: dict[str, Any]) -> None:
    """Flags, numbers in their ranges, and the shape mix's weights."""
    if spec["dynamic"] is not None and not isinstance(spec["dynamic"], bool):
        raise SpecError("dynamic must be None, True or False", "dynamic")
    for key in ("fullgraph", "cross_check", "profile", "warm_cache", "startup", "keep_trace"):
        _flag(spec, key)
    for key in _NUMBERS:
        _num(spec, key)
    try:
        shape_mix.check(spec)  # weights of the sweep's sizes
    except ValueError as e:
        raise SpecError(one_line(e), "sweep") from None


def _check_requirements(spec: dict[str, Any]) -> None:
    for key, limit in (("require_gpu", 256), ("require_torch", 64)):
        if spec[key] in (None, ""):
            spec[key] = None  # any worker with the device
        elif len(str(spec[key])) > limit:
            raise SpecError(f"{key} must be at most {limit} characters", key)
        else:
            _text(spec, key)


def _check_dims(spec: dict[str, Any], info: Any) -> None:
    """Every dim a whole number in the model's range; ``field`` names the dim (``dims.batch``)
    so a form shows the message beside that dim's widget."""
    dims = spec["dims"]
    if dims is None:
        dims = {}
    if not isinstance(dims, dict) or len(dims) > MAX_DIMS:
        raise SpecError(f"dims must be an object of at most {MAX_DIMS} name: value pairs, "
                        f"got {_show(dims)}", "dims")
    try:
        spec["dims"] = info.resolve_dims(dict(dims))
    except CatalogueError as e:
        raise SpecError(one_line(e), _bad_dim(info, dims)) from None


def _bad_dim(info: Any, dims: dict[Any, Any]) -> str:
    """``dims.NAME`` of the first dim the model refuses on its own (``dims`` if none alone)."""
    for name, value in dims.items():
        try:
            info.resolve_dims({name: value})
        except CatalogueError:
            return f"dims.{name}" if isinstance(name, str) else "dims"
    return "dims"


def _check_sweep(spec: dict[str, Any], info: Any, given: dict[Any, Any]) -> None:
    """A sweep over one input dim: at least two distinct values, each in the dim's range, and
    no other value of that dim given beside it (which of the two would be measured?)."""
    sweep = spec["sweep"]
    if sweep is None:
        return
    if not isinstance(sweep, dict) or not sweep or set(sweep) - {"dim", "values"}:
        raise SpecError(f"sweep must be {{\"dim\": name, \"values\": [...]}} or null, got "
                        f"{_show(sweep)}", "sweep")
    dim_name, values = sweep.get("dim"), sweep.get("values")
    if not isinstance(dim_name, str) or not isinstance(values, list):
        raise SpecError("sweep: dim must be a name and values a list of whole numbers", "sweep")
    if len(values) > MAX_SWEEP_VALUES:
        raise SpecError(f"sweep: at most {MAX_SWEEP_VALUES} values", "sweep")
    try:
        d = info.dim(dim_name) if info.dims else None
    except CatalogueError as e:
        raise SpecError(one_line(e), "sweep") from None
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
            raise SpecError(f"sweep: {one_line(e)}", "sweep") from None
    repeated = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if repeated is not None:
        raise SpecError(f"sweep: {dim_name}={repeated} is given twice; give each value once",
                        "sweep")
    if dim_name in given and given[dim_name] != values[0]:
        raise SpecError(f"{dim_name} is given both as a dim ({_show(given[dim_name])}) and as a "
                        f"sweep: drop the dim, the sweep sets {dim_name}", "sweep")
    spec["sweep"] = {"dim": dim_name, "values": [int(v) for v in values]}
    spec["dims"][dim_name] = int(values[0])


def _variant_list(raw: Any) -> list[str]:
    """The variants as given: a non-empty list of names, each named once (a repeat is a
    mistake the user should see, not a variant measured once where two were asked for)."""
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise SpecError(f"variants must be a list of names, got {_show(raw)}", "variants")
    if not raw:
        raise SpecError("no variant given: name at least one, e.g. default (eager is always "
                        "measured beside it)", "variants")
    repeated = next((v for i, v in enumerate(raw) if v in raw[:i]), None)
    if repeated is not None:
        raise SpecError(f"variant {_show(repeated)} is given twice: name each variant once",
                        "variants")
    return list(raw)


def _check_variant_names(variants: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """{name: (base variant, grid config)} for every name, or SpecError (engine/grid.py)."""
    configs = {}
    for v in variants:
        if len(v) > grid.MAX_NAME:
            raise SpecError(f"variant name {_show(v)} is longer than {grid.MAX_NAME} "
                            "characters", "variants")
        try:
            configs[v] = grid.parse_variant(v, ALL_VARIANTS)
        except grid.GridError as e:
            raise SpecError(one_line(e), "variants") from None
    return configs


def _check_grid(spec: dict[str, Any], configs: dict[str, tuple[str, dict[str, Any]]]) -> None:
    """Each config's rules, and the grid-size limit the user can raise (``grid_limit``)."""
    for base, config in configs.values():
        try:
            grid.check_config(base, config, backend=spec["backend"], step=spec["step"])
        except grid.GridError as e:
            raise SpecError(one_line(e), "variants") from None
    conflict = spec_rules.grid_conflict(spec, configs.values())
    if conflict:
        raise SpecError(*conflict)
    n = grid.compiled_count(spec["variants"])
    if n > spec["grid_limit"]:
        raise SpecError(f"the grid has {n} compiled variants, more than the limit of "
                        f"{spec['grid_limit']}: drop some option values, or raise the limit "
                        f"(grid_limit, --grid-limit; at most {grid.MAX_GRID_LIMIT})", "variants")


def _choice(spec: dict[str, Any], key: str, choices: tuple[str, ...]) -> None:
    if not isinstance(spec[key], str) or spec[key] not in choices:
        raise SpecError(f"{key} must be one of {', '.join(choices)}, got {_show(spec[key])}", key)


def _check_step(spec: dict[str, Any]) -> None:
    """The training-step and accuracy options (engine/measure/train_step.py, engine/measure/accuracy.py)."""
    _choice(spec, "step", STEPS)
    _choice(spec, "optimizer", OPTIMIZERS)
    _choice(spec, "optimizer_impl", OPTIMIZER_IMPLS)
    _choice(spec, "autocast", AUTOCASTS)
    _num(spec, "lr")
    _num(spec, "accuracy_steps")
    _num(spec, "accuracy_multiplier")
    if spec["accuracy_floor"] is not None:
        _num(spec, "accuracy_floor")
    train = spec["step"] == "train"
    opt_variants = [v for v in spec["variants"] if split_variant(v)[1]]
    if opt_variants and not train:
        raise SpecError(f"{opt_variants[0]} compiles the optimizer step: it needs step 'train'",
                        "variants")
    if not train:
        ignored = spec_rules.train_only_on_inference(spec)
        if ignored:
            raise SpecError(*ignored)
        return
    if spec["sweep"]:
        raise SpecError("a sweep measures inference only: use step 'inference' to sweep, or "
                        "one training run per shape", "sweep")
    if spec["startup"]:
        raise SpecError("start-up strategies are measured for inference only: use step "
                        "'inference' for them", "startup")
    if spec["autocast"] != "none" and spec["dtype"] != "float32":
        raise SpecError(f"autocast to {spec['autocast']} is mixed precision: it keeps float32 "
                        f"parameters, so set dtype float32 (got {spec['dtype']})", "autocast")
    if spec["accuracy_steps"] > spec["warmup_calls"]:
        # the compiled variant's first warm-up steps are the steps its accuracy is judged on
        raise SpecError(f"accuracy_steps ({spec['accuracy_steps']}) must not exceed "
                        f"warmup_calls ({spec['warmup_calls']})", "accuracy_steps")


def check_registry_model(name: str, dims: dict[str, int]) -> None:
    """Does the library know this model, and (``hf:``) does its config take these dims? Imports
    the library but builds no weights, so a 7B shape is checked in a second."""
    from engine.models import registry

    try:
        registry.check(name, dims)
    except Exception as e:  # the library's own words, on one line
        raise SpecError(one_line(e, 400), "model") from None


def check_user_factory(ref: str, dims: dict[str, int], timeout_s: float = 600.0) -> None:
    """Call a user/plugin factory once, in a separate process, to check it returns
    (nn.Module, tuple_of_inputs).

    A separate process (``engine.measure.factory_check``) because the factory is arbitrary code: one that
    calls ``sys.exit(0)`` or ``os._exit(0)`` while building must not end the CLI with exit code 0
    and nothing said; one that crashes must not take the CLI with it."""
    import json
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="compilelab-check-") as tmp:
        out = os.path.join(tmp, "result.json")
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "engine.measure.factory_check", ref, json.dumps(dims), out],
                cwd=os.getcwd(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, timeout=timeout_s,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))},
            )
        except subprocess.TimeoutExpired:
            raise SpecError(f"user model {ref!r} did not finish building in {timeout_s:g} s",
                            "model") from None
        try:
            with open(out) as f:
                verdict = json.load(f)
        except (OSError, ValueError):
            how = (f"died from signal {-proc.returncode}" if proc.returncode < 0
                   else f"ended the process with exit code {proc.returncode}")
            tail = one_line(proc.stderr.decode("utf-8", "replace")[-300:], 300)
            raise SpecError(f"user model {ref!r} {how} while being built, without returning "
                            "(a factory must return (torch.nn.Module, tuple_of_inputs), not call "
                            f"sys.exit/os._exit)" + (f": {tail}" if tail else ""),
                            "model") from None
    if verdict.get("error"):
        raise SpecError(one_line(verdict["error"]), "model")


# bundles and rows read by storage are checked with this validator (contract/spec_check.py)
spec_check.install(lambda raw: normalise(raw, stored=True))
