"""New-run form validation and the catalogue adapter."""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.catalogue import DimChoice, ModelChoice, to_model_choice
from dashboard.spec import RunRequest, build_spec, parse_sweep_values, parse_tags

MLP = ModelChoice("mlp", "MLP", (DimChoice("batch", 32, 1, 65536), DimChoice("hidden", 1024, 8,
                                                                             16384)),
                  ("float32", "bfloat16"))


def _req(**kw) -> RunRequest:
    base = dict(model="mlp", dims={"batch": 32, "hidden": 1024}, dtype="float32", device="cpu",
                variants=["default"])
    base.update(kw)
    return RunRequest(**base)


def test_valid_request_builds_contract_spec():
    v = build_spec(_req(tags="nightly, h200 ,nightly"), MLP, ["cpu"])
    assert v.ok and not v.errors
    s = v.spec
    assert s["variants"] == ["eager", "default"]
    assert s["dims"] == {"batch": 32, "hidden": 1024}
    assert s["sweep"] is None and s["dynamic"] is None and s["backend"] == "inductor"
    assert set(s) == {"model", "dims", "sweep", "dtype", "device", "variants", "backend",
                      "dynamic", "fullgraph", "warmup_calls", "min_samples", "min_time_s",
                      "max_time_s", "pipeline_k", "timeout_s", "seed", "profile", "warm_cache", "keep_trace",
                      "step", "require_gpu", "require_torch", "grid_limit"}
    assert s["require_gpu"] is None and s["require_torch"] is None
    assert v.tags == ["nightly", "h200"]


def test_errors_are_keyed_by_field():
    v = build_spec(_req(dims={"batch": 0, "hidden": 10**6}, device="cuda", variants=[],
                        min_time_s=5.0, max_time_s=1.0, dtype="float16"), MLP, ["cpu"])
    assert not v.ok and v.spec is None
    assert "between 1…65536" in v.errors["dim.batch"]
    assert "dim.hidden" in v.errors
    assert v.errors["device"] == "No connected worker has a GPU; CPU runs still work."
    assert "at least one compile variant" in v.errors["variants"]
    assert "at least the minimum" in v.errors["max_time_s"]
    assert "float32, bfloat16" in v.errors["dtype"]


def test_reduce_overhead_needs_three_warmup_calls_and_modes_need_inductor():
    v = build_spec(_req(variants=["reduce-overhead"], warmup_calls=2), MLP, ["cpu", "cuda"])
    assert "at least 3 warm-up calls" in v.errors["warmup_calls"]
    v = build_spec(_req(variants=["default", "max-autotune"], backend="aot_eager"), MLP, ["cpu"])
    assert "inductor backend only" in v.errors["variants"]
    v = build_spec(_req(variants=["reduce-overhead"], device="cpu"), MLP, ["cpu"])
    assert v.ok and any("CUDA graphs" in w for w in v.warnings)


def test_sweep_values_validated_against_range():
    dim = MLP.dim("batch")
    assert parse_sweep_values("64, 8,32", dim) == ([8, 32, 64], None)
    assert "between 1…65536" in parse_sweep_values("8, 100000", dim)[1]
    assert "at least two" in parse_sweep_values("8", dim)[1]
    assert "whole number" in parse_sweep_values("8, 1.5", dim)[1]
    assert "given twice" in parse_sweep_values("8, 8", dim)[1]
    assert "must be a number" in parse_sweep_values("8, x", dim)[1]
    v = build_spec(_req(sweep_dim="batch", sweep_values="8,16,32"), MLP, ["cpu"])
    assert v.spec["sweep"] == {"dim": "batch", "values": [8, 16, 32]}
    v = build_spec(_req(sweep_dim="batch", sweep_values="0,16"), MLP, ["cpu"])
    assert "sweep" in v.errors


def test_tags():
    assert parse_tags("a, b, a") == (["a", "b"], None)
    # One rule with the CLI and bundles: "<" and "=" are text, escaped where shown.
    assert parse_tags("ok, <b>=1") == (["ok", "<b>=1"], None)
    assert parse_tags("ok, tab\there")[1]
    assert parse_tags("x" * 101)[1]


@dataclass(frozen=True)
class _Dim:
    name: str
    default: int
    min: int = 1
    max: int = 1 << 20
    help: str = ""


@dataclass(frozen=True)
class _Info:
    name: str
    description: str
    dims: tuple = ()
    dtypes: tuple = ("float32",)
    source: str = "builtin"


def test_adapter_accepts_objects_and_dicts():
    m = to_model_choice(_Info("mlp", "The MLP.\nMore text.", (_Dim("batch", 32, 1, 64, "rows"),)))
    assert m.description == "The MLP."
    assert m.dims[0] == DimChoice("batch", 32, 1, 64, "rows")
    assert m.dims[0].is_int
    d = to_model_choice({"name": "plugin:foo", "description": "", "dims": [
        {"name": "seq", "default": 8, "min": 1, "max": 16}]})
    assert d.source == "plugin" and d.dims[0].max == 16 and d.dtypes == ("float32", "bfloat16",
                                                                        "float16")


def test_real_catalogue_adapts():
    from dashboard.catalogue import load_catalogue

    models = load_catalogue()
    assert models and all(m.name and m.dims for m in models)


def test_engine_check_is_last_word_and_maps_fields():
    from dashboard.data import engine_normalise

    real = to_model_choice(next(m for m in __import__("engine.models.catalogue").models.catalogue.list_models()
                                if m.name == "mlp"))
    v = build_spec(_req(), real, ["cpu"], engine_check=engine_normalise)
    assert v.ok and v.spec["variants"] == ["eager", "default"]
    # hidden changes the module: not sweepable (offered dims exclude it, engine agrees)
    assert [d.name for d in real.sweepable] == ["batch"]
    v = build_spec(_req(sweep_dim="hidden", sweep_values="64,128"), real, ["cpu"],
                   engine_check=engine_normalise)
    assert "changes the model itself" in v.errors["sweep"]

    class FieldError(ValueError):
        field = "dims"

    def reject(spec):
        raise FieldError("dim hidden=1024 is out of range")

    v = build_spec(_req(), MLP, ["cpu"], engine_check=reject)
    assert v.errors == {"dim.hidden": "dim hidden=1024 is out of range"}
