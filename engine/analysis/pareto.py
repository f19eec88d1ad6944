"""Non-dominated configs: which variants of a grid no other variant beats on both axes.

Pure Python (the Pareto chart of ``dashboard/charts_pareto.py`` and the acceptance script's text
table both call it).  Every axis is "less is better": per-call time against cold compile time, or
against peak memory.  A point is dominated when another is no worse on both axes and strictly
better on one; equal points do not dominate each other.  Only correct variants (the one accuracy
judgement, ``engine.analysis.verdict.accuracy_failure``) may be on the front: a fast wrong answer dominates
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contract import fmt
from engine.analysis.verdict import accuracy_failure

# x axes: figure name -> (label, scale to display units)
X_AXES = {"first_call_cold_s": ("cold compile + first call (s)", 1.0),
          # peak_bytes below: the one memory figure of the grid views, show and recommend
          "peak_memory": ("peak reserved memory (MiB)", 1 / 2**20)}


def front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (x, y) point: True when no other point dominates it (both minimised)."""
    out = []
    for i, (x, y) in enumerate(points):
        dominated = any((x2 <= x and y2 <= y) and (x2 < x or y2 < y)
                        for j, (x2, y2) in enumerate(points) if j != i)
        out.append(not dominated)
    return out


def peak_bytes(row: Mapping[str, Any]) -> float | None:
    """The memory figure the Pareto view, ``show``'s table and ``recommend --memory-mib`` all
    use: what the process holds from the device at its peak, the caching allocator's reserved
    bytes (what another process or an out-of-memory error sees; the tensors themselves, the
    allocated bytes, are less), and allocated where reserved was not measured."""
    return fmt.num(row.get("peak_reserved_bytes")) or fmt.num(row.get("peak_allocated_bytes"))


def peak_kind(row: Mapping[str, Any]) -> str:
    """Which bytes ``peak_bytes`` took: "reserved" or "allocated"."""
    return "reserved" if fmt.num(row.get("peak_reserved_bytes")) else "allocated"


def x_value(row: Mapping[str, Any], axis: str) -> float | None:
    """The row's value on a Pareto x axis (``X_AXES``), in display units; eager's compile time
    is its first call after CUDA start-up (as in engine/analysis/recommend.py), else 0."""
    if axis == "peak_memory":
        b = peak_bytes(row)
        return None if b is None else b * X_AXES[axis][1]
    if row.get("variant") == "eager":
        v = fmt.num(row.get("first_call_cold_s"))
        return v if v is not None else 0.0
    return fmt.num(row.get(axis))


def mark(rows: Sequence[Mapping[str, Any]], axis: str) -> list[dict[str, Any]]:
    """[{row, x, y (per-call ms), correct, front}] for the finished rows that have both values;
    ``front`` is judged among the correct ones."""
    pts = []
    for r in rows:
        if r.get("status", "ok") != "ok":
            continue
        x, y = x_value(r, axis), fmt.num(r.get("median_ms"))
        if x is None or y is None:
            continue
        ok = r.get("variant") == "eager" or accuracy_failure(r) is None
        pts.append({"row": r, "x": x, "y": y, "correct": ok, "front": False})
    good = [p for p in pts if p["correct"]]
    for p, f in zip(good, front([(p["x"], p["y"]) for p in good]), strict=True):
        p["front"] = f
    return pts
