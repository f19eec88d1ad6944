"""Whether one variant's speedup repeats between two runs of one configuration.

The pair test: ``|S_a - S_b| <= 1.5 * sqrt(h_a^2 + h_b^2)`` (``h``: an interval's half-width).
Two honest 95 % intervals of the same quantity fail it rarely (their difference's own 95 %
half-width is about ``sqrt(h_a^2 + h_b^2)``; 1.5 times that leaves room for asymmetric
intervals). A failing pair means the runs differ by more than either run's interval holds: each
interval covers the spread among its own processes, not what differs between runs.
Pure Python: the acceptance scripts, the compare page and the report read it alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from contract.fmt import positive

SPREAD = 1.5


def _interval(row: Mapping[str, Any]) -> tuple[float, float] | None:
    s, lo, hi = (positive(row.get(k)) for k in ("speedup", "speedup_ci_low", "speedup_ci_high"))
    if s is None or lo is None or hi is None or not lo <= s <= hi:
        return None  # a hand-edited or broken row: no verdict from it
    return s, (hi - lo) / 2


def figure(row: Mapping[str, Any]) -> str:
    """``3.21× ±0.5 %``: the speedup to three significant digits (0.696× and 0.702×, which two
    decimals print alike) and its interval's relative half-width; "–" without a usable one."""
    got = _interval(row)
    return "–" if got is None else f"{got[0]:.3g}× ±{100 * got[1] / got[0]:.1f} %"


def pair_gap(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[float, float] | None:
    """``(|S_a - S_b|, 1.5 * sqrt(h_a^2 + h_b^2))`` for two variant rows, or None when either
    has no usable speedup and interval."""
    ia, ib = _interval(a), _interval(b)
    if ia is None or ib is None:
        return None
    return abs(ia[0] - ib[0]), SPREAD * math.hypot(ia[1], ib[1])


def apart(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when the two rows' speedups differ by more than their intervals allow."""
    gap = pair_gap(a, b)
    return gap is not None and gap[0] > gap[1]


def _apart(x: float, y: float) -> float:
    """How far apart two positive figures are, the larger over the smaller less one: the same
    whichever run comes first, and the same as the compare page's "N % more"."""
    return max(x, y) / min(x, y) - 1


KERNELS_MOVED = 0.02  # compiled device time this far apart between the runs ...
EAGER_HELD = 1 / 3  # ... while eager's moved at most this share of that


def _moved_while_held(a: Mapping[str, Any], b: Mapping[str, Any], moving: str, holding: str
                      ) -> tuple[float, float, float, float, float, float] | None:
    """``(moved, held, m_a, m_b, h_a, h_b)`` where figure ``moving`` moved 2 % or more between
    the two rows while ``holding`` moved at most a third of that; None otherwise or where a
    figure is missing."""
    ma, mb = (positive(r.get(moving)) for r in (a, b))
    ha, hb = (positive(r.get(holding)) for r in (a, b))
    if ma is None or mb is None or ha is None or hb is None:
        return None
    moved, held = _apart(ma, mb), _apart(ha, hb)
    if not (math.isfinite(moved) and math.isfinite(held)) or moved < KERNELS_MOVED \
            or held > EAGER_HELD * moved:
        return None
    return moved, held, ma, mb, ha, hb


def kernels_moved(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Where two runs' stored device times say why one variant's speedups differ: the compiled
    kernels' device time per call moved while eager's held, i.e. the runs' compiles chose other
    kernels (inductor autotunes some at the first call; docs/METHOD.md §5). None when the
    figures are missing or do not show that."""
    got = _moved_while_held(a, b, "device_busy_ms_per_call", "eager_device_busy_ms_per_call")
    if got is None:
        return None
    moved, held, da, db, _, _ = got
    return (f"its kernels took {da:.3g} and {db:.3g} ms of device time per call, "
            f"{100 * moved:.1f} % apart, while eager's held within {100 * held:.1f} %: "
            "the runs' compiles chose other kernels")


def eager_moved(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Where two runs' rows say the speedup moved because eager did: the run's eager per call
    (``eager_median_ms``) moved while the compiled call (``median_ms``) held, which a
    launch-bound eager does with the host's speed between runs (docs/METHOD.md §2). None when
    the figures are missing or do not show that."""
    got = _moved_while_held(a, b, "eager_median_ms", "median_ms")
    if got is None:
        return None
    moved, held, ea, eb, ca, cb = got
    return (f"eager took {ea:.4g} and {eb:.4g} ms per call, {100 * moved:.1f} % apart, while "
            f"the compiled call held within {100 * held:.1f} % ({ca:.4g} and {cb:.4g} ms): "
            "eager moved, as a launch-bound eager does with the host's speed, not the "
            "compiled code")


HOST_MOVED = 0.05  # the host probe's module call this far apart between the two rows


def _module_call_us(row: Mapping[str, Any]) -> float | None:
    probe = row.get("host_probe")
    return positive(probe.get("module_call_us")) if isinstance(probe, Mapping) else None


def host_moved(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Where the two rows' host probes (engine/measure/host_probe.py: one ``nn.Module`` call on
    the timing core, the median over the variant's processes) read 5 % or more apart: the
    measured host speed a launch-bound call follows. None when either probe is missing or
    they agree."""
    ua, ub = _module_call_us(a), _module_call_us(b)
    if ua is None or ub is None or not HOST_MOVED <= _apart(ua, ub) < 1e3:
        return None  # a thousandfold apart is not a probe of the host
    return (f"the host probe read a module call at {ua:.3g} and {ub:.3g} µs, "
            f"{100 * _apart(ua, ub):.0f} % apart: the runs timed on a host of another speed")


def cause(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """What the stored figures support on why two runs' speedups differ: the compiled kernels
    moved (``kernels_moved``), eager did (``eager_moved``), both (a few % of kernel time
    beside a launch-bound eager's larger move), and whether the host probe read another host
    speed (``host_moved``); None if none of these."""
    said = [s for s in (kernels_moved(a, b), eager_moved(a, b), host_moved(a, b)) if s]
    return "; ".join(said) or None
