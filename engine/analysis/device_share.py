"""Where a compiled variant's gain comes from: the device or the host.

Each measuring process also times one call's device work with the host queued ahead
(engine/measure/device_time.py).  Against eager's, that tells a team whether a compiled
variant's speedup is kernels that run faster (a gain that holds where the GPU is the
bottleneck) or host launch work it saves (a gain that follows the host CPU's speed, so it
reads differently on another host, and would vanish on a host fast enough to keep the GPU
busy).
Pure Python; every figure is read as hostile (``fmt``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contract import fmt

Row = Mapping[str, Any]

SAME = 1.05  # device times within 5 % of eager's: no gain or loss on the device


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _verb(names: list[str]) -> str:
    return "reads" if len(names) == 1 else "read"


def device_line(rows: Iterable[Row]) -> str | None:
    """One verdict sentence on the run's device times against eager's, or None where the run
    took none (off a GPU, an older run)."""
    rows = [r for r in rows if r.get("status", "ok") == "ok"]
    eager = next((fmt.positive(r.get("device_ms_per_call")) for r in rows
                  if r.get("variant") == "eager"), None)
    compiled = [(str(r["variant"]), d, fmt.positive(r.get("speedup"))) for r in rows
                if r.get("variant") != "eager"
                and (d := fmt.positive(r.get("device_ms_per_call"))) is not None]
    if eager is None or not compiled:
        return None
    out = [f"One call's device work with the host queued ahead takes {fmt.ms(eager)} for "
           "eager, " + ", ".join(f"{fmt.ms(d)} for {v}" for v, d, _ in compiled) + "."]
    wins = [(v, d) for v, d, s in compiled if s is not None and s > 1]
    slower = [v for v, d in wins if d > eager * SAME]
    same = [v for v, d in wins if eager / SAME <= d <= eager * SAME]
    device = [(v, eager / d) for v, d, _ in compiled if d < eager / SAME]
    if slower:
        out.append(f"{_join(slower)} {_verb(slower)} faster than eager although "
                   f"{'its kernels take' if len(slower) == 1 else 'their kernels take'} longer "
                   "on the device: the gain is host launch work saved, so it follows the host "
                   "CPU's speed (another host reads another speedup), and on a host fast enough "
                   "to keep the GPU busy eager would be faster at these shapes.")
    if same:
        out.append(f"{_join(same)} {_verb(same)} faster than eager with kernels that take "
                   "about eager's device time: the gain is host launch work saved, so it "
                   "follows the host CPU's speed, and on a host fast enough to keep the GPU "
                   "busy the two would be about even at these shapes.")
    if device:
        out.append(_join([f"{v} ({fmt.ratio(r)})" for v, r in device])
                   + " also run faster on the device itself: that part of the gain holds on "
                     "any host.")
    return " ".join(out)
