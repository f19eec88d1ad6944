"""Runs: the history, filtered; select rows to compare, export or delete them; import a bundle."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st

from dashboard import auth, data, glossary, people, run_actions, safe, tables, widgets

st.title("Runs")

try:
    everything = data.list_runs(limit=data.RUNS_PAGE_LIMIT)
except Exception as exc:  # noqa: BLE001
    widgets.storage_unavailable(exc)
    st.stop()
widgets.worker_banner()
run_actions.import_outcome()

if everything.empty:
    widgets.no_runs_yet()
    with st.expander("Import runs from a JSON bundle"):
        run_actions.bundle_import("runs-import")
    st.stop()

ANY = "(any)"


def _options(values) -> list[str]:
    return [ANY, *sorted({str(v) for v in values if v is not None and v == v and v != ""})]


def _pick(label: str, key: str, options: list[str], col) -> str | None:
    wanted = st.query_params.get(key)
    value = col.selectbox(label, options, key=f"filter-{key}",
                          index=options.index(wanted) if wanted in options else 0)
    widgets.set_param(key, None if value == ANY else value)
    return None if value == ANY else value


all_tags = [t for tags in everything["tags"] if isinstance(tags, list) for t in tags]
hardware = _options(list(everything["gpu"]) + list(everything["device"]))
c1, c2, c3, c4, c5 = st.columns([2, 2, 1, 1, 2])
model = _pick("Model", "model", _options(everything["model"]), c1)
where = _pick("GPU / device", "hw", hardware, c2)
status = _pick("Status", "status", _options(everything["status"]), c3)
tag = _pick("Tag", "tag", _options(all_tags), c4)

created = pd.to_datetime(everything["created_at"], utc=True, errors="coerce").dropna()
first_day = created.min().date() if not created.empty else dt.date.today()
last_day = max(created.max().date(), dt.date.today()) if not created.empty else dt.date.today()
try:
    since_q = dt.date.fromisoformat(st.query_params.get("since", ""))
    until_q = dt.date.fromisoformat(st.query_params.get("until", ""))
except ValueError:
    since_q, until_q = first_day, last_day
# The history above is the newest RUNS_PAGE_LIMIT runs: when it is cut, older days stay pickable.
oldest_pickable = (dt.date(2000, 1, 1) if len(everything) >= data.RUNS_PAGE_LIMIT
                   else min(first_day, since_q))
# A range the user left at the whole history follows the history when it grows (an import
# of older runs, a run tomorrow): it used to stay at the old span and hide the new runs.
span, shown_span = (first_day, last_day), st.session_state.get("runs-dates-span")
if shown_span and shown_span != span and tuple(st.session_state.get("filter-dates", ())) \
        == shown_span:
    st.session_state["filter-dates"] = span
st.session_state["runs-dates-span"] = span
dates = c5.date_input("Created between", key="filter-dates",
                      min_value=min(oldest_pickable, first_day), max_value=max(last_day, until_q),
                      **({} if "filter-dates" in st.session_state
                         else {"value": (since_q, until_q)}))
since = until = None
if isinstance(dates, tuple | list) and len(dates) == 2:
    since, until = dates
    if since == first_day and until == last_day:
        widgets.set_param("since", None)
        widgets.set_param("until", None)
        since = until = None
    else:
        widgets.set_param("since", since.isoformat())
        widgets.set_param("until", until.isoformat())

devices = set(everything["device"].dropna().astype(str))
filters = dict(
    model=model, status=status, tag=tag,
    device=where if where in devices else None,
    gpu=where if where and where not in devices else None,
    since=dt.datetime.combine(since, dt.time.min, tzinfo=dt.UTC) if since else None,
    until=dt.datetime.combine(until, dt.time.max, tzinfo=dt.UTC) if until else None,
)
# Bounded like the history above: unbounded, a 10 000-run database took 0.5 s to list here
# (and as long again to send to the browser) on every rerun.
runs = (data.list_runs(**filters, limit=data.RUNS_PAGE_LIMIT)
        if any(v is not None for v in filters.values()) else everything)
capped = len(everything) >= data.RUNS_PAGE_LIMIT
st.caption(
    f"{len(runs)}{'+' if len(runs) >= data.RUNS_PAGE_LIMIT else ''} of "
    + (f"the newest {data.RUNS_PAGE_LIMIT:,} runs" if capped else f"{len(everything)} runs")
    + ". Select rows to compare or export them."
    + (" Older runs: narrow the list with the filters (the newest "
       f"{data.RUNS_PAGE_LIMIT:,} matches are shown)." if capped else ""))
if st.session_state.get("delete-done"):
    st.success(st.session_state.pop("delete-done"))
if runs.empty:
    st.info("No run matches these filters. Clear a filter above, or start a new run.")
    st.stop()

table = tables.runs_table(runs, data.run_cautions(runs["run_id"]))
# A shared link restores the selection once (?selected=3,7); later clicks update the link.
if "runs-initial-selection" not in st.session_state:
    linked, _ = widgets.parse_run_ids(st.query_params.get("selected"))
    st.session_state["runs-initial-selection"] = [
        i for i, rid in enumerate(table["run_id"]) if int(rid) in linked]
event = st.dataframe(
    people.flag_distrusted(people.styled(table, {"best_speedup": people.speedup_text}), table),
    key="runs-table", on_select="rerun",
    selection_mode="multi-row", hide_index=True, placeholder=tables.DASH,
    selection_default={"selection": {"rows": st.session_state["runs-initial-selection"],
                                     "columns": []}},
    column_config=people.runs_columns(table),
)
st.caption(glossary.terms_line(["speedup", "noisy", "busy host", "host speed moved",
                                "processes disagree", "provisional", "eager per variant"]))
st.download_button("Download this table as CSV", safe.csv(table), file_name="compilelab-runs.csv",
                   mime="text/csv", icon=":material/download:", key="runs-csv",
                   on_click="ignore", help="Formula-like cells neutralised for spreadsheets.")
selected_rows = list(event.selection.rows) if event is not None else []
selected = [int(table.iloc[i]["run_id"]) for i in selected_rows if i < len(table)]
widgets.set_param("selected", selected)

if selected:
    ids = ",".join(map(str, selected))
    a, b, c = st.columns([1, 1, 2])
    if a.button(f"Compare {len(selected)} run(s)", type="primary",
                icon=":material/monitoring:", key="open"):
        st.switch_page(widgets.PAGE_COMPARE, query_params={"runs": ids})
    if runs[runs["run_id"].isin(selected)]["sweep_dim"].notna().any() and b.button(
            "Open sweep view", icon=":material/show_chart:", key="open-sweep"):
        st.switch_page(widgets.PAGE_SWEEP, query_params={"runs": ids})
    with c:
        run_actions.bundle_download(selected, key="export-selected")
    active = runs[runs["run_id"].isin(selected) & runs["status"].isin(widgets.ACTIVE)]
    for rid in active["run_id"]:
        widgets.progress_view(int(rid), status="running")
    if auth.can_write():
        running = [int(r) for r in runs.loc[runs["run_id"].isin(selected)
                                            & (runs["status"] == "running"), "run_id"]]
        run_actions.delete_runs_control(selected, running)

# A key: the expander keeps its open state across the rerun an import makes (without one, the
# message the import adds above it made it a new element, closed).
with st.expander("Import runs from a JSON bundle", key="runs-import-expander"):
    run_actions.bundle_import("runs-import")
