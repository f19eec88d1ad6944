"""A run against its baseline, and a tag's (or suite's) runs over a time window, judged by the
one gate (engine/analysis/gate.py): no statistics of its own.

* ``against_baseline``: the baseline of a run's config (``storage.selection.baseline_for``: the
  pinned run, or the latest run of the pinned tag) and ``engine.analysis.gate.gate`` on that one pair,
  with the tag's earlier runs of the config as compile-time history, exactly as
  ``python -m engine gate --baseline TAG`` would use them.
* ``review``: the runs of a window grouped by config (contract/config_key.py), oldest first.  Each
  run is judged against the run of its config just before it (``engine.analysis.gate.compare_runs``, the
  earlier runs as compile-time history), so a regression or improvement is marked at the run
  where it appeared, with that run's commit and torch.  The headline figures per mode
  (engine/analysis/headline.py) are those of each config's first and latest run in the window.

Plain dicts in, dataclasses out (no pandas): what the dashboard draws and the HTML report
prints.  Only ``against_baseline`` and ``load_window`` touch the database (through storage/).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contract.config_key import config_key, config_label
from engine.analysis.gate import HISTORY_RUNS, Change, GateReport, Thresholds, compare_runs, gate
from engine.analysis.headline import Headline, cells, headline

Run = Mapping[str, Any]
MAX_REVIEW_RUNS = 400  # runs read for one review (the newest ones): a window, not the archive

# How a gate verdict reads to people in a review meeting (the gate's own words are for CI).
VERDICT_LABELS = {
    "regression": "regressed",
    "improvement": "improved",
    "unchanged": "within threshold",
    "not significant": "within noise",  # beyond the threshold, not established by the test
    "untested": "not tested",
    "still failing": "still failing",
}
REAL = ("regression", "improvement")


def verdict_label(verdict: str) -> str:
    return VERDICT_LABELS.get(verdict, verdict)


# --------------------------------------------------------------------------- one run


@dataclass
class BaselineCheck:
    """A run judged against the baseline of its config (``report`` None: nothing to judge)."""

    run_id: int
    config_key: str
    baseline_id: int | None
    how: str
    """How the baseline was chosen ("run 12 pinned", "latest run tagged 'nightly'", or "no
    baseline pinned")."""
    is_baseline: bool = False
    """This run is the pinned baseline of its config."""
    report: GateReport | None = None
    not_judged: str = ""
    """Why there is no report although a baseline exists (the run has not finished)."""


def _pinned_tag(db: Any, spec: Mapping[str, Any]) -> str | None:
    """The tag pinned for this config (its own pin first, else the every-config pin)."""
    from storage.models import ALL_CONFIGS
    from storage.selection import list_baselines

    pins = {b["config_key"]: b for b in list_baselines(db)}
    pin = pins.get(config_key(spec)) or pins.get(ALL_CONFIGS)
    return pin["tag"] if pin and pin["run_id"] is None else None


def _tag_history(db: Any, tag: str, base: Run, exclude: int) -> list[dict[str, Any]]:
    """The tag's last ``HISTORY_RUNS`` runs of the baseline's config up to the baseline: the
    replicates of its cold compile time (as ``engine gate --baseline TAG`` takes them)."""
    from storage.selection import load_runs_plain, tagged_runs

    key, when = config_key(base.get("spec") or {}), _when(base)
    same = [h.run_id for h in tagged_runs(db, tag) if h.key == key and h.run_id != exclude
            and (when is None or _aware(h.created_at) <= when)]
    return load_runs_plain(db, same[-HISTORY_RUNS:]) or [dict(base)]


def against_baseline(db: Any, run_id: int, thr: Thresholds | None = None) -> BaselineCheck:
    """``run_id`` against its config's baseline; ``storage.results.RunNotFound`` if no such run."""
    from storage.selection import JUDGED_STATUSES, baseline_for, load_runs_plain

    thr = thr or Thresholds()
    cand = load_runs_plain(db, [run_id])[0]
    spec = cand.get("spec") or {}
    base_id, how = baseline_for(db, spec, exclude=[run_id])
    check = BaselineCheck(run_id, config_key(spec), base_id, how,
                          is_baseline=how == f"run {run_id} pinned")
    if base_id is None:
        return check
    if cand.get("status") not in JUDGED_STATUSES:
        check.not_judged = f"run {run_id} is {cand.get('status')}: judged once it has finished"
        return check
    base = load_runs_plain(db, [base_id])[0]
    tag = _pinned_tag(db, spec)
    history = {base_id: _tag_history(db, tag, base, run_id)} if tag else None
    check.report = gate([(base, cand)], thr, history=history)
    return check


# --------------------------------------------------------------------------- a window of runs


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _when(run: Run) -> datetime | None:
    try:
        return _aware(datetime.fromisoformat(str(run.get("created_at"))))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class TrendPoint:
    """One variant of one run on its config's trend line."""

    config_key: str
    variant: str
    run_id: int
    created_at: str | None
    speedup: float | None
    ci_low: float | None
    ci_high: float | None
    status: str
    commit: str | None
    torch: str | None
    marks: tuple[str, ...] = ()
    """The regressions and improvements (``figure: verdict``) that appeared at this run."""
    previous_run: int | None = None


@dataclass
class ConfigTrend:
    key: str
    label: str
    runs: list[int]
    points: list[TrendPoint] = field(default_factory=list)


@dataclass
class Review:
    """A tag's runs in a window: trends per config, changes biggest first, headline figures."""

    tag: str
    since: str | None
    until: str | None
    run_count: int
    trends: list[ConfigTrend] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    """Step changes (each run against the previous run of its config): regressions and
    improvements biggest first, then those beyond a threshold but not significant."""
    modes: list[tuple[str, Headline | None, Headline]] = field(default_factory=list)
    """Per mode: headline of each config's first run in the window, and of its latest run."""
    truncated: bool = False
    runs_info: dict[int, dict[str, Any]] = field(default_factory=dict)
    """By run id: created_at, commit, torch (for hovers and the changes table)."""


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _label(value: Any) -> str | None:
    """A stored environment value as the text hovers and tables show (None when absent).
    ``environment`` is free-form JSON from whoever wrote the run (an imported bundle may say
    ``"commit": 12345`` or a list): a non-text value crashed the trend charts' ``commit[:12]``."""
    if value is None or value == "":
        return None
    from contract.text import one_line

    return one_line(value if isinstance(value, str) else repr(value), 200)


def _info(run: Run) -> dict[str, Any]:
    env = run.get("environment") if isinstance(run.get("environment"), dict) else {}
    return {"created_at": run.get("created_at"), "commit": _label(env.get("commit")),
            "torch": _label(run.get("torch_version") or env.get("torch")),
            "gpu": _label(run.get("gpu"))}


def _sort_changes(changes: list[Change]) -> list[Change]:
    """Real changes (regressions, improvements) first, then beyond-threshold-but-not-
    significant ones; each biggest first (a variant that stopped passing counts as biggest)."""
    shown = [c for c in changes if c.verdict in (*REAL, "not significant")]
    return sorted(shown, key=lambda c: (c.verdict not in REAL, -c.magnitude()))


def review(runs: Sequence[Run], tag: str, *, since: str | None = None,
           until: str | None = None, thr: Thresholds | None = None,
           truncated: bool = False) -> Review:
    """Judge each run against the previous run of its config (see the module notes)."""
    thr = thr or Thresholds()
    oldest = datetime.min.replace(tzinfo=UTC)
    ordered = sorted(runs, key=lambda r: (_when(r) or oldest, r.get("run_id") or 0))
    by_key: dict[str, list[Run]] = {}
    for run in ordered:
        by_key.setdefault(config_key(run.get("spec") or {}), []).append(run)
    out = Review(tag, since, until, len(ordered), truncated=truncated,
                 runs_info={int(r["run_id"]): _info(r) for r in ordered})
    steps: list[Change] = []
    for key, series in by_key.items():
        trend = ConfigTrend(key, config_label(series[-1].get("spec") or {}),
                            [int(r["run_id"]) for r in series])
        for i, run in enumerate(series):
            prev = series[i - 1] if i else None
            changes = compare_runs(prev, run, thr, label=trend.label,
                                   history=series[max(0, i - HISTORY_RUNS):i]) if prev else []
            steps.extend(changes)
            info = out.runs_info[int(run["run_id"])]
            for variant, row in cells(run).items():
                marks = tuple(f"{c.figure}: {verdict_label(c.verdict)}" for c in changes
                              if c.variant == variant and c.verdict in REAL)
                row = row or {}
                trend.points.append(TrendPoint(
                    key, variant, int(run["run_id"]), run.get("created_at"),
                    _num(row.get("speedup")), _num(row.get("speedup_ci_low")),
                    _num(row.get("speedup_ci_high")), str(row.get("status") or "missing"),
                    info["commit"], info["torch"], marks,
                    int(prev["run_id"]) if prev else None))
        out.trends.append(trend)
    out.changes = _sort_changes(steps)
    start = headline([s[0] for s in by_key.values()])
    end = headline([s[-1] for s in by_key.values()])
    first = {h.mode: h for h in start}
    out.modes = [(h.mode, first.get(h.mode), h) for h in end]
    return out


def load_window(db: Any, tag: str, since: datetime | None, until: datetime | None
                ) -> tuple[list[dict[str, Any]], bool]:
    """The finished runs tagged ``tag`` in the window (the newest ``MAX_REVIEW_RUNS``), and
    whether older ones were left out."""
    from storage.selection import load_runs_plain, tagged_runs

    heads = tagged_runs(db, tag, since=since, until=until)
    kept = heads[-MAX_REVIEW_RUNS:]
    return load_runs_plain(db, [h.run_id for h in kept]), len(kept) < len(heads)
