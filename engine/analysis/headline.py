"""The four headline figures of a set of runs, per compile mode (variant), as PyTorch's compilers
dashboard reports them for its suites:

* **pass rate**: the variant cells that ran, finished ``ok`` and produced a correct output,
  divided by all cells that were asked for (a variant a run asked for but never stored — the run
  died first — counts as not passing);
* **geomean speedup**: geometric mean of ``speedup`` (eager ÷ compiled per-call median) over the
  passing cells;
* **mean compile time**: arithmetic mean of the cold first call (``first_call_cold_s``: compile
  plus one call, empty inductor cache) over the passing cells, in seconds;
* **memory ratio, eager ÷ compiled**: geometric mean over the passing cells of eager's peak allocated
  memory ÷ the variant's (above 1: the compiled model needs less memory).

Inputs are runs as ``storage.records.load_run`` returns them (plain dicts), so this works on an
engine host without pandas.  Pure Python plus math.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

Run = Mapping[str, Any]


@dataclass(frozen=True)
class Headline:
    """The headline figures of one mode over a set of runs (None where nothing to average)."""

    mode: str
    cells: int
    passing: int
    pass_rate: float | None
    geomean_speedup: float | None
    mean_compile_s: float | None
    memory_ratio: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def passes(row: Mapping[str, Any] | None) -> bool:
    """A variant cell passes when it finished ``ok`` and its output was not found incorrect."""
    return bool(row) and row.get("status") == "ok" and row.get("correct") is not False


def memory_ratio(eager: Mapping[str, Any] | None, row: Mapping[str, Any] | None) -> float | None:
    """Eager's peak allocated bytes ÷ the variant's, from the same run (None without both)."""
    e = _num((eager or {}).get("peak_allocated_bytes"))
    c = _num((row or {}).get("peak_allocated_bytes"))
    return e / c if e and c and e > 0 and c > 0 else None


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def cells(run: Run) -> dict[str, Mapping[str, Any] | None]:
    """Each compiled variant the run asked for (spec order) with its stored row, or None."""
    rows = {v.get("variant"): v for v in run.get("variants") or []}
    asked = [v for v in (run.get("spec") or {}).get("variants") or rows if v != "eager"]
    asked += [v for v in rows if v != "eager" and v not in asked]  # stored but not in the spec
    return {v: rows.get(v) for v in asked}


def eager_row(run: Run) -> Mapping[str, Any] | None:
    return next((v for v in run.get("variants") or [] if v.get("variant") == "eager"), None)


@dataclass
class _Acc:
    cells: int = 0
    passing: int = 0
    speedup: list[float] = field(default_factory=list)
    compile_s: list[float] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)


def headline(runs: Iterable[Run]) -> list[Headline]:
    """Headline figures per mode, modes in the order they are first seen."""
    acc: dict[str, _Acc] = {}
    for run in runs:
        eager = eager_row(run)
        for mode, row in cells(run).items():
            a = acc.setdefault(mode, _Acc())
            a.cells += 1
            if row is None or not passes(row):
                continue
            a.passing += 1
            for values, value in ((a.speedup, _num(row.get("speedup"))),
                                  (a.compile_s, _num(row.get("first_call_cold_s"))),
                                  (a.memory, memory_ratio(eager, row))):
                if value is not None:
                    values.append(value)
    return [Headline(mode, a.cells, a.passing, a.passing / a.cells if a.cells else None,
                     _geomean(a.speedup),
                     sum(a.compile_s) / len(a.compile_s) if a.compile_s else None,
                     _geomean(a.memory))
            for mode, a in acc.items()]
