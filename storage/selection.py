"""Choosing runs to judge: by id, by tag (the latest finished run of each config) and by pinned
baseline (``storage/models/baseline.py``).  Plain dicts, no pandas: the gate, suites and the CLI
run on an engine host with only requirements-engine.txt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select

from contract.config_key import config_key, config_of
from contract.text import check_tag
from storage.db import Database
from storage.models import ALL_CONFIGS, Baseline, Run, RunTag, utcnow
from storage.records import load_runs_by_id
from storage.results import RunNotFound, require_run

# Runs whose results can be judged: a failed run still has the variants it measured.
JUDGED_STATUSES = ("done", "failed")


@dataclass(frozen=True)
class RunHead:
    """What choosing needs of a run, without its results."""

    run_id: int
    created_at: datetime
    status: str
    spec: dict[str, Any]

    @property
    def key(self) -> str:
        return config_key(self.spec)


def _heads(session: Any, query: Any) -> list[RunHead]:
    return [RunHead(r.id, r.created_at, r.status, r.spec if isinstance(r.spec, dict) else {})
            for r in session.execute(query)]


def _tagged(columns: Iterable[Any], tag: str, since: datetime | None, until: datetime | None,
            statuses: Iterable[str]) -> Any:
    query = (select(*columns).join(RunTag, RunTag.run_id == Run.id)
             .where(RunTag.tag == check_tag(tag), Run.status.in_(list(statuses))))
    if since is not None:
        query = query.where(Run.created_at >= since)
    if until is not None:
        query = query.where(Run.created_at <= until)
    return query


def tagged_runs(db: Database, tag: str, *, since: datetime | None = None,
                until: datetime | None = None,
                statuses: Iterable[str] = JUDGED_STATUSES) -> list[RunHead]:
    """Runs with ``tag`` in the given statuses and time window, oldest first (the columns a
    head needs only: a tag can hold thousands of runs, each with its environment and note)."""
    query = _tagged((Run.id, Run.created_at, Run.status, Run.spec), tag, since, until,
                    statuses).order_by(Run.created_at, Run.id)
    with db.session() as session:
        return _heads(session, query)


def tagged_version(db: Database, tag: str, *, since: datetime | None = None,
                   until: datetime | None = None,
                   statuses: Iterable[str] = JUDGED_STATUSES) -> tuple[int, int, int]:
    """``(count, newest id, id sum)`` of ``tagged_runs``: one cheap query whose answer changes
    whenever a run joins or leaves the selection (finished, imported, tagged, untagged,
    deleted), so a reader may cache what it computed from those runs under it."""
    query = _tagged((func.count(Run.id), func.max(Run.id), func.sum(Run.id)), tag, since,
                    until, statuses)
    with db.session() as session:
        count, newest, total = session.execute(query).one()
    return int(count or 0), int(newest or 0), int(total or 0)


def latest_per_config(heads: Iterable[RunHead]) -> dict[str, RunHead]:
    """The newest run of each config key, in the order the configs first appear."""
    out: dict[str, RunHead] = {}
    for head in heads:
        old = out.get(head.key)
        if old is None or (head.created_at, head.run_id) > (old.created_at, old.run_id):
            out[head.key] = head
    return out


def load_runs_plain(db: Database, run_ids: Iterable[int]) -> list[dict[str, Any]]:
    """``load_run`` for each id, in order, in a few queries; ``RunNotFound`` names an id that
    is not there."""
    ids = [int(i) for i in run_ids]
    runs = load_runs_by_id(db, ids)
    missing = [i for i in ids if i not in runs]
    if missing:
        raise RunNotFound(f"no run with id {missing[0]}")
    return [runs[i] for i in ids]


# ---- pinned baselines ----


def pin_run(db: Database, run_id: int) -> str:
    """Pin a finished run as the baseline of its config; returns the config key."""
    with db.session(write=True) as session:
        run = require_run(session, run_id)
        if run.status not in JUDGED_STATUSES:
            raise ValueError(f"run {run_id} is {run.status}; pin a finished run")
        spec = run.spec if isinstance(run.spec, dict) else {}
        key = config_key(spec)
        session.merge(Baseline(config_key=key, config=config_of(spec), run_id=run_id, tag=None,
                               pinned_at=utcnow()))
    return key


def pin_tag(db: Database, tag: str, spec: dict[str, Any] | None = None) -> str:
    """Pin ``tag`` (its latest run of the config) for the config of ``spec``, or for every config
    without a pin of its own when ``spec`` is None; returns the config key ("*")."""
    tag = check_tag(tag)
    key = config_key(spec) if spec is not None else ALL_CONFIGS
    config = config_of(spec) if spec is not None else {}
    with db.session(write=True) as session:
        session.merge(Baseline(config_key=key, config=config, run_id=None, tag=tag,
                               pinned_at=utcnow()))
    return key


def unpin(db: Database, key: str) -> bool:
    with db.session(write=True) as session:
        return bool(session.execute(delete(Baseline).where(Baseline.config_key == key)).rowcount)


def list_baselines(db: Database) -> list[dict[str, Any]]:
    with db.session() as session:
        return [{"config_key": b.config_key, "config": b.config, "run_id": b.run_id,
                 "tag": b.tag, "pinned_at": b.pinned_at.isoformat()}
                for b in session.scalars(select(Baseline).order_by(Baseline.pinned_at))]


def baseline_for(db: Database, spec: dict[str, Any], *, exclude: Iterable[int] = ()
                 ) -> tuple[int | None, str]:
    """The baseline run id of the config of ``spec`` and how it was chosen ("run 12 pinned",
    "latest 'nightly' run", "no baseline pinned").  Runs in ``exclude`` (the candidates) are
    never their own baseline."""
    key, skip = config_key(spec), set(exclude)
    with db.session() as session:
        pin = session.get(Baseline, key) or session.get(Baseline, ALL_CONFIGS)
        if pin is None:
            return None, "no baseline pinned"
        if pin.run_id is not None:
            return (pin.run_id if pin.run_id not in skip else None), f"run {pin.run_id} pinned"
        tag = pin.tag or ""
    heads = [h for h in tagged_runs(db, tag) if h.key == key and h.run_id not in skip]
    latest = latest_per_config(heads).get(key)
    return (latest.run_id if latest else None), f"latest run tagged {tag!r}"
