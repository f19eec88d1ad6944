"""How far from the hardware: FLOPs and bytes per call against the GPU's measured ceilings.

* FLOPs per call: ``torch.utils.flop_counter.FlopCounterMode`` over one eager call (matmuls,
  convolutions, attention: what it counts; pointwise work is not counted, so a pointwise model
  reads 0 FLOPs and is judged by bandwidth).
* Bytes per call, two counts from a model of the traffic (no profiler reads DRAM traffic; a
  GPU's hardware counters need Nsight Compute, which a measuring process cannot assume), both
  over the same eager call:

  - ``bytes_per_call_estimate``, the **floor**: every parameter, buffer, input and output moved
    once. No variant can move less; a perfectly fused compiled call approaches it.
  - ``bytes_per_call_ops``, **op by op**: every aten operator of the eager call reads each of its
    tensor inputs and writes each of its outputs once (a ``TorchDispatchMode`` sums their
    sizes; views move nothing, a broadcast input counts its stored elements). This is what
    eager's unfused kernels move when nothing stays in cache; a compiled variant that fuses
    moves between the floor and it.

  Inductor's own estimate (``graph.count_bytes``) is not used: torch computes it only while its
  ``inductor_metrics`` log is on, inside the cold compile that the product times.
* Ceilings, measured once per GPU and kept in ``~/.cache/compilelab/ceilings.json`` (keyed by
  GPU name and torch version): a large bf16 matmul (TFLOP/s) and a large device-to-device copy
  (GB/s, read + write), the limits a user's kernels can approach.

Achieved TFLOP/s and GB/s divide the per-call figures by the variant's per-call median.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

CACHE = Path(os.environ.get("COMPILELAB_CEILINGS", Path.home() / ".cache" / "compilelab"
                            / "ceilings.json"))


def _bytes(x: Any) -> int:
    import torch
    from torch.utils import _pytree as pytree

    return sum(t.numel() * t.element_size() for t in pytree.tree_leaves(x)
               if isinstance(t, torch.Tensor))


def stored_bytes(t: Any) -> int:
    """Bytes of the elements a tensor really holds: a broadcast (stride 0) dimension counts
    once, as the kernel reads it from one place."""
    n = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride != 0:
            n *= size
    return n * t.element_size() if t.numel() else 0


def _tensors_bytes(x: Any) -> int:
    import torch
    from torch.utils import _pytree as pytree

    return sum(stored_bytes(t) for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor))


# Operators that allocate without writing (an output the next op writes is counted there).
_ALLOCATING = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")


def _op_traffic_mode() -> Any:
    """A dispatch mode summing, per aten operator, the bytes of its tensor inputs and outputs
    (``bytes``); views and bare allocations count nothing."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpTraffic(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.bytes = 0
            self.ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if not getattr(func, "is_view", False) and name not in _ALLOCATING:
                self.bytes += _tensors_bytes((args, kwargs or {})) + _tensors_bytes(out)
                self.ops += 1
            return out

    return OpTraffic()


def per_call(model: Any, inputs: tuple) -> dict[str, Any]:
    """FLOPs (counted) and bytes (the floor and op by op, module docstring) of one eager call."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad():
        counter = FlopCounterMode(display=False)
        traffic = _op_traffic_mode()
        with counter, traffic:
            out = model(*inputs)
    state = list(model.parameters()) + list(model.buffers())
    moved = _bytes(state) + _bytes(list(inputs)) + _bytes(out)
    return {"flops_per_call": int(counter.get_total_flops()), "bytes_per_call_estimate": moved,
            "bytes_per_call_ops": int(traffic.bytes), "ops_per_call": traffic.ops,
            "bytes_method": BYTES_METHOD}


BYTES_METHOD = ("floor: parameters, buffers, inputs and outputs once; ops: every aten operator "
                "of one eager call reads its inputs and writes its outputs once (a model, not "
                "measured traffic)")


def ceilings(device: str) -> dict[str, Any] | None:
    """The GPU's measured peak bf16 matmul TFLOP/s and copy GB/s (None on CPU)."""
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        return None
    key = f"{torch.cuda.get_device_name(0)} | torch {torch.__version__}"
    try:
        known = json.loads(CACHE.read_text())
    except (OSError, ValueError):
        known = {}
    if isinstance(known.get(key), dict):
        return known[key]
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(2**30, device="cuda", dtype=torch.uint8)  # 1 GiB
    dst = torch.empty_like(src)
    best_mm, best_cp = _best(lambda: a @ b), _best(lambda: dst.copy_(src))
    out = {"peak_tflops_bf16": 2 * n**3 / best_mm / 1e12,
           "peak_copy_gbps": 2 * src.numel() / best_cp / 1e9, "gpu": key}
    a = b = src = dst = None  # free the 3 GiB before the caller goes on
    torch.cuda.empty_cache()
    try:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        known[key] = out
        CACHE.write_text(json.dumps(known, indent=1))
    except OSError:
        pass
    return out


def _best(fn: Any, reps: int = 10) -> float:
    """Fastest of ``reps`` synchronised runs, in seconds (the ceiling: the best the GPU did)."""
    import torch

    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def figures(model: Any, inputs: tuple, median_ms: float | None, device: str) -> dict[str, Any]:
    """The result's ``roofline`` figure; never raises (failure: its ``error``)."""
    try:
        return from_counts(per_call(model, inputs), median_ms, device)
    except Exception as e:
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}


DEFERRED = "counted in the first compiled process (counting imports the compiler)"


def deferred(run: dict[str, Any], variant: str, device: str) -> bool:
    """Whether the eager process leaves its roofline to the runner: when the run has a compiled
    variant, on any device.  ``FlopCounterMode`` imports ``torch._dynamo`` on its first use:
    seconds of the eager process, inside its timing slot, when nothing else may run
    (docs/measurements/2026-12-03-time-to-answer.md), while the compiled variant's process,
    where dynamo is loaded anyway, counts the
    same eager model on the same inputs and measures the GPU's ceilings."""
    return (variant == "eager"
            and any(v != "eager" for v in run.get("variants") or []))


def fill_deferred(eager: dict[str, Any], compiled: dict[str, Any], device: str) -> bool:
    """Give ``eager`` (a result whose roofline was deferred) the counts of ``compiled``'s
    roofline, achieved figures from eager's own per-call median; True when it changed."""
    mine, theirs = eager.get("roofline") or {}, compiled.get("roofline") or {}
    if mine.get("deferred") is None or "flops_per_call" not in theirs:
        return False
    counts = {k: theirs[k] for k in COUNT_KEYS if k in theirs}
    # the ceilings the compiled process measured (the runner never touches the GPU itself)
    peak = ({k: theirs[k] for k in PEAK_KEYS if k in theirs}
            if all(k in theirs for k in PEAK_KEYS[:2]) else None)
    try:
        eager["roofline"] = {**from_counts(counts, eager.get("wall_ms_per_call"), device,
                                           peak=peak or {}),
                             "counted_in": compiled.get("variant")}
    except Exception as e:
        eager["roofline"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    return True


PEAK_KEYS = ("peak_tflops_bf16", "peak_copy_gbps", "gpu")
# what a compiled process counts for eager (fill_deferred); older results lack the last three
COUNT_KEYS = ("flops_per_call", "bytes_per_call_estimate", "bytes_per_call_ops",
              "ops_per_call", "bytes_method")


def from_counts(counts: dict[str, Any], median_ms: float | None, device: str,
                peak: dict[str, Any] | None = None) -> dict[str, Any]:
    """The roofline figure from per-call counts (``per_call``) and a per-call median, against
    ``peak`` (the GPU's ceilings; None: measured here, ``ceilings``; {}: none known)."""
    out: dict[str, Any] = dict(counts)
    ops = out.get("bytes_per_call_ops")
    if median_ms:
        out["achieved_tflops"] = out["flops_per_call"] / (median_ms / 1e3) / 1e12
        out["achieved_gbps_estimate"] = out["bytes_per_call_estimate"] / (median_ms / 1e3) / 1e9
        if ops is not None:
            out["achieved_gbps_ops"] = ops / (median_ms / 1e3) / 1e9
    # no ceilings off the GPU (checked first: the runner calls this without torch imported)
    if peak is None:
        peak = ceilings(device) if str(device).startswith("cuda") else None
    if peak:
        out.update(peak)
        if median_ms:
            out["share_of_peak_tflops"] = out["achieved_tflops"] / peak["peak_tflops_bf16"]
            out["share_of_peak_gbps"] = out["achieved_gbps_estimate"] / peak["peak_copy_gbps"]
            if ops is not None:
                out["share_of_peak_gbps_ops"] = out["achieved_gbps_ops"] / peak["peak_copy_gbps"]
    return out
