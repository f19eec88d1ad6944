"""Tables of the baseline section and the Review page, as DataFrames (pure: no Streamlit).

Built from engine/analysis/gate.py's ``Change`` rows, so the dashboard shows exactly what
``python -m engine gate`` prints; words for the verdicts come from ``engine.analysis.review``.  Cells
are plain text: the page hands them to ``st.dataframe`` through ``safe.frame`` (formula cells
neutralised), never to Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from engine.analysis.gate import Change, GateReport
from engine.analysis.headline import Headline
from engine.analysis.review import Review, verdict_label

PER_VARIANT = ("speedup", "compile time s", "memory ratio")
FIGURE_WORDS = {"speedup": "speedup (×)", "compile time s": "cold compile (s)",
                "memory ratio": "memory, eager ÷ compiled (×)", "passes": "passes"}
# what a meeting reads first on the left (a wide table scrolls), the run's details after
CHANGE_COLUMNS = ["verdict", "change %", "at one host speed %", "figure", "variant", "compare",
                  "old → new", "config", "p", "runs", "appeared at", "commit", "torch"]


def fmt_value(value: Any, figure: str) -> str:
    """A figure's value as people read it (× for ratios, s for seconds, % for pass rates)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if figure in ("speedup", "memory ratio", "geomean speedup"):
        return f"{value:.3g}×"
    if figure == "pass rate":
        return f"{value:.0%}"
    if figure.endswith(" s"):
        return f"{value:.2f} s"
    return f"{value:.4g}"


def _iv(iv: tuple[float, float] | None) -> str:
    return f" [{iv[0]:.3g}, {iv[1]:.3g}]" if iv else ""


def old_new(c: Change) -> str:
    """``0.56× [0.52, 0.60] → 0.59× [0.55, 0.63]`` (intervals where the figure has them)."""
    return (f"{fmt_value(c.baseline, c.figure)}{_iv(c.baseline_interval)} → "
            f"{fmt_value(c.candidate, c.figure)}{_iv(c.candidate_interval)}")


def change_pct(c: Change) -> str:
    """The shown change, and beside it the one the gate judged where it judged at one host
    speed."""
    if c.ratio is None:
        return "–"
    at_one = host_pct(c)
    return f"{c.ratio - 1:+.1%}" + ("" if at_one is None else f" ({at_one:+.1f}% at one host speed)")


def host_pct(c: Change) -> float | None:
    """The change at one host speed (%), where the gate judged the speedup so
    (engine/analysis/host_adjust.py): the verdict's figure beside the shown one."""
    r = c.host_adjusted_ratio
    return None if not isinstance(r, float) or not math.isfinite(r) else round((r - 1) * 100, 1)


def baseline_table(report: GateReport) -> pd.DataFrame:
    """One row per variant and figure (passes, speedup, compile time, memory ratio): baseline →
    this run, the change and the gate's verdict.  Long, not wide: it fits a laptop screen."""
    rows = []
    for c in report.changes:
        if c.figure == "pass rate":
            continue  # per mode over configs: the headline table's business
        rows.append({"variant": c.variant, "figure": FIGURE_WORDS.get(c.figure, c.figure),
                     "baseline → this run": old_new(c),
                     "change %": None if c.ratio is None else round((c.ratio - 1) * 100, 1),
                     "at one host speed %": host_pct(c),
                     "verdict": verdict_label(c.verdict), "p": "–" if c.p_value is None
                     else f"{c.p_value:.2g}", "note": c.note})
    return pd.DataFrame(rows, columns=["variant", "figure", "baseline → this run", "change %",
                                       "at one host speed %", "verdict", "p", "note"])


def environment_table(report: GateReport) -> pd.DataFrame:
    return pd.DataFrame([{"what": d["key"], "baseline": ", ".join(d["baseline"]),
                          "this run": ", ".join(d["candidate"])} for d in report.environment],
                        columns=["what", "baseline", "this run"])


# A headline ratio below 1 said in words: a geomean speedup of 0.555× read as a speedup.
BELOW_ONE = {"speedup": "slower", "memory ratio": "uses more memory"}


def headline_value(value: Any, figure: str) -> str:
    text = fmt_value(value, figure)
    below = BELOW_ONE.get(figure)
    if below and isinstance(value, (int, float)) and math.isfinite(value) and value < 1:
        text += f" ({below})"
    return text


def _pair(a: Headline | None, b: Headline, attr: str, figure: str) -> str:
    return f"{headline_value(getattr(a, attr) if a else None, figure)} → " \
           f"{headline_value(getattr(b, attr), figure)}"


def headline_table(review: Review) -> pd.DataFrame:
    """Per mode: the four headline figures of each config's first run in the window → latest."""
    rows = [{"mode": mode, "configs": f"{end.passing}/{end.cells} passing",
             "pass rate": _pair(start, end, "pass_rate", "pass rate"),
             "geomean speedup": _pair(start, end, "geomean_speedup", "speedup"),
             "mean compile time": _pair(start, end, "mean_compile_s", "compile s"),
             "memory, eager ÷ compiled": _pair(start, end, "memory_ratio", "memory ratio")}
            for mode, start, end in review.modes]
    return pd.DataFrame(rows, columns=["mode", "configs", "pass rate", "geomean speedup",
                                       "mean compile time", "memory, eager ÷ compiled"])


def changes_table(review: Review, link: Callable[[int, int], str]) -> pd.DataFrame:
    """The step changes biggest first; ``link(old, new)`` is the compare page of the two runs."""
    rows = []
    for c in review.changes:
        info = review.runs_info.get(c.candidate_run or -1, {})
        rows.append({
            "verdict": verdict_label(c.verdict), "config": c.config, "variant": c.variant,
            "figure": c.figure, "old → new": old_new(c),
            # a number, not "+12%": a text cell starting with + is neutralised as a formula
            "change %": None if c.ratio is None else round((c.ratio - 1) * 100, 1),
            "at one host speed %": host_pct(c),
            "p": "–" if c.p_value is None else f"{c.p_value:.2g}",
            "runs": f"#{c.baseline_run} → #{c.candidate_run}",
            "appeared at": str(info.get("created_at") or "")[:16].replace("T", " "),
            "commit": str(info.get("commit") or "unknown")[:12],
            "torch": str(info.get("torch") or "unknown"),
            "compare": link(int(c.baseline_run or 0), int(c.candidate_run or 0)),
        })
    return pd.DataFrame(rows, columns=CHANGE_COLUMNS)
