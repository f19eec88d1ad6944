"""Why a variant's measuring processes disagree: the likeliest cause, from what was measured.

The verdict's caution on a variant whose processes disagree beyond their own noise
(``processes_disagree``) ends with one of these. Measured causes come first, each about the
process whose speedup stands apart: its eager read far off (the host slowed in its window), its
processes split by kernel draw, or its compiled call ran at another speed while eager held.
Only where none of these fits does it fall back on the likely cause (a busy host, a
launch-bound eager, GPU clocks). Pure Python; every figure is read as hostile (``fmt``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from contract import fmt
from contract.results import process_draws
from engine.analysis.repeat import EAGER_HELD, KERNELS_MOVED
from engine.measure.hostload import BUSY_HOST_CORES

Row = Mapping[str, Any]

LAUNCH_BOUND = 0.5  # eager's device-busy time below half its wall time: launch-bound
OFF_EAGER = 1.25  # a process's paired eager over the median of the others': its host slowed
DEVICE_MOVED = 1.10  # a process's compiled device time this far from the others': kernels moved


def _figures(row: Row, least: int = 3) -> tuple[list[float], list[float]] | None:
    """The row's per-process paired eager (ms) and speedups, ``least`` or more of each and
    every one a finite positive number; None otherwise (an older or hand-edited row)."""
    eager, speeds = row.get("process_eager_ms"), row.get("process_speedups")
    if not isinstance(eager, list) or not isinstance(speeds, list) or len(eager) != len(speeds) \
            or len(eager) < least or not all(fmt.positive(x) for x in eager + speeds):
        return None
    return [float(x) for x in eager], [float(x) for x in speeds]


def _outlier(speeds: list[float]) -> int:
    """The process whose speedup is furthest (in log) from the median of all of them."""
    logs = [math.log(s) for s in speeds]
    middle = statistics.median(logs)
    return max(range(len(logs)), key=lambda i: abs(logs[i] - middle))


def _others(values: list[float], index: int) -> list[float]:
    return sorted(v for i, v in enumerate(values) if i != index)


def off_eager_process(row: Row) -> str | None:
    """The process whose paired eager read far slower than the variant's other processes' (the
    host slowed during its window) when it is also the one whose speedup stands apart, said
    with its figures; None when there is none or the row lacks per-process eager figures
    (``process_eager_ms``, stored since issue 36)."""
    got = _figures(row)
    if got is None:
        return None
    eager, speeds = got
    worst = max(range(len(eager)), key=lambda i: eager[i])
    others = _others(eager, worst)
    if eager[worst] <= OFF_EAGER * statistics.median(others) or worst != _outlier(speeds):
        return None
    return (f"process {worst + 1} of {len(eager)} read eager at {fmt.ms(eager[worst])} per call "
            f"against {fmt.ms(others[0])} to {fmt.ms(others[-1])} in the others (speedup "
            f"{fmt.ratio(speeds[worst])} there{_probes_of(row, worst, len(eager))}): the host "
            "slowed during that process's window, "
            "and a call that launches from the host slows with it more than a CUDA-graph replay "
            "or fused code does; a re-run may read near the other processes' speedups")


_DRAW_WORDS = {"drawn": "the cold compile's own kernel choices",
               "replayed": "the cold compile's kernel choices, replayed",
               "redrawn": "kernel choices it autotuned anew"}


def off_compiled_process(row: Row) -> str | None:
    """The process whose speedup stands apart because its compiled call ran at another speed
    while its eager held (so not the host: something in that process's compiled code), said
    with its figures; None otherwise."""
    got = _figures(row)
    if got is None:
        return None
    eager, speeds = got
    far = _outlier(speeds)
    compiled = [e / s for e, s in zip(eager, speeds, strict=True)]
    mid_c, mid_e = (statistics.median(_others(x, far)) for x in (compiled, eager))
    if max(compiled[far] / mid_c, mid_c / compiled[far]) <= OFF_EAGER \
            or max(eager[far] / mid_e, mid_e / eager[far]) > OFF_EAGER:
        return None
    others_c, others_e = _others(compiled, far), _others(eager, far)
    procs = row.get("processes")
    draw = process_draws(procs)[far] if isinstance(procs, list) and len(procs) == len(eager) \
        else None
    kernels = f"; it ran {_DRAW_WORDS[draw]}" if draw in _DRAW_WORDS else ""
    return (f"process {far + 1} of {len(eager)} read the compiled call at "
            f"{fmt.ms(compiled[far])} per call against {fmt.ms(others_c[0])} to "
            f"{fmt.ms(others_c[-1])} in the others while its eager held ({fmt.ms(eager[far])} "
            f"against {fmt.ms(others_e[0])} to {fmt.ms(others_e[-1])}; speedup "
            f"{fmt.ratio(speeds[far])} there{_probes_of(row, far, len(eager))}{kernels}): "
            f"{_where_it_ran(procs, far, len(eager), compiled[far] > mid_c)}; a re-run may "
            "read near the other processes' speedups")


def device_ms(proc: Any, name: str = "variant") -> float | None:
    """A measuring process's device time per call of ``name`` ("variant" or "eager") with the
    host queued ahead (engine/measure/device_time.py), or None where it holds none."""
    got = proc.get("device_ms") if isinstance(proc, Mapping) else None
    return fmt.positive(got.get(name)) if isinstance(got, Mapping) else None


def _where_it_ran(procs: Any, far: int, count: int, slow: bool) -> str:
    """Whether the process's compiled call was slow on the device or on the host, from its
    device time queued ahead against the others'; without that figure, not the host."""
    dev = [device_ms(p) for p in procs] if isinstance(procs, list) and len(procs) == count \
        else []
    others = sorted(d for i, d in enumerate(dev) if i != far and d is not None)
    if not dev or dev[far] is None or len(others) < 2:
        return "the compiled code itself ran at another speed in that process, not the host"
    span = f"{fmt.ms(dev[far])} against {fmt.ms(others[0])} to {fmt.ms(others[-1])}"
    mid = statistics.median(others)
    if max(dev[far] / mid, mid / dev[far]) > DEVICE_MOVED:
        return (f"its kernels themselves took another time on the device ({span} a call with "
                "the host queued ahead): the kernels that process ran, not the host")
    return (f"its kernels took the same device time as the others' ({span} a call with the "
            "host queued ahead), so the host work of its compiled call (guards, wrapper, "
            f"launches) ran {'slower' if slow else 'faster'} in that process than in the others "
            "while its eager's did not")


def redraw_cause(row: Row) -> str | None:
    """Where the variant's processes moved apart between kernel draws (engine/measure/
    autotune_draw.py): the processes that drew anew read a compiled time per call apart from
    the ones sharing the cold compile's draw, while those and eager held (the rule of
    ``repeat.kernels_moved``), that choice said with the figures; None otherwise."""
    got, procs = _figures(row, least=2), row.get("processes")
    if got is None or not isinstance(procs, list) or len(procs) != len(got[0]):
        return None
    eager, speeds = got
    draws = process_draws(procs)
    compiled = [e / s for e, s in zip(eager, speeds, strict=True)]
    shared = [c for c, d in zip(compiled, draws, strict=True) if d in ("drawn", "replayed")]
    anew = [c for c, d in zip(compiled, draws, strict=True) if d == "redrawn"]
    if not shared or not anew:
        return None
    units = [math.exp(sum(math.log(c) for c in shared) / len(shared)), *anew]  # one per draw
    moved = max(units) / min(units) - 1
    within = max(shared) / min(shared) - 1
    held = max(eager) / min(eager) - 1
    if moved < KERNELS_MOVED or max(held, within) > EAGER_HELD * moved:
        return None
    return (f"{len(anew)} of its {len(procs)} processes autotuned its kernels anew, and its "
            f"kernel draws read {fmt.ms(min(units))} to {fmt.ms(max(units))} per call "
            f"({moved:.1%} apart) while the processes sharing a draw held within {within:.1%} "
            f"and eager within {held:.1%}: the kernel configs a compile draws set its speed, "
            "and the interval includes that spread (docs/METHOD.md §2)")


def probe_pair(proc: Any) -> tuple[float, float] | None:
    """A measuring process's module-call cost (µs) from its host probe before its window and
    after it (engine/measure/child.py), or None where either is missing."""
    if not isinstance(proc, Mapping):
        return None
    calls = [fmt.positive(p.get("module_call_us")) if isinstance(p, Mapping) else None
             for p in (proc.get("host_probe"), proc.get("host_probe_after"))]
    return (calls[0], calls[1]) if calls[0] and calls[1] else None


def _probes_of(row: Row, index: int, count: int) -> str:
    """", its host probe read a module call at A µs before the window and B µs after" for
    process ``index``, when the row's processes line up with its per-process figures."""
    procs = row.get("processes")
    pair = probe_pair(procs[index]) if isinstance(procs, list) and len(procs) == count else None
    if pair is None:
        return ""
    return (f"; its host probe read a module call at {pair[0]:.2f} µs before the window and "
            f"{pair[1]:.2f} µs after")


def disagreement_cause(row: Row) -> str:
    """The likeliest reason a variant's processes disagree, from what was measured."""
    busy = fmt.num(row.get("host_other_busy_cores"))
    if busy is not None and busy >= BUSY_HOST_CORES:
        return (f"the host CPU was busy (other processes kept {busy:.1f} cores busy), and "
                "launch-bound calls follow the host")
    dev = fmt.num(row.get("eager_device_busy_ms_per_call"))
    wall = fmt.num(row.get("paired_eager_median_ms")) or fmt.num(row.get("eager_median_ms"))
    if dev is not None and wall:
        share = dev / wall
        if share < LAUNCH_BOUND:
            return (f"eager is launch-bound: the GPU is busy {fmt.ms(dev)} of eager's "
                    f"{fmt.ms(wall)} per call ({share:.0%}), so eager's time follows the host "
                    "CPU's speed, which drifts between processes and minutes")
        return (f"eager keeps the GPU busy {share:.0%} of its wall time, so the host is not "
                "the likely cause; suspect GPU clocks (power, temperature) or another tenant")
    return ("no profiler figure to tell launch-bound eager from GPU clocks; a busy or "
            "frequency-scaling host CPU is the usual cause")


def cause(row: Row) -> str:
    """``Cause: <measured>.`` or ``Likely cause: <guess from the profile>.``"""
    measured = off_eager_process(row) or redraw_cause(row) or off_compiled_process(row)
    return f"Cause: {measured}." if measured else f"Likely cause: {disagreement_cause(row)}."
