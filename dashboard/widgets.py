"""Streamlit building blocks shared by the pages: progress view, empty states, run headers,
notes/tags editor, query-param helpers. Figures come from charts.py, data from data.py."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from dashboard import data
from dashboard.spec import parse_tags
from engine import fmt

PAGE_NEW = "views/new_run.py"
PAGE_RUNS = "views/runs.py"
PAGE_COMPARE = "views/compare.py"
PAGE_SWEEP = "views/sweep.py"
ACTIVE = ("queued", "running")
FINAL = ("done", "failed", "cancelled")
START_WORKER = "`make run` (dashboard + worker) or, in another shell, `python -m engine worker`"
STATUS_ICON = {"queued": ":material/schedule:", "running": ":material/autorenew:",
               "done": ":material/check_circle:", "failed": ":material/cancel:",
               "cancelled": ":material/block:"}


# --------------------------------------------------------------------------- query params


def parse_run_ids(raw: str | Sequence[str] | None) -> tuple[list[int], list[str]]:
    """``"3,7"`` (or repeated ``?runs=3&runs=7``) -> ([3, 7], invalid parts)."""
    if raw is None:
        return [], []
    parts = [raw] if isinstance(raw, str) else list(raw)
    ids, bad = [], []
    for part in ",".join(parts).split(","):
        p = part.strip().lstrip("#")
        if not p:
            continue
        if p.isdigit():
            if int(p) not in ids:
                ids.append(int(p))
        else:
            bad.append(part.strip())
    return ids, bad


def run_ids_param() -> list[int]:
    ids, bad = parse_run_ids(st.query_params.get_all("runs"))
    if bad:
        st.warning(f"Ignored run ids that are not numbers: {', '.join(map(repr, bad))}")
    return ids


def set_param(key: str, value) -> None:
    """Keep a page selection in the URL (so every view is a permalink); None removes it."""
    if value in (None, "", [], ()):
        if key in st.query_params:
            del st.query_params[key]
    elif isinstance(value, list | tuple):
        st.query_params[key] = ",".join(map(str, value))
    elif st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)


def permalink(page_path: str, **params) -> str:
    """Absolute link to ``/page_path?params`` on this server (relative when unknown)."""
    from urllib.parse import urlencode

    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    base = ""
    try:
        url = st.context.url or ""
        base = url.split("?")[0].rstrip("/")
        base = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    except Exception:  # noqa: BLE001 - outside a browser session (tests)
        base = ""
    return f"{base}/{page_path}" + (f"?{query}" if query else "")


# --------------------------------------------------------------------------- figures


def show_figure(fig, key: str, where=None) -> None:
    """Draw a figure; one without data becomes its title plus the reason (no blank canvas)."""
    from dashboard.charts import empty_message

    where = where or st
    message = empty_message(fig)
    if message is None:
        where.plotly_chart(fig, key=key)
    else:
        where.markdown(f"**{fig.layout.title.text}**")
        where.caption(message)


# --------------------------------------------------------------------------- empty states


def no_runs_yet() -> None:
    st.info(
        "**No runs yet.** Start one on **New run** (pick a model, press *Queue run*), or from a "
        "shell: `python -m engine run --model mlp`. Runs are measured by the worker: start it "
        f"with {START_WORKER}.", icon=":material/science:")
    st.page_link(PAGE_NEW, label="Start a run", icon=":material/play_arrow:")


def worker_banner(state: data.WorkerState | None = None) -> None:
    """Warn when runs are waiting and no worker has heartbeat recently."""
    try:
        state = state or data.current_worker_state()
    except Exception:  # noqa: BLE001 - the page itself reports storage problems
        return
    if state.seems_down:
        waited = fmt.seconds(state.oldest_queued_age_s)
        st.warning(
            f"**The worker does not seem to be running.** {state.queued} run(s) queued, the "
            f"oldest for {waited}, and no worker has reported in the last "
            f"{data.HEARTBEAT_FRESH_S} s. Start it with {START_WORKER}; queued runs are kept "
            "and start as soon as it is up.", icon=":material/warning:")


def storage_unavailable(exc: Exception) -> None:
    st.error(f"Cannot open the database ({data.db_url() or 'default sqlite:///compilelab.db'}): "
             f"{exc}. Set `COMPILELAB_DB` to a SQLAlchemy URL and reload.", icon=":material/error:")


# --------------------------------------------------------------------------- runs


def run_title(r: pd.Series) -> str:
    icon = STATUS_ICON.get(r.get("status"), "")
    dims = r.get("dims_label") or ""
    gpu = r.get("gpu")
    show_gpu = isinstance(gpu, str) and gpu and gpu.lower() not in ("cpu", str(r.get("device")))
    return (f"{icon} Run #{r['run_id']} · {r.get('model')} ({dims}) · {r.get('dtype')} · "
            f"{r.get('device')}" + (f" · {gpu}" if show_gpu else ""))  # not "cpu · cpu"


def _progress_body(run_id: int) -> str | None:
    """Render one run's live status; returns its status (None when it vanished)."""
    try:
        d = data.load_runs_live([run_id])
    except Exception as exc:  # noqa: BLE001
        st.error(f"Cannot read run #{run_id}: {exc}")
        return None
    runs = d.get("runs", pd.DataFrame())
    if runs.empty:
        st.warning(f"Run #{run_id} does not exist.")
        return None
    r = runs.iloc[0]
    status = r["status"]
    spec = r.get("spec") if isinstance(r.get("spec"), dict) else {}
    planned = list(spec.get("variants") or [])
    variants = d.get("variants", pd.DataFrame())
    finished = list(variants["variant"]) if not variants.empty else []
    st.markdown(f"**{run_title(r)}** — {status}")
    if status in ACTIVE:
        phase = r.get("progress_phase") or status
        variant = r.get("progress_variant")
        # The worker reports the fraction of the whole run; fall back to variants finished.
        frac = fmt.num(r.get("progress_fraction"))
        if frac is None:
            frac = len(finished) / len(planned) if planned else 0.0
        text = f"{variant + ' · ' if variant else ''}{phase} · {frac:.0%} of the run"
        if planned:
            text += f" · variants finished {len(finished)}/{len(planned)}"
        st.progress(min(max(frac, 0.0), 1.0), text=text)
        # storage's runs frame has no cancel flag (yet): remember our own request.
        asked = r.get("cancel_requested") is True or st.session_state.get(f"cancel-asked-{run_id}")
        if asked:
            st.caption("Cancel requested: the worker stops the current variant at its next "
                       "heartbeat; variants already finished are kept.")
        else:
            st.button("Cancel run", key=f"cancel-{run_id}", icon=":material/error:",
                      on_click=_cancel, args=(run_id,))
        if status == "queued":
            worker_banner()
    else:
        if status == "failed" and r.get("error"):
            st.error(f"Run failed: {r['error']}")
        st.page_link(PAGE_COMPARE, label=f"Open run #{run_id}", icon=":material/monitoring:",
                     query_params={"runs": str(run_id)})
    if not variants.empty:
        st.caption(" · ".join(
            f"{v}: {s}" for v, s in zip(variants["variant"], variants["status"], strict=True)))
    return status


def _cancel(run_id: int) -> None:
    """Button callback: runs before the rerun, so the page already shows the request."""
    after = data.request_cancel(run_id)
    st.session_state[f"cancel-asked-{run_id}"] = True
    st.toast(f"Run #{run_id}: cancel requested ({after}).")


@st.fragment(run_every=1)
def _live_progress(run_id: int) -> None:
    status = _progress_body(run_id)
    key = f"_live_status_{run_id}"
    previous = st.session_state.get(key)
    st.session_state[key] = status
    if previous in ACTIVE and status in FINAL:
        data.clear_caches()
        st.rerun()  # redraw the whole page once: results in, no more 1 s refresh


def progress_view(run_id: int, status: str | None = None, live: bool = True) -> None:
    """Progress of a run; refreshed every second while ``live`` and the run is (or may be,
    when ``status`` is unknown) queued or running."""
    with st.container(border=True):
        if live and (status is None or status in ACTIVE):
            _live_progress(run_id)
        else:
            _progress_body(run_id)


def notes_editor(r: pd.Series) -> None:
    """Edit a run's note and tags (storage.results.set_note / set_tags)."""
    rid = int(r["run_id"])
    tags = r.get("tags") if isinstance(r.get("tags"), list) else []
    with st.form(f"notes-{rid}", border=False):
        note = st.text_area("Note", value=r.get("note") or "", key=f"note-{rid}",
                            placeholder="What was this run for? What did you conclude?")
        tag_text = st.text_input("Tags (comma-separated)", value=", ".join(tags),
                                 key=f"tags-{rid}")
        if st.form_submit_button("Save note and tags"):
            new_tags, err = parse_tags(tag_text)
            if err:
                st.error(err)
            else:
                data.set_note(rid, note)
                data.set_tags(rid, new_tags)
                st.success("Saved.")


def bundle_bytes(run_ids: Sequence[int]) -> bytes:
    return json.dumps(data.export_bundle(run_ids), indent=1, default=str).encode()


def bundle_download(run_ids: Sequence[int], key: str) -> None:
    """Download the runs as a JSON bundle (built only when clicked)."""
    ids = [int(r) for r in run_ids]
    name = "compilelab-runs-" + "-".join(map(str, ids[:8])) + ".json"
    st.download_button(
        f"Export {len(ids)} run(s) as JSON bundle", data=lambda: bundle_bytes(ids),
        file_name=name, mime="application/json", key=key, icon=":material/inventory_2:",
        on_click="ignore",
        help="Everything needed to re-open these runs elsewhere (Runs page → Import bundle).")


def bundle_import(key: str = "bundle") -> None:
    """Upload a JSON bundle and import it all-or-nothing; errors are shown, nothing written."""
    up = st.file_uploader("Import a JSON bundle", type=["json"], key=f"{key}-file",
                          help="A file exported from Compile Lab (Export … as JSON bundle).")
    if up is None:
        return
    if not st.button("Import bundle", key=f"{key}-go", icon=":material/upload:"):
        return
    try:
        payload = json.loads(up.getvalue().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        st.error(f"{up.name} is not a JSON bundle: {exc}. Nothing was imported.")
        return
    try:
        ids = data.import_bundle(payload)
    except data.bundle_error_type() as exc:
        st.error(f"Bundle rejected: {exc}. Nothing was imported.")
        return
    except Exception as exc:  # noqa: BLE001 - import is all-or-nothing in storage
        st.error(f"Import failed: {exc}. Nothing was imported.")
        return
    st.success(f"Imported {len(ids)} run(s): " + ", ".join(f"#{i}" for i in ids))
    st.page_link(PAGE_COMPARE, label="Open the imported runs", icon=":material/monitoring:",
                 query_params={"runs": ",".join(map(str, ids))})
