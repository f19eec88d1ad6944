"""Run / compare: one or several runs (``?runs=3,7``): verdicts, every chart, tables, sharing."""

from __future__ import annotations

import streamlit as st

from dashboard import (
    baseline_view,
    charts,
    charts_base,
    charts_latency,
    charts_sweep,
    data,
    data_review,
    decode_view,
    forensics_view,
    glossary,
    grid_view,
    mixing,
    people,
    report,
    run_actions,
    safe,
    tables,
    widgets,
)
from dashboard.verdict import verdict_for_run

st.title("Run / compare")
FEW_RUNS = 3  # more: one line per verdict, the speedup chart first


def speedup_section(figures: dict, full_width: bool = False) -> None:
    """Speedup and break-even side by side; one under the other for many runs (a bar per run
    and variant needs the width)."""
    st.header("Speedup and break-even", anchor="speedup")
    c1, c2 = (st.container(), st.container()) if full_width else st.columns(2)
    widgets.show_figure(figures["speedup"], "fig-speedup", c1)
    widgets.show_figure(figures["break_even"], "fig-break-even", c2)


try:
    recent = data.list_runs(limit=500)
except Exception as exc:  # noqa: BLE001
    widgets.storage_unavailable(exc)
    st.stop()
if recent.empty:
    widgets.no_runs_yet()
    st.stop()

wanted = widgets.run_ids_param()
labels = {int(r.run_id): f"#{r.run_id} {r.model} ({r.dims_label}) · {r.status}"
          for r in recent.itertuples()}
options = list(dict.fromkeys([*wanted, *labels]))
picked = st.multiselect("Runs", options, default=wanted, key="compare-runs",
                        format_func=lambda i: labels.get(i, f"#{i}"),
                        placeholder="Pick one or more runs (or select rows on the Runs page)")
widgets.set_param("runs", picked)
if not picked:
    st.info("Pick runs above, or select rows on the **Runs** page and press *Compare*.")
    st.page_link(widgets.PAGE_RUNS, label="Go to Runs", icon=":material/table_rows:")
    st.stop()

# variant names escaped for the verdict's Markdown and the figures' labels (safe.plotly_names)
d = safe.plotly_names(data.load_runs(picked))
runs = d["runs"]
missing = [i for i in picked if i not in set(runs["run_id"].astype(int))]
if missing:
    st.warning("Not in this database: " + ", ".join(f"#{i}" for i in missing))
if runs.empty:
    st.stop()
variants = d["variants"]
verdicts = []
# Many runs (an import, a tag): the page says what it holds and starts with the speedup chart;
# each run's verdict folds into one line (36 verdict cards stood before the first chart).
many = len(runs) > FEW_RUNS
st.caption(safe.md(widgets.runs_summary(runs), 600) + " · " + glossary.terms_line(
    ["eager", "speedup", "95% CI", "measuring process", "per-call median", "pipelined",
     "break-even calls", "cold compile", "warm-cache compile", "launch-bound", "graph break",
     "recompile", "CUDA graphs", "kernels per call", "device busy", "device time",
     "code generation", "grid variant names", "eager per variant"]))
figure_list = charts.compare_figures(d) if not variants.empty else []
figures = dict(figure_list)
if many and figures:
    speedup_section(figures, full_width=True)


NOTICE_LOOK = {"software": (1500, ":material/compare_arrows:"),
               "host speed": (1500, ":material/speed:"),
               "repeat": (2000, ":material/difference:")}


def notices() -> list[tuple[str, str]]:
    """``mixing.notices`` as (Markdown-escaped text, icon) each."""
    return [(safe.md(text, NOTICE_LOOK[kind][0]), NOTICE_LOOK[kind][1])
            for kind, text in mixing.notices(runs, variants)]


said = notices()
if said:  # with many runs folded away, so the speedup chart comes first; never an empty fold
    with st.expander("Why these runs may not compare one to one") if many else st.container():
        for text, icon in said:
            st.warning(text, icon=icon)

# ---------------------------------------------------------------- per-run summary and verdict
st.header("Verdict", anchor="verdict")
for _, r in runs.iterrows():
    rid = int(r["run_id"])
    v = verdict_for_run(variants, rid)
    verdicts.append(v)
    answer = v.latency.split(" — ")[0]  # "Ship reduce-overhead", "Ship eager", ...
    box = (st.expander(f"{widgets.run_title(r)} — **{safe.md(answer, 120)}**") if many
           else st.container(border=True))
    with box:
        if not many:
            st.markdown(f"**{widgets.run_title(r)}**")
        meta = [f"torch {r['torch_version']}" if r.get("torch_version") else None,
                f"created {people.local_time(r.get('created_at'))}"
                if people.local_time(r.get("created_at")) else None,
                "tags: " + ", ".join(r["tags"]) if isinstance(r.get("tags"), list) and r["tags"]
                else None]
        st.caption(safe.md(" · ".join(m for m in meta if m), 2000))
        if r["status"] in widgets.ACTIVE:
            widgets.progress_view(rid, status=r["status"])
        if r.get("note"):
            st.text(r["note"])
        if r["status"] == "failed" and r.get("error"):
            st.error(f"Run failed: {safe.md(r['error'], 2000)}")
        if not variants.empty and (variants["run_id"] == rid).any():
            st.markdown(v.as_markdown())
        elif r["status"] in widgets.ACTIVE:
            st.caption("Results appear here as each variant finishes.")

if len(runs) == 1:  # a single run: against its config's baseline (dashboard/baseline_view.py)
    baseline_view.render(int(runs.iloc[0]["run_id"]), str(runs.iloc[0]["status"]))

if variants.empty:
    st.info("No variant has finished yet.")
    st.stop()

# ---------------------------------------------------------------- figures
if not many:
    speedup_section(figures)
st.header("Warm-up", anchor="warm-up")
c1, c2 = st.columns(2)
widgets.show_figure(figures["warmup_cost"], "fig-warmup-cost", c1)
widgets.show_figure(figures["warmup_curve"], "fig-warmup-curve", c2)
st.header("Steady state", anchor="steady-state")
log_y = st.toggle("Log scale", key="latency-log", value=runs["model"].nunique() > 1)
# compare_figures drew it on a linear axis already (the report uses that one)
widgets.show_figure(charts_latency.latency_distribution(d["samples"], log_y=True) if log_y
                    else figures["latency_distribution"], "fig-latency")
st.header("Memory and kernels", anchor="resources")
# Two per row: in three columns the subtitles were cut off and bar labels unreadable.
c1, c2 = st.columns(2)
widgets.show_figure(figures["peak_memory"], "fig-memory", c1)
widgets.show_figure(figures["kernels_per_call"], "fig-kernels", c2)
c1, c2 = st.columns(2)
widgets.show_figure(figures["device_busy"], "fig-busy", c1)
if charts_base.empty_message(figures["device_busy"]) is None:  # no note beside "no data"
    c2.caption("**Reading device busy vs wall:** busy is the time the device spends in kernels "
               "per call (from a separate profiler pass after timing; the profiler slows the "
               "host, not the kernels), wall is the steady-state median per call. A wall bar much "
               "taller than its busy bar means the device sits idle waiting for the host (Python "
               "and kernel-launch overhead): fusing kernels (default) or replaying CUDA graphs "
               "(reduce-overhead) is what closes that gap.")

forensic_figures = forensics_view.render(variants)  # dashboard/forensics_view.py
grid_figures = grid_view.render(variants, picked)  # dashboard/grid_view.py
decode_view.render(variants)  # dashboard/decode_view.py: token generation, when any

sweeps = d.get("sweep_points")
sweep_figures = []
if sweeps is not None and not sweeps.empty:
    st.header("Sweep", anchor="sweep")
    dim = safe.plotly_text(", ".join(sorted(set(runs["sweep_dim"].dropna().astype(str))))
                           or "swept dim")
    sweep_figures = [charts_sweep.sweep_latency(sweeps, dim),
                     charts_sweep.sweep_first_call(sweeps, dim)]
    c1, c2 = st.columns(2)
    widgets.show_figure(sweep_figures[0], "fig-sweep", c1)
    widgets.show_figure(sweep_figures[1], "fig-sweep-first", c2)

# ---------------------------------------------------------------- tables
st.header("Variants", anchor="variants")
vt = tables.variants_table(variants, runs)
headline, headline_columns = people.variants_headline(vt)
st.dataframe(headline, hide_index=True, placeholder=tables.DASH, key="variants-table",
             column_config=headline_columns)
with st.expander(f"All {len(vt.columns)} figures per variant (as in the CSV)"):
    st.dataframe(people.styled(vt), hide_index=True, placeholder=tables.DASH, key="variants-all",
                 column_config={c: people.human(c) for c in vt.columns})
st.download_button("Download figures as CSV", safe.csv(vt),
                   file_name=f"compilelab-variants-{'-'.join(map(str, picked[:8]))}.csv",
                   mime="text/csv", icon=":material/download:", key="csv",
                   on_click="ignore")

st.header("Graph breaks and recompiles", anchor="graph-breaks")
gb = tables.graph_breaks_table(d["graph_breaks"])
# Only a compiled variant that finished says anything about graph breaks: a cancelled or failed
# run used to read "No graph breaks", as if it had been checked.
unknown = tables.runs_without_compiled_results(runs, variants)
if unknown:
    st.caption(safe.md(f"Run(s) {', '.join(f'#{i}' for i in unknown)}: no compiled variant "
                       "finished (cancelled or failed first), so graph breaks and recompiles "
                       "are unknown there."))
uncaused = tables.breaks_without_reason(variants, d["graph_breaks"])
if gb.empty and not uncaused and len(unknown) < len(runs):
    st.caption("No graph breaks: each compiled variant that finished traced the model into "
               "one graph.")
elif not gb.empty:
    st.dataframe(safe.frame(gb), hide_index=True, placeholder=tables.DASH, key="graph-breaks")
if uncaused:
    st.caption(safe.md(uncaused))
rc = tables.recompiles_table(d["recompiles"])
if rc.empty:
    if len(unknown) < len(runs):
        st.caption("No recompiles.")
else:
    st.dataframe(safe.frame(rc), hide_index=True, placeholder=tables.DASH, key="recompiles")
skips = tables.cudagraph_skips_table(variants)
if not skips.empty:
    st.markdown("**CUDA graphs skipped** (these calls run without graph replay)")
    st.dataframe(safe.frame(skips), hide_index=True, placeholder=tables.DASH, key="cudagraph-skips")
phases = tables.compile_phases_table(variants)
if not phases.empty:
    st.markdown("**Compile phases** of the cold first call (seconds; the first five add up "
                "to it, as in the chart above)")
    st.dataframe(people.styled(phases, {c: "{:.3g}" for c in phases.columns[2:]}),
                 hide_index=True, placeholder=tables.DASH,
                 key="compile-phases",
                 column_config={"run_id": st.column_config.NumberColumn("Run", format="#%d"),
                                "variant": "Variant"})

failed = tables.failed_variants(variants)
if not failed.empty:
    st.header("Failed variants", anchor="failed")
    for _, f in failed.iterrows():
        first_line = (f["error"] or "").strip().splitlines()[0] if (f["error"] or "").strip() else ""
        with st.expander(safe.md(f"#{f['run_id']} {f['variant']}: "
                                 f"{f['failure_kind'] or f['status']} — {first_line}", 160)):
            st.text(f["error"] or "(no message)")
            st.code(f["stderr_tail"] or "(no stderr captured)", language=None)

# ---------------------------------------------------------------- environment, notes, sharing
st.header("Environment", anchor="environment")
for _, r in runs.iterrows():
    with st.expander(f"Run #{r['run_id']} environment and spec"):
        st.dataframe(safe.frame(tables.environment_rows(r.get("environment"))), hide_index=True,
                     placeholder=tables.DASH, key=f"env-{r['run_id']}")
        st.json(r.get("spec") or {}, expanded=False)

st.header("Notes and tags", anchor="notes")
for _, r in runs.iterrows():
    with st.expander(f"Run #{r['run_id']} note and tags", expanded=len(runs) == 1):
        run_actions.notes_editor(r)

st.header("Share", anchor="share")
ids = ",".join(map(str, picked))
link = widgets.permalink("compare", runs=ids)
st.code(link, language=None)
s1, s2 = st.columns(2)
with s1:
    run_actions.bundle_download(picked, key="export-compare")
with s2:
    # the figures drawn above (building them again cost ~100 ms a rerun)
    ordered = [fig for _, fig in figure_list] + forensic_figures + grid_figures + sweep_figures
    st.download_button(
        "Download HTML report", key="html-report", on_click="ignore",
        icon=":material/description:", mime="text/html",
        file_name=f"compilelab-report-{'-'.join(map(str, picked[:8]))}.html",
        data=lambda: report.build_report(
            runs, variants, [("", f) for f in ordered], verdicts,
            graph_breaks=d["graph_breaks"], recompiles=d["recompiles"],
            title=f"Compile Lab: runs {', '.join('#' + str(i) for i in picked)}",
            permalink=link, baselines=data_review.report_baselines(picked)),
        help="One self-contained file (plotly.js embedded): opens offline, fit to attach.")
