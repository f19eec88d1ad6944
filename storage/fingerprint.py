"""What makes two runs the same run: a content fingerprint.

Two runs are **the same** when their fingerprints are equal: the SHA-256 of the canonical JSON
of the run in its bundle form (storage/bundle_export.py) *without* what is annotation or
bookkeeping:

* kept (the measurement): ``model``, ``created_at`` (to the microsecond), ``started_at``,
  ``finished_at``, ``status``, ``error``, ``spec``, ``environment`` and every variant with all
  its results, statistics, ``extra``, graph breaks, recompiles and sweep points;
* left out: ``source_id`` (a database's own id), ``tags`` and ``note`` (annotations anyone may
  edit after the fact: retagging a run does not make it another measurement), ``dims``,
  ``dtype`` and ``device`` (copies of the spec's).

Canonical JSON: keys sorted, ``null`` values dropped (a field a version-1 bundle lacks equals
one stored as NULL), every number written as the shortest repr of its double (``5`` and
``5.0`` are the same number once stored).  So a run exported, imported elsewhere and exported
again has the same fingerprint, and ``python -m engine import`` of a bundle twice adds nothing
the second time.  Runs measured separately never share one: their ``created_at`` differ.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

IGNORED_RUN_KEYS = frozenset({"source_id", "tags", "note", "dims", "dtype", "device"})
TIME_KEYS = ("created_at", "started_at", "finished_at")


def _utc(value: Any) -> Any:
    """An ISO 8601 time as UTC with microseconds ("Z" and "+00:00" are one moment)."""
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return repr(float(value))  # as text: JSON would print 5.0 and 5 differently
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return str(value)


def run_fingerprint(run: Mapping[str, Any]) -> str:
    """64 hex digits identifying a run given in its bundle form (see the module notes)."""
    body = {k: _utc(v) if k in TIME_KEYS else v for k, v in run.items()
            if k not in IGNORED_RUN_KEYS}
    text = json.dumps(_canonical(body), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
