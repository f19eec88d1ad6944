"""The host's own speed at launching work, measured in every measuring process.

Two fixed micro-benchmarks, timed on the host clock right before the process's paired rounds,
on the core it times on (engine/measure/placement.py):

* ``launch_us``: one tiny kernel launch (an in-place add on a one-element tensor of the run's
  device), from the host's point of view: ``CALLS`` launches back to back, one synchronise after
  the clock stops, so the figure is what the host pays per launch, not what the device takes;
* ``module_call_us``: one call of an ``nn.Identity`` module, Python's and ``nn.Module``'s own
  overhead per call.

Each is the median of ``REPEATS`` batches.  A launch-bound model's eager time scales with them,
so two runs whose hosts differ here can differ in speedup for that reason alone; compare says
so when they differ by more than 10 % (DESIGN §7: a launch-bound eager follows the host CPU).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

CALLS, REPEATS = 200, 7


def _per_call_us(fn: Callable[[], object], sync: Callable[[], None]) -> float:
    batches = []
    for _ in range(REPEATS):
        sync()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        batches.append((time.perf_counter() - t0) / CALLS * 1e6)
        sync()
    return statistics.median(batches)


def measure(device: str) -> dict[str, float]:
    """``{"launch_us", "module_call_us"}`` on ``device`` (about 5-20 ms)."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    with torch.no_grad():
        x = torch.zeros(1, device=device)
        identity = torch.nn.Identity()
        for _ in range(20):  # the first launches load the kernel and warm the path
            x.add_(1.0)
        return {"launch_us": _per_call_us(lambda: x.add_(1.0), sync),
                "module_call_us": _per_call_us(lambda: identity(x), sync)}
