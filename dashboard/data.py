"""The dashboard's only door to storage/ (and to the engine's catalogue), with Streamlit caching.

Reads are cached briefly (``st.cache_data`` with a short ttl) because several widgets on a page
ask for the same run list; every write clears those caches so the page that wrote sees it at
once. The live progress view reads uncached. The database comes from ``COMPILELAB_DB``
(``storage.db.open_database()``), one ``Database`` per URL per process (``st.cache_resource``).

storage/ modules are imported inside the functions: a page can still render its pure parts and
say what is missing while storage/ is being built or upgraded.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
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
HEARTBEAT_FRESH_S = 60  # a worker heartbeats a running run every few seconds
QUEUE_WAIT_S = 20  # a queued run this old with no live worker anywhere means "no worker"
GPU_LOOKBACK_RUNS = 50
RUNS_PAGE_LIMIT = 2000  # rows listed on the Runs page (newest first; filters reach older ones)


def db_url() -> str | None:
    return os.environ.get("COMPILELAB_DB") or None


@st.cache_resource(show_spinner=False)
def _database(url: str | None):
    from storage.db import open_database

    return open_database(url)


def database():
    """The ``storage.db.Database`` for ``$COMPILELAB_DB`` (created and migrated once)."""
    return _database(db_url())


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


# --------------------------------------------------------------------------- writes


def enqueue_run(spec: dict, tags: Sequence[str] = (), note: str = "") -> int:
    from storage import queue

    run_id = queue.enqueue_run(database(), spec, tags=list(tags), note=note)
    clear_caches()
    return run_id


def request_cancel(run_id: int) -> Any:
    from storage import queue

    out = queue.request_cancel(database(), int(run_id))
    clear_caches()
    return out


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


def delete_runs(run_ids: Sequence[int]) -> int:
    """Delete finished or queued runs (storage refuses running ones with a ValueError)."""
    from storage import results

    n = results.delete_runs(database(), [int(r) for r in run_ids])
    clear_caches()
    return n


def max_note_chars() -> int:
    from storage.text import MAX_NOTE_CHARS

    return MAX_NOTE_CHARS


def max_bundle_bytes() -> int:
    """The largest bundle file the Runs page accepts (storage's own limit)."""
    from storage import bundle

    return bundle.MAX_BUNDLE_BYTES


def bundle_error_type() -> type[Exception]:
    """``storage.bundle.BundleError`` (the message is meant for the user)."""
    from storage import bundle

    return getattr(bundle, "BundleError", ValueError)


def import_bundle(payload: dict | str | bytes):
    """Validate and import a bundle (its JSON text or bytes, parsed by storage under its limits),
    all or nothing; returns ``storage.bundle.ImportResult`` (new ids, and the ids of runs that
    were already here and not imported again). Raises BundleError with a user message."""
    from storage import bundle

    outcome = bundle.import_bundle_result(database(), payload)
    clear_caches()
    return outcome


# --------------------------------------------------------------------------- worker and GPU


def _age_s(value: Any, now: dt.datetime) -> float | None:
    """Seconds since a timestamp (naive timestamps are UTC, as storage writes them)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if ts is pd.NaT:
        return None
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return (pd.Timestamp(now) - ts).total_seconds()


@dataclass(frozen=True)
class WorkerState:
    queued: int
    running: int
    oldest_queued_age_s: float | None
    last_heartbeat_age_s: float | None

    @property
    def seems_down(self) -> bool:
        """Runs wait and nobody has heartbeat recently: no worker is taking them."""
        if self.queued == 0 or (self.oldest_queued_age_s or 0) < QUEUE_WAIT_S:
            return False
        return self.last_heartbeat_age_s is None or self.last_heartbeat_age_s > HEARTBEAT_FRESH_S


def worker_state(runs: pd.DataFrame, now: dt.datetime | None = None) -> WorkerState:
    """Judge the worker from the run list alone (workers only heartbeat the run they hold)."""
    now = now or dt.datetime.now(dt.UTC)
    if runs is None or runs.empty:
        return WorkerState(0, 0, None, None)
    queued = runs[runs["status"] == "queued"]
    running = runs[runs["status"] == "running"]
    q_ages = [a for a in (_age_s(v, now) for v in queued["created_at"]) if a is not None]
    hb = [a for a in (_age_s(v, now) for v in runs.get("heartbeat_at", [])) if a is not None]
    return WorkerState(len(queued), len(running), max(q_ages) if q_ages else None,
                       min(hb) if hb else None)


def current_worker_state() -> WorkerState:
    return worker_state(list_runs(limit=200))


@dataclass(frozen=True)
class GpuInfo:
    state: str  # "yes" | "no" | "unknown" (nothing reported says either way)
    name: str | None = None
    run_id: int | None = None


_GPU_KEYS = ("gpu", "gpu_name", "gpu_names", "cuda_device_name")
# Host-level counts (whatever device the run used); "gpu_count" is only the run's device.
_HOST_GPU_COUNT_KEYS = ("host_gpu_count", "cuda_device_count", "visible_gpu_count")
_NO_CUDA_ERRORS = ("no cuda gpu", "not compiled with cuda", "no nvidia driver",
                   "cuda is not available", "no cuda gpus are available",
                   "torch.cuda.is_available() is false")


def _gpu_name(env: dict) -> str | None:
    name = next((env[k] for k in _GPU_KEYS if env.get(k)), None)
    if isinstance(name, list | tuple):
        name = name[0] if name else None
    if isinstance(name, dict):
        name = name.get("name")
    if not isinstance(name, str) or name.strip().lower() in ("", "cpu", "none", "n/a"):
        return None
    return name


def gpu_from_environment(env: Any, device: str | None = None) -> tuple[bool, str | None] | None:
    """What one run's fingerprint says about the worker's GPU: (has_gpu, name), or None when it
    says nothing. A CPU run's fingerprint describes the CPU it used, so its ``gpu_count = 0``
    does not mean the host has no GPU; host-level counts and ``cuda_available`` do."""
    if not isinstance(env, dict) or not env:
        return None
    name = _gpu_name(env)
    host_count = next((env[k] for k in _HOST_GPU_COUNT_KEYS if k in env), None)
    run_count = env.get("gpu_count")
    if name or (isinstance(host_count, int | float) and host_count > 0) or (
            isinstance(run_count, int | float) and run_count > 0) or env.get("cuda_available"):
        return True, name or "GPU"
    if host_count == 0 or env.get("cuda_available") is False:
        return False, None
    if device == "cuda" and run_count == 0:
        return False, None
    return None


def gpu_info(runs: pd.DataFrame) -> GpuInfo:
    """Does the worker have a GPU? Read from recent runs, newest first, never from torch.cuda:
    the machine that measures is the worker's, and each run's environment fingerprint (and its
    ``gpu`` column) records the device it used. A cuda run that failed because CUDA is missing
    counts as "no"; CPU-only history leaves it "unknown"."""
    if runs is None or runs.empty:
        return GpuInfo("unknown")
    df = runs.sort_values("created_at", ascending=False) if "created_at" in runs else runs
    for _, r in df.iterrows():
        found = gpu_from_environment(r.get("environment"), r.get("device"))
        if found is None:
            gpu = r.get("gpu")
            if isinstance(gpu, str) and gpu and gpu.lower() != "cpu":
                return GpuInfo("yes", gpu, int(r["run_id"]))
            error = str(r.get("error") or "").lower()
            if r.get("device") == "cuda" and r.get("status") == "failed" and any(
                    e in error for e in _NO_CUDA_ERRORS):
                return GpuInfo("no", None, int(r["run_id"]))
            continue
        has, name = found
        return GpuInfo("yes" if has else "no", name, int(r["run_id"]))
    return GpuInfo("unknown")


def current_gpu_info() -> GpuInfo:
    return gpu_info(list_runs(limit=GPU_LOOKBACK_RUNS))
