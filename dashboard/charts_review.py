"""Figures of the Review page and of a run's baseline section: pure Plotly functions of
engine/analysis/review.py's dataclasses (no Streamlit, no database).

* ``trend_figure``: one config's speedup per variant over time (x: when the run was created,
  UTC), each point with its 95 % interval; a red ▼ where the gate found a regression against
  the previous run of the config, a green ▲ where it found an improvement; the hover names the
  run, its commit and torch, and what changed.
* ``baseline_figure``: a run's speedup per variant next to its baseline's, with intervals.

Every text that came from a run (config label, variant, commit, torch, notes of the gate) is
escaped with ``safe.plotly_text``: Plotly renders a subset of HTML in titles and hovers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import plotly.graph_objects as go

from dashboard import safe
from dashboard.charts_base import EAGER, FASTER, SLOWER, _layout, empty_figure, variant_colour
from engine.analysis.gate import Change, GateReport
from engine.analysis.review import ConfigTrend, TrendPoint

SPEEDUP_AXIS = "speedup vs eager (×, 95% interval)"
TIME_AXIS = "run created (UTC)"
REGRESSION_SYMBOL, IMPROVEMENT_SYMBOL = "triangle-down", "triangle-up"


def _time(text: str | None) -> datetime | None:
    """An ISO time as naive UTC (Plotly draws naive times as given)."""
    try:
        moment = datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        return None
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}×"


def _hover(p: TrendPoint, label: str) -> str:
    when = _time(p.created_at)
    lines = [f"<b>run #{p.run_id}</b> · {safe.plotly_text(p.variant)}",
             f"{when:%Y-%m-%d %H:%M} UTC" if when else "time unknown",
             f"speedup {_x(p.speedup)}"
             + (f" [{p.ci_low:.3g}, {p.ci_high:.3g}]" if p.ci_low and p.ci_high else ""),
             f"commit {safe.plotly_text((p.commit or 'unknown')[:12])}",
             f"torch {safe.plotly_text(p.torch or 'unknown')}",
             safe.plotly_text(label)]
    if p.status != "ok":
        lines.append(f"status: {safe.plotly_text(p.status)}")
    if p.marks:
        lines.append(f"<b>against run #{p.previous_run}:</b> "
                     + "; ".join(safe.plotly_text(m) for m in p.marks))
    return "<br>".join(lines)


def _error(points: list[TrendPoint]) -> dict[str, Any]:
    """Asymmetric error bars from the stored interval (0 where a point has none)."""
    plus = [(p.ci_high - p.speedup) if p.ci_high and p.speedup else 0.0 for p in points]
    minus = [(p.speedup - p.ci_low) if p.ci_low and p.speedup else 0.0 for p in points]
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
            "thickness": 1.2, "width": 4}


# The figures a speedup chart shows: their changes get ▲/▼ on it, the others an open diamond.
SPEEDUP_MARKS = ("speedup", "passes", "pass rate")


def _names(p: TrendPoint, word: str, figures: tuple[str, ...], other: bool) -> list[str]:
    names = [m.split(":", 1)[0] for m in p.marks if m.endswith(word)]
    return [n for n in names if (n in figures) != other]


def _marked(points: Iterable[TrendPoint], word: str, figures: tuple[str, ...] = SPEEDUP_MARKS,
            other: bool = False) -> list[TrendPoint]:
    """The points with a ``word`` change of one of ``figures`` (``other``: of any other)."""
    return [p for p in points if _names(p, word, figures, other)]


SHORT = {"speedup": "speedup", "compile time s": "compile time", "memory ratio": "memory",
         "passes": "passes", "pass rate": "pass rate"}


def _figures(p: TrendPoint, word: str, figures: tuple[str, ...] = SPEEDUP_MARKS,
             other: bool = False) -> str:
    """The figures whose change is marked, with how they changed (``compile time improved``)."""
    return ", ".join(SHORT.get(n, safe.plotly_text(n))
                     for n in _names(p, word, figures, other)) + f" {word}"


def trend_figure(trend: ConfigTrend) -> go.Figure:
    """Speedup per variant over time for one config, regressions and improvements marked."""
    label = safe.plotly_text(trend.label)
    title = f"Speedup over time: {label}"
    points = [p for p in trend.points if _time(p.created_at) is not None]
    drawn = [p for p in points if p.speedup is not None]
    if not drawn:
        return empty_figure(title, "No speedup measured in this window (every compiled "
                            "variant failed or none finished).", TIME_AXIS, SPEEDUP_AXIS)
    fig = go.Figure()
    variants = list(dict.fromkeys(p.variant for p in points))
    for variant in variants:
        mine = [p for p in drawn if p.variant == variant]
        if not mine:
            continue
        fig.add_trace(go.Scatter(
            x=[_time(p.created_at) for p in mine], y=[p.speedup for p in mine],
            mode="lines+markers", name=safe.plotly_text(variant),
            line={"color": variant_colour(variant), "width": 1.5},
            marker={"size": 7, "color": variant_colour(variant)}, error_y=_error(mine),
            hovertext=[_hover(p, trend.label) for p in mine], hoverinfo="text"))
    low = min(p.ci_low or p.speedup or 1.0 for p in drawn)
    for word, symbol, colour, name in (("regressed", REGRESSION_SYMBOL, SLOWER, "regression"),
                                       ("improved", IMPROVEMENT_SYMBOL, FASTER, "improvement")):
        # ▲/▼ only where the plotted figure (speedup, or whether it passes) changed; a change of
        # another figure (compile time, memory) sits on the line as an open diamond with its
        # name: a green ▲ on a speedup chart read as "faster" where compiling got faster
        for own, hits in ((True, _marked(points, word, SPEEDUP_MARKS)),
                          (False, _marked(points, word, SPEEDUP_MARKS, other=True))):
            if not hits:
                continue
            # a variant that stopped passing has no speedup: its mark sits at the bottom
            ys = [p.speedup if p.speedup is not None else low * 0.9 for p in hits]
            fig.add_trace(go.Scatter(
                x=[_time(p.created_at) for p in hits], y=ys, mode="markers",
                name=(f"speedup {name} appeared here" if own
                      else f"{name} of another figure (named on its label)"),
                marker={"symbol": symbol if own else "diamond-open", "size": 16 if own else 13,
                        "color": colour, "line": {"width": 1 if own else 2,
                                                  "color": "white" if own else colour}},
                hovertext=[_hover(p, trend.label) for p in hits], hoverinfo="text"))
            for p, y in zip(hits, ys, strict=True):
                # which figure changed, above the mark on a white label (the whiskers pass
                # there)
                fig.add_annotation(x=_time(p.created_at), y=y,
                                   text=_figures(p, word, SPEEDUP_MARKS, other=not own),
                                   showarrow=True, arrowhead=0, ax=0,
                                   ay=-26 if word == "improved" else 26, arrowcolor=colour,
                                   font={"color": colour, "size": 11},
                                   bgcolor="rgba(255,255,255,0.9)", bordercolor=colour)
    fig.add_hline(y=1.0, line={"color": EAGER, "dash": "dot", "width": 1})
    _layout(fig, title, TIME_AXIS, SPEEDUP_AXIS,
            # short enough for the HTML report at A4 width (a subtitle does not wrap)
            subtitle=f"{len(trend.runs)} run(s) · ▼▲ speedup vs the config's previous run · "
                     "◇ another figure · dotted: eager")
    fig.update_layout(height=420, hovermode="closest")
    return fig


def _speedups(report: GateReport) -> list[Change]:
    return [c for c in report.changes if c.figure == "speedup" and c.baseline is not None
            and c.candidate is not None]


def _bar_error(values: list[float], intervals: list[tuple[float, float] | None]
               ) -> dict[str, Any]:
    plus = [iv[1] - v if iv else 0.0 for v, iv in zip(values, intervals, strict=True)]
    minus = [v - iv[0] if iv else 0.0 for v, iv in zip(values, intervals, strict=True)]
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus}


def baseline_figure(report: GateReport, verdicts: Mapping[str, str] | None = None
                    ) -> go.Figure:
    """Speedup per variant: the baseline's bar next to this run's, each with its interval;
    ``verdicts`` (variant → words) goes under the variant's name."""
    changes = _speedups(report)
    title = "Speedup against the baseline"
    if not changes:
        return empty_figure(title, "No variant has a speedup on both sides (see the table).",
                            "variant", SPEEDUP_AXIS)
    first = changes[0]
    # values in the tick label, not on the bars: the whiskers cross a bar's middle
    names = [f"{safe.plotly_text(c.variant)}<br>{_x(c.baseline)} → {_x(c.candidate)}"
             for c in changes]
    if verdicts:
        names = [f"{n}<br><i>{safe.plotly_text(verdicts.get(c.variant, ''))}</i>"
                 for n, c in zip(names, changes, strict=True)]
    fig = go.Figure()
    for side, colour, values, intervals in (
            (f"baseline #{first.baseline_run}", "#aec7e8", [c.baseline for c in changes],
             [c.baseline_interval for c in changes]),
            (f"this run #{first.candidate_run}", "#1f77b4", [c.candidate for c in changes],
             [c.candidate_interval for c in changes])):
        fig.add_trace(go.Bar(name=side, x=names, y=values, marker_color=colour,
                             error_y=_bar_error(values, intervals),
                             hovertext=[f"{safe.plotly_text(c.variant)} · {side}: {_x(v)}"
                                        for c, v in zip(changes, values, strict=True)],
                             hoverinfo="text"))
    fig.add_hline(y=1.0, line={"color": EAGER, "dash": "dot", "width": 1})
    _layout(fig, title, "variant: baseline → this run (gate verdict on speedup)", SPEEDUP_AXIS,
            subtitle="bars: median eager ÷ compiled per call · whiskers: 95% interval · "
                     "dotted line: eager", barmode="group")
    fig.update_layout(height=380)
    return fig
