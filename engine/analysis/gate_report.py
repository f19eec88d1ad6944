"""The gate's report as Markdown (CI logs, pull-request comments) and as JSON.

Order: environment differences first (a changed GPU, driver, torch or commit is usually the
cause), then the verdict, the regressions (biggest first), the improvements, the headline
figures per mode.  Every text that came from a user or a database (model names, dims, tags,
environment strings, failure reasons) goes through ``md_escape``: a model called
``<img src=x>`` shows as itself in a pull-request comment.
"""

from __future__ import annotations

import json
import math
from typing import Any

from engine.analysis.gate import SPEEDUP_TESTS, Change, GateReport
from engine.analysis.verdict import md_escape

# A ratio below 1 said in words, as on the dashboard's Review page: a geomean speedup of
# 0.555x read as a speedup, a memory ratio of 0.409x as a saving.
BELOW_ONE = {"speedup": "slower", "geomean speedup": "slower", "memory ratio": "uses more memory"}
# The figures' names as a meeting reads them ("memory ratio" stays the JSON's name).
FIGURE_WORDS = {"memory ratio": "memory, eager ÷ compiled"}


def _fmt(value: Any, figure: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return md_escape(str(value))
    if not math.isfinite(value):
        return "-"
    if figure in BELOW_ONE:
        return f"{value:.3g}x" + (f" ({BELOW_ONE[figure]})" if value < 1 else "")
    if figure == "pass rate":
        return f"{value:.0%}"
    if figure.endswith(" s"):
        return f"{value:.2f} s"
    return f"{value:.4g}"


def _interval(change: Change) -> str:
    def one(iv: tuple[float, float] | None) -> str:
        return "-" if not iv else f"[{iv[0]:.3g}, {iv[1]:.3g}]"

    if not (change.baseline_interval or change.candidate_interval):
        return "-"
    return f"{one(change.baseline_interval)} → {one(change.candidate_interval)}"


def _ratio(change: Change) -> str:
    if change.ratio is None:
        return "-"
    adj = change.host_adjusted_ratio
    at_one = (f" ({adj - 1:+.1%} at one host speed)"
              if isinstance(adj, float) and math.isfinite(adj) else "")
    return f"{change.ratio - 1:+.1%}{at_one}"


def _p(change: Change) -> str:
    return "-" if change.p_value is None else f"{change.p_value:.2g}"


_HEADER = ("| config | variant | figure | baseline | candidate | change | 95% interval "
           "(baseline → candidate) | p | runs | note |\n|---|---|---|---|---|---|---|---|---|---|")


def _row(c: Change) -> str:
    runs = f"{c.baseline_run or '-'} → {c.candidate_run or '-'}"
    return (f"| {md_escape(c.config)} | {md_escape(c.variant)} | "
            f"{FIGURE_WORDS.get(c.figure, c.figure)} | "
            f"{_fmt(c.baseline, c.figure)} | {_fmt(c.candidate, c.figure)} | {_ratio(c)} | "
            f"{_interval(c)} | {_p(c)} | {runs} | {md_escape(c.note) if c.note else ''} |")


def _table(changes: list[Change]) -> list[str]:
    return [_HEADER, *(_row(c) for c in changes)]


def to_markdown(report: GateReport, *, show_all: bool = False) -> str:
    thr = report.thresholds
    lines: list[str] = []
    if report.environment:
        lines += ["### Environment differences (usually the cause)", "",
                  "| | baseline | candidate |", "|---|---|---|"]
        for d in report.environment:
            lines.append(f"| {md_escape(d['key'])} | {md_escape(', '.join(d['baseline']))} | "
                         f"{md_escape(', '.join(d['candidate']))} |")
        lines.append("")
    else:
        lines += ["### Environment: no differences (GPU, driver, CUDA, torch, triton, python, "
                  "commit, host)", ""]
    regs = report.regressions
    verdict = (f"**REGRESSED**: {len(regs)} regression{'s' if len(regs) != 1 else ''}"
               if regs else "**PASSED**: no regression")
    lines += [f"### Gate: {verdict}", "",
              f"A regression is statistically real (speedup: {SPEEDUP_TESTS}; compile time: "
              f"prediction interval of the baseline's runs; α = {thr.alpha:g}; memory: "
              f"repeatable to the byte, threshold only) and beyond a "
              f"threshold: speedup below {thr.speedup:g}x of baseline, compile time above "
              f"{thr.compile_time:g}x (and over {thr.compile_floor_s:g} s longer), memory "
              f"(eager peak ÷ compiled peak) below {thr.memory:g}x of baseline, pass rate below {thr.pass_rate:g}x; a "
              f"variant that stops passing always is.", ""]
    if regs:
        lines += ["#### Regressions (biggest first)", "", *_table(regs), ""]
    if report.improvements:
        lines += ["#### Improvements", "", *_table(report.improvements), ""]
    noted = [c for c in report.changes if c.verdict == "not significant"
             or (c.verdict == "untested" and c.ratio is not None and c.ratio != 1)]
    if noted:
        lines += ["#### Beyond the threshold but within noise or untested (not failed)",
                  "", *_table(noted), ""]
    if show_all:
        lines += ["#### Everything compared", "", *_table(report.changes), ""]
    if report.modes:
        lines += ["#### Headline figures per mode (baseline → candidate)", "",
                  "| mode | pass rate | geomean speedup | mean compile s | memory, eager ÷ compiled |",
                  "|---|---|---|---|---|"]
        for m in report.modes:
            b, c = m["baseline"] or {}, m["candidate"]

            def pair(key: str, fig: str, b: dict = b, c: dict = c) -> str:
                return f"{_fmt(b.get(key), fig)} → {_fmt(c.get(key), fig)}"

            lines.append(f"| {md_escape(m['mode'])} | {pair('pass_rate', 'pass rate')} | "
                         f"{pair('geomean_speedup', 'speedup')} | "
                         f"{pair('mean_compile_s', 'compile s')} | "
                         f"{pair('memory_ratio', 'memory ratio')} |")
        lines.append("")
    if report.unmatched:
        lines += ["Candidate configs without a baseline (not judged): "
                  + "; ".join(md_escape(u) for u in report.unmatched), ""]
    return "\n".join(lines).rstrip() + "\n"


def _clean(value: Any) -> Any:
    """JSON without NaN/Infinity (strict parsers refuse them): non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def to_json(report: GateReport) -> str:
    return json.dumps(_clean(report.as_dict()), allow_nan=False, default=str)
