"""An imported bundle's specs go through the one validator (engine.spec.normalise, stored=True),
its runs' columns must agree with them, and the figures kept in ``extra`` are checked by their
kind; one bad run refuses the whole bundle (nothing stored).  Found by an attacker's pass:
``python -m engine import`` stored negative warm-up counts, unknown dtypes, shell characters in
model names and absurd dims as they came."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from engine.cli.main import main
from storage import import_bundle_result, open_database, queries
from storage.bundle import BundleError

BUNDLE = json.loads((Path(__file__).parent.parent / "data" / "h200_bundle.json").read_text())


def _bundle_with(change) -> dict:
    """Two mlp runs of the shipped bundle; ``change(run)`` edits a copy of the second."""
    bundle = {**BUNDLE, "runs": copy.deepcopy([BUNDLE["runs"][0], BUNDLE["runs"][4]])}
    change(bundle["runs"][1])
    return bundle


def _spec(**values):
    def change(run):
        run["spec"].update(values)
        if "model" in values:
            run["model"] = values["model"]
    return change


def _set(key, value):
    def change(run):
        run[key] = value
    return change


def _extra(path, value):
    def change(run):
        variant = next(v for v in run["variants"] if v["variant"] != "eager")
        holder = variant.setdefault("extra", {})
        *parents, leaf = path.split(".")
        for p in parents:
            holder = holder.setdefault(p, {})
        holder[leaf] = value
    return change


CASES = [
    ("warmup-negative", _spec(warmup_calls=-1), "runs[1].spec.warmup_calls", "out of range"),
    ("compile-slots-huge", _spec(compile_slots=10**6), "runs[1].spec.compile_slots",
     "out of range"),
    ("compile-slots-text", _spec(compile_slots="all"), "runs[1].spec.compile_slots",
     "whole number"),
    ("dtype-unknown", _spec(dtype="float64"), "runs[1].spec.dtype", "not supported"),
    ("model-shell", _spec(model="mlp; rm -rf ~"), "runs[1].spec.model", "not a model name"),
    ("ref-shell", _spec(model="$(reboot).py:f"), "runs[1].spec.model", "reference"),
    ("plugin-traversal", _spec(model="plugin:../../etc/passwd"), "runs[1].spec.model",
     "not a model name"),
    ("dims-huge", _spec(dims={"batch": 32, "hidden": 10**12}), "runs[1].spec.dims",
     "out of range"),
    ("dims-negative", _spec(dims={"batch": -4, "hidden": 64}), "runs[1].spec.dims", "> 0"),
    ("variant-unknown", _spec(variants=["eager", "rm"]), "runs[1].spec.variants",
     "unknown variant"),
    ("train-option-on-inference", _spec(lr=3.0), "runs[1].spec.lr", "training steps only"),
    ("unknown-option", _spec(shell="ls"), "runs[1].spec", "unknown option"),
    ("column-dims-huge", _set("dims", {"batch": 32, "hidden": 10**12}), "runs[1].dims.hidden",
     "differs from the spec"),
    ("column-dtype", _set("dtype", "float64"), "runs[1].dtype", "differs from the spec"),
    ("extra-float-text", _extra("eager_error", "tiny"), "extra.eager_error", "expected a number"),
    ("extra-bool-number", _extra("accuracy_ok", 1), "extra.accuracy_ok", "true/false"),
    ("extra-stats-list", _extra("stats.speedup_spread", [1, 2]), "extra.stats.speedup_spread",
     "expected a number"),
    ("extra-duration-negative", _extra("stats.eager_first_call_ms", -5.0),
     "extra.stats.eager_first_call_ms", "negative"),
]


@pytest.mark.parametrize("change,where,why", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_run_refuses_the_whole_bundle(tmp_path, change, where, why):
    db = open_database(f"sqlite:///{tmp_path / 'lab.db'}")
    try:
        with pytest.raises(BundleError) as e:
            import_bundle_result(db, _bundle_with(change))
        assert where in str(e.value) and why in str(e.value), str(e.value)
        assert "\n" not in str(e.value)
        assert queries.list_runs(db).empty  # run 0 was fine: not stored either
    finally:
        db.dispose()


def test_the_shipped_bundle_and_models_not_on_this_machine_still_import(tmp_path):
    """A plugin of another host, a file reference its CLI user typed and a catalogue model of a
    newer Compile Lab are accepted by form (never looked up or imported); their dims are still
    range-checked."""
    def elsewhere(model, dims):
        def change(run):
            run["model"] = run["spec"]["model"] = model
            run["spec"]["dims"] = run["dims"] = dims
            run["spec"]["sweep"] = None
        return change

    db = open_database(f"sqlite:///{tmp_path / 'lab.db'}")
    try:
        assert len(import_bundle_result(db, BUNDLE).new_ids) == len(BUNDLE["runs"])
        for model in ("plugin:their_net", str(tmp_path / "not_here.py") + ":build",
                      "somepkg.models:build", "future_net"):
            bundle = _bundle_with(elsewhere(model, {"n": 4, "width": 0}))
            bundle["runs"] = bundle["runs"][1:]
            assert len(import_bundle_result(db, bundle).new_ids) == 1, model
            with pytest.raises(BundleError, match="out of range"):
                import_bundle_result(db, _bundle_with(elsewhere(model, {"n": 10**9})))
    finally:
        db.dispose()


def test_cli_import_of_a_bad_bundle_names_the_run_and_field_and_stores_nothing(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_bundle_with(_spec(warmup_calls=-1))))
    assert main(["import", str(path), "--db", url]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert "bundle.runs[1].spec.warmup_calls" in out.err and "nothing was imported" in out.err
    db = open_database(url)
    try:
        assert queries.list_runs(db).empty
    finally:
        db.dispose()


def test_stored_spec_of_a_registry_model_whose_library_is_missing_here(monkeypatch):
    """A bundle from the GPU host names hf:llama; this machine has no transformers: the spec is
    checked against the registry's own dims, and still refused when its name is not a name."""
    from engine.models import registries
    from engine.spec import SpecError, normalise

    monkeypatch.setattr(registries.Registry, "available", lambda self: False)
    with pytest.raises(SpecError, match="needs the package"):
        normalise({"model": "hf:llama"})  # a new run here: refused, as before
    spec = normalise({"model": "hf:llama", "dims": {"layers": 2}}, stored=True)
    assert spec["dims"]["layers"] == 2 and spec["dims"]["seq"] == 128
    with pytest.raises(SpecError, match="out of range"):
        normalise({"model": "hf:llama", "dims": {"layers": 10**6}}, stored=True)
    with pytest.raises(SpecError, match="not a model name"):
        normalise({"model": "hf:llama;id"}, stored=True)
