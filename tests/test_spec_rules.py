"""Options that would be silently ignored are refused by the one validator (engine/spec_rules.py
through engine.spec.normalise): a top-level option that a grid over the same option overrides,
and training-only options on an inference run. Found by an attacker's pass."""

from __future__ import annotations

import pytest
from conftest import run_cli

from dashboard.spec import RunRequest, build_spec
from engine.spec import SpecError, normalise

BASE = {"model": "mlp", "dims": {"batch": 2, "hidden": 8}, "backend": "aot_eager"}


@pytest.mark.parametrize("top,variants,field", [
    ({"dynamic": True}, ["eager", "default@dyn=none", "default@dyn=1"], "dynamic"),
    ({"dynamic": False}, ["eager", "default@dyn=1"], "dynamic"),
    ({"fullgraph": True}, ["eager", "default@fg=0", "default@fg=1"], "fullgraph"),
    ({"fullgraph": True}, ["eager", "default@dyn=1,fg=1"], "fullgraph"),
])
def test_top_level_option_and_grid_over_it_is_refused(top, variants, field):
    with pytest.raises(SpecError, match="both set: drop one") as e:
        normalise({**BASE, **top, "variants": variants})
    assert e.value.field == field


@pytest.mark.parametrize("spec", [
    {"dynamic": None, "variants": ["eager", "default@dyn=none", "default@dyn=1"]},
    {"dynamic": True, "variants": ["eager", "default@fg=0", "default@fg=1"]},  # other option
    {"fullgraph": False, "variants": ["eager", "default@fg=0", "default@fg=1"]},  # default
    {"dynamic": True, "fullgraph": True, "variants": ["eager", "default"]},  # no grid
])
def test_grid_without_a_contradicting_top_level_option_is_accepted(spec):
    assert normalise({**BASE, **spec})["variants"][0] == "eager"


def test_cli_dynamic_with_a_grid_over_dynamic_is_one_clear_error(tmp_path):
    url = f"sqlite:///{tmp_path / 'q.db'}"
    p = run_cli("run", "--model", "mlp", "--dim", "hidden=8", "--backend", "aot_eager",
                "--dynamic", "true", "--option", "dynamic=none,true", "--queue", db_url=url,
                timeout=120)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert "--dynamic" in p.stderr and "both set: drop one" in p.stderr
    assert not (tmp_path / "q.db").exists()  # nothing queued


@pytest.mark.parametrize("option,value", [
    ("optimizer", "sgd"), ("optimizer_impl", "foreach"), ("lr", 0.5), ("autocast", "bfloat16"),
    ("accuracy_steps", 5),
])
def test_training_only_option_on_an_inference_run_is_refused(option, value):
    with pytest.raises(SpecError, match="training steps only") as e:
        normalise({**BASE, option: value})
    assert e.value.field == option
    with pytest.raises(SpecError, match="training steps only"):
        normalise({**BASE, "step": "inference", option: value})
    # the same option on a training run is what it is for
    assert normalise({**BASE, "step": "train", option: value})[option] == value


def test_training_only_options_at_their_defaults_pass_on_inference():
    spec = normalise({**BASE, "optimizer": "adamw", "optimizer_impl": "default", "lr": 1e-4,
                      "autocast": "none", "accuracy_steps": 3})
    assert spec["step"] == "inference"


def test_dashboard_form_sends_no_training_options_for_inference():
    """The New run form keeps its training widgets' values out of an inference spec, so the
    engine's check above never refuses a form that merely had them touched."""
    from dashboard.catalogue import load_catalogue
    from dashboard.data import engine_normalise

    mlp = next(m for m in load_catalogue() if m.name == "mlp")
    req = RunRequest(model="mlp", dims={"hidden": 8}, dtype="float32", device="cpu",
                     variants=["default"], backend="aot_eager", step="inference",
                     optimizer="sgd", optimizer_impl="foreach", lr=0.5, autocast="bfloat16",
                     accuracy_steps=5)
    check = build_spec(req, mlp, ["cpu"], engine_check=engine_normalise)
    assert check.ok, check.errors
    assert check.spec["lr"] == 1e-4 and check.spec["optimizer"] == "adamw"
    train = build_spec(RunRequest(**{**req.__dict__, "step": "train"}), mlp, ["cpu"],
                       engine_check=engine_normalise)
    assert train.ok and train.spec["lr"] == 0.5 and train.spec["optimizer"] == "sgd"


def test_dashboard_form_dynamic_with_a_grid_over_it_shows_the_error():
    from dashboard.catalogue import load_catalogue
    from dashboard.data import engine_normalise

    mlp = next(m for m in load_catalogue() if m.name == "mlp")
    req = RunRequest(model="mlp", dims={"hidden": 8}, dtype="float32", device="cpu",
                     variants=["default"], dynamic=True, grid={"dynamic": ["none", "true"]})
    check = build_spec(req, mlp, ["cpu"], engine_check=engine_normalise)
    assert not check.ok and "both set: drop one" in check.errors["dynamic"]
