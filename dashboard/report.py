"""Self-contained HTML report of a comparison (pure: DataFrames + figures in, a string out).

Written for a meeting room, read top-down: the verdict of each run, the headline figures (one
short table per run), the charts, and only then the details (every figure per variant, graph
breaks, recompiles, failures, environments). Printable on A4 or Letter without horizontal
scrolling: tables are narrow by construction (a run's variants as columns, figures as rows, in
place of the 38-column table the report used to carry), long text wraps, charts take the page
width and keep their own scale. A chart whose values span two decades or more is drawn on a log
axis. plotly.js is embedded once (with the first figure), so the file opens offline and can be
mailed; nothing is fetched.

Every piece of user-supplied text (model names, dims, tags, notes, error messages, environment
values) goes through ``html.escape``; figures are serialised by Plotly, which escapes ``<``/``>``
inside its JSON.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from dashboard import charts_forensics, mixing, tables
from dashboard.people import VARIANT_HEADLINE, human, speedup_text
from dashboard.report_baseline import baseline_html
from dashboard.verdict import Verdict
from engine.analysis.review import BaselineCheck
from engine.analysis.show import describe_step

# A4 is 210 mm wide: at 96 dpi with 12 mm margins that is about 700 px of content, which
# every table and chart below fits (checked by the browser test at that width).
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5rem auto;
max-width:1000px;color:#222;padding:0 1rem;line-height:1.4}
h1{font-size:1.5rem} h2{margin-top:1.8rem;border-bottom:1px solid #ddd;font-size:1.2rem}
h3{font-size:1rem;margin:1rem 0 .3rem}
table{border-collapse:collapse;font-size:.82rem;margin:.4rem 0 1rem;max-width:100%}
th,td{border:1px solid #ddd;padding:.2rem .45rem;text-align:left;vertical-align:top;
overflow-wrap:anywhere}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th{background:#f4f4f4} pre{background:#f7f7f7;padding:.5rem;white-space:pre-wrap;
overflow-wrap:anywhere;font-size:.78rem}
.verdict li{margin:.2rem 0} .muted{color:#666;font-size:.85rem}
.notice{border-left:4px solid #e0a000;background:#fff8e1;padding:.5rem .8rem}
.run{border:1px solid #ddd;border-radius:6px;padding:.3rem .9rem;margin:.6rem 0}
.chart{width:100%;page-break-inside:avoid;break-inside:avoid}
@media print{@page{size:A4;margin:12mm} body{max-width:none;margin:0;padding:0}
a{color:inherit} h2{break-after:avoid}}
"""
DASH = "–"
HEADLINE = ["median_ms", "speedup_x", "first_call_cold_s", "first_call_warm_s",
            "break_even_calls"]
LOG_SPAN = 100.0  # max/min ratio from which a chart's value axis goes logarithmic


def _e(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, list | tuple):
        value = ", ".join(map(str, value))
    return html.escape(str(value), quote=True)


def document_head(title: str, generated_at: dt.datetime, permalink: str | None) -> list[str]:
    """The start of a self-contained report (doctype, style, escaped title, generation time and
    an optional link back): shared by the run report and the review report."""
    return [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class='muted'>Generated {_e(generated_at.strftime('%Y-%m-%d %H:%M:%S UTC'))}"
        + (f" · <a href='{_e(permalink)}'>open in Compile Lab</a>" if permalink else "")
        + "</p>",
    ]


def _cell(value, fmt: str | Callable[[Any], str] = "{:.4g}") -> str:
    """A table cell: numbers right-aligned and formatted (a format string, or a function such
    as ``speedup_text``), missing values a dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return f"<td class='n' title='not measured or not applicable'>{DASH}</td>"
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, int | float):
        try:
            return f"<td class='n'>{_e(fmt(value) if callable(fmt) else fmt.format(value))}</td>"
        except (ValueError, TypeError):
            pass
    return f"<td>{_e(value)}</td>"


def _rows_table(df: pd.DataFrame, columns: list[tuple[str, str]]) -> str:
    """``df`` as an HTML table with these (column, header) pairs; "none" when empty."""
    if df is None or df.empty:
        return "<p class='muted'>none</p>"
    columns = [(c, h) for c, h in columns if c in df.columns]  # a table may leave one out
    head = "".join(f"<th>{_e(h)}</th>" for _, h in columns)
    body = "".join("<tr>" + "".join(_cell(r.get(c)) for c, _ in columns) + "</tr>"
                   for _, r in df.iterrows())
    return f"<table><tr>{head}</tr>{body}</table>"


def _figures_by_variant(vt: pd.DataFrame, figures: list[str]) -> str:
    """One run's variants as columns, ``figures`` as rows: at most 1 + variants columns wide."""
    names = [str(v) for v in vt["variant"]]
    head = "<th>figure</th>" + "".join(f"<th>{_e(n)}</th>" for n in names)
    rows = []
    for f in figures:
        if f not in vt.columns or vt[f].isna().all():
            continue
        label = VARIANT_HEADLINE.get(f, (human(f),))[0]
        fmt = VARIANT_HEADLINE.get(f, ("", "{:.4g}"))[1]
        fmt = "{:.4g}" if fmt in ("{}", "#{:.0f}") else fmt
        if f == "speedup_x":  # '0.29× slower', as the page's Variants table says it
            fmt = speedup_text
        cells = ["<td>baseline</td>" if f == "speedup_x" and name == "eager" else _cell(v, fmt)
                 for name, v in zip(names, vt[f], strict=True)]
        rows.append(f"<tr><th>{_e(label)}</th>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>" if rows else ""


def log_where_spanning(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` whose value axis is logarithmic when its positive values span
    ``LOG_SPAN`` or more (first-call seconds next to millisecond calls; 0.06 ms next to
    5 ms): on a linear axis the small bars read as zero."""
    values: list[float] = []
    for trace in fig.data:
        if trace.type not in ("bar", "box", "scatter"):
            return fig
        for v in (trace.y if trace.y is not None else ()):
            if isinstance(v, int | float) and not isinstance(v, bool) and v == v:
                values.append(float(v))
    positive = [v for v in values if v > 0]
    if len(positive) < 2 or len(positive) < len(values) or fig.layout.yaxis.type == "log":
        return fig
    if max(positive) / min(positive) < LOG_SPAN:
        return fig
    out = go.Figure(fig)
    title = out.layout.yaxis.title.text or ""
    out.update_yaxes(type="log", title_text=title if "log" in title else f"{title} (log scale)")
    return out


NOTICE_HEADS = {"software": "Different machines or software.",
                "host speed": "Hosts of other speeds.", "repeat": "Runs that do not repeat."}


def _notices(runs: pd.DataFrame, variants: pd.DataFrame) -> list[str]:
    """The compare page's notices (``mixing.notices``), each as an escaped paragraph."""
    return [f"<p class='notice'><b>{NOTICE_HEADS[kind]}</b> {_e(text)}</p>"
            for kind, text in mixing.notices(runs, variants)]


def build_report(
    runs: pd.DataFrame,
    variants: pd.DataFrame,
    figures: list[tuple[str, go.Figure]],
    verdicts: list[Verdict],
    *,
    graph_breaks: pd.DataFrame | None = None,
    recompiles: pd.DataFrame | None = None,
    title: str = "Compile Lab report",
    permalink: str | None = None,
    generated_at: dt.datetime | None = None,
    baselines: Mapping[int, BaselineCheck] | None = None,
) -> str:
    """One HTML document: verdicts, headline figures (and each run against its baseline, where
    ``baselines`` has it), charts, then the details."""
    generated_at = generated_at or dt.datetime.now(dt.UTC)
    runs = runs if runs is not None else pd.DataFrame()
    vt = tables.variants_table(variants, runs)
    parts = document_head(title, generated_at, permalink)
    parts += _notices(runs, variants)

    # 1. verdict and 2. headline figures, run by run
    parts.append("<h2>Verdict and headline figures</h2>")
    by_run = {v.run_id: v for v in verdicts}
    for _, r in runs.iterrows():
        rid = r.get("run_id")
        parts.append("<div class='run'>")
        parts.append(f"<h3>Run #{_e(rid)}: {_e(r.get('model'))} ({_e(r.get('dims_label'))}, "
                     f"{_e(r.get('dtype'))}, {_e(r.get('device'))})</h3>")
        meta = [("status", r.get("status")), ("GPU", r.get("gpu")),
                ("torch", r.get("torch_version")),
                ("created", _time(r.get("created_at"))), ("tags", r.get("tags"))]
        parts.append("<p class='muted'>" + " · ".join(
            f"{label} {_e(value)}" for label, value in meta if value not in (None, "", []))
            + "</p>")
        spec = r.get("spec")
        parts.append(f"<p class='muted'>{_e(describe_step(spec if isinstance(spec, dict) else {}))}"
                     "</p>")
        v = by_run.get(rid)
        if v is not None:
            parts.append("<ul class='verdict'>" + "".join(
                f"<li><b>{_e(label)}:</b> {_e(text)}</li>" for label, text in v.lines())
                + "</ul>")
        if r.get("note"):
            parts.append(f"<p><b>Note</b></p><pre>{_e(r.get('note'))}</pre>")
        if r.get("error"):
            parts.append(f"<p><b>Run error</b></p><pre>{_e(r.get('error'))}</pre>")
        mine = vt[vt["run_id"] == rid] if not vt.empty else vt
        if not mine.empty:
            parts.append(_figures_by_variant(mine, HEADLINE))
        parts.append(baseline_html((baselines or {}).get(rid), _e, _rows_table))
        parts.append("</div>")

    # 3. charts
    parts.append("<h2>Charts</h2>")
    for i, (_, fig) in enumerate(figures):
        # plotly.js (≈4 MB) embedded once, with the first figure; the others reuse it.
        # Full width, responsive: the chart follows the page (and the printed sheet).
        parts.append("<div class='chart'>" + pio.to_html(
            log_where_spanning(fig), full_html=False, include_plotlyjs=i == 0,
            default_width="100%", default_height="440px",
            config={"responsive": True, "displaylogo": False}) + "</div>")

    # 4. details
    parts.append("<h2>Details</h2>")
    detail = [c for c in vt.columns if c not in (
        "run_id", "variant", "model", "dims_label", "dtype", "device", "gpu", "torch_version")]
    for _, r in runs.iterrows():
        mine = vt[vt["run_id"] == r.get("run_id")] if not vt.empty else vt
        if not mine.empty:
            parts.append(f"<h3>Run #{_e(r.get('run_id'))}: every figure per variant</h3>")
            parts.append(_figures_by_variant(mine, detail))
    parts.append("<h3>Graph breaks</h3>")
    parts.append(_rows_table(tables.graph_breaks_table(graph_breaks), [
        ("run_id", "run"), ("variant", "variant"), ("reason", "reason"),
        ("location", "where"), ("count", "count")]))
    uncaused = tables.breaks_without_reason(variants, graph_breaks)
    if uncaused:
        parts.append(f"<p class='muted'>{_e(uncaused)}</p>")
    parts.append("<h3>Recompiles</h3>")
    parts.append(_rows_table(tables.recompiles_table(recompiles), [
        ("run_id", "run"), ("variant", "variant"), ("reason", "guard that failed"),
        ("call_index", "call (or when)"), ("dim_value", "at value")]))
    parts.append("<h3>Compile caches</h3>")  # torch's counters per compile
    caches = charts_forensics.cache_table(variants)
    parts.append(_rows_table(caches, [(c, str(c)) for c in caches.columns]))
    failed = tables.failed_variants(variants)
    if not failed.empty:
        parts.append("<h3>Failed variants</h3>")
        for _, f in failed.iterrows():
            parts.append(f"<p><b>#{_e(f['run_id'])} {_e(f['variant'])}: "
                         f"{_e(f['failure_kind'])}</b> {_e(f['error'])}</p>"
                         f"<pre>{_e(f['stderr_tail'])}</pre>")
    parts.append("<h3>Environment</h3>")
    for _, r in runs.iterrows():
        env = tables.environment_rows(r.get("environment"))
        parts.append(f"<p><b>Run #{_e(r.get('run_id'))}</b></p>")
        parts.append(_rows_table(env, [("key", "what"), ("value", "value")]))
    parts.append("</body></html>")
    return "\n".join(parts)


def _time(value) -> str | None:
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if pd.isna(ts):
        return None
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.strftime("%Y-%m-%d %H:%M:%S UTC")
