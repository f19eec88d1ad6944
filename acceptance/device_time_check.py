"""Check engine/measure/device_time.py on a GPU against what it must read.

    python acceptance/device_time_check.py

Three calls: one large matmul (device-bound: queued-ahead time must match the events around
it, since the host is ahead anyway), a call that synchronises inside (must give no figure, in
three spins), and 200 tiny launches (launch-bound: queued-ahead time must be far below the
per-call time with the device idle first). Prints the figures and what each should read.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine.measure import device_time  # noqa: E402
from engine.measure.timing import Timer  # noqa: E402


def main() -> int:
    if not device_time.available("cuda"):
        print("no CUDA (or no torch.cuda._sleep): nothing to check")
        return 2
    timer = Timer("cuda")
    x = torch.randn(4096, 4096, device="cuda")
    small = torch.zeros(64, device="cuda")
    calls = {
        "matmul 4096 (device-bound)": lambda: x @ x,
        "matmul + .item() (waits inside)": lambda: (x @ x).sum().item(),
        "200 tiny adds (launch-bound)": lambda: [small.add_(1) for _ in range(200)],
    }
    for name, fn in calls.items():
        for _ in range(3):
            fn()
        per_call = sorted(timer.per_call_ms(fn) for _ in range(11))[5]
        t0 = time.perf_counter()
        queued = device_time.queued_ms(fn, per_call)
        took = time.perf_counter() - t0
        shown = "none" if queued is None else f"{queued:.4f} ms"
        print(f"{name}: per call (device idle first) {per_call:.4f} ms, queued ahead {shown}, "
              f"step took {took:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
