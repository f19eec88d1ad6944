"""New-run form validation and the catalogue adapter."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

from contract.schema import BOUNDS, RunSpec
from dashboard.catalogue import DimChoice, ModelChoice, to_model_choice
from dashboard.spec import RunRequest, build_spec, number_widget, parse_sweep_values, parse_tags
from engine.spec import SpecError, normalise
from engine.spec_rules import TRAIN_ONLY

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
    # the validator's complete spec: every RunSpec option, the form's untouched ones at default
    assert set(s) == set(RunSpec.keys())
    assert s["processes"] == RunSpec.defaults()["processes"]
    assert s["require_gpu"] is None and s["require_torch"] is None
    assert v.tags == ["nightly", "h200"]


def test_every_field_the_validator_refuses_is_keyed_by_its_field():
    """The validator stops at its first problem; the form shows all of them at once, each in
    the validator's own words under the field it names."""
    v = build_spec(_req(dims={"batch": 0, "hidden": 10**6}, device="cuda", variants=[],
                        min_time_s=5.0, max_time_s=1.0, seed=-1), MLP, ["cpu"])
    assert not v.ok and v.spec is None
    assert v.errors["dims.batch"] == "dim batch must be > 0, got 0"
    assert "hidden=1000000 is out of range [8, 16384]" in v.errors["dims.hidden"]
    assert v.errors["device"] == "No connected worker has a GPU; CPU runs still work."
    assert "no variant given" in v.errors["variants"]
    assert v.errors["max_time_s"] == "max_time_s (1 s) must be at least min_time_s (5 s)"
    assert "seed=-1 is out of range [0, 2147483647]" in v.errors["seed"]
    # the same raw spec through the validator alone names the first of them
    with pytest.raises(SpecError) as e:
        normalise({"model": "mlp", "dims": {"batch": 0}, "variants": []})
    assert e.value.field == "dims.batch"


def test_warmup_floor_says_why_and_modes_need_inductor():
    v = build_spec(_req(variants=["reduce-overhead"], warmup_calls=2), MLP, ["cpu", "cuda"])
    assert "replays them from call 3" in v.errors["warmup_calls"]
    v = build_spec(_req(variants=["default", "max-autotune"], backend="aot_eager"), MLP, ["cpu"])
    assert "need backend 'inductor'" in v.errors["variants"]
    v = build_spec(_req(variants=["reduce-overhead"], device="cpu"), MLP, ["cpu"])
    assert v.ok and any("CUDA graphs" in w for w in v.warnings)


def test_sweep_values_are_read_as_typed_and_judged_by_the_validator():
    assert parse_sweep_values("64, 8,32") == ([64, 8, 32], None)
    assert parse_sweep_values("8, 1.5") == ([8, 1.5], None)
    assert "not a number" in parse_sweep_values("8, x")[1]
    v = build_spec(_req(sweep_dim="batch", sweep_values="8,16,32"), MLP, ["cpu"])
    assert v.spec["sweep"] == {"dim": "batch", "values": [8, 16, 32]}
    assert v.spec["dims"]["batch"] == 8  # the sweep sets the dim, not the batch widget's 32
    for text, words in (("8, 100000", "batch=100000 is out of range [1, 65536]"),
                        ("8", "at least two values"), ("8, 1.5", "whole number"),
                        ("8, 8", "batch=8 is given twice"), ("8, x", "'x' is not a number")):
        assert words in build_spec(_req(sweep_dim="batch", sweep_values=text), MLP,
                                   ["cpu"]).errors["sweep"], text


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
        field = "dims.hidden"

    def reject(spec):
        raise FieldError("dim hidden=1024 is out of range")

    v = build_spec(_req(), MLP, ["cpu"], engine_check=reject)
    assert v.errors == {"dims.hidden": "dim hidden=1024 is out of range"}


def _numeric_options() -> list[str]:
    return [f.name for f in fields(RunSpec) if any(t in str(f.type) for t in ("int", "float"))
            and "bool" not in str(f.type) and "list" not in str(f.type)
            and "dict" not in str(f.type)]


def test_every_numeric_option_has_one_range():
    """BOUNDS covers every numeric RunSpec option and each default lies inside its range: an
    option added without a range would be checked by nobody, or refused at its default."""
    assert sorted(BOUNDS) == sorted(_numeric_options())
    for key, b in BOUNDS.items():
        default = RunSpec.defaults()[key]
        assert default is None or b.lo <= default <= b.hi, key


@pytest.mark.parametrize("key", sorted(BOUNDS))
def test_form_limits_are_the_validators_limits(key):
    """For each numeric option, the form's widget limits are exactly where the validator starts
    refusing: the limits accepted, one step beyond refused under that option's field."""
    w = number_widget(key)
    step = 1 if BOUNDS[key].integer else max(abs(w["max_value"]) * 1e-6, 1e-15)
    base = {"model": "mlp"}
    if key in TRAIN_ONLY:  # read by training steps only (engine/spec_rules.py)
        base.update(step="train", warmup_calls=1000)
    # the option it is compared with, out of the way, so only this option's range decides
    base.update({"max_processes": {"processes": 1}, "max_time_s": {"min_time_s": 0},
                 "min_time_s": {"max_time_s": 3600}}.get(key, {}))
    for inside in (w["min_value"], w["max_value"], w["value"] or w["min_value"]):
        assert normalise({**base, key: inside})[key] == inside
    for outside in (w["min_value"] - step, w["max_value"] + step):
        with pytest.raises(SpecError) as e:
            normalise({**base, key: outside})
        assert e.value.field == key and "out of range" in str(e.value), (key, outside)
