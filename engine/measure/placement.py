"""Where a measuring process runs on the host's CPUs: every timing window on the same core.

A launch-bound call (BERT-base's eager on a GPU host: hundreds of kernel launches, the GPU idle
most of the time) takes as long as the host thread that launches it.  Probes
(acceptance/eager_drift_probe.py; docs/measurements/2026-12-06-eager-drift.md) found that eager's
per-call median moved far from one timing window to the next when the scheduler placed the
process freely, and little when each window ran on one fixed core: placement, not the compiled
state of the process, was what moved it.  So on a GPU host every measuring process times on one
core, the same for every process of the run (the last of the CPUs the run may use), and keeps off
that core while it prepares and compiles, so that no neighbour's compile (or its compile workers,
which inherit the mask) runs where the timing is.

The timing process then runs one intra-op thread (the child sets it), as torch itself chooses
for a process started on one core (``taskset -c N``): with the default pool of one thread per
core all sharing the one core, calls read far slower (the same file).  A model
that does heavy CPU work inside a GPU run's call reads that work single-threaded.

``COMPILELAB_TIMING_CORE=fastest`` (opt-in): past the time gate the process probes every CPU
it was given and times on the one that reads fastest then, because a lent host's CPUs were seen
at two speeds at once, each flipping within seconds (docs/measurements/2026-12-07-core-choice-h100.md).
Not the default: on a quiet host it widened the intervals, since a run's processes then time on
different CPUs (docs/measurements/2026-12-07-core-choice-ab-h100.md), and on a noisy one it did
not narrow them, since the chosen CPU often turned slow inside the window
(docs/measurements/2026-12-07-noisy-h100.md).

Not on the CPU device: there the model itself runs on the cores (intra-op threads), and one
core would measure another program.  ``COMPILELAB_PIN_TIMING=0`` turns it off; a host with
fewer than ``MIN_CPUS`` usable CPUs is left alone.  No torch import.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

ENV = "COMPILELAB_PIN_TIMING"
MIN_CPUS = 4
CHOICE_ENV = "COMPILELAB_TIMING_CORE"  # "fastest", else the run's core (the docstring says why)


def _allowed() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return set()


def timing_core(device: str, allowed: set[int] | None = None) -> int | None:
    """The core every timing window of the run uses, or None where timing is not pinned."""
    cpus = _allowed() if allowed is None else allowed
    if (not device.startswith("cuda") or len(cpus) < MIN_CPUS
            or os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no")):
        return None
    return max(cpus)


def keep_off(core: int | None) -> None:
    """While preparing and compiling: every allowed CPU but the timing core."""
    if core is None:
        return
    rest = _allowed() - {core}
    if rest:
        os.sched_setaffinity(0, rest)


def pin(core: int | None) -> list[int]:
    """From the timing gate on: the timing core only. Returns the CPUs this process now has."""
    if core is not None:
        os.sched_setaffinity(0, {core})
    return sorted(_allowed())


def choice() -> str:
    """``fastest`` where ``COMPILELAB_TIMING_CORE`` asks for it, else ``last``."""
    return "fastest" if os.environ.get(CHOICE_ENV, "").strip().lower() == "fastest" else "last"


def allowed() -> set[int]:
    """The CPUs this process may use now (empty where that cannot be read): read it before
    ``keep_off`` and ``pin`` narrow it, for ``fastest``."""
    return _allowed()


def fastest(core: int | None, probe: Callable[[], float], cpus: set[int]
            ) -> tuple[int | None, dict[int, float]]:
    """At the time gate, with ``choice() == "fastest"``: pinned to each of ``cpus`` (the CPUs
    the process was given, read before it kept off or pinned) in turn, ``probe()`` (µs, lower
    is faster); returns the fastest core and every core's reading. Where timing is not pinned
    (``core`` None), the choice is off, or no probe reads a number, the run's ``core`` and what
    was read."""
    if core is None or choice() != "fastest":
        return core, {}
    read: dict[int, float] = {}
    for cpu in sorted({c for c in cpus if type(c) is int and 0 <= c < 1 << 16} | {core}):
        try:
            os.sched_setaffinity(0, {cpu})
            got = probe()
            value = float(got) if not isinstance(got, bool) else math.nan
        except Exception:  # noqa: BLE001  a CPU that cannot be probed is not chosen
            continue
        if 0 < value < math.inf:
            read[cpu] = value
    return (min(read, key=read.__getitem__) if read else core), read
