"""The one verdict for a run: which variant to ship, and the figures behind it.

Every place that states a verdict (``engine show``, the dashboard, the HTML report) calls
:func:`decide` on the run's variant rows (dicts with the contract's figure names, as
``storage.queries`` or ``show --json`` give them).  Pure Python, no pandas: the engine host runs it.

Three questions, answered separately because they have different answers:

- **latency**: one call at a time.  The candidate is the *fastest per call* (lowest
  synchronised per-call median) among variants whose output matched eager; it is recommended
  only when its speedup interval lies above 1.0.  Otherwise eager, and when compiled is slower
  the text says so plainly.
- **throughput**: many calls back to back (pipelined medians, paired).
- **short jobs**: the compile cost against the per-call saving: ``break_even_calls`` (cold cache)
  and ``break_even_calls_warm``, both computed once by ``engine.analysis.stats.break_even_calls``.

Cautions name what makes a figure less trustworthy: processes that disagree (with the likely
cause), one measuring process only, noisy series, a busy host, failed variants.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contract import fmt
from contract.schema import RunSpec
from contract.text import defuse_shortcodes
from engine.analysis import device_share, disagreement, stats
from engine.measure import compile_load
from engine.measure.hostload import BUSY_HOST_CORES

TIE_BAND = 0.03  # pipelined ratios within ±3 % of 1.0 are called a tie (also without an interval)
TARGET = RunSpec.defaults()["target_halfwidth"]  # what "narrow enough" means when undecided

Row = Mapping[str, Any]


@dataclass
class Verdict:
    run_id: int | None
    latency: str
    throughput: str
    short_jobs: str
    slower_than_eager: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    latency_choice: str | None = None
    throughput_choice: str | None = None
    short_jobs_choice: str | None = None
    provisional: str | None = None
    """Set while any figure may still move: said first, before the answers."""
    device: str | None = None
    """Where the gains come from: device time against eager's (engine/analysis/device_share.py)."""

    def lines(self) -> list[tuple[str, str]]:
        """(label, sentence) pairs in reading order; every front end renders these."""
        out = [("Provisional", self.provisional)] if self.provisional else []
        out += [("Latency", self.latency), ("Throughput", self.throughput),
                ("Short jobs", self.short_jobs)]
        out += [("Device time", self.device)] if self.device else []
        out += [("Slower than eager", s) for s in self.slower_than_eager]
        out += [("Caution", w) for w in self.warnings]
        return out

    def as_markdown(self) -> str:
        """A Markdown list whose sentences are escaped: only the labels are markup."""
        return "\n".join(f"- **{label}:** {md_escape(text)}" for label, text in self.lines())

    def as_text(self) -> str:
        return "\n".join(f"{label}: {text}" for label, text in self.lines())

    def as_dict(self) -> dict[str, Any]:
        return {"latency": self.latency, "throughput": self.throughput,
                "short_jobs": self.short_jobs, "slower_than_eager": self.slower_than_eager,
                "warnings": self.warnings, "latency_choice": self.latency_choice,
                "throughput_choice": self.throughput_choice,
                "short_jobs_choice": self.short_jobs_choice, "provisional": self.provisional,
                "device": self.device}


# What can open Markdown, HTML, Streamlit icons/emoji (":name:") or LaTeX ("$") mid-sentence;
# "-", "." and "+" only matter at the start of a line, where a verdict sentence never is.
_MD_SPECIAL = set("\\`*_[]#!<>|~$:")


def md_escape(text: str) -> str:
    """Backslash-escape every Markdown/HTML special character, so text renders as itself
    (the escaped ":" stops directives such as ":red[...]"; shortcodes such as ":skull:" match
    after escapes are resolved, so ``defuse_shortcodes`` breaks them)."""
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in defuse_shortcodes(str(text)))


def _join(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _v(row: Row, key: str) -> float | None:
    return fmt.num(row.get(key))


def _true(value: Any) -> bool:
    return value is True or (fmt.is_num(value) and float(value) == 1.0)


def _false(value: Any) -> bool:
    return value is False or (fmt.is_num(value) and float(value) == 0.0)


def busy_host_warning(rows: Iterable[Row]) -> str | None:
    """One caution naming the variants timed while other processes kept the CPU busy."""
    busy = [(str(r["variant"]), float(r["host_other_busy_cores"])) for r in rows
            if _v(r, "host_other_busy_cores") is not None
            and r["host_other_busy_cores"] >= BUSY_HOST_CORES]
    if not busy:
        return None
    worst = max(cores for _, cores in busy)
    return (f"{_join([v for v, _ in busy])} {'was' if len(busy) == 1 else 'were'} timed while "
            f"other processes kept up to {worst:.1f} CPU cores busy; launch-bound calls read "
            "slower then. Re-run on a quiet machine before trusting these figures.")


def compile_host_caution(row: Row) -> str | None:
    """One caution when the host was busy beside a reported compile (engine/measure/compile_load.py):
    its compile time, and so break-even, may read high; None when it was quiet or unknown."""
    load = row.get("compile_load")
    if not isinstance(load, dict):
        return None
    said = [(which, compile_load.caution(load.get(which))) for which in ("cold", "warm")]
    said = [(which, text) for which, text in said if text]
    if not said:
        return None
    return (f"{row['variant']}: during its " + "; during its ".join(
        f"{'cold' if which == 'cold' else 'warm-cache'} compile {text}" for which, text in said)
        + ". Its compile time and break-even may read high; compare them on a quiet host.")


HOST_SPEED_RATIO = 1.3  # host probe's slowest process over its fastest: the host's speed moved


def host_speed_caution(rows: Iterable[Row]) -> str | None:
    """One caution when the host's own speed moved between the run's measuring processes: the
    host probe (engine/measure/host_probe.py) read a Python-level module call at different costs."""
    calls = [float(p["host_probe"]["module_call_us"]) for r in rows
             for p in (r.get("processes") if isinstance(r.get("processes"), list) else [])
             if isinstance(p, Mapping) and isinstance(p.get("host_probe"), Mapping)
             and fmt.is_num(p["host_probe"].get("module_call_us"))
             and float(p["host_probe"]["module_call_us"]) > 0]
    if len(calls) < 2 or max(calls) < HOST_SPEED_RATIO * min(calls):
        return None
    return (f"the host's own speed changed during the run: one Python-level module call cost "
            f"{min(calls):.2f}-{max(calls):.2f} µs across its measuring processes "
            "(engine/measure/host_probe.py). A launch-bound call follows the host, so its figures move "
            "with it; the intervals hold that spread, and a run on a steadier host (or "
            "another time) can read differently.")


ONE_EAGER_TOLERANCE = 0.01  # rows' eager figures this close are one figure (rounding)


def eager_per_row(rows: Iterable[Row]) -> dict[str, float] | None:
    """Each row's eager (eager's own median, each compiled row's ``eager_median_ms``) when they
    differ: a run measured before one eager per run, where every compiled variant kept the
    eager timed in its own processes.  None when the run has one eager figure."""
    figures = {str(r["variant"]): ms for r in rows if r.get("status", "ok") == "ok"
               and (ms := _v(r, "median_ms" if r["variant"] == "eager"
                             else "eager_median_ms") or 0.0) > 0}  # a hand-edited row: no time
    values = list(figures.values())
    if len(values) < 2 or max(values) <= (1 + ONE_EAGER_TOLERANCE) * min(values):
        return None
    return figures


def eager_per_row_caution(rows: Iterable[Row]) -> str | None:
    """Say so where a run's rows compare against different eagers (see ``eager_per_row``)."""
    figures = eager_per_row(rows)
    if figures is None:
        return None
    alone = figures.pop("eager", None)
    listed = ([f"timed alone {fmt.ms(alone)}"] if alone is not None else []) + [
        f"beside {name} {fmt.ms(ms)}" for name, ms in figures.items()]
    return ("Eager differs between rows: this run was measured before Compile Lab timed one "
            "eager per run, so each compiled variant is compared with the eager timed in its "
            f"own processes (eager {', '.join(listed)}). Each speedup is its own row's eager ÷ "
            "its median; figures of different rows, and the eager bar in the charts, do not "
            "divide into it. Re-run to compare every variant with one eager.")


def _cautions(ok: list[Row], compiled: list[Row]) -> list[str]:
    out: list[str] = []
    noisy = [str(r["variant"]) for r in ok if _true(r.get("noisy"))]
    if noisy:  # one line for all of them: four identical cautions buried the verdict
        out.append(f"{_join(noisy)} measurements are noisy (IQR > 10 % of median); "
                   "re-run on a quiet machine before trusting small differences.")
    busy = busy_host_warning(ok)
    if busy:
        out.append(busy)
    speed = host_speed_caution(ok)
    if speed:
        out.append(speed[0].upper() + speed[1:])
    several = eager_per_row_caution(ok)
    if several:
        out.append(several)
    for r in compiled:
        host = compile_host_caution(r)
        if host:
            out.append(host)
        k = _v(r, "n_processes")
        if _true(r.get("processes_disagree")):
            per = ", ".join(fmt.ratio(s) for s in (r.get("process_speedups") or []))
            out.append(f"{r['variant']}: its measuring processes disagree beyond their own "
                       f"noise (speedups {per}); the interval includes that spread. "
                       + disagreement.cause(r))
        elif k == 1 or (k is None and _v(r, "speedup_ci_low") is not None):
            # k is None: a result from before Compile Lab measured several processes
            out.append(f"{r['variant']} was measured in one process: its interval covers noise "
                       "inside that process only, not the drift between processes.")
        if "max-autotune" in str(r["variant"]) and _v(r, "speedup_ci_low") is not None:
            # the warm-cache processes reuse the cold compile's kernel choices, so the
            # interval cannot hold the spread between compiles: identical runs' intervals
            # exclude each other (docs/measurements/2026-12-05-repeatability-h200.md)
            out.append(f"{r['variant']}: its interval covers the kernels this run's autotuning "
                       "chose; another compile may choose others and run at another speed, so "
                       "compare max-autotune across runs, not within one.")
    return out


# The cautions about a run's own figures, in a word each (the Runs page's flags).
NOISY, BUSY_HOST, HOST_SPEED, DISAGREE, PROVISIONAL, EAGER_PER_ROW = (
    "noisy", "busy host", "host speed moved", "processes disagree", "provisional",
    "eager per variant")


def distrust(rows: Iterable[Row]) -> list[str]:
    """The cautions ``decide`` gives about the run's own figures, a word each, by the same
    tests: provisional, noisy, busy host, host speed moved, processes disagree, eager per
    variant.  Reads only ``variant``, ``status``, ``noisy``, ``host_other_busy_cores``,
    ``processes`` (their host probes), ``processes_disagree``, ``provisional``, ``median_ms``
    and ``eager_median_ms`` (storage/trust.py reads just those)."""
    rows = list(rows)
    out = [PROVISIONAL] if provisional_note(rows) else []
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    compiled = [r for r in ok if r["variant"] != "eager"]
    if not compiled or not any(r["variant"] == "eager" for r in ok):
        return out  # decide says no cautions then: nothing is compared
    checks = ((NOISY, any(_true(r.get("noisy")) for r in ok)),
              (BUSY_HOST, busy_host_warning(ok) is not None),
              (HOST_SPEED, host_speed_caution(ok) is not None),
              (DISAGREE, any(_true(r.get("processes_disagree")) for r in compiled)),
              (EAGER_PER_ROW, eager_per_row(ok) is not None))
    return out + [word for word, said in checks if said]


def decide(rows: Iterable[Row], run_id: int | None = None) -> Verdict:
    """The verdict for one run from its variant rows (rows of other runs must be left out)."""
    rows = list(rows)
    if not rows:
        return Verdict(run_id, "No results yet.", "No results yet.", "No results yet.")
    warnings = [f"{r['variant']} did not finish ({r.get('failure_kind') or r.get('status')}); "
                "see its error below." for r in rows if r.get("status", "ok") != "ok"]
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    eager = next((r for r in ok if r["variant"] == "eager"), None)
    compiled = [r for r in ok if r["variant"] != "eager"]
    if eager is None:
        msg = "No eager baseline finished, so nothing can be compared against eager."
        return Verdict(run_id, msg, msg, msg, warnings=warnings)
    if not any(r["variant"] != "eager" and r.get("status") != "cancelled" for r in rows):
        # nothing compiled was measured (a run cancelled or cut short, or eager alone asked
        # for): "Ship eager" would be a recommendation no measurement supports; a compiled
        # variant that failed (crash, OOM, compile error) is such a measurement, one cancelled
        # is not
        msg = "No compiled variant was measured, so there is nothing to compare eager with."
        return Verdict(run_id, msg, msg, msg, warnings=warnings)
    if not compiled:
        msg = "Ship eager: no compiled variant finished."
        return Verdict(run_id, msg, msg, msg, warnings=warnings, latency_choice="eager",
                       throughput_choice="eager", short_jobs_choice="eager")
    warnings += _cautions(ok, compiled)
    candidates = []
    for r in compiled:
        wrong = accuracy_failure(r)
        if wrong:
            warnings.append(wrong)
            continue
        candidates.append(r)
    warnings += accuracy_cautions(ok)
    if not candidates:
        # every compiled variant finished but none may be recommended: say so, with the
        # fastest one's figures, rather than "no measurement"
        best = fastest(compiled)
        figures = "" if best is None else (
            f" The fastest of them, {best['variant']}, took {fmt.ms(_v(best, 'median_ms'))} per "
            f"call vs {fmt.ms(_v(best, 'eager_median_ms'))} eager "
            f"({fmt.ratio(_v(best, 'speedup'))}{_ci(best)}).")
        msg = ("Ship eager — every compiled variant failed the accuracy check (see the "
               "cautions below)." + figures)
        return Verdict(run_id, msg, msg, msg, [], warnings, "eager", "eager", "eager")

    slower = []
    for r in candidates:
        s, hi = _v(r, "speedup"), _v(r, "speedup_ci_high")
        if s is not None and s < 1.0 and (hi is None or hi < 1.0):
            slower.append(
                f"{r['variant']} is slower than eager per call: {fmt.ms(_v(r, 'median_ms'))} vs "
                f"{fmt.ms(_v(r, 'eager_median_ms'))} ({fmt.ratio(s)}, i.e. "
                f"{(1 / s - 1):.0%} more time per call).")
    latency, lat_choice = _latency(candidates)
    throughput, thr_choice = _throughput(candidates)
    short, short_choice = _short_jobs(candidates, eager)
    return Verdict(run_id, latency, throughput, short, slower, warnings,
                   lat_choice, thr_choice, short_choice, provisional_note(ok),
                   device_share.device_line(ok))


def _sci(x: float | None, missing: str = "n/a") -> str:
    return missing if x is None else f"{x:.2e}"


def accuracy_failure(r: Row) -> str | None:
    """Why a compiled variant is not recommended on accuracy, or None when it passed.

    Judged against the float64 reference where the run has one (engine/measure/accuracy.py: compiled's
    error within ``multiplier`` x eager's error + floor); results from before that, or whose
    float64 run failed, fall back to the fixed tolerance against eager they were stored with."""
    if r.get("reference_dtype"):
        if not _false(r.get("accuracy_ok")):
            return None
        detail = r.get("accuracy") if isinstance(r.get("accuracy"), Mapping) else {}
        worst = None
        for name, g in (detail.get("groups") or {}).items():
            if isinstance(g, Mapping) and not g.get("ok", True):
                w = g.get("worst") or {}
                worst = f"{name}: {w.get('tensor')}" if w.get("tensor") else name
                break
        mult, floor = _v(r, "accuracy_multiplier"), _v(r, "accuracy_floor")
        if _v(r, "eager_error") is None:  # stored as null: inf or NaN in eager's own run
            return (f"{r['variant']} could not be judged against the {r['reference_dtype']} "
                    "reference: eager's own error is not a finite number"
                    + (f" (worst: {worst})" if worst else "") + ", so there is nothing to "
                    "allow compiled's against: not recommended.")
        compiled = _sci(_v(r, "compiled_error"), "not a finite number")
        return (f"{r['variant']} fails the {r['reference_dtype']} accuracy check: its error "
                f"against the {r['reference_dtype']} reference is {compiled}"
                f", more than {mult if mult is not None else '?'}x eager's {_sci(_v(r, 'eager_error'))}"
                + (f" + {floor:g} x the reference's size" if floor else "")
                + (f" (worst: {worst})" if worst else "")
                + ": not recommended.")
    if _false(r.get("correct")):
        return (f"{r['variant']} output differs from eager beyond tolerance (max relative "
                f"error {_v(r, 'max_rel_err')}, allowed {_v(r, 'rtol')}): not recommended.")
    return None


def accuracy_cautions(rows: list[Row]) -> list[str]:
    """Eager that is not deterministic; a float64 reference that could not run."""
    out: list[str] = []
    diffs = [(_v(r, "eager_repeat_max_diff"), str(r["variant"])) for r in rows
             if _false(r.get("eager_deterministic"))]
    if diffs:
        worst = max((d for d, _ in diffs if d is not None), default=None)
        out.append("Eager itself is not deterministic here: two identical eager runs differed"
                   + (f" by up to {worst:.2e}" if worst is not None else "") + " (in the "
                   f"process of {_join([v for _, v in diffs])}), so a difference from eager "
                   "alone proves nothing; the float64 check allows for it.")
    missing = [str(r["variant"]) for r in rows if r["variant"] != "eager"
               and not r.get("reference_dtype") and isinstance(r.get("accuracy"), Mapping)
               and r["accuracy"].get("error")]
    if missing:
        out.append(f"{_join(missing)}: the float64 reference could not run "
                   f"({r_error(rows, missing[0])}); accuracy was judged against eager with a "
                   "fixed tolerance instead.")
    return out


def r_error(rows: list[Row], variant: str) -> str:
    r = next(r for r in rows if r["variant"] == variant)
    return str(r["accuracy"].get("error"))[:200]


def fastest(candidates: list[Row]) -> Row | None:
    """The fastest per call: lowest synchronised per-call median among those with a speedup."""
    scored = [r for r in candidates
              if _v(r, "speedup") is not None and _v(r, "median_ms") is not None]
    return min(scored, key=lambda r: _v(r, "median_ms")) if scored else None


def _ci(r: Row) -> str:
    lo, hi = _v(r, "speedup_ci_low"), _v(r, "speedup_ci_high")
    if lo is None or hi is None:
        return ""
    k = _v(r, "n_processes")
    over = f" over {int(k)} processes" if k and k > 1 else ""
    return f", 95% CI {fmt.ratio(lo)}–{fmt.ratio(hi)}{over}"


def _latency(candidates: list[Row]) -> tuple[str, str]:
    best = fastest(candidates)
    if best is None:
        return "Ship eager: no compiled variant has a per-call measurement.", "eager"
    s = _v(best, "speedup")
    lo, hi = _v(best, "speedup_ci_low"), _v(best, "speedup_ci_high")
    figures = (f"{fmt.ms(_v(best, 'median_ms'))} per call vs "
               f"{fmt.ms(_v(best, 'eager_median_ms'))} eager ({fmt.ratio(s)}{_ci(best)})")
    if s < 1.0 and (hi is None or hi < 1.0):
        return ("Ship eager — compiled is slower than eager here: every compiled variant takes "
                f"longer per call. Fastest compiled is {best['variant']}: {figures}."), "eager"
    if (lo is not None and lo <= 1.0) or s < 1.0:
        return ("Ship eager — no compiled variant is measurably faster per call (the confidence "
                f"interval includes 1.0). Fastest compiled is {best['variant']}: {figures}."
                + undecided(best)), "eager"
    return (f"Ship {best['variant']} — {figures}, {1 - 1 / s:.0%} less time per call.",
            str(best["variant"]))


PRACTICAL_MORE = 16  # more processes than this is no advice: the host, not the count, is wrong


def undecided(r: Row) -> str:
    """For an interval that includes 1.0: the largest difference it leaves open, and about what
    would narrow it to the spec's default target (more processes, seconds)."""
    lo, hi = _v(r, "speedup_ci_low"), _v(r, "speedup_ci_high")
    if lo is None or hi is None or lo <= 0:
        return ""
    open_by = max(1.0 / lo - 1.0, hi - 1.0)
    if open_by >= 1.0:
        return (" The interval is too wide to say anything: its processes disagree far beyond "
                "their own noise; re-run on a quiet host.")
    text = f" No difference larger than ±{open_by:.0%} was measurable."
    k = _v(r, "n_processes")
    more = stats.processes_to_target(stats.rel_halfwidth(lo, hi), int(k or 0), TARGET)
    if more and more > PRACTICAL_MORE:
        return text + (f" Narrowing it to ±{TARGET:.0%} would take more than {PRACTICAL_MORE} "
                       "more processes: the processes disagree too much; re-run on a quiet "
                       "host.")
    if more:
        spent = r.get("time_s") if isinstance(r.get("time_s"), Mapping) else {}
        per = sum(v for v in spent.values() if fmt.is_num(v)) / k if k else 0.0
        cost = f" (about {fmt.seconds(more * per)})" if per > 0 else ""
        text += (f" About {more} more measuring process{'es' * (more != 1)}{cost} would narrow "
                 f"it to ±{TARGET:.0%} (--processes / --max-processes).")
    return text


def provisional_note(rows: Iterable[Row]) -> str | None:
    """Said first while any figure may still move (engine/orchestrate/runner.py marks them)."""
    moving = [str(r["variant"]) for r in rows
              if r.get("status", "ok") == "ok" and _true(r.get("provisional"))]
    if not moving:
        return None
    return (f"provisional — {_join(moving)} may still get measuring processes; the figures "
            "below can move until the run ends.")


def _throughput(candidates: list[Row]) -> tuple[str, str]:
    rows = []
    for r in candidates:
        p, e = _v(r, "pipelined_median_ms"), _v(r, "eager_pipelined_median_ms")
        if p and e:
            rows.append((e / p, p, e, r))
    if not rows:
        return "No pipelined measurements; see latency.", "eager"
    ratio, p, e, best = min(rows, key=lambda t: t[1])  # fastest pipelined
    # the interval of the pipelined ratio over processes (engine/analysis/stats.py), where stored;
    # results from before it carry the point estimate only, and say so
    lo, hi = _v(best, "pipelined_ci_low"), _v(best, "pipelined_ci_high")
    k = _v(best, "n_processes")
    over = f" over {int(k)} processes" if k and k > 1 else ""
    ci = (f", 95% CI {fmt.ratio(lo)}–{fmt.ratio(hi)}{over}" if lo is not None and hi is not None
          else "; medians, no interval stored")
    figures = (f"{fmt.ms(p)} per call pipelined vs {fmt.ms(e)} eager pipelined "
               f"({fmt.ratio(ratio)}{ci})")
    if ratio < 1.0 - TIE_BAND and (hi is None or hi < 1.0):
        return ("Ship eager — compiled is slower than eager for back-to-back calls too. "
                f"Fastest compiled is {best['variant']}: {figures}."), "eager"
    if lo is not None and lo <= 1.0 <= (hi if hi is not None else math.inf):
        return ("Ship eager — no compiled variant is measurably faster for back-to-back calls "
                f"(the interval includes 1.0). Fastest compiled is {best['variant']}: "
                f"{figures}."), "eager"
    if ratio <= 1.0 + TIE_BAND:
        return (f"Ship eager — {best['variant']} is within {TIE_BAND:.0%} of eager pipelined "
                f"(a tie): {figures}."), "eager"
    return f"Ship {best['variant']} — {figures}.", str(best["variant"])


def measurably_faster(r: Row) -> bool:
    """Speedup above 1.0 and, when an interval is known, its lower end above 1.0 too."""
    s, lo = _v(r, "speedup"), _v(r, "speedup_ci_low")
    return s is not None and s > 1.0 and (lo is None or lo > 1.0)


def _short_jobs(candidates: list[Row], eager: Row) -> tuple[str, str]:
    paying = [(_v(r, "break_even_calls"), r) for r in candidates
              if measurably_faster(r) and _v(r, "break_even_calls") is not None]
    if not paying:
        return ("Run eager — compile cost is never repaid: no compiled variant is measurably "
                "faster per call, so every call after the first only adds to the compile "
                "time."), "eager"
    be, r = min(paying, key=lambda t: t[0])
    cold, warm = _v(r, "first_call_cold_s"), _v(r, "first_call_warm_s")
    saving = (_v(r, "eager_median_ms") or 0) - (_v(r, "median_ms") or 0)
    eager_work_s = be * (_v(r, "eager_median_ms") or 0) / 1000
    text = (f"{r['variant']} pays for its compile after {fmt.calls(be)} "
            f"(≈ {fmt.seconds(eager_work_s)} of eager work): its first call takes "
            f"{fmt.seconds(cold)} with a cold cache")
    if warm is not None:
        text += f" ({fmt.seconds(warm)} with a warm cache"
        warm_be = _v(r, "break_even_calls_warm")
        if warm_be is not None:
            text += f", paying off after {fmt.calls(warm_be)}"
        text += ")"
    # eager's first call as break-even counted it (after CUDA start-up, which both pay);
    # results from before that figure was stored keep eager's own first call
    eager_first_ms = _v(r, "eager_first_call_ms")
    eager_first = (eager_first_ms / 1000 if eager_first_ms is not None
                   else _v(eager, "first_call_cold_s"))
    text += (f" against {fmt.seconds(eager_first)} for eager, then saves "
             f"{fmt.ms(saving)} per call. For jobs shorter than {fmt.calls(be)}, run eager.")
    return text, str(r["variant"])
