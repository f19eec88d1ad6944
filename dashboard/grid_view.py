"""The compare page's "Grid" section: the Pareto view (dashboard/charts_pareto.py) and the
recommendation for a call count (engine/analysis/recommend.py, the same as ``python -m engine
recommend``).  Thin: the figures and the arithmetic live elsewhere."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import charts_pareto, safe, widgets
from dashboard.verdict import records
from engine.analysis.recommend import recommend


def render(variants: pd.DataFrame, run_ids: list[int]) -> list[go.Figure]:
    """Draw the section; returns its figures for the HTML report."""
    figures = dict(charts_pareto.pareto_figures(variants))
    # every run has configs to weigh (eager is one), not only grid runs
    st.header("Pareto and recommendation", anchor="grid")
    c1, c2 = st.columns(2)
    widgets.show_figure(figures["pareto_compile"], "fig-pareto-compile", c1)
    widgets.show_figure(figures["pareto_memory"], "fig-pareto-memory", c2)
    c1, c2, c3 = st.columns(3)
    calls = c1.number_input("Calls per process", min_value=1, max_value=10**15, value=1000,
                            step=1000, key="rec-calls",
                            help="how many calls a process serves before it restarts")
    warm = c2.toggle("Warm compile cache", key="rec-warm",
                     help="the process starts with the compile cache of an earlier one")
    mem = c3.number_input("Memory budget (MiB, 0 = none)", min_value=0.0, value=0.0,
                          step=1024.0, key="rec-mem")
    for rid in run_ids:
        rows = records(variants[variants["run_id"] == rid]) if "run_id" in variants else []
        if not rows:
            continue
        rec = recommend(rows, int(calls), warm_cache=bool(warm), memory_mib=mem or None)
        with st.container(border=True):
            lines = rec.lines()
            st.markdown(f"**#{rid} {safe.md(lines[0])}**")
            st.text("\n".join(lines[1:]))  # text, never Markdown: names come from the database
    return list(figures.values())
