"""Streamlit building blocks shared by the pages: progress view, empty states, run headers,
notes/tags editor, query-param helpers. Figures come from charts.py, data from data.py."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from dashboard import auth, data, safe
from dashboard.hardware import START_ONE, describe_worker
from dashboard.spec import parse_tags
from engine import fmt

PAGE_NEW = "views/new_run.py"
PAGE_RUNS = "views/runs.py"
PAGE_COMPARE = "views/compare.py"
PAGE_SWEEP = "views/sweep.py"
PAGE_MODELS = "views/models.py"
PAGE_REVIEW = "views/review.py"
ACTIVE = ("queued", "running")
FINAL = ("done", "failed", "cancelled")
STATUS_ICON = {"queued": ":material/schedule:", "running": ":material/autorenew:",
               "done": ":material/check_circle:", "failed": ":material/cancel:",
               "cancelled": ":material/block:"}


# --------------------------------------------------------------------------- query params


MAX_RUN_ID = 2**63 - 1  # the database's integer; a larger id cannot name a run
MAX_LINKED_RUNS = 200  # ids taken from one link (a page of 5000 runs is no comparison)


def parse_run_id(text: str | None) -> int | None:
    """A run id from a URL: plain ASCII digits up to ``MAX_RUN_ID``, else None.

    Why not ``str.isdigit`` + ``int``: ``"²".isdigit()`` is True and ``int("²")`` raises; a
    5000-digit id raises in ``int`` (Python's 4300-digit limit); 99999999999999999999 parses
    but overflows SQLite's integer inside the query. Each used to end in a traceback.
    """
    p = (text or "").strip().lstrip("#")
    if not p or len(p) > 19 or not (p.isascii() and p.isdigit()):
        return None
    value = int(p)
    return value if 0 < value <= MAX_RUN_ID else None


def parse_run_ids(raw: str | Sequence[str] | None) -> tuple[list[int], list[str]]:
    """``"3,7"`` (or repeated ``?runs=3&runs=7``) -> ([3, 7], invalid parts)."""
    if raw is None:
        return [], []
    parts = [raw] if isinstance(raw, str) else list(raw)
    ids, bad = [], []
    for part in ",".join(parts).split(","):
        if not part.strip():
            continue
        rid = parse_run_id(part)
        if rid is None:
            bad.append(part.strip())
        elif rid not in ids:
            ids.append(rid)
    return ids[:MAX_LINKED_RUNS], bad


def run_ids_param() -> list[int]:
    ids, bad = parse_run_ids(st.query_params.get_all("runs"))
    if bad:
        shown = ", ".join(repr(b[:24] + ("…" if len(b) > 24 else "")) for b in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        st.warning(f"Ignored {len(bad)} run id(s) that are not run numbers (1 to "
                   f"{MAX_RUN_ID}): {safe.md(shown)}{more}")
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
        where.markdown(f"**{safe.md(fig.layout.title.text)}**")
        where.caption(message)


# --------------------------------------------------------------------------- empty states


def no_runs_yet() -> None:
    st.info(
        "**No runs yet.** Start one on **New run** (pick a model, press *Queue run*), or from a "
        "shell: `python -m engine run --model mlp`. Runs are measured by the worker: start it "
        f"with {START_ONE}.", icon=":material/science:")
    st.page_link(PAGE_NEW, label="Start a run", icon=":material/play_arrow:")


def worker_banner(state=None) -> None:
    """Warn when queued runs will not start: no worker is connected, or none of the connected
    ones has what a run needs (its device, GPU model or torch release)."""
    try:
        state = state or data.current_queue_state()
    except Exception:  # noqa: BLE001 - the page itself reports storage problems
        return
    if state.seems_down:
        st.warning(
            f"**No worker running** — {state.queued} run(s) queued. Start one with {START_ONE}; "
            "queued runs are kept and start as soon as it is up.", icon=":material/warning:")
    elif state.stranded:
        ids = ", ".join(f"#{i}" for i in state.stranded[:10])
        st.warning(f"Run(s) {ids} need a device, GPU model or torch release that no connected "
                   "worker has: they wait until such a worker connects.",
                   icon=":material/warning:")


@st.fragment(run_every=5)
def sidebar_queue_status() -> None:
    """The sidebar's queue and worker line, refreshed every 5 s on every page (it used to be
    read once per page load and stayed stale while runs were queued, started and finished)."""

    try:
        state = data.current_queue_state()
    except Exception as exc:  # noqa: BLE001 - the pages say what to do
        st.caption(f"Database unavailable: {safe.md(exc, 300)}")
        return
    queue = (f"{state.running} running, {state.queued} queued" if state.running or state.queued
             else "queue empty")
    if state.seems_down:
        st.caption(f"⚠️ {queue}; no worker running: start one with {START_ONE}.")
    elif not state.workers:
        st.caption(f"No worker running ({queue}). Start one with {START_ONE}.")
    else:
        n = len(state.workers)
        st.caption(safe.md(f"{n} worker{'s' if n > 1 else ''} connected; {queue}."),
                   help="\n".join(f"- {safe.md(describe_worker(w), 300)}"
                                   for w in state.workers))


def storage_unavailable(exc: Exception) -> None:
    st.error(f"Cannot open the database ({safe.md(data.describe_url())}): {safe.md(exc, 500)}. "
             "Set `COMPILELAB_DB` to a SQLAlchemy URL and reload.", icon=":material/error:")


# --------------------------------------------------------------------------- runs


def _is_train(spec: object) -> bool:
    return isinstance(spec, dict) and spec.get("step") == "train"


def _step_label(spec: object) -> str:
    """" · training step (adamw, bfloat16 autocast)": the dtype beside it is the weights', and
    autocast says what the matmuls ran in."""
    if not _is_train(spec):
        return ""
    assert isinstance(spec, dict)
    what = [str(spec["optimizer"])] if isinstance(spec.get("optimizer"), str) else []
    autocast = spec.get("autocast")
    if isinstance(autocast, str) and autocast not in ("", "none"):
        what.append(f"{autocast} autocast")
    return " · training step" + (f" ({', '.join(what)})" if what else "")


def run_title(r: pd.Series) -> str:
    """Markdown title of a run: the status icon, then its user text escaped (``safe.md``)."""
    icon = STATUS_ICON.get(r.get("status"), "")
    dims = r.get("dims_label") or ""
    gpu = r.get("gpu")
    show_gpu = isinstance(gpu, str) and gpu and gpu.lower() not in ("cpu", str(r.get("device")))
    text = (f"Run #{r['run_id']} · {r.get('model')} ({dims}) · {r.get('dtype')} · "
            f"{r.get('device')}" + (f" · {gpu}" if show_gpu else "")  # not "cpu · cpu"
            + _step_label(r.get("spec")))
    return f"{icon} {safe.md(text, 300)}"


def _progress_body(run_id: int) -> str | None:
    """Render one run's live status; returns its status (None when it vanished)."""
    try:
        d = data.load_runs_live([run_id])
    except Exception as exc:  # noqa: BLE001
        st.error(f"Cannot read run #{run_id}: {safe.md(exc, 500)}")
        return None
    runs = d.get("runs", pd.DataFrame())
    if runs.empty:
        st.warning(f"Run #{run_id} does not exist.")
        return None
    r = runs.iloc[0]
    status = r["status"]
    if toast := st.session_state.pop(f"cancel-toast-{run_id}", None):
        st.toast(toast)
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
        text = safe.md(f"{variant + ' · ' if variant else ''}{phase}") + f" · {frac:.0%} of the run"
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
                      on_click=_cancel, args=(run_id,), disabled=not auth.can_write(),
                      help=None if auth.can_write() else auth.READ_ONLY_HELP)
        if status == "queued":
            worker_banner()
    else:
        if status == "failed" and r.get("error"):
            st.error(f"Run failed: {safe.md(r['error'], 2000)}")
        st.page_link(PAGE_COMPARE, label=f"Open run #{run_id}", icon=":material/monitoring:",
                     query_params={"runs": str(run_id)})
    if not variants.empty:
        st.caption(safe.md(" · ".join(
            f"{v}: {s}" for v, s in zip(variants["variant"], variants["status"], strict=True))))
    return status


def _cancel(run_id: int) -> None:
    """Button callback: runs before the rerun, so the page already shows the request."""
    if not auth.can_write():  # the button is disabled; a forged widget message still stops here
        return
    after = data.request_cancel(run_id)
    st.session_state[f"cancel-asked-{run_id}"] = True
    # Shown by the progress view's body, not here: an element written from the callback of a
    # widget inside a fragment made Streamlit print its "fragment callback" warning.
    st.session_state[f"cancel-toast-{run_id}"] = f"Run #{run_id}: cancel requested ({after})."


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
    """Edit a run's note and tags (storage.results.set_note / set_tags); read-only viewers see
    them as plain text."""
    rid = int(r["run_id"])
    tags = r.get("tags") if isinstance(r.get("tags"), list) else []
    if not auth.can_write():
        st.caption("Note")
        st.text(r.get("note") or "(none)")
        st.caption("Tags")
        st.text(", ".join(tags) or "(none)")
        return
    note_max = data.max_note_chars()
    with st.form(f"notes-{rid}", border=False):
        # max_chars: the browser stops at the limit (storage refuses a longer note; the
        # editor used to crash on it at 20 001 characters).
        note = st.text_area("Note", value=(r.get("note") or "")[:note_max], key=f"note-{rid}",
                            max_chars=note_max,
                            placeholder="What was this run for? What did you conclude?")
        tag_text = st.text_input("Tags (comma-separated)", value=", ".join(tags),
                                 key=f"tags-{rid}")
        if st.form_submit_button("Save note and tags"):
            # Tags left as they were are saved as they were: a tag given on the CLI may hold a
            # comma ("a, b") and must not split in two because a note was edited.
            new_tags, err = (tags, None) if tag_text == ", ".join(tags) else parse_tags(tag_text)
            if err:
                st.error(safe.md(err))
                return
            try:
                data.set_note(rid, note)
                data.set_tags(rid, new_tags)
            except (ValueError, TypeError, LookupError) as exc:  # storage's message is for users
                st.error(f"Not saved: {safe.md(exc, 500)}")
            else:
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
        help="Everything needed to re-open these runs elsewhere (Runs page → Import bundle). "
        "Kept TORCH_TRACE logs are not in the bundle: download them from the run.")


def bundle_import(key: str = "bundle") -> None:
    """Upload a JSON bundle and import it all-or-nothing; errors are shown, nothing written.

    The raw bytes go to storage, which parses them under its limits (size, nesting depth,
    5000-digit numbers, NaN): parsing here with ``json.loads`` let a deeply nested file end
    in a RecursionError traceback."""
    if not auth.can_write():
        st.caption("Importing runs needs write access (you are signed in read-only).")
        return
    up = st.file_uploader("Import a JSON bundle", type=["json"], key=f"{key}-file",
                          help="A file exported from Compile Lab (Export … as JSON bundle).")
    if up is None:
        return
    if not st.button("Import bundle", key=f"{key}-go", icon=":material/upload:"):
        return
    name = safe.md(up.name, 120)
    limit = data.max_bundle_bytes()
    if up.size > limit:
        st.error(f"{name} is {up.size:,} bytes; a bundle may be at most {limit:,} bytes. "
                 "Nothing was imported.")
        return
    try:
        outcome = data.import_bundle(up.getvalue())
    except data.bundle_error_type() as exc:
        st.error(f"Bundle rejected ({name}): {safe.md(exc, 1000)}. Nothing was imported.")
        return
    except Exception as exc:  # noqa: BLE001 - import is all-or-nothing in storage
        st.error(f"Import of {name} failed: {safe.md(exc, 1000)}. Nothing was imported.")
        return
    # Said at the top of the page after a full rerun: drawn here, the page above (its "No runs
    # yet" empty state, its table) stayed as it was before the import.
    st.session_state["import-outcome"] = (name, list(outcome.new_ids),
                                          list(outcome.existing_ids))
    st.rerun()


def import_outcome() -> None:
    """What the last bundle import did (set by ``bundle_import``, shown once)."""
    if "import-outcome" not in st.session_state:
        return
    name, ids, already = st.session_state.pop("import-outcome")
    if already:
        st.info(f"{len(already)} run(s) of {name} are already in this database (as "
                + ", ".join(f"#{i}" for i in already[:20]) + ("…" if len(already) > 20 else "")
                + "): not imported again.")
    if ids:
        st.success(f"Imported {len(ids)} run(s): " + ", ".join(f"#{i}" for i in ids[:50]))
    shown = ids or already
    if shown:
        st.page_link(PAGE_COMPARE, label="Open the imported runs", icon=":material/monitoring:",
                     query_params={"runs": ",".join(map(str, shown[:MAX_LINKED_RUNS]))})


def delete_runs_control(run_ids: Sequence[int], running: Sequence[int] = ()) -> None:
    """Delete the selected runs, after a confirmation step (storage refuses running runs).

    Two steps in session state, not a dialog: the question names the runs, and nothing is
    deleted unless "Delete permanently" is pressed while the same runs are still selected."""
    ids = [int(r) for r in run_ids]
    pending = st.session_state.get("delete-pending")
    if pending != ids:
        if st.button(f"Delete {len(ids)} run(s)…", key="delete-ask", icon=":material/delete:"):
            st.session_state["delete-pending"] = ids
            st.rerun()
        return
    names = ", ".join(f"#{i}" for i in ids[:20]) + ("…" if len(ids) > 20 else "")
    if running:
        st.warning(f"Runs {', '.join(f'#{i}' for i in running)} are running: cancel them "
                   "first, then delete.")
    st.warning(f"Delete {names} and all their results? This cannot be undone "
               "(export them as a bundle first to keep a copy).", icon=":material/warning:")
    yes, no = st.columns(2)
    if yes.button("Delete permanently", key="delete-confirm", type="primary",
                  disabled=bool(running)):
        st.session_state.pop("delete-pending", None)
        if not auth.can_write():
            st.error(auth.READ_ONLY_HELP)
            return
        try:
            n = data.delete_runs(ids)
        except (ValueError, LookupError) as exc:
            st.error(f"Nothing deleted: {safe.md(exc, 500)}")
            return
        st.session_state.pop("runs-initial-selection", None)
        set_param("selected", None)
        st.session_state["delete-done"] = f"Deleted {n} run(s): {names}."
        st.rerun()
    if no.button("Keep them", key="delete-cancel"):
        st.session_state.pop("delete-pending", None)
        st.rerun()
