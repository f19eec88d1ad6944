"""The Review page as a self-contained HTML report (pure: a Review and figures in, a string out).

Same document style as the comparison report (dashboard/report.py: its CSS, plotly.js embedded
once so the file opens offline): the headline figures per mode, the changes biggest first
(each with a link to the compare page of its two runs), then one trend chart per config.
``review_section`` is the part a larger report can embed.  Every text that came from a run or a
URL (tag, config labels, variants, commits, torch versions, links) goes through ``html.escape``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from dashboard.report import _e, document_head
from dashboard.review_tables import changes_table, headline_table
from engine.analysis.gate import SPEEDUP_TESTS
from engine.analysis.review import Review


def _table(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p class='muted'>none</p>"
    head = "".join(f"<th>{_e(c)}</th>" for c in df.columns)
    rows = ["<tr>" + "".join(f"<td>{_e(r[c])}</td>" for c in df.columns) + "</tr>"
            for _, r in df.iterrows()]
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _changes(df: pd.DataFrame) -> str:
    """The changes in six columns (A4 width): what changed, by how much, at which run."""
    if df.empty:
        return "<p class='muted'>none: no change beyond a threshold</p>"
    rows = []
    for _, r in df.iterrows():
        pct, at_one = "", r.get("at one host speed %")
        if not pd.isna(r["change %"]):
            judged = "" if at_one is None or pd.isna(at_one) else \
                f"; {at_one:+.1f}% at one host speed"
            pct = f" ({r['change %']:+.1f}%{judged})"
        rows.append(
            f"<tr><td>{_e(r['verdict'])}</td><td>{_e(r['config'])}<br><b>{_e(r['variant'])}"
            f"</b> · {_e(r['figure'])}</td><td>{_e(r['old → new'])}{_e(pct)}</td>"
            f"<td class='n'>{_e(r['p'])}</td><td><a href='{_e(r['compare'])}'>{_e(r['runs'])}"
            f"</a></td><td>{_e(r['appeared at'])}<br>commit {_e(str(r['commit'])[:8])}<br>torch "
            f"{_e(r['torch'])}</td></tr>")
    head = ("<tr><th>verdict</th><th>config · variant · figure</th><th>old → new (change)</th>"
            "<th>p</th><th>runs (compare)</th><th>appeared at</th></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def review_section(review: Review, figures: Sequence[go.Figure],
                   link: Callable[[int, int], str], *, include_plotlyjs: bool = True) -> str:
    """The review's HTML (no document around it): headline, changes, trends."""
    window = (f"{review.since or 'the first run'} to {review.until or 'now'} (UTC days)")
    parts = [f"<h2>Review of {_e(review.tag)}</h2>",
             f"<p class='muted'>{review.run_count} finished run(s) from {_e(window)}"
             + (" (the newest only: older runs were left out)" if review.truncated else "")
             + ". Each run is judged against the previous run of its config by the CI gate: a "
             f"change is real ({_e(SPEEDUP_TESTS)} for speedups, α = 0.05) and beyond a "
             "threshold.</p>",
             "<h3>Headline figures per mode (each config's first run in the window → its "
             "latest)</h3>", _table(headline_table(review)),
             "<h3>Changes, biggest first</h3>",
             _changes(changes_table(review, link)),
             "<h3>Trend of each config</h3>"]
    for i, fig in enumerate(figures):
        parts.append("<div class='chart'>" + pio.to_html(
            fig, full_html=False, include_plotlyjs=include_plotlyjs and i == 0,
            default_width="100%", default_height="420px",
            config={"responsive": True, "displaylogo": False}) + "</div>")
    return "\n".join(parts)


def build_review_report(review: Review, figures: Sequence[go.Figure],
                        link: Callable[[int, int], str], *, permalink: str | None = None,
                        generated_at: dt.datetime | None = None) -> str:
    """One HTML document holding ``review_section``."""
    generated_at = generated_at or dt.datetime.now(dt.UTC)
    title = f"Compile Lab review: {review.tag}"
    return "\n".join([*document_head(title, generated_at, permalink),
                      review_section(review, figures, link), "</body></html>"])
