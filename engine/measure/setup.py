"""What a measuring process sets up before it times anything: the model and its inputs, built
from the catalogue on the device itself, and the device half of the run's environment
fingerprint (the host half is engine/environment.py, taken by the parent).  Used by the
measuring child (engine/measure/child.py) and by the scripts that time the same model outside it.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch.utils import _pytree as pytree

from engine.models.catalogue import get_model, load_factory

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def build(run: dict[str, Any], dims: dict[str, int], device: str) -> tuple[Any, tuple, Any]:
    """Build (model, inputs, loss_fn or None) from the catalogue, seeded, moved to device and
    dtype. Floating inputs take the run's dtype; integer inputs (token ids) keep theirs."""
    info = get_model(run["model"])
    torch.manual_seed(int(run.get("seed", 0)))
    factory = load_factory(info.factory)
    # Parameters are created on the device itself: initialising a large model's parameters on
    # the CPU and copying them over costs seconds of every process's setup
    # (docs/measurements/2026-12-03-time-to-answer.md). Tensors a factory puts on the CPU
    # explicitly stay there and are moved below.
    with torch.device(device):
        built = factory(**dims)
    if not (isinstance(built, tuple) and len(built) in (2, 3)
            and isinstance(built[0], torch.nn.Module)):
        raise TypeError(f"{run['model']}: factory must return (torch.nn.Module, tuple_of_inputs"
                        "[, loss_fn])")
    model, inputs, loss_fn = (*built, None)[:3]
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    dtype = DTYPES[run["dtype"]]
    model = model.to(device=device, dtype=dtype).eval()

    def move(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return x.to(device=device, dtype=dtype) if x.is_floating_point() else x.to(device)
        return x

    return model, tuple(pytree.tree_map(move, list(inputs))), loss_fn


def environment(device: str) -> dict[str, Any]:
    """The device half of the fingerprint (the runner adds host, OS, CPU, python, commit)."""
    env: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                           # whether the host has a GPU at all, also for CPU runs, so the
                           # dashboard can say "no GPU found" from history alone
                           "cuda_available": torch.cuda.is_available(),
                           "host_gpu_count": torch.cuda.device_count()}
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = None
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, gpu_count=torch.cuda.device_count(),
                   gpu_memory_bytes=int(props.total_memory),
                   gpu_capability=f"{props.major}.{props.minor}",
                   cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"))
        try:
            import subprocess

            env["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
                capture_output=True, text=True, timeout=10,
            ).stdout.strip() or None
        except Exception:
            env["driver"] = None
    else:
        env.update(gpu=None, gpu_count=0, driver=None)
    return env
