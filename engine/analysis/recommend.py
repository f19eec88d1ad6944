"""Which config to ship for a given number of calls: ``python -m engine recommend``.

Pure Python on a run's variant rows (dicts with the contract's figure names, as
``storage.records.load_run`` gives them), so it works on measured and imported runs alike.

Method
------
A process that serves ``N`` calls pays, per config ``i``::

    T_i(N) = first_i + (N - 1) * per_call_i

``first_i`` is the first call: for a compiled variant its cold-cache first call
(``first_call_cold_s``: compile + one call) or, with ``warm_cache``, its warm-cache first call
(``first_call_warm_s``); for eager its first call after CUDA start-up (the stats block's
``eager_first_call_ms``, which break-even uses too; both sides pay CUDA start-up, so it is left
out of both).  ``per_call_i`` is the run's eager per-call time divided by the variant's paired
speedup (``speedup``: eager and the variant timed in alternating rounds of the same processes),
the statistic the one verdict (engine/analysis/verdict.py) rests on; eager's own ``per_call`` is the
run's eager.  That eager is ``eager_median_ms``, one figure for the whole run
(engine/analysis/variant_stats.py: the geometric mean over every measuring process's eager), so it is
the figure every other surface shows too; for results stored before it was one figure, the
geometric mean of the compiled variants' ``eager_median_ms``.  With one compiled variant this
gives exactly the verdict's break-even (``engine.analysis.stats`` computes it from the same two figures).  A variant
without a speedup keeps its own median.

Candidates are eager and the compiled variants that finished and pass the one accuracy judgement
(``engine.analysis.verdict.accuracy_failure``), and, with a memory budget, whose peak memory fits it
(``engine.analysis.pareto.peak_bytes``: reserved bytes where measured, what the process holds;
else allocated; the same figure as the Pareto view and ``show``'s table).

Intervals: the stats block gives a 95 % interval for each compiled variant's speedup over eager
(paired rounds, several processes), so the per-call time lies in ``[eager / s_high,
eager / s_low]``.  Eager is the reference of those ratios and is taken as a point.  The margin between the winner and the runner-up at ``N`` calls is bounded by interval
arithmetic, ``(first_r - first_b) + (N - 1) * [lo_r - hi_b, hi_r - lo_b]``: conservative (it
treats the two intervals as independent), and it says "within noise" when it spans 0.

Where the answer changes: the totals are straight lines in ``N``, so the best config as a
function of ``N`` is their lower envelope.  :func:`envelope` walks it from ``N = 1``: the current
best holds until the first ``N`` where a config with a smaller per-call time becomes strictly
cheaper, ``N = floor((first_j - first_cur) / (per_cur - per_j)) + 2``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contract import fmt
from engine.analysis.pareto import peak_bytes, peak_kind
from engine.analysis.verdict import accuracy_failure

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Candidate:
    """One config as the arithmetic sees it (times in seconds)."""

    name: str
    first_s: float
    per_call_s: float
    per_call_low_s: float
    per_call_high_s: float
    peak_bytes: float | None = None

    def total_s(self, calls: int) -> float:
        return self.first_s + (calls - 1) * self.per_call_s


@dataclass
class Recommendation:
    calls: int
    warm_cache: bool
    memory_mib: float | None
    best: Candidate | None
    runner_up: Candidate | None = None
    margin_s: float | None = None
    margin_low_s: float | None = None
    margin_high_s: float | None = None
    changes: list[tuple[int, str]] = field(default_factory=list)
    """The lower envelope: (first call count at which ``name`` is best, name), ascending."""
    candidates: list[Candidate] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def choice(self) -> str | None:
        return self.best.name if self.best else None

    def change_points(self) -> tuple[tuple[int, str] | None, tuple[int, str] | None]:
        """(count below which another config was better, and which), (count from which another
        takes over, and which); None where there is no change on that side."""
        below = above = None
        for i, (start, _name) in enumerate(self.changes):
            nxt = self.changes[i + 1][0] if i + 1 < len(self.changes) else None
            if start <= self.calls and (nxt is None or self.calls < nxt):
                if i > 0:
                    below = (start, self.changes[i - 1][1])
                if nxt is not None:
                    above = (nxt, self.changes[i + 1][1])
        return below, above

    def lines(self) -> list[str]:
        """The report; its first line is ``Recommend: <config>``."""
        cache = "warm" if self.warm_cache else "cold"
        if self.best is None:
            return ["Recommend: none",
                    "No config can be recommended: "
                    + ("; ".join(f"{n}: {r}" for n, r in self.excluded) or "no results")]
        b = self.best
        out = [f"Recommend: {b.name}",
               f"For {self.calls:,} calls per process with a {cache} compile cache"
               + (f" and {self.memory_mib:,.0f} MiB of memory" if self.memory_mib else "")
               + f": {b.name} takes {_dur(b.total_s(self.calls))} in all "
               f"({_first_label(b)} {fmt.seconds(b.first_s)} + {self.calls - 1:,} × "
               f"{fmt.seconds(b.per_call_s)})."]
        if b.name == "eager" and len(self.candidates) > 1:
            out.append("Compiling does not pay off here: no compiled config beats eager over "
                       f"{self.calls:,} calls.")
        r = self.runner_up
        if r is None:
            out.append("Runner-up: none (no other candidate).")
        else:
            out.append(f"Runner-up: {r.name}, {_dur(r.total_s(self.calls))} in all "
                       f"({_first_label(r)} {fmt.seconds(r.first_s)} + per call "
                       f"{fmt.seconds(r.per_call_s)}).")
            lo, hi = self.margin_low_s, self.margin_high_s
            noise = lo is not None and lo <= 0
            out.append(f"Margin: {_dur(self.margin_s)} "
                       f"({_pct(self.margin_s, r.total_s(self.calls))} of the runner-up's total), "
                       f"95% interval {_signed(lo)} to {_signed(hi)}"
                       + (" — within noise: the two are not told apart at this call count."
                          if noise else "."))
        below, above = self.change_points()
        parts = []
        if below:
            parts.append(f"below {below[0]:,} calls {below[1]} is better")
        if above:
            parts.append(f"from {above[0]:,} calls {above[1]} is better")
        out.append("Answer changes: " + ("; ".join(parts) if parts else
                                         f"never: {b.name} is best at every call count") + ".")
        for name, reason in self.excluded:
            out.append(f"Left out: {name} ({reason}).")
        out += [f"Note: {n}" for n in self.notes]
        return out

    def as_text(self) -> str:
        return "\n".join(self.lines())

    def as_dict(self) -> dict[str, Any]:
        below, above = self.change_points()

        def cand(c: Candidate | None) -> dict[str, Any] | None:
            return None if c is None else {
                "name": c.name, "first_s": c.first_s, "per_call_s": c.per_call_s,
                "per_call_low_s": c.per_call_low_s, "per_call_high_s": c.per_call_high_s,
                "peak_bytes": c.peak_bytes, "total_s": c.total_s(self.calls)}

        return {"recommend": self.choice, "calls": self.calls, "warm_cache": self.warm_cache,
                "memory_mib": self.memory_mib, "best": cand(self.best),
                "runner_up": cand(self.runner_up), "margin_s": self.margin_s,
                "margin_low_s": self.margin_low_s, "margin_high_s": self.margin_high_s,
                "changes_below": list(below) if below else None,
                "changes_above": list(above) if above else None,
                "envelope": [list(c) for c in self.changes],
                "candidates": [cand(c) for c in self.candidates],
                "excluded": [list(e) for e in self.excluded], "notes": self.notes}


def _dur(seconds: float | None) -> str:
    """Seconds as a reader takes them in: fmt's ms/s below 1000 s, then ``1,430 s (24 min)``."""
    if seconds is None or abs(seconds) < 1000:
        return fmt.seconds(seconds)
    return f"{seconds:,.0f} s ({seconds / 3600:.1f} h)" if abs(seconds) >= 7200 else \
        f"{seconds:,.0f} s ({seconds / 60:.0f} min)"


def _first_label(c: Candidate) -> str:
    return "first call" if c.name == "eager" else "compile + first call"


def _pct(part: float | None, whole: float) -> str:
    return "–" if part is None or whole <= 0 else f"{part / whole:.1%}"


def _signed(value: float | None) -> str:
    if value is None:
        return "–"
    return ("-" if value < 0 else "") + _dur(abs(value))


def _eager_first_s(rows: list[Row], eager: Row) -> tuple[float, str | None]:
    """Eager's first call after CUDA start-up, as break-even uses it (see the module doc)."""
    for r in rows:
        v = fmt.num(r.get("eager_first_call_ms"))
        if v is not None and r.get("variant") != "eager":
            return v / 1000.0, None
    curve = eager.get("warmup_ms") or []
    if len(curve) > 1 and fmt.is_num(curve[1]):
        return float(curve[1]) / 1000.0, None
    per = fmt.num(eager.get("median_ms"))
    return (per or 0.0) / 1000.0, ("eager's first call was not stored; its per-call median "
                                  "stands in for it")


def paired_eager_ms(rows: Iterable[Row]) -> float | None:
    """Eager's per-call time as the speedups measured it: the geometric mean of the compiled
    variants' paired ``eager_median_ms`` (None when no finished compiled variant has one)."""
    vals = [fmt.num(r.get("eager_median_ms")) for r in rows
            if r.get("variant") != "eager" and r.get("status", "ok") == "ok"]
    vals = [v for v in vals if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def _left_out(r: Row, budget: float | None, memory_mib: float | None,
              unknown_mem: list[str]) -> str | None:
    """Why a variant is not a candidate (did not finish, no measurement, inaccurate, over the
    memory budget), or None; a variant whose memory is unknown is noted in ``unknown_mem``."""
    name = str(r.get("variant"))
    if r.get("status", "ok") != "ok":
        return f"did not finish: {r.get('failure_kind') or r.get('status')}"
    if fmt.num(r.get("median_ms")) is None:
        return "no per-call measurement"
    if name != "eager" and accuracy_failure(r):
        return "fails the accuracy check"
    peak = peak_bytes(r)
    if budget is not None:
        if peak is None:
            unknown_mem.append(name)
        elif peak > budget:
            return (f"peak {peak_kind(r)} memory {fmt.mib(peak)} exceeds the "
                    f"{memory_mib:,.0f} MiB budget")
    return None


def _compiled_first_s(r: Row, warm_cache: bool, notes: list[str]) -> float | None:
    name = str(r.get("variant"))
    first = fmt.num(r.get("first_call_warm_s" if warm_cache else "first_call_cold_s"))
    if first is None and warm_cache:
        first = fmt.num(r.get("first_call_cold_s"))
        if first is not None:
            notes.append(f"{name}: no warm-cache first call was measured; its cold first call "
                         "stands in")
    return first


def _candidate(r: Row, rows: list[Row], eager_ms: float | None, warm_cache: bool,
               notes: list[str]) -> Candidate | None:
    """One variant as a candidate: per-call time on the run's eager (module doc), its interval
    from the speedup's, and its first call; None without a first call."""
    name = str(r.get("variant"))
    per_ms = fmt.num(r.get("median_ms"))
    s = fmt.num(r.get("speedup"))
    s_lo, s_hi = fmt.num(r.get("speedup_ci_low")), fmt.num(r.get("speedup_ci_high"))
    if name == "eager" and eager_ms is not None:
        per_ms = eager_ms  # the run's eager, the speedups' reference (module doc)
    elif eager_ms is not None and s and s > 0:
        per_ms = eager_ms / s  # the paired ratio on the run's eager (module doc)
    per = per_ms / 1000.0
    lo = hi = per
    if name == "eager":
        first, note = _eager_first_s(rows, r)
        if note:
            notes.append(note)
    else:
        first = _compiled_first_s(r, warm_cache, notes)
        if first is None:
            return None
        if s and s_lo and s_hi and s_lo > 0:
            lo, hi = per * s / s_hi, per * s / s_lo
    return Candidate(name, first, per, min(lo, per), max(hi, per), peak_bytes(r))


def candidates(rows: Iterable[Row], *, warm_cache: bool = False,
               memory_mib: float | None = None
               ) -> tuple[list[Candidate], list[tuple[str, str]], list[str]]:
    """(candidates, (left-out name, reason) pairs, notes) from one run's variant rows."""
    rows = list(rows)
    out: list[Candidate] = []
    excluded: list[tuple[str, str]] = []
    notes: list[str] = []
    budget = None if memory_mib is None else float(memory_mib) * 2**20
    eager = next((r for r in rows if r.get("variant") == "eager"
                  and r.get("status", "ok") == "ok"), None)
    unknown_mem: list[str] = []
    eager_ms = paired_eager_ms(rows)
    if eager_ms is None and eager:
        eager_ms = fmt.num(eager.get("median_ms"))
    for r in rows:
        name = str(r.get("variant"))
        reason = _left_out(r, budget, memory_mib, unknown_mem)
        cand = None if reason else _candidate(r, rows, eager_ms, warm_cache, notes)
        if reason or cand is None:
            excluded.append((name, reason or "no first-call (compile) time"))
        else:
            out.append(cand)
    if eager is None:
        notes.append("no eager baseline finished: only compiled configs are compared")
    if unknown_mem:
        notes.append(f"peak memory was not measured for {', '.join(unknown_mem)} (CPU runs "
                     "have none): the memory budget could not be checked for them")
    return out, excluded, notes


def envelope(cands: list[Candidate]) -> list[tuple[int, str]]:
    """The best config as a function of the call count: [(from N, name), ...], from N = 1.

    Ties go to the config with the smaller per-call time (it stays best for longer), then to
    the one listed first (eager comes first in a run)."""
    if not cands:
        return []
    order = {c.name: i for i, c in enumerate(cands)}
    cur = min(cands, key=lambda c: (c.first_s, c.per_call_s, order[c.name]))
    n = 1
    out = [(1, cur.name)]
    while True:
        best_n, nxt = None, None
        for c in cands:
            if c.per_call_s >= cur.per_call_s:
                continue
            # strictly cheaper once (N - 1) * (per_cur - per_c) > first_c - first_cur
            x = (c.first_s - cur.first_s) / (cur.per_call_s - c.per_call_s)
            at = max(n + 1, math.floor(x) + 2) if x >= 0 else n + 1
            key = (at, c.per_call_s, order[c.name])
            if best_n is None or key < best_n:
                best_n, nxt = key, c
        if nxt is None:
            return out
        n, cur = best_n[0], nxt
        out.append((n, cur.name))


def recommend(rows: Iterable[Row], calls: int, *, warm_cache: bool = False,
              memory_mib: float | None = None) -> Recommendation:
    """The config with the least total time for ``calls`` calls per process (module doc)."""
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be a whole number >= 1, got {calls!r}")
    if memory_mib is not None and not (fmt.is_num(memory_mib) and memory_mib > 0):
        raise ValueError(f"memory budget must be a positive number of MiB, got {memory_mib!r}")
    cands, excluded, notes = candidates(rows, warm_cache=warm_cache, memory_mib=memory_mib)
    rec = Recommendation(calls, warm_cache, memory_mib, None, candidates=cands,
                         excluded=excluded, notes=notes)
    if not cands:
        return rec
    order = {c.name: i for i, c in enumerate(cands)}
    rec.changes = envelope(cands)
    # The best is the envelope's at ``calls`` (so the change points and the answer agree on
    # exact ties); the runner-up is the cheapest of the rest.
    name = [n for start, n in rec.changes if start <= calls][-1]
    b = next(c for c in cands if c.name == name)
    rec.best = b
    rest = sorted((c for c in cands if c is not b),
                  key=lambda c: (c.total_s(calls), c.per_call_s, order[c.name]))
    if rest:
        r = rest[0]
        rec.runner_up = r
        k = calls - 1
        rec.margin_s = r.total_s(calls) - b.total_s(calls)
        rec.margin_low_s = (r.first_s - b.first_s) + k * (r.per_call_low_s - b.per_call_high_s)
        rec.margin_high_s = (r.first_s - b.first_s) + k * (r.per_call_high_s - b.per_call_low_s)
    return rec
