"""Time only while the host launches at its usual speed.

On lent GPU hosts the one core a run times on (engine/measure/placement.py) has episodes, seconds
long, in which it runs slow: the host probe (engine/measure/host_probe.py) read one Python-level
module call at 0.77-0.96 µs in some processes of a run and 1.28-2.10 µs in others, with nothing
of the run beside them (docs/measurements/2026-12-06-eager-drift.md). A launch-bound eager
follows the host while a CUDA-graph replay barely does, so a process timed in a slow episode
reads another speedup, and the run's processes disagree far more than its samples do.

So before its paired rounds a measuring process probes the host and compares the module call
with the fastest any process of the run has read so far (left in the run's work folder,
``COMPILELAB_RUN_DIR``; processes time one after another, never side by side). While it reads
more than ``SLOW`` times that, the process sleeps ``STEP_S`` and probes again, for at most
``PROCESS_WAIT_S`` and while the run has waited less than ``RUN_WAIT_S`` in all, then times
anyway; what it waited and whether the host still read slow go into the process's record, so a
reader sees it. The caps keep a host that stays slow from costing more than a few seconds of
time to answer. Only where timing is pinned (GPU runs): on the CPU device the model itself runs
on every core. ``COMPILELAB_HOST_SETTLE=0`` turns it off.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract.fmt import positive

ENV = "COMPILELAB_HOST_SETTLE"
SLOW = 1.25
STEP_S = 0.25
PROCESS_WAIT_S = 5.0
RUN_WAIT_S = 15.0
_FILE = "host_settle.json"

Probe = Callable[[], dict[str, float]]


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no")


def _shared_path() -> Path | None:
    folder = os.environ.get("COMPILELAB_RUN_DIR")
    return Path(folder) / _FILE if folder else None


def read_shared(path: Path | None) -> tuple[float | None, float]:
    """The run's fastest module call so far (µs, or None) and the seconds its processes waited."""
    if path is None:
        return None, 0.0
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, 0.0
    if not isinstance(found, dict):
        return None, 0.0
    return positive(found.get("fastest_us")), positive(found.get("waited_s")) or 0.0


def write_shared(path: Path | None, fastest_us: float, waited_s: float) -> None:
    if path is None:
        return
    try:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"fastest_us": fastest_us, "waited_s": waited_s}))
        os.replace(tmp, path)
    except OSError:  # the next process starts from its own probe
        pass


def settle(probe: Probe, *, sleep: Callable[[float], None] = time.sleep,
           clock: Callable[[], float] = time.monotonic,
           path: Path | None = None, seen_us: float | None = None
           ) -> tuple[dict[str, float], dict[str, Any]]:
    """Probe until the host reads at its usual speed or the waits run out.

    Returns the last probe (the one recorded beside the timing that follows) and what settling
    did: ``{"reference_us", "waited_s", "probes", "slow"}`` (``slow``: still more than ``SLOW``
    times the reference when timing began). ``seen_us``: the fastest module call this process
    read a moment ago while choosing its core (engine/measure/placement.py ``fastest``), so a
    run whose first processes all timed in a slow episode still knows the host's usual speed."""
    path = path if path is not None else _shared_path()
    fastest, run_waited = read_shared(path)
    if (seen := positive(seen_us)) is not None:
        fastest = seen if fastest is None else min(fastest, seen)
    probes, waited, t0 = 0, 0.0, None
    while True:
        last = probe()
        probes += 1
        now_us = positive(last.get("module_call_us"))
        reference = fastest
        slow = now_us is not None and reference is not None and now_us > SLOW * reference
        t0 = clock() if t0 is None else t0  # waiting starts once the first probe read slow
        waited = clock() - t0
        if (not slow or waited + STEP_S > PROCESS_WAIT_S
                or run_waited + waited + STEP_S > RUN_WAIT_S):
            break
        sleep(STEP_S)
    if now_us is not None:
        fastest = now_us if fastest is None else min(fastest, now_us)
    if fastest is not None:
        write_shared(path, fastest, run_waited + waited)
    return last, {"reference_us": reference, "waited_s": round(waited, 3), "probes": probes,
                  "slow": slow}
