"""Sweep: latency and first-call time vs the swept dim, per variant, recompiles marked."""

from __future__ import annotations

import streamlit as st

from dashboard import charts_sweep, data, glossary, mixing, safe, tables, widgets

st.title("Sweep")
st.caption("Runs over several values of one dim. A ✕ marks a value at which the compiled model "
           "recompiled; its first call there pays a compile again. "
           + glossary.terms_line(["sweep", "recompile", "cold compile", "speedup",
                                "grid variant names"]))

try:
    recent = data.list_runs(limit=500)
except Exception as exc:  # noqa: BLE001
    widgets.storage_unavailable(exc)
    st.stop()
sweep_runs = recent[recent["sweep_dim"].notna()] if not recent.empty else recent
if sweep_runs.empty:
    st.info("No sweep runs yet. On **New run**, choose *Sweep over one dim* and give values, "
            "e.g. `seq` = 32, 64, 128 with the varying_seq model.")
    st.page_link(widgets.PAGE_NEW, label="Start a sweep", icon=":material/play_arrow:")
    st.stop()

wanted = widgets.run_ids_param()
labels = {int(r.run_id): f"#{r.run_id} {r.model} · sweep {r.sweep_dim} · {r.status}"
          for r in sweep_runs.itertuples()}
# A permalink may name a sweep older than the recent runs listed above: keep it selectable
# (it used to be dropped silently and the newest sweep shown in its place).  Without one, the
# newest sweep that has points: a cancelled or queued newest sweep opened the page on "No sweep
# points yet".
default = wanted or [widgets.newest_with_results(sweep_runs)]
picked = st.multiselect("Sweep runs", list(dict.fromkeys([*wanted, *labels])), default=default,
                        key="sweep-runs", format_func=lambda i: labels.get(i, f"#{i}"))
widgets.set_param("runs", picked)
if not picked:
    st.stop()

d = data.load_runs(picked)
points = d["sweep_points"]
runs = d["runs"]
missing = [i for i in picked if i not in set(runs["run_id"].astype(int))]
if missing:
    st.warning("Not in this database: " + ", ".join(f"#{i}" for i in missing))
not_sweeps = [int(r) for r in runs.loc[runs["sweep_dim"].isna(), "run_id"]]
if not_sweeps:
    st.warning("Not a sweep (no swept dim): " + ", ".join(f"#{i}" for i in not_sweeps)
               + ". Open it in Run / compare.")
if mixed := mixing.notice(runs):
    st.warning(safe.md(mixed, 1500), icon=":material/compare_arrows:")
for _, r in runs.iterrows():
    if r["status"] in widgets.ACTIVE:
        widgets.progress_view(int(r["run_id"]), status=r["status"])
if points.empty:
    st.info("No sweep points yet: they appear when a variant finishes.")
    st.stop()

for dim, group in runs.groupby(runs["sweep_dim"].fillna("swept dim")):
    ids = set(group["run_id"].astype(int))
    pts = points[points["run_id"].astype(int).isin(ids)]
    label = safe.plotly_text(dim)  # the swept dim's name comes from the run's spec
    widgets.show_figure(charts_sweep.sweep_latency(pts, label), f"sweep-latency-{dim}")
    widgets.show_figure(charts_sweep.sweep_speedup(pts, label), f"sweep-speedup-{dim}")
    widgets.show_figure(charts_sweep.sweep_first_call(pts, label), f"sweep-first-{dim}")

st.subheader("Recompiles")
rc = tables.recompiles_table(d["recompiles"])
if rc.empty:
    st.caption("No recompiles recorded.")
else:
    st.dataframe(safe.frame(rc), hide_index=True, placeholder=tables.DASH, key="sweep-recompiles")
st.download_button("Download sweep points as CSV", safe.csv(points),
                   file_name="compilelab-sweep.csv", mime="text/csv", key="sweep-csv",
                   on_click="ignore")
st.page_link(widgets.PAGE_COMPARE, label="Open these runs in Run / compare",
             icon=":material/monitoring:", query_params={"runs": ",".join(map(str, picked))})
