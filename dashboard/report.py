"""Self-contained HTML report of a comparison (pure: DataFrames + figures in, a string out).

plotly.js is embedded once (with the first figure), so the file opens offline and can be mailed
or attached to a review. Every piece of user-supplied text (model names, dims, tags, notes, error
messages, environment values) goes through ``html.escape``; figures are serialised by Plotly,
which escapes ``<``/``>`` inside its JSON.
"""

from __future__ import annotations

import datetime as dt
import html
import json

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from dashboard import charts_forensics, tables
from dashboard.verdict import Verdict
from engine.report import describe_step

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1200px;color:#222;padding:0 1rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0 1rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4} pre{background:#f7f7f7;padding:.5rem;overflow-x:auto;font-size:.8rem}
.verdict li{margin:.25rem 0} .muted{color:#666;font-size:.85rem} h2{margin-top:2rem}
"""


def _e(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, list | tuple):
        value = ", ".join(map(str, value))
    return html.escape(str(value), quote=True)


def _table(df: pd.DataFrame) -> str:
    if df is None or df.empty:
        return "<p class='muted'>none</p>"
    return df.to_html(index=False, escape=True, na_rep="", border=0, float_format="{:.4g}".format)


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
) -> str:
    """Return one HTML document: per-run summary, verdicts, figures, tables, environments."""
    generated_at = generated_at or dt.datetime.now(dt.UTC)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class='muted'>Generated {_e(generated_at.strftime('%Y-%m-%d %H:%M UTC'))}"
        + (f" · <a href='{_e(permalink)}'>open in Compile Lab</a>" if permalink else "")
        + "</p>",
    ]
    runs = runs if runs is not None else pd.DataFrame()
    by_run = {v.run_id: v for v in verdicts}
    for _, r in runs.iterrows():
        rid = r.get("run_id")
        parts.append(
            f"<h2>Run #{_e(rid)}: {_e(r.get('model'))} ({_e(r.get('dims_label'))}, "
            f"{_e(r.get('dtype'))}, {_e(r.get('device'))})</h2>")
        spec = r.get("spec")
        parts.append(f"<p class='muted'>{_e(describe_step(spec if isinstance(spec, dict) else {}))}"
                     "</p>")
        parts.append(
            "<p>" + " · ".join(
                f"<b>{label}</b> {_e(r.get(key))}"
                for label, key in [("status", "status"), ("GPU", "gpu"),
                                   ("torch", "torch_version"), ("created", "created_at"),
                                   ("tags", "tags")]
                if r.get(key) is not None) + "</p>")
        if r.get("note"):
            parts.append(f"<p><b>Note</b></p><pre>{_e(r.get('note'))}</pre>")
        if r.get("error"):
            parts.append(f"<p><b>Run error</b></p><pre>{_e(r.get('error'))}</pre>")
        v = by_run.get(rid)
        if v is not None:
            parts.append("<ul class='verdict'>" + "".join(
                f"<li><b>{_e(label)}:</b> {_e(text)}</li>" for label, text in v.lines())
                + "</ul>")
    parts.append("<h2>Figures</h2>")
    for i, (_, fig) in enumerate(figures):
        # plotly.js (≈4 MB) embedded once, with the first figure; the others reuse it.
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=i == 0,
                                 default_height="480px"))
    parts.append("<h2>Variants</h2>")
    parts.append(_table(tables.variants_table(variants, runs)))
    parts.append("<h2>Graph breaks</h2>")
    parts.append(_table(tables.graph_breaks_table(graph_breaks)))
    parts.append("<h2>Recompiles</h2>")
    parts.append(_table(tables.recompiles_table(recompiles)))
    parts.append("<h2>Compile caches</h2>")  # torch's counters per compile
    parts.append(_table(charts_forensics.cache_table(variants)))
    failed = tables.failed_variants(variants)
    if not failed.empty:
        parts.append("<h2>Failed variants</h2>")
        for _, f in failed.iterrows():
            parts.append(f"<h3>#{_e(f['run_id'])} {_e(f['variant'])}: {_e(f['failure_kind'])}"
                         f"</h3><p>{_e(f['error'])}</p><pre>{_e(f['stderr_tail'])}</pre>")
    parts.append("<h2>Environment</h2>")
    for _, r in runs.iterrows():
        env = r.get("environment") if isinstance(r.get("environment"), dict) else {}
        parts.append(f"<h3>Run #{_e(r.get('run_id'))}</h3>"
                     f"<pre>{_e(json.dumps(env, indent=2, sort_keys=True, default=str))}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)
