"""The New run page's Slurm parts: "Run on: this host's worker | Slurm", and a run's job
(id, Slurm state, why it waits, its node), refreshed every few seconds while the run lives.

Slurm's words (states, reasons, node names) and the settings' are text from outside: shown
through ``safe.md``, never as Markdown of their own.
"""

from __future__ import annotations

import streamlit as st

from dashboard import data, safe
from engine.slurm.describe import job_parts

WORKER, SLURM = "this host's worker", "Slurm"
FINAL = ("done", "failed", "cancelled")


def run_on() -> bool:
    """The choice of executor; True for Slurm. Says where a Slurm job would go, or why it
    cannot (a bad setting), before anything is queued."""
    choice = st.radio("Run on", [WORKER, SLURM], horizontal=True, key="run-on",
                      help="This host's worker: any Compile Lab worker connected to this "
                           "database claims the run. Slurm: the run becomes one batch job on "
                           "the team's cluster (partition, account, QoS and limits from the "
                           "Slurm settings: docs/SLURM.md).")
    if choice != SLURM:
        return False
    try:
        settings = data.slurm_settings()
    except ValueError as exc:  # SettingsError: one line naming the setting
        st.error(safe.md(exc, 500), icon=":material/error:")
    else:
        st.caption("Slurm: " + safe.md(settings.summary(), 300))
    return True


def job_line(job: dict) -> str:
    """``Slurm job 12 · PENDING (Priority) · node gpu03 · partition gpu · limit 30 min``."""
    return "Slurm " + " · ".join(job_parts(job))


def _show(run_id: int, active: bool = False) -> None:
    try:
        job, note = data.slurm_job(run_id)
    except Exception as exc:  # noqa: BLE001 - the progress view above says the rest
        st.caption(f"Slurm job of run #{run_id}: {safe.md(exc, 300)}")
        return
    if job is None:
        return
    waits = " — this run waits for its Slurm job, not for a worker" if active else ""
    st.caption(":material/dns: " + safe.md(job_line(job), 300) + waits)
    if note:
        st.caption(safe.md(note, 300))


@st.fragment(run_every=5)
def _live(run_id: int) -> None:
    _show(run_id, active=True)


def job_panel(run_id: int, status: str | None) -> None:
    """The run's Slurm job under its progress, live while the run may still change."""
    if status in FINAL:
        _show(run_id)
    else:
        _live(run_id)
