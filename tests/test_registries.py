"""Registries by name: ``timm:NAME``, ``torchvision:NAME``, ``hf:ARCH`` (engine/models/registries.py,
engine/models/registry.py): validated by the one validator, listed and searched by the CLI, built
with tiny shapes from config (random weights, no download) and measured by the child.

torchvision from PyPI cannot load its compiled operators beside this project's CPU torch 2.13;
engine/models/compat.py imports it anyway (classification models need none of them). Where even
that fails, the tests that need torchvision (its registry and timm, which imports it) skip and
say why."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.models import registries
from engine.models.catalogue import CatalogueError, get_model, load_factory
from engine.spec import SpecError, is_reference, normalise

ROOT = Path(__file__).resolve().parent.parent
TINY_HF = {"batch": 2, "seq": 8, "layers": 1, "hidden": 32, "heads": 4}


def _need(package: str) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install -r requirements-dev.txt)")


def _need_torchvision() -> None:
    _need("torchvision")
    from engine.models.compat import import_torchvision

    try:
        import_torchvision()
    except Exception as e:  # noqa: BLE001 - the reason is the skip message
        pytest.skip(f"torchvision cannot be imported beside this torch: {e}")


# ---------------------------------------------------------------- validation (no library import)

def test_registry_names_go_through_the_validator_with_dims_filled():
    _need("transformers")
    spec = normalise({"model": "hf:gpt2", "dims": {"layers": 2}})
    assert spec["dims"] == {"batch": 8, "seq": 128, "layers": 2, "hidden": 0, "heads": 0,
                            "new_tokens": 0}
    assert get_model("hf:gpt2").source == "registry"
    # a worker (no user models allowed) runs registry models: they are not file references
    assert not is_reference("timm:resnet18") and not is_reference("hf:llama")
    assert is_reference("mypkg.models:factory")


@pytest.mark.parametrize("raw, words", [
    ({"model": "hf:gpt2", "dims": {"layers": -1}}, "must be > 0"),
    ({"model": "hf:gpt2", "dims": {"hidden": 10 ** 7}}, "out of range"),
    ({"model": "hf:gpt2", "dims": {"vocab": 5}}, "has no dim 'vocab'"),
    ({"model": "hf:not a name"}, "model names are letters"),
    ({"model": "hf:gpt2<script>"}, "model names are letters"),
    ({"model": "torchvision:resnet18", "dims": {"image": 0}}, "must be > 0"),
    ({"model": "llama_decode", "step": "train"}, "use step 'inference'"),
    ({"model": "llama_decode", "dims": {"new_tokens": 1}}, "out of range"),
])
def test_bad_registry_input_gets_one_clear_line(raw, words):
    _need("transformers")
    _need("torchvision")
    with pytest.raises(SpecError) as e:
        normalise(raw)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_missing_library_names_the_package_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "timm" else real(name, *a))
    with pytest.raises(SpecError) as e:
        normalise({"model": "timm:resnet18"})
    assert "pip install timm" in str(e.value)
    listed = {r["prefix"]: r for r in registries.describe()}
    assert listed["timm"]["available"] is False and listed["timm"]["package"] == "timm"


def test_unknown_names_are_caught_before_queuing_with_suggestions():
    _need("transformers")
    with pytest.raises(SpecError, match="hf has no model 'gpt3'.*similar: .*gpt2"):
        normalise({"model": "hf:gpt3"}, check_factory=True)
    with pytest.raises(SpecError, match="divisible by heads"):
        normalise({"model": "hf:llama", "dims": {"hidden": 30, "heads": 4}}, check_factory=True)
    with pytest.raises(SpecError, match="max_position_embeddings"):
        normalise({"model": "hf:bert", "dims": {"seq": 600}}, check_factory=True)


def test_load_factory_of_a_non_registry_reference_is_unchanged():
    with pytest.raises(CatalogueError):
        load_factory("engine.models.mlp:nope")


# ---------------------------------------------------------------- building, tiny shapes

@pytest.mark.parametrize("arch, head", [("bert", "base"), ("gpt2", "causal"),
                                        ("llama", "causal"), ("mistral", "causal"),
                                        ("t5", "seq2seq")])
def test_hf_architectures_build_from_config_with_overridden_dims(arch, head):
    _need("transformers")
    import torch

    from engine.models.registry import arch_figures

    dims = normalise({"model": f"hf:{arch}", "dims": TINY_HF})["dims"]
    model, inputs, *_ = load_factory(f"hf:{arch}")(**dims)
    with torch.no_grad():
        out = model.eval()(*inputs)
    assert out.shape[:2] == (2, 8) and torch.isfinite(out).all()
    figures = arch_figures(model)
    assert (figures["layers"], figures["hidden"], figures["heads"]) == (1, 32, 4)
    assert figures["head"] == head and 0 < figures["parameters"] < 5_000_000
    if arch == "mistral":  # key/value heads keep the config's ratio (8 of 32)
        assert figures["kv_heads"] == 1


def test_hf_dims_of_zero_mean_the_configs_own():
    _need("transformers")
    from engine.models.registry import _hf_config

    config = _hf_config("gpt2", 0, 0, 0, 16)
    assert (config.n_layer, config.n_embd, config.n_head) == (12, 768, 12)
    shrunk = _hf_config("llama", 2, 64, 4, 16)
    assert (shrunk.hidden_size, shrunk.head_dim, shrunk.intermediate_size) == (64, 16, 172)


def test_timm_and_torchvision_models_build_by_name():
    _need_torchvision()
    _need("timm")
    import torch

    vit, (images,), loss = load_factory("timm:vit_tiny_patch16_224")(batch=2, image=32)
    assert images.shape == (2, 3, 32, 32)
    with torch.no_grad():
        assert vit.eval()(images).shape == (2, 1000)
    net, (images,), _ = load_factory("torchvision:resnet18")(batch=2, image=32)
    with torch.no_grad():
        assert net.eval()(images).shape == (2, 1000)
    with pytest.raises(ValueError, match="no classification model"):
        load_factory("torchvision:fasterrcnn_resnet50_fpn")(batch=1, image=32)


@pytest.mark.slow  # an end-to-end run (10-30 s here): the slow tier
def test_cli_lists_registries_and_searches_names():
    _need("transformers")
    p = subprocess.run([sys.executable, "-m", "engine", "models"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "llama_decode" in p.stdout and "hf:ARCH" in p.stdout and "timm:NAME" in p.stdout
    p = subprocess.run([sys.executable, "-m", "engine", "models", "--search", "hf:gpt"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "hf:gpt2" in p.stdout.split(), p.stdout + p.stderr
    assert "mlp " not in p.stdout  # a registry search lists that registry only


# ---------------------------------------------------------------- measured by the child

CHILD = """
import json, sys
from engine.measure.child import Progress, measure
r = measure(json.loads(sys.argv[1]), Progress(None))
print(json.dumps({k: r.get(k) for k in ("status", "error", "arch", "correct", "accuracy_ok",
                                        "samples_ms", "first_call_cold_s", "hf_generate")}))
"""


def _child(model: str, dims: dict[str, int]) -> dict:
    run = normalise({"model": model, "dims": dims, "variants": ["eager", "default"],
                     "backend": "aot_eager", "device": "cpu", "warmup_calls": 3,
                     "min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.2, "pipeline_k": 2,
                     "profile": False, "processes": 1, "warm_cache": False})
    p = subprocess.run([sys.executable, "-c", CHILD,
                        json.dumps({"run": run, "variant": "default", "phase": "cold"})],
                       cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # an end-to-end run (10-30 s here): the slow tier
def test_child_measures_an_hf_model_compiled_and_its_generate_path():
    _need("transformers")
    out = _child("hf:llama", {**TINY_HF, "new_tokens": 4})
    assert out["status"] == "ok", out["error"]
    assert out["correct"] and out["accuracy_ok"] and len(out["samples_ms"]) >= 3
    assert out["arch"]["class"] == "LlamaForCausalLM" and out["arch"]["layers"] == 1
    g = out["hf_generate"]  # transformers generate() with its static cache, eager paired
    assert "error" not in g, g
    assert (g["batch"], g["prompt"], g["new_tokens"]) == (2, 8, 4)
    assert g["ttft_ms"] > 0 and g["per_token_ms"] > 0 and g["eager"]["tokens_per_s"] > 0
    assert g["prefill_compiles"] >= 1 and g["recompiles_per_step"] is False
    assert g["tokens_per_s"] == pytest.approx(2 * 4 / (g["generation_ms"] / 1e3))


def test_generate_path_needs_a_decoder_only_architecture():
    _need("transformers")
    with pytest.raises(SpecError, match="max_position_embeddings"):
        normalise({"model": "hf:bert", "dims": {"seq": 500, "new_tokens": 20}},
                  check_factory=True)  # the cache holds prompt + new tokens
    with pytest.raises(ValueError, match="needs a decoder-only architecture"):
        load_factory("hf:bert")(**{**TINY_HF, "heads": 2, "new_tokens": 3})


@pytest.mark.slow  # 16 s here, mostly importing timm and torchvision in a fresh process
def test_child_measures_a_timm_model_compiled():
    _need_torchvision()
    _need("timm")
    out = _child("timm:test_vit", {"batch": 2, "image": 0})
    assert out["status"] == "ok", out["error"]
    assert out["correct"] and out["arch"]["image"] == 160  # test_vit's own input size
