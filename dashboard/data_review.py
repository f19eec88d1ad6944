"""Reads and writes of the baseline section and the Review page (the door to storage/ for
them, as dashboard/data.py is for the other pages), with Streamlit caching.

Judging runs costs a few queries per run plus the gate's tests. A run's baseline check is
cached for a few seconds like every other read; a window's review (seconds with a tag of
thousands of runs) is cached under the selection's version (``storage.selection
.tagged_version``, re-read every few seconds), so it is judged again only when a run joined or
left the window. Keys: the database URL and the (validated) selection.
A pin clears these caches and data.py's, so the page that pinned shows the new baseline at once.
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from dashboard import data
from engine.analysis.review import BaselineCheck, Review

# Judging a window costs seconds (400 runs read, a gate per step): cached until the selection
# changes, which ``tagged_version`` (one cheap query, its own short cache) says; the TTL only
# bounds how long an unchanged selection is kept.
REVIEW_TTL_S = 600
REVIEW_ENTRIES = 16  # selections kept (each holds up to MAX_REVIEW_RUNS runs' figures)


@st.cache_data(ttl=data.LOAD_TTL_S, show_spinner=False)
def _against_baseline(url: str | None, run_id: int) -> BaselineCheck:
    from engine.analysis.review import against_baseline

    return against_baseline(data._database(url), run_id)


def against_baseline(run_id: int) -> BaselineCheck:
    """``engine.analysis.review.against_baseline`` for this run (cached briefly)."""
    return _against_baseline(data.db_url(), int(run_id))


def report_baselines(run_ids: list[int]) -> dict[int, BaselineCheck]:
    """Each run's baseline check for the HTML report; a run that cannot be judged (not found,
    a storage error) is left out: the report still has everything else."""
    out: dict[int, BaselineCheck] = {}
    for rid in run_ids:
        try:
            out[int(rid)] = against_baseline(int(rid))
        except Exception:  # noqa: BLE001 - the run page says why; the report goes on
            continue
    return out


@st.cache_data(ttl=data.LIST_TTL_S, show_spinner=False)
def _version(url: str | None, tag: str, since: datetime | None, until: datetime | None
             ) -> tuple[int, int, int]:
    from storage.selection import tagged_version

    return tagged_version(data._database(url), tag, since=since, until=until)


@st.cache_data(ttl=REVIEW_TTL_S, max_entries=REVIEW_ENTRIES,
               show_spinner="Judging the runs of the window…")
def _review(url: str | None, tag: str, since: datetime | None, until: datetime | None,
            version: tuple[int, int, int]) -> Review:
    """``version`` is only part of the cache key: a run that joins or leaves the window makes
    a new entry, so a cached review is never staler than ``_version``'s few seconds."""
    from engine.analysis.review import load_window, review

    runs, truncated = load_window(data._database(url), tag, since, until)
    return review(runs, tag, since=since.date().isoformat() if since else None,
                  until=until.date().isoformat() if until else None, truncated=truncated)


def review(tag: str, since: datetime | None, until: datetime | None) -> Review:
    """``engine.analysis.review.review`` of the finished runs tagged ``tag`` in the window."""
    url = data.db_url()
    return _review(url, tag, since, until, _version(url, tag, since, until))


@st.cache_data(ttl=data.LIST_TTL_S, show_spinner=False)
def _tags(url: str | None) -> list[str]:
    from storage.queries import list_runs

    runs = list_runs(data._database(url), limit=data.RUNS_PAGE_LIMIT)
    seen: dict[str, int] = {}
    for tags in runs.get("tags", []):
        for tag in tags if isinstance(tags, list) else []:
            seen[tag] = seen.get(tag, 0) + 1
    return sorted(seen, key=lambda t: (-seen[t], t))


def tags() -> list[str]:
    """The tags of the recent runs, most used first (the Review page's choices)."""
    return _tags(data.db_url())


def clear_caches() -> None:
    _against_baseline.clear()
    _review.clear()
    _version.clear()
    _tags.clear()
    data.clear_caches()


def pin_run(run_id: int) -> str:
    """Pin a finished run as its config's baseline (``storage.selection.pin_run``); returns the
    config key. ValueError (not finished) and RunNotFound carry a message for the user."""
    from storage.selection import pin_run as _pin

    key = _pin(data.database(), int(run_id))
    clear_caches()
    return key
