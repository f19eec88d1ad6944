"""Plain-language verdict for one run: which variant to ship, and the figures behind it.

Pure text logic over the run's rows of the ``variants`` DataFrame (docs/CONTRACTS.md).
Three questions, answered separately because they have different answers:

- **latency** — one call at a time (per-call median, paired speedup and its 95% CI). A compiled
  variant is recommended only when its CI lies above 1.0; "faster by a hair" is called a tie.
- **throughput** — many calls back to back (pipelined median vs eager's pipelined median).
- **short jobs** — compile cost paid on call 1 against the per-call saving: how many calls until
  compiling pays off (``break_even_calls``), or "never" when compiled is slower per call.

Variants whose output does not match eager within tolerance are never recommended. When compiled
is slower than eager, the verdict says so plainly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from dashboard import fmt
from engine.hostload import BUSY_HOST_CORES

TIE_BAND = 0.03  # pipelined ratios within ±3 % of 1.0 are called a tie (no CI for pipelined)


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

    def lines(self) -> list[tuple[str, str]]:
        """(label, sentence) pairs in reading order; the page and the report render these."""
        out = [("Latency", self.latency), ("Throughput", self.throughput),
               ("Short jobs", self.short_jobs)]
        out += [("Slower than eager", s) for s in self.slower_than_eager]
        out += [("Caution", w) for w in self.warnings]
        return out

    def as_markdown(self) -> str:
        return "\n".join(f"- **{label}:** {text}" for label, text in self.lines())

    def as_text(self) -> str:
        return "\n".join(f"{label}: {text}" for label, text in self.lines())


def _join(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _v(row: pd.Series, key: str) -> float | None:
    return fmt.num(row.get(key)) if key in row.index else None


def busy_host_warning(variants: pd.DataFrame) -> str | None:
    """One caution naming the variants timed while other processes kept the CPU busy."""
    if "host_other_busy_cores" not in variants.columns:
        return None
    busy = [(str(r["variant"]), float(r["host_other_busy_cores"]))
            for _, r in variants.iterrows()
            if fmt.num(r.get("host_other_busy_cores")) is not None
            and r["host_other_busy_cores"] >= BUSY_HOST_CORES]
    if not busy:
        return None
    worst = max(cores for _, cores in busy)
    return (f"{_join([v for v, _ in busy])} {'was' if len(busy) == 1 else 'were'} timed while "
            f"other processes kept up to {worst:.1f} CPU cores busy; launch-bound calls read "
            "slower then. Re-run on a quiet machine before trusting these figures.")


def verdict_for_run(variants: pd.DataFrame, run_id: int | None = None) -> Verdict:
    """Build the verdict for one run from its ``variants`` rows (other runs' rows are ignored)."""
    df = variants
    if run_id is not None and "run_id" in df.columns:
        df = df[df["run_id"] == run_id]
    if df.empty:
        return Verdict(run_id, "No results yet.", "No results yet.", "No results yet.")

    warnings: list[str] = []
    status = df["status"] if "status" in df.columns else pd.Series("ok", index=df.index)
    for _, r in df[status != "ok"].iterrows():
        kind = r.get("failure_kind") or r.get("status")
        warnings.append(f"{r['variant']} did not finish ({kind}); see its error below.")
    ok = df[status == "ok"]
    eager_rows = ok[ok["variant"] == "eager"]
    compiled = ok[ok["variant"] != "eager"]
    if eager_rows.empty:
        msg = "No eager baseline finished, so nothing can be compared against eager."
        return Verdict(run_id, msg, msg, msg, warnings=warnings)
    eager = eager_rows.iloc[0]
    if compiled.empty:
        msg = "Ship eager: no compiled variant finished."
        return Verdict(run_id, msg, msg, msg, warnings=warnings,
                       latency_choice="eager", throughput_choice="eager",
                       short_jobs_choice="eager")

    noisy = [str(r["variant"]) for _, r in ok.iterrows()
             if r.get("noisy") is True or r.get("noisy") == 1]
    if noisy:  # one line for all of them: four identical cautions buried the verdict
        warnings.append(f"{_join(noisy)} measurements are noisy (IQR > 10 % of median); "
                        "re-run on a quiet machine before trusting small differences.")
    busy = busy_host_warning(ok)
    if busy:
        warnings.append(busy)
    eager_own = _v(eager, "median_ms")
    for _, r in compiled.iterrows():
        paired = _v(r, "eager_median_ms")
        if eager_own and paired and max(paired / eager_own, eager_own / paired) > 1.5:
            warnings.append(
                f"eager took {fmt.ms(paired)} per call in {r['variant']}'s process but "
                f"{fmt.ms(eager_own)} in its own: the machine was disturbed while measuring; "
                "compare with care and re-run.")
    candidates = []
    for _, r in compiled.iterrows():
        if r.get("correct") is False or r.get("correct") == 0:
            warnings.append(
                f"{r['variant']} output differs from eager beyond tolerance (max abs error "
                f"{_v(r, 'max_abs_err')}, atol {_v(r, 'atol')}): not recommended.")
            continue
        candidates.append(r)

    slower = []
    for r in candidates:
        s, hi = _v(r, "speedup"), _v(r, "speedup_ci_high")
        if s is not None and s < 1.0 and (hi is None or hi < 1.0):
            slower.append(
                f"{r['variant']} is slower than eager per call: {fmt.ms(_v(r, 'median_ms'))} vs "
                f"{fmt.ms(_eager_ms(r, eager))} ({fmt.ratio(s)}, i.e. "
                f"{(1 / s - 1):.0%} more time per call).")

    latency, lat_choice = _latency(candidates, eager)
    throughput, thr_choice = _throughput(candidates, eager)
    short, short_choice = _short_jobs(candidates, eager)
    return Verdict(run_id, latency, throughput, short, slower, warnings,
                   lat_choice, thr_choice, short_choice)


def _eager_ms(r: pd.Series, eager: pd.Series) -> float | None:
    """Eager per-call median paired with this variant's rounds, else eager's own median."""
    return _v(r, "eager_median_ms") or _v(eager, "median_ms")


def _ci(r: pd.Series) -> str:
    lo, hi = _v(r, "speedup_ci_low"), _v(r, "speedup_ci_high")
    if lo is None or hi is None:
        return ""
    return f", 95% CI {fmt.ratio(lo)}–{fmt.ratio(hi)}"


def _latency(candidates: list[pd.Series], eager: pd.Series) -> tuple[str, str]:
    scored = [r for r in candidates if _v(r, "speedup") is not None]
    if not scored:
        return "Ship eager: no compiled variant has a per-call measurement.", "eager"
    best = max(scored, key=lambda r: _v(r, "speedup"))
    s = _v(best, "speedup")
    lo = _v(best, "speedup_ci_low")
    figures = (f"{fmt.ms(_v(best, 'median_ms'))} per call vs {fmt.ms(_eager_ms(best, eager))} "
               f"eager ({fmt.ratio(s)}{_ci(best)})")
    hi = _v(best, "speedup_ci_high")
    if s < 1.0 and (hi is None or hi < 1.0):
        return ("Ship eager — compiled is slower than eager here: every compiled variant takes "
                f"longer per call. Best compiled is {best['variant']}: {figures}."), "eager"
    if (lo is not None and lo <= 1.0) or s < 1.0:
        return ("Ship eager — no compiled variant is measurably faster per call (the confidence "
                f"interval includes 1.0). Best compiled is {best['variant']}: {figures}."), "eager"
    return f"Ship {best['variant']} — {figures}, {_pct(s)} less time per call.", best["variant"]


def _pct(speedup: float) -> str:
    return f"{1 - 1 / speedup:.0%}"


def _throughput(candidates: list[pd.Series], eager: pd.Series) -> tuple[str, str]:
    rows = []
    for r in candidates:
        p = _v(r, "pipelined_median_ms")
        e = _v(r, "eager_pipelined_median_ms") or _v(eager, "pipelined_median_ms")
        if p and e:
            rows.append((e / p, p, e, r))
    if not rows:
        return "No pipelined measurements; see latency.", "eager"
    ratio, p, e, best = max(rows, key=lambda t: t[0])
    figures = (f"{fmt.ms(p)} per call pipelined vs {fmt.ms(e)} eager pipelined "
               f"({fmt.ratio(ratio)})")
    if ratio < 1.0 - TIE_BAND:
        return ("Ship eager — compiled is slower than eager for back-to-back calls too. "
                f"Best compiled is {best['variant']}: {figures}."), "eager"
    if ratio <= 1.0 + TIE_BAND:
        return (f"Ship eager — {best['variant']} is within {TIE_BAND:.0%} of eager pipelined "
                f"(a tie): {figures}."), "eager"
    return f"Ship {best['variant']} — {figures}.", best["variant"]


def _short_jobs(candidates: list[pd.Series], eager: pd.Series) -> tuple[str, str]:
    eager_first = _v(eager, "first_call_cold_s")
    paying = []
    for r in candidates:
        if not _measurably_faster(r):
            continue
        be = _v(r, "break_even_calls")
        if be is None:
            be = _break_even(r, eager)
        if be is not None:
            paying.append((be, r))
    if not paying:
        return ("Run eager — compile cost is never repaid: no compiled variant is measurably "
                "faster per call, so every call after the first only adds to the compile "
                "time."), "eager"
    be, r = min(paying, key=lambda t: t[0])
    cold, warm = _v(r, "first_call_cold_s"), _v(r, "first_call_warm_s")
    saving = (_eager_ms(r, eager) or 0) - (_v(r, "median_ms") or 0)
    eager_work_s = be * (_eager_ms(r, eager) or 0) / 1000
    text = (f"{r['variant']} pays for its compile after {fmt.calls(be)} "
            f"(≈ {fmt.seconds(eager_work_s)} of eager work): its first call takes "
            f"{fmt.seconds(cold)} with a cold cache")
    if warm is not None:
        text += f" ({fmt.seconds(warm)} with a warm cache"
        if saving > 0:
            warm_be = _n_calls(warm - (eager_first or 0), saving)
            text += f", paying off after {fmt.calls(warm_be)}"
        text += ")"
    text += (f" against {fmt.seconds(eager_first)} for eager, then saves {fmt.ms(saving)} per "
             f"call. For jobs shorter than {fmt.calls(be)}, run eager.")
    return text, r["variant"]


def _measurably_faster(r: pd.Series) -> bool:
    """Speedup above 1.0 and, when a CI is known, its lower end above 1.0 too."""
    s, lo = _v(r, "speedup"), _v(r, "speedup_ci_low")
    return s is not None and s > 1.0 and (lo is None or lo > 1.0)


def _break_even(r: pd.Series, eager: pd.Series) -> float | None:
    first, med = _v(r, "first_call_cold_s"), _v(r, "median_ms")
    e_first, e_med = _v(eager, "first_call_cold_s"), _eager_ms(r, eager)
    if None in (first, med, e_med) or med >= e_med:
        return None
    return _n_calls(first - (e_first or 0), e_med - med)


def _n_calls(extra_s: float, saving_ms: float) -> int:
    """Smallest n with compiled(n) <= eager(n), as engine/stats.py computes break_even_calls."""
    if extra_s <= 0:
        return 1
    return 1 + math.ceil(extra_s * 1000 / saving_ms)
