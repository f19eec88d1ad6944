"""The training step (engine/measure/train_step.py) through the measuring child, its options in the one
validator, the CLI and the dashboard form. Plumbing on CPU with ``aot_eager``; one real inductor
compile is in the slow tier."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST, FIXTURES, run_cli

from engine.spec import SpecError, normalise

ROOT = Path(__file__).resolve().parent.parent
TRAIN = str(FIXTURES / "train_models.py")
QUICK = {"device": "cpu", "warmup_calls": 3, "min_samples": 3, "min_time_s": 0.0,
         "max_time_s": 0.2, "pipeline_k": 2, "warm_cache": False, "profile": False,
         "backend": "aot_eager"}
SCRIPT = """
import json, sys
from engine.measure.child import Progress, measure
out = []
for run, variant in json.loads(sys.argv[1]):
    r = measure({"run": run, "variant": variant, "phase": "cold"}, Progress(None))
    out.append({k: r.get(k) for k in sys.argv[2].split(",")})
print(json.dumps(out, default=str))
"""
KEYS = ("status,error,stderr_tail,warmup_ms,first_call_cold_s,samples_ms,eager_samples_ms,"
        "pipelined_ms,graph_count,graph_break_count,reference_dtype,eager_error,compiled_error,"
        "accuracy_multiplier,accuracy_floor,accuracy_ok,eager_deterministic,accuracy,correct")


def _measure(*configs: tuple[dict, str], timeout: float = 400) -> list[dict]:
    specs = [(normalise({**QUICK, **run}, allow_user_models=True), variant)
             for run, variant in configs]
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(specs), KEYS], cwd=ROOT,
                       capture_output=True, text=True, timeout=timeout,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    for r in out:
        assert r["status"] == "ok", (r["error"], r["stderr_tail"])
    return out


@pytest.mark.slow  # an end-to-end run (10-30 s here): the slow tier
def test_training_variants_time_a_step_and_pass_the_float64_check():
    mlp = {"model": "mlp", "dims": {"batch": 4, "hidden": 16}, "step": "train"}
    eager, autocast, opt = _measure(
        ({**mlp, "optimizer": "sgd", "optimizer_impl": "foreach"}, "eager"),
        ({**mlp, "autocast": "bfloat16"}, "default"),
        ({"model": f"{TRAIN}:classifier", "step": "train", "variants": ["default+opt"]},
         "default+opt"),
    )
    assert eager["graph_count"] == 0 and eager["compiled_error"] is None
    assert eager["accuracy_ok"] and eager["eager_deterministic"] is True
    for r in (autocast, opt):
        assert len(r["warmup_ms"]) == 3
        assert r["first_call_cold_s"] * 1e3 > max(r["warmup_ms"][1:])  # step 1 compiles
        assert len(r["samples_ms"]) == len(r["eager_samples_ms"]) >= 3
        assert r["graph_count"] >= 1
        assert r["reference_dtype"] == "float64" and r["accuracy_multiplier"] == 3.0
        assert r["accuracy_ok"] is True and r["correct"] is True, r["accuracy"]
        groups = r["accuracy"]["groups"]
        assert groups["loss"]["tensors"] == 3  # the loss of steps 1..3
        assert groups["parameters"]["tensors"] == 4  # two Linear layers: weight, bias
        assert groups["parameters"]["method"] == "whole model"
        assert groups["gradients"]["tensors"] == 4 and groups["gradients"]["ok"]
        assert r["accuracy"]["steps"] == 3 and r["accuracy"]["torch_same"] is True
    # bfloat16 autocast: eager is measurably off float64, and the floor is bfloat16's
    assert autocast["eager_error"] > 1e-5 and autocast["accuracy_floor"] == 1e-3
    assert opt["accuracy_floor"] == 1e-5
    # training changed the loss: the float64 losses of step 1 and step 3 differ
    assert opt["accuracy"]["final_loss_fp64"] != pytest.approx(0.0)


def test_a_wrong_compiled_step_fails_the_float64_check_in_training_and_inference():
    wrong = {"model": f"{TRAIN}:wrong_when_compiled"}
    train, infer = _measure(({**wrong, "step": "train"}, "default"), (wrong, "default"))
    for r in (train, infer):
        assert r["reference_dtype"] == "float64"
        assert r["accuracy_ok"] is False and r["correct"] is False
        assert r["compiled_error"] > 3 * r["eager_error"] + r["accuracy_floor"]
    assert not train["accuracy"]["groups"]["loss"]["ok"]


def test_eager_that_differs_between_two_runs_is_reported():
    (r,) = _measure(({"model": f"{TRAIN}:noisy"}, "eager"))
    assert r["eager_deterministic"] is False


@pytest.mark.parametrize(("raw", "field", "message"), [
    ({"step": "fit"}, "step", "step must be one of"),
    ({"variants": ["default+opt"]}, "variants", "needs step 'train'"),
    ({"step": "train", "optimizer": "lamb"}, "optimizer", "optimizer must be one of"),
    ({"step": "train", "optimizer_impl": "turbo"}, "optimizer_impl", "must be one of"),
    ({"step": "train", "autocast": "bfloat16", "dtype": "bfloat16"}, "autocast",
     "set dtype float32"),
    ({"step": "train", "sweep": {"dim": "batch", "values": [2, 4]}}, "sweep",
     "inference only"),
    ({"step": "train", "accuracy_steps": 11}, "accuracy_steps", "must not exceed"),
    ({"accuracy_multiplier": 0.5}, "accuracy_multiplier", "out of range"),
    ({"accuracy_floor": "tiny"}, "accuracy_floor", "must be a number"),
    ({"lr": float("nan")}, "lr", "must be a number"),
    ({"step": "train", "backend": "aot_eager", "variants": ["reduce-overhead+opt"]},
     "variants", "need backend 'inductor'"),
])
def test_bad_training_options_are_refused_with_the_field(raw, field, message):
    with pytest.raises(SpecError) as e:
        normalise({"model": "mlp", **raw})
    assert message in str(e.value) and e.value.field == field


def test_training_spec_defaults_and_variant_order():
    spec = normalise({"model": "mlp", "step": "train",
                      "variants": ["default+opt", "eager+opt", "default"]})
    assert spec["variants"] == ["eager", "eager+opt", "default", "default+opt"]
    assert (spec["optimizer"], spec["optimizer_impl"], spec["autocast"]) == \
        ("adamw", "default", "none")
    assert spec["accuracy_multiplier"] == 3.0 and spec["accuracy_floor"] is None
    assert normalise({"model": "mlp"})["step"] == "inference"


def test_dashboard_form_builds_a_training_spec():
    from dashboard.catalogue import load_catalogue
    from dashboard.spec import RunRequest, build_spec

    model = next(m for m in load_catalogue() if m.name == "mlp")
    req = RunRequest(model="mlp", dims={}, dtype="float32", device="cpu",
                     variants=["default", "default+opt"], step="train", autocast="bfloat16",
                     optimizer="sgd")
    v = build_spec(req, model, ["cpu"], engine_check=normalise)
    assert v.ok, v.errors
    assert v.spec["step"] == "train" and v.spec["variants"][-1] == "default+opt"
    assert (v.spec["optimizer"], v.spec["autocast"]) == ("sgd", "bfloat16")
    req.step = "inference"
    v = build_spec(req, model, ["cpu"], engine_check=normalise)
    assert not v.ok and "step 'train'" in v.errors["variants"]


@pytest.mark.slow
def test_training_run_end_to_end_shows_in_show_and_the_html_report(db_url):
    """A training run through the CLI and the runner into the database, then read back as the
    dashboard reads it: accuracy figures from the result's extra, the step in show and report."""
    p = run_cli("run", "--model", "gpt_decoder", "--dim", "batch=2", "--dim", "seq=8",
                "--dim", "layers=1", "--dim", "hidden=32", "--dim", "heads=2",
                "--dim", "vocab=64", "--step", "train", "--variants", "eager,default,default+opt",
                "--backend", "aot_eager", "--no-warm-cache", *FAST, "--json", db_url=db_url,
                timeout=600)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    run_id = int(p.stdout.strip().splitlines()[-1])
    from dashboard import report
    from dashboard.verdict import verdict_for_run
    from storage import open_database, queries

    d = queries.load_runs(open_database(db_url), [run_id])
    v = d["variants"].set_index("variant")
    assert list(v.index) == ["eager", "default", "default+opt"]
    assert (v["status"] == "ok").all(), v["error"].tolist()
    assert (v.loc[["default", "default+opt"], "reference_dtype"] == "float64").all()
    assert v.loc["default+opt", "accuracy_ok"] == True  # noqa: E712 (numpy bool)
    assert v.loc["default", "speedup"] > 0
    # torch.optim's own graph_break() in the compiled optimizer step is counted and named
    gb = d["graph_breaks"]
    opt_breaks = gb[gb["variant"] == "default+opt"]
    assert v.loc["default+opt", "graph_break_count"] >= 1
    assert opt_breaks["reason"].str.contains("compiled optimizer step", regex=False).any()
    assert not gb[gb["variant"] == "default"]["reason"].str.contains("optimizer").any()
    shown = run_cli("show", str(run_id), db_url=db_url).stdout
    assert "step: train" in shown and "err vs fp64" in shown
    page = report.build_report(d["runs"], d["variants"], [], [verdict_for_run(d["variants"],
                                                                              run_id)])
    assert "step: train (forward, loss, backward, adamw" in page


@pytest.mark.slow
def test_training_step_with_a_real_inductor_compile():
    (r,) = _measure(({"model": "mlp", "dims": {"batch": 4, "hidden": 16}, "step": "train",
                      "backend": "inductor", "variants": ["default+opt"]}, "default+opt"),
                    timeout=600)
    assert r["accuracy_ok"] is True and r["reference_dtype"] == "float64"
    assert r["first_call_cold_s"] > 1.0  # inductor compiled forward, backward and optimizer


def test_run_title_says_training_step_with_optimizer_and_autocast():
    import pandas as pd

    from dashboard.widgets import run_title

    r = pd.Series({"run_id": 32, "status": "done", "model": "bert_base",
                   "dims_label": "batch=8", "dtype": "float32", "device": "cuda",
                   "gpu": "NVIDIA H200",
                   "spec": {"step": "train", "optimizer": "adamw", "autocast": "bfloat16"}})
    # markdown-escaped, as every user text on a page (dashboard/safe.py)
    assert run_title(r).endswith("· float32 · cuda · NVIDIA H200 · training step \\(adamw, "
                                 "bfloat16 autocast\\)")
    r["spec"] = {"step": "train", "optimizer": "sgd", "autocast": "none"}
    assert run_title(r).endswith("· training step \\(sgd\\)")
    r["spec"] = {"step": "inference"}
    assert run_title(r).endswith("· NVIDIA H200")


def test_a_break_counted_without_a_reason_is_never_shown_as_no_breaks():
    import pandas as pd

    from dashboard import tables

    variants = pd.DataFrame({"run_id": [33, 33], "variant": ["eager", "default+opt"],
                             "graph_break_count": [0, 1]})
    text = tables.breaks_without_reason(variants, pd.DataFrame(
        columns=["run_id", "variant", "reason", "file", "line", "count"]))
    assert "#33 default+opt: 1" in text and "without a recorded reason" in text
    named = pd.DataFrame({"run_id": [33], "variant": ["default+opt"], "reason": ["x"],
                          "file": [None], "line": [None], "count": [1]})
    assert tables.breaks_without_reason(variants, named) == ""
