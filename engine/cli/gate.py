"""``python -m engine gate``: which runs are compared with which, then engine.analysis.gate judges them.

``--baseline`` and ``--candidate`` each name a run (``12`` or ``run:12``) or a tag (``nightly``
or ``tag:nightly``; a tag means the latest finished run of each config carrying it).  Runs are
paired by config (contract/config_key.py); two explicit runs are paired whatever their configs
(the report then says how they differ).  Without ``--baseline`` each candidate config is judged
against its pinned baseline (``python -m engine baseline pin``).

Exit codes: 0 nothing regressed, 1 something did, 2 bad input (unknown run or tag, a run that
has not finished, no config in common, a threshold out of range).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from engine.analysis.gate import Thresholds, gate
from engine.analysis.gate_report import to_json, to_markdown


class GateInputError(ValueError):
    """Bad gate input: exit code 2."""


@dataclass(frozen=True)
class Ref:
    kind: str  # "run" | "tag"
    value: str

    def __str__(self) -> str:
        return f"{self.kind} {self.value}"


def parse_ref(text: str) -> Ref:
    """``12``/``run:12`` is a run, ``tag:x`` or any other text a tag (checked as a tag)."""
    from contract.text import check_tag

    kind, sep, rest = text.partition(":")
    if sep and kind in ("run", "tag"):
        value = rest
    else:
        kind, value = ("run", text) if text.strip().isdigit() else ("tag", text)
    if kind == "run":
        if not value.strip().isdigit() or not 1 <= int(value) <= 2**63 - 1:
            raise GateInputError(f"a run id is a positive whole number, got {value!r}")
        return Ref("run", str(int(value)))
    return Ref("tag", check_tag(value))


def add_gate_parser(sub: Any) -> argparse.ArgumentParser:
    g = sub.add_parser("gate", help="exit 1 when the candidate regressed against the baseline",
                       # the docstring's reST quotes (``12``) are noise in a terminal
                       description=__doc__.split("\n\n")[1].replace("``", "")
                       if __doc__ else None)
    g.add_argument("--baseline", default=None, help="RUN or TAG (default: pinned baselines)")
    g.add_argument("--candidate", required=True, help="RUN or TAG")
    d = Thresholds()
    g.add_argument("--speedup", type=float, default=d.speedup,
                   help="regression below this × the baseline's speedup (default %(default)s)")
    g.add_argument("--compile-time", type=float, default=d.compile_time,
                   help="regression above this × the baseline's cold compile (default "
                        "%(default)s)")
    g.add_argument("--compile-floor", type=float, default=d.compile_floor_s,
                   help="... and longer by more than this many seconds (default %(default)s)")
    g.add_argument("--memory", type=float, default=d.memory,
                   help="regression below this × the baseline's memory ratio (eager peak ÷ compiled) "
                        "(default %(default)s)")
    g.add_argument("--pass-rate", type=float, default=d.pass_rate,
                   help="regression below this × the baseline's pass rate per mode (default "
                        "%(default)s)")
    g.add_argument("--alpha", type=float, default=d.alpha,
                   help="level of the one-sided tests on the speedups (at one host speed, "
                        "else Welch's) and on compile time (default %(default)s)")
    g.add_argument("--json", action="store_true", help="one JSON document instead of Markdown")
    g.add_argument("--all", action="store_true", help="also list every figure compared")
    return g


def _resolve(db: Any, ref: Ref, exclude: set[int] | None = None) -> list[dict[str, Any]]:
    """The runs a reference names: one run, or the latest judged run of each config of a tag."""
    from storage.selection import JUDGED_STATUSES, latest_per_config, load_runs_plain, tagged_runs

    if ref.kind == "run":
        run = load_runs_plain(db, [int(ref.value)])[0]
        if run["status"] not in JUDGED_STATUSES:
            raise GateInputError(f"run {ref.value} is {run['status']}: the gate judges finished "
                                 f"runs (done or failed)")
        return [run]
    heads = [h for h in tagged_runs(db, ref.value) if h.run_id not in (exclude or set())]
    if not heads:
        raise GateInputError(f"no finished run is tagged {ref.value!r}")
    return load_runs_plain(db, [h.run_id for h in latest_per_config(heads).values()])


def pair_runs(baseline: list[dict[str, Any]], candidate: list[dict[str, Any]], explicit: bool
              ) -> tuple[list[tuple[dict, dict]], list[dict], list[dict]]:
    """(pairs, baseline runs the candidate lacks, candidate runs without a baseline)."""
    from contract.config_key import config_key

    if explicit:
        return [(baseline[0], candidate[0])], [], []
    by_key = {config_key(r["spec"]): r for r in candidate}
    base_keys = {config_key(r["spec"]) for r in baseline}
    pairs = [(b, by_key[config_key(b["spec"])]) for b in baseline if config_key(b["spec"]) in by_key]
    missing = [b for b in baseline if config_key(b["spec"]) not in by_key]
    unmatched = [c for c in candidate if config_key(c["spec"]) not in base_keys]
    return pairs, missing, unmatched


def _pinned(db: Any, candidate: list[dict[str, Any]]
            ) -> tuple[list[tuple[dict, dict]], list[dict]]:
    from storage.selection import baseline_for, load_runs_plain

    pairs, unmatched = [], []
    ids = {c["run_id"] for c in candidate}
    for cand in candidate:
        run_id, _how = baseline_for(db, cand["spec"], exclude=ids)
        if run_id is None:
            unmatched.append(cand)
        else:
            pairs.append((load_runs_plain(db, [run_id])[0], cand))
    return pairs, unmatched


def _history(db: Any, ref: Ref, pairs: list[tuple[dict, dict]], exclude: set[int]
             ) -> dict[int, list[dict[str, Any]]]:
    """With a tag as baseline: each baseline run's last ``HISTORY_RUNS`` runs of its config
    under that tag (itself included), the replicates of its compile time."""
    from engine.analysis.gate import HISTORY_RUNS
    from storage.selection import load_runs_plain, tagged_runs

    if ref.kind != "tag":
        return {}
    heads = [h for h in tagged_runs(db, ref.value) if h.run_id not in exclude]
    out = {}
    for base, _cand in pairs:
        from contract.config_key import config_key

        key = config_key(base["spec"])
        same = [h.run_id for h in heads if h.key == key and h.created_at <= _created(base)]
        out[base["run_id"]] = load_runs_plain(db, same[-HISTORY_RUNS:])
    return out


def _created(run: dict[str, Any]) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(run["created_at"])


def cmd_gate(args: argparse.Namespace) -> int:
    from storage import open_database

    try:
        thr = Thresholds(speedup=args.speedup, compile_time=args.compile_time,
                         memory=args.memory, pass_rate=args.pass_rate, alpha=args.alpha,
                         compile_floor_s=args.compile_floor)
    except ValueError as e:
        raise GateInputError(str(e)) from None
    cand_ref = parse_ref(args.candidate)
    base_ref = parse_ref(args.baseline) if args.baseline is not None else None
    db = open_database(args.db, create=False)
    candidate = _resolve(db, cand_ref)
    cand_ids = {r["run_id"] for r in candidate}
    if base_ref is None:
        pairs, unmatched = _pinned(db, candidate)
        missing: list[dict] = []
        if not pairs:
            raise GateInputError(f"no baseline is pinned for the configs of {cand_ref} "
                                 f"(python -m engine baseline pin RUN, or give --baseline)")
    else:
        baseline = _resolve(db, base_ref, exclude=cand_ids)
        if base_ref.kind == "run" and baseline[0]["run_id"] in cand_ids:
            raise GateInputError(f"run {base_ref.value} cannot be its own baseline")
        explicit = base_ref.kind == cand_ref.kind == "run"
        pairs, missing, unmatched = pair_runs(baseline, candidate, explicit)
        if cand_ref.kind == "run":
            missing = []  # one candidate run answers for its own config only
        if not pairs:
            raise GateInputError(f"{base_ref} and {cand_ref} have no config in common")
    history = _history(db, base_ref, pairs, cand_ids) if base_ref is not None else None
    report = gate(pairs, thr, missing=missing, unmatched=unmatched, history=history)
    sys.stdout.write(to_json(report) + "\n" if args.json else to_markdown(report,
                                                                          show_all=args.all))
    return report.exit_code
