"""The CLI's device check without torch in the CLI (engine/orchestrate/device_check.py) and the server's
preloads chosen by the run's model (engine/orchestrate/forked.py ``wants_libraries``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.measure import device_probe
from engine.orchestrate import forked, preloads

ROOT = Path(__file__).resolve().parents[1]


def test_the_backends_taken_on_trust_are_registered_by_this_torch() -> None:
    import torch._dynamo

    assert set(torch._dynamo.list_backends(exclude_tags=())) >= device_probe.TORCH_BACKENDS


def test_libraries_are_preloaded_unless_the_model_is_a_builtin_needing_none() -> None:
    assert not preloads.wants_libraries("mlp")
    assert preloads.wants_libraries("bert_base")  # requires transformers
    for other in ("hf:bert", "timm:resnet18", "plugin:x", "my_models.py:build", "nosuch"):
        assert preloads.wants_libraries(other)
    assert "engine.orchestrate.preload_libs" not in preloads.preloads(False)
    assert preloads.preloads(True)[-1] == preloads.preloads(False)[-1] == "engine.orchestrate.preload"


def _probe_transformers() -> None:
    os._exit(7 if "transformers" in sys.modules else 0)


def _cli_like() -> None:
    """What ``engine run`` does before enqueueing, in a fresh process: start the server early,
    then validate with the device check. Prints what the caller imported and each verdict."""
    from engine.spec import SpecError, normalise

    forked.start_early(libraries=False)
    out: dict[str, object] = {}
    for name, raw in (("ok", {"model": "mlp"}),
                      ("cuda", {"model": "mlp", "device": "cuda"}),
                      ("backend", {"model": "mlp", "backend": "aot_eager_decomp_partition"}),
                      ("nobackend", {"model": "mlp", "backend": "tvm"})):
        try:
            normalise(raw, check_device=True)
            out[name] = "ok"
        except SpecError as e:
            out[name] = [str(e), e.field]
    proc = forked.context().Process(target=_probe_transformers)
    proc.start()
    proc.join(120)
    out["fork_has_transformers"] = proc.exitcode != 0
    out["caller_imported_torch"] = "torch" in sys.modules
    out["server_clean"] = forked.fork_is_clean()
    print(json.dumps(out))


@pytest.mark.skipif(not preloads.enabled(), reason="fork server is Linux-only")
def test_the_cli_checks_the_device_in_a_fork_and_never_imports_torch() -> None:
    code = ("import sys; sys.path.insert(0, 'tests'); import test_device_check as t; "
            "t._cli_like()")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["caller_imported_torch"] is False
    assert out["ok"] == "ok"
    import torch._dynamo

    if not torch.cuda.is_available():  # the fork's answer comes back with its field
        assert out["cuda"][1] == "device" and "no CUDA GPU is visible" in out["cuda"][0]
    assert out["backend"] == "ok"  # looked up in torch's own list (in the fork)
    if "tvm" not in torch._dynamo.list_backends(exclude_tags=()):
        assert out["nobackend"][1] == "backend" and "unknown backend" in out["nobackend"][0]
    assert out["fork_has_transformers"] is False  # the MLP's server skips the libraries
    assert out["server_clean"] is True  # the probes' dynamo import and device use stayed there


def test_run_starts_the_server_before_importing_storage() -> None:
    """``python -m engine run`` starts the process server first thing: the storage import
    (sqlalchemy, alembic: 0.7-2.9 s on the 2-core host) then overlaps the server's torch import;
    the MLP's server skips the model libraries, a queued run starts none."""
    code = (
        "import runpy, sys; from engine.orchestrate import forked; seen = []\n"
        "forked.start_early = lambda libraries=True: seen.append(("
        "'sqlalchemy' in sys.modules, 'torch' in sys.modules, libraries))\n"
        "sys.argv = ['engine'] + sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_module('engine', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    print(e.code, seen)\n")
    runs = {"run": ["run", "--model", "mlp", "--dim", "nosuch=3", "--db", "sqlite://"],
            "bert": ["run", "--model=bert_base", "--dim", "nosuch=3", "--db", "sqlite://"],
            "queued": ["run", "--model", "mlp", "--queue", "--dim", "nosuch=3", "--db",
                       "sqlite://"]}
    out = {}
    for name, argv in runs.items():
        done = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        out[name] = done.stdout.strip().splitlines()[-1]
        assert "nosuch" in done.stderr, done.stderr  # the bad dim, reported
    assert out["run"] == "2 [(False, False, False), (True, False, False)]", out
    assert out["bert"] == "2 [(False, False, True), (True, False, True)]", out
    assert out["queued"] == "2 []", out


def test_a_gpu_is_checked_without_initialising_cuda(monkeypatch) -> None:
    """bfloat16 from NVML's compute capability; torch's CUDA runtime only where NVML cannot
    say; the device count through torch's NVML path (the variable restored after)."""
    import torch

    seen: list[str | None] = []
    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available",
                        lambda: seen.append(os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"))
                        or True)
    asked: list[bool] = []
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: asked.append(True) or False)
    monkeypatch.setattr(device_probe, "nvml_capability_major", lambda: 9)
    assert device_probe.device_problem("cuda", "bfloat16") is None  # H200: no runtime asked
    assert seen == ["1"] and not asked
    assert "PYTORCH_NVML_BASED_CUDA_CHECK" not in os.environ
    monkeypatch.setattr(device_probe, "nvml_capability_major", lambda: 7)
    assert "cannot run bfloat16" in device_probe.device_problem("cuda", "bfloat16")[0]
    assert asked == [True]  # below 8: torch's own answer decides
    monkeypatch.setattr(device_probe, "nvml_capability_major", lambda: None)
    assert device_probe.device_problem("cuda", "float16") is None  # nothing more to ask
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    message, field = device_probe.device_problem("cuda", "float32")
    assert "no CUDA GPU" in message and field == "device"


def test_nvml_is_not_asked_where_the_gpus_are_renumbered(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert device_probe.nvml_capability_major() is None
