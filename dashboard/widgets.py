"""Streamlit building blocks shared by the pages: progress view, empty states, run headers,
query-param helpers. Figures come from the charts*.py modules, data from data.py; the controls
that change or carry runs (notes, bundles, delete) are in run_actions.py."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from contract import fmt
from dashboard import auth, data, safe
from dashboard.hardware import START_ONE, describe_worker

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


def runs_summary(runs: pd.DataFrame) -> str:
    """``3 runs: mlp ×2, bert_base`` (plain text: the caller escapes it)."""
    counts = runs["model"].astype(str).value_counts()
    models = ", ".join(m if n == 1 else f"{m} ×{n}" for m, n in counts.items())
    return f"{len(runs)} run{'s' if len(runs) != 1 else ''}: {models}"


def newest_with_results(runs: pd.DataFrame) -> int:
    """The newest run (``runs`` newest first, as ``list_runs`` gives them) that finished with
    results: done, else any with a finished compiled variant, else simply the newest."""
    for ok in (runs["status"] == "done", runs["best_speedup"].notna()):
        hit = runs[ok]
        if not hit.empty:
            return int(hit.iloc[0]["run_id"])
    return int(runs.iloc[0]["run_id"])


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
    from dashboard.charts_base import empty_message

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


@auth.fragment(run_every=5)
def sidebar_queue_status() -> None:
    """The sidebar's queue and worker line, refreshed every 5 s on every page (it used to be
    read once per page load and stayed stale while runs were queued, started and finished)."""

    try:
        state = data.current_queue_state()
    except Exception as exc:  # noqa: BLE001 - the pages say what to do
        st.caption(f"Database unavailable: {safe.md(exc, 300)}")
        return
    queue = state.text()
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
    finished, moving = final_and_provisional(variants)
    st.markdown(f"**{run_title(r)}** — {status}")
    silent = data.silence(r)
    if silent:  # its process died without ending it: the bar stands still
        st.warning(safe.md(silent[0].upper() + silent[1:], 500), icon=":material/heart_broken:")
    if status in ACTIVE:
        phase = r.get("progress_phase") or status
        variant = r.get("progress_variant")
        # The worker reports the fraction of the whole run; fall back to variants finished.
        frac = fmt.num(r.get("progress_fraction"))
        if frac is None:
            frac = len(finished) / len(planned) if planned else 0.0
        text = ("last reported: " if silent else "") + safe.md(
            f"{variant + ' · ' if variant else ''}{phase}") + f" · {frac:.0%} of the run"
        if planned:  # a variant with provisional figures is still being measured
            text += f" · variants final {len(finished)}/{len(planned)}" + (
                f" ({safe.md(', '.join(moving), 200)} provisional)" if moving else "")
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
            f"{v}: {s}" + (" (provisional)" if v in moving else "")
            for v, s in zip(variants["variant"], variants["status"], strict=True))))
    return status


def final_and_provisional(variants: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The variants whose figures are final (or that failed) and those whose figures may still
    move (``provisional``: more measuring processes may come, engine/orchestrate/runner.py)."""
    if variants.empty:
        return [], []
    moving = (variants["provisional"].map(lambda p: p is True or p == 1)
              if "provisional" in variants.columns else pd.Series(False, index=variants.index))
    moving &= variants["status"] == "ok"
    return list(variants.loc[~moving, "variant"]), list(variants.loc[moving, "variant"])


def _cancel(run_id: int) -> None:
    """Button callback: runs before the rerun, so the page already shows the request."""
    if not auth.can_write():  # the button is disabled; a forged widget message still stops here
        return
    after = data.request_cancel(run_id)
    st.session_state[f"cancel-asked-{run_id}"] = True
    # Shown by the progress view's body, not here: an element written from the callback of a
    # widget inside a fragment made Streamlit print its "fragment callback" warning.
    st.session_state[f"cancel-toast-{run_id}"] = f"Run #{run_id}: cancel requested ({after})."


@auth.fragment(run_every=1)
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
