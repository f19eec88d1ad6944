"""What the CLI's device check asks torch, in a module light enough to run in a fresh fork.

``engine.orchestrate.device_check`` runs these checks in a throwaway fork of the preloaded process server
(which holds torch) and reads the verdict from a file.  The fork imports the module of its
target function; that used to be ``engine.orchestrate.device_check`` itself, which imports ``engine.spec``
and through it ``storage`` and SQLAlchemy: seconds on the path to every run's first measuring
process (docs/measurements/2026-12-04-time-to-answer.md).  So
this module imports nothing of the project and nothing heavy but torch, and says what is wrong
as ``(message, spec field)`` instead of raising the spec's error class.
"""

from __future__ import annotations

import json
import os

TORCH_BACKENDS = frozenset({"inductor", "eager", "aot_eager", "cudagraphs"})
"""Backends torch registers itself: no lookup (which imports ``torch._dynamo``) for these."""

Problem = tuple[str, str]  # (message, the spec field it is about)


def nvml_capability_major() -> int | None:
    """The compute capability's major number of the first visible GPU, asked of NVML (the
    driver's management library: no CUDA initialisation), or None where NVML cannot say or
    the visible GPUs are renumbered (``CUDA_VISIBLE_DEVICES``; NVML numbers them all)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") not in (None, "0"):
        return None
    try:
        import ctypes

        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    if lib.nvmlInit_v2() != 0:
        return None
    try:
        handle, major, minor = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_int()
        if (lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) != 0
                or lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major),
                                                          ctypes.byref(minor)) != 0):
            return None
        return int(major.value)
    finally:
        lib.nvmlShutdown()


def _cuda_available() -> bool:
    """torch's own answer through its NVML device count (no ``cuInit``)."""
    import torch

    before = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        return bool(torch.cuda.is_available())
    finally:
        if before is None:
            del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = before


def device_problem(device: str, dtype: str) -> Problem | None:
    """Is there such a device here, and can it run this dtype?  (imports torch)

    On a GPU the questions go to NVML where it answers (a tenth of ``cuInit``'s time alone, and
    less still against a test tensor's context and cuBLAS handle:
    docs/measurements/2026-12-04-time-to-answer.md).  float32 and
    float16 run on every GPU this torch supports; bfloat16 natively from compute capability 8
    (torch's ``is_bf16_supported`` is asked below that, or where NVML cannot say).  A device
    that still fails ends its variants with the error, each a result.  On the CPU a small
    matmul in the dtype answers."""
    import torch

    if device == "cuda":
        if not _cuda_available():
            return ("device 'cuda' was requested but no CUDA GPU is visible here "
                    "(torch.cuda.is_available() is False); use --device cpu", "device")
        if dtype == "bfloat16":
            major = nvml_capability_major()
            if not (major is not None and major >= 8 or torch.cuda.is_bf16_supported()):
                return "this GPU cannot run bfloat16; use float16 or float32", "dtype"
        return None
    try:
        t = torch.ones(4, 4, device=device, dtype=getattr(torch, dtype))
        (t @ t).sum().item()
    except Exception as e:  # noqa: BLE001 - whatever the device says is the answer
        return f"device {device} cannot run {dtype}: {e}", "dtype"
    return None


def backend_problem(backend: str) -> Problem | None:
    """Is ``backend`` registered with torch.compile here?  (imports ``torch._dynamo``)"""
    import torch._dynamo

    available = torch._dynamo.list_backends(exclude_tags=())
    if backend in available:
        return None
    shown = backend if len(backend) <= 60 and backend.isprintable() else repr(backend[:60])
    return (f"unknown backend {shown!r}; this torch has: "
            f"{', '.join(b for b in available if 'TESTING' not in b)}", "backend")


def problem(backend: str, device: str, dtype: str) -> Problem | None:
    """The first thing wrong with this backend, device and dtype, or None."""
    if backend not in TORCH_BACKENDS and (found := backend_problem(backend)):
        return found
    return device_problem(device, dtype)


def probe(backend: str, device: str, dtype: str, out: str) -> None:
    """Runs in a fork of the server: the checks, then the verdict to ``out``, written whole
    (renamed into place) so the caller can read it as soon as it appears; never returns."""
    try:
        found = problem(backend, device, dtype)
    except Exception as e:  # noqa: BLE001 - any other failure is the device's answer too
        found = f"device {device} cannot run {dtype}: {e}", "dtype"
    verdict = {"error": found[0], "field": found[1]} if found else {}
    with open(out + ".part", "w") as f:
        json.dump(verdict, f)
    os.replace(out + ".part", out)
    os._exit(0)
