"""The dashboard's only door to storage/ (and to the engine's catalogue), with Streamlit caching.

Reads are cached briefly (``st.cache_data`` with a short ttl) because several widgets on a page
ask for the same run list; every write clears those caches so the page that wrote sees it at
once. The live progress view reads uncached. The database comes from ``COMPILELAB_DB``
(``storage.db.open_database()``), one ``Database`` per URL per process (``st.cache_resource``).

storage/ modules are imported inside the functions: a page can still render its pure parts and
say what is missing while storage/ is being built or upgraded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.catalogue import (
    ModelChoice,
    load_catalogue,
    load_model,
    load_registries,
    search_registries,
)

LIST_TTL_S = 3
LOAD_TTL_S = 2
RUNS_PAGE_LIMIT = 2000  # rows listed on the Runs page (newest first; filters reach older ones)


def db_url() -> str | None:
    return os.environ.get("COMPILELAB_DB") or None


@st.cache_resource(show_spinner=False)
def _database(url: str | None):
    from storage.db import open_database

    return open_database(url, lasting=True)


def database():
    """The ``storage.db.Database`` for ``$COMPILELAB_DB`` (created and migrated once)."""
    return _database(db_url())


def grid_plan_text(spec: dict) -> str:
    """How many variants a spec has and how long it should take (engine/analysis/grid_plan.py), from
    earlier runs of the model on the device where there are any."""
    from engine.analysis.grid_plan import plan
    from storage.history import process_seconds

    try:
        history = process_seconds(database(), spec["model"], spec["device"])
    except Exception:  # noqa: BLE001 - an estimate without history beats no estimate
        history = None
    return plan(spec, history).text()


def describe_url() -> str:
    """``$COMPILELAB_DB`` (or the default) with any password masked, without opening it."""
    raw = db_url()
    if raw is None:
        return "default sqlite:///compilelab.db"
    try:
        from sqlalchemy.engine import make_url

        return make_url(raw).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL may still hold a secret
        return "COMPILELAB_DB (not a valid SQLAlchemy URL)"


def describe_database() -> str:
    try:
        return database().url
    except Exception as exc:  # noqa: BLE001 - shown to the user as is
        return f"unavailable ({exc})"


def clear_caches() -> None:
    _list_runs.clear()
    _load_runs.clear()


# --------------------------------------------------------------------------- catalogue


@st.cache_resource(show_spinner="Loading the model catalogue…", ttl=60)
def _catalogue(plugin_dir: str | None) -> list[ModelChoice]:  # ttl: new plugin files show up
    return load_catalogue()


def catalogue() -> list[ModelChoice]:
    """Catalogue models (built-ins + operator plugins), cached per plugin folder."""
    return _catalogue(os.environ.get("COMPILELAB_PLUGIN_DIR"))


@st.cache_resource(show_spinner=False, ttl=60)
def registries() -> list[dict]:
    """The model registries and whether their libraries are installed (no library imported)."""
    return load_registries()


@st.cache_data(show_spinner="Searching the registries (imports timm, torchvision, "
               "transformers)…", ttl=3600, max_entries=200)
def registry_search(text: str) -> list[str]:
    return search_registries(text)


@st.cache_resource(show_spinner=False, ttl=60, max_entries=200)
def model_choice(name: str) -> ModelChoice:
    """A model by name, registry names (``timm:vit_base_patch16_224``) included."""
    return load_model(name)


def engine_normalise(spec: dict) -> dict:
    """``engine.spec.normalise`` without the torch-needing checks: the spec the worker will
    accept (defaults filled, variants ordered), or ``SpecError`` naming the field to fix."""
    from engine.spec import normalise

    return normalise(spec)


# --------------------------------------------------------------------------- reads


@st.cache_data(ttl=LIST_TTL_S, show_spinner=False)
def _list_runs(url: str | None, filters: tuple) -> pd.DataFrame:
    from storage import queries

    return queries.list_runs(_database(url), **dict(filters))


def list_runs(**filters: Any) -> pd.DataFrame:
    """``storage.queries.list_runs`` with None filters dropped, cached for a few seconds."""
    clean = tuple(sorted((k, v) for k, v in filters.items() if v not in (None, "", [])))
    return _list_runs(db_url(), clean)


@st.cache_data(ttl=LIST_TTL_S, show_spinner=False)
def _run_cautions(url: str | None, run_ids: tuple[int, ...]) -> dict[int, list[str]]:
    from engine.analysis.verdict import distrust
    from storage.trust import trust_rows

    return {rid: distrust(rows) for rid, rows in trust_rows(_database(url), run_ids).items()}


def run_cautions(run_ids: Sequence[int]) -> dict[int, list[str]]:
    """Per run with results, its verdict's cautions about its own figures in a word each
    (``engine.analysis.verdict.distrust``: noisy, busy host, ...), read from a few values per
    variant (storage/trust.py), cached like the list."""
    return _run_cautions(db_url(), tuple(int(r) for r in run_ids))


@st.cache_data(ttl=LOAD_TTL_S, show_spinner=False)
def _load_runs(url: str | None, run_ids: tuple[int, ...]) -> dict[str, pd.DataFrame]:
    from storage import queries

    return queries.load_runs(_database(url), list(run_ids))


def load_runs(run_ids: Sequence[int]) -> dict[str, pd.DataFrame]:
    """``storage.queries.load_runs`` for these ids (cached for a couple of seconds)."""
    return _load_runs(db_url(), tuple(int(r) for r in run_ids))


def load_runs_live(run_ids: Sequence[int]) -> dict[str, pd.DataFrame]:
    """Uncached ``load_runs`` for the live progress view."""
    from storage import queries

    return queries.load_runs(database(), [int(r) for r in run_ids])


def silence(run: Any) -> str | None:
    """For a running run whose heartbeat stopped (its process died without ending it): what
    ``show`` says of it, else None. ``run``: a row of the runs frame."""
    from storage.queue import silence_note, silent_for_s

    seconds = silent_for_s(run.get("status"), run.get("heartbeat_at"))
    return None if seconds is None else silence_note(seconds, run.get("executor") == "slurm")


# --------------------------------------------------------------------------- writes


def enqueue_run(spec: dict, tags: Sequence[str] = (), note: str = "") -> int:
    from storage import queue

    run_id = queue.enqueue_run(database(), spec, tags=list(tags), note=note)
    clear_caches()
    return run_id


def request_cancel(run_id: int) -> Any:
    """Cancel a run; a Slurm run's job is cancelled too (``scancel``; if Slurm cannot be
    reached now, the reconciler does it later: the run is cancelled either way)."""
    from engine.slurm.submit import cancel_job
    from storage import queue

    out = queue.request_cancel(database(), int(run_id))
    if out in ("cancelled", "running"):
        cancel_job(database(), int(run_id))
    clear_caches()
    return out


# --------------------------------------------------------------------------- Slurm


def slurm_settings() -> Any:
    """The Slurm settings in force (engine/slurm/settings.py); raises SettingsError."""
    from engine.slurm.settings import load_settings

    return load_settings()


def submit_to_slurm(spec: dict, tags: Sequence[str] = (), note: str = "") -> Any:
    """Store the run and submit its Slurm job (engine/slurm/submit.py): ``Submitted``, or
    SettingsError / SlurmError with one line for the user. File and module references never
    come from the browser, so the job runs catalogue and plugin models only."""
    from engine.slurm.submit import submit_run

    try:
        return submit_run(database(), spec, tags=list(tags), note=note, allow_user_models=False)
    finally:
        clear_caches()


def slurm_job(run_id: int) -> tuple[dict | None, str | None]:
    """A run's Slurm job after asking Slurm about it (at most every few seconds per run) and a
    line saying why Slurm could not be asked, if it could not."""
    from engine.slurm.reconcile import refresh
    from storage.slurm_jobs import job_of

    note = refresh(database(), int(run_id))
    return job_of(database(), int(run_id)), note


def set_note(run_id: int, text: str) -> None:
    from storage import results

    results.set_note(database(), int(run_id), text)
    clear_caches()


def set_tags(run_id: int, tags: Sequence[str]) -> None:
    from storage import results

    results.set_tags(database(), int(run_id), list(tags))
    clear_caches()


def export_bundle(run_ids: Sequence[int]) -> dict:
    from storage import bundle

    return bundle.export_bundle(database(), [int(r) for r in run_ids])


def list_artifacts(run_ids: Sequence[int]) -> list[dict]:
    """The files the runs kept (storage/artifacts.py), without their bytes, each with its run."""
    from storage import artifacts

    out: list[dict] = []
    for run_id in dict.fromkeys(int(r) for r in run_ids):
        out += [{**a, "run_id": run_id} for a in artifacts.list_artifacts(database(), run_id)]
    return out


def max_artifact_bytes() -> int:
    """The most bytes storage reads back for one kept file (``storage.artifacts.MAX_BYTES``)."""
    from storage import artifacts

    return artifacts.MAX_BYTES


def artifact_loader(run_id: int, variant: str, kind: str):
    """A callable for ``st.download_button``: reads the bytes only when the user clicks (size
    capped by storage), never unpacked here."""
    from storage import artifacts

    return lambda: artifacts.read_artifact(database(), int(run_id), str(variant), kind)[1]


def delete_runs(run_ids: Sequence[int]) -> int:
    """Delete finished or queued runs (storage refuses running ones with a ValueError)."""
    from storage import results

    n = results.delete_runs(database(), [int(r) for r in run_ids])
    clear_caches()
    return n


def max_note_chars() -> int:
    from contract.text import MAX_NOTE_CHARS

    return MAX_NOTE_CHARS


def max_bundle_bytes() -> int:
    """The largest bundle file the Runs page accepts: storage's own limit, read where storage
    checks it (storage/bundle_validation.py), so the page and the import never disagree."""
    from storage import bundle_validation

    return bundle_validation.MAX_BUNDLE_BYTES


def bundle_error_type() -> type[Exception]:
    """``storage.bundle.BundleError`` (the message is meant for the user)."""
    from storage import bundle

    return getattr(bundle, "BundleError", ValueError)


def import_bundle(payload: dict | str | bytes):
    """Validate and import a bundle (its JSON text or bytes, parsed by storage under its limits),
    all or nothing; returns ``storage.bundle.ImportResult`` (new ids, and the ids of runs that
    were already here and not imported again). Raises BundleError with a user message."""
    import engine.spec  # noqa: F401  (installs the validator the import checks specs with)
    from storage import bundle

    outcome = bundle.import_bundle_result(database(), payload)
    clear_caches()
    return outcome


# --------------------------------------------------------------------------- workers


def live_workers() -> list[dict]:
    """The workers connected now (``storage.workers.live_workers``), uncached: the New run page
    and the sidebar must not offer a worker that stopped seconds ago."""
    from storage import workers

    return workers.live_workers(database())


def current_queue_state():
    """``dashboard.hardware.QueueState`` of the queue and the connected workers (uncached: two
    small queries, read by the sidebar's periodic refresh)."""
    from dashboard.hardware import queue_state
    from storage import workers

    db = database()
    return queue_state(workers.queue_summary(db), workers.live_workers(db))
