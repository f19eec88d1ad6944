"""What this worker can run, as it registers it in the database (storage/workers.py).

The probe runs in a short-lived child process (``python -c``), not in the worker itself: asking
torch for the GPU's name and memory initialises CUDA in the asking process, and the worker must
stay free of CUDA (it starts the measuring processes; each creates its own CUDA context) and
of the GPU memory a context holds. The child imports torch once (a few seconds) when the worker
starts; its answer is what the dashboard's New run page offers: ``cuda`` only where torch sees a
GPU, that GPU's name and memory, and the torch release, so a run can ask for them.

The worker also registers its catalogue (``catalogue_offer``, in ``info["catalogue"]``): the
built-in models whose libraries are installed on its host, the plugins of its own plugin folder,
each with its dims and dtypes, and which registries (timm, torchvision, hf) it can build. The New
run page offers those models, not the dashboard host's (a dashboard on a laptop without
transformers still offers BERT when the GPU worker has it). Read without importing a library or
torch, and without running plugin code (plugin files are read with ``ast``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from typing import Any

from contract.text import one_line
from storage.workers import Capabilities

MAX_OFFERED = 500  # models registered at most (a plugin folder of thousands stays a row)

_PROBE = r"""
import json, torch
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "devices": ["cpu"]}
if torch.cuda.is_available() and torch.cuda.device_count() > 0:
    props = torch.cuda.get_device_properties(0)
    out.update(devices=["cpu", "cuda"], gpu_name=props.name, gpu_count=torch.cuda.device_count(),
               gpu_memory_bytes=int(props.total_memory),
               gpu_capability=f"{props.major}.{props.minor}")
print(json.dumps(out))
"""


def catalogue_offer() -> dict[str, Any]:
    """The models this worker can build: ``{"models": [{name, description, source, dims:
    [{name, default, min, max, help, input_only}], dtypes}], "registries": {prefix: bool}}``."""
    from engine.models import catalogue, registries

    models = [{"name": m.name, "description": one_line(m.description, 300), "source": m.source,
               "dims": [{"name": d.name, "default": d.default, "min": d.min, "max": d.max,
                         "help": one_line(d.help, 200), "input_only": d.input_only}
                        for d in m.dims],
               "dtypes": list(m.dtypes)} for m in catalogue.list_models()[:MAX_OFFERED]]
    return {"models": models,
            "registries": {r.prefix: r.available() for r in registries.REGISTRIES.values()}}


def probe_capabilities(timeout_s: float = 180.0) -> Capabilities:
    """This host's devices as torch sees them (under this process's CUDA_VISIBLE_DEVICES), and
    the models it can build (``catalogue_offer``).

    A probe that fails (torch missing or broken, a hung driver) leaves a CPU-only worker with
    the reason in ``info["probe_error"]``: it still serves CPU runs, and the dashboard shows why
    it offers no GPU."""
    caps = _probe_devices(timeout_s)
    try:
        offer: dict[str, Any] = {"catalogue": catalogue_offer()}
    except Exception as e:  # noqa: BLE001 - the devices still serve; the page says why
        offer = {"catalogue_error": one_line(e, 300)}
    return replace(caps, info={**caps.info, **offer})


def _probe_devices(timeout_s: float) -> Capabilities:
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=timeout_s, stdin=subprocess.DEVNULL)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(one_line(done.stderr.strip().splitlines()[-1:] or
                                        [f"exit code {done.returncode}"], 300))
        found = json.loads(lines[-1])
    except (OSError, subprocess.SubprocessError, RuntimeError, ValueError) as e:
        return Capabilities(devices=("cpu",), info={"probe_error": one_line(e, 300)})
    info = {k: found.get(k) for k in ("cuda", "gpu_capability") if found.get(k)}
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        info["cuda_visible_devices"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return Capabilities(
        devices=tuple(found.get("devices") or ["cpu"]), gpu_name=found.get("gpu_name"),
        gpu_count=int(found.get("gpu_count") or 0),
        gpu_memory_bytes=found.get("gpu_memory_bytes"), torch_version=found.get("torch"),
        info=info)


def describe(caps: Capabilities) -> str:
    """One line for the worker's log: ``cpu, cuda (NVIDIA H200 ×1, 140 GiB), torch 2.11.0``."""
    gpu = ""
    if caps.gpu_name:
        mem = f", {caps.gpu_memory_bytes / 2**30:.0f} GiB" if caps.gpu_memory_bytes else ""
        gpu = f" ({caps.gpu_name} ×{caps.gpu_count}{mem})"
    return f"{', '.join(caps.devices)}{gpu}, torch {caps.torch_version or 'unknown'}"
