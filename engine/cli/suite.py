"""``python -m engine suite run FILE`` and ``suite summary FILE|NAME``.

``run`` validates the whole suite, queues one run per config (tagged ``suite:NAME`` and the
suite's and ``--tag``'s tags), measures them here one after another (``--queue``: leaves them to
workers) and prints the summary.  ``summary`` takes the latest finished run of each config of
the suite and prints the four headline figures per mode (engine/analysis/headline.py) against the
suite's baseline: ``--baseline RUN|TAG``, or else the pinned baselines of its configs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.analysis.headline import Headline, headline
from engine.cli.suite_file import SuiteError, load_suite, parse_override, suite_tag


def add_suite_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    s = sub.add_parser("suite", help="run or summarise a suite of configs (a TOML file)")
    ssub = s.add_subparsers(dest="suite_cmd", required=True)
    r = ssub.add_parser("run", help="queue and measure every config of a suite file")
    r.add_argument("file")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a RunSpec option in every config (e.g. backend=aot_eager)")
    r.add_argument("--tag", action="append", default=[])
    r.add_argument("--queue", action="store_true", help="only queue the runs for workers")
    r.add_argument("--json", action="store_true", help="print only the run ids, one per line")
    m = ssub.add_parser("summary", help="headline figures per mode against the baseline")
    m.add_argument("suite", help="a suite file, or a suite name")
    m.add_argument("--tag", default=None,
                   help="only the suite's runs that also have this tag (default: all of the "
                        "suite's runs, tagged suite:NAME)")
    m.add_argument("--baseline", default=None, help="RUN or TAG (default: pinned baselines)")
    m.add_argument("--json", action="store_true")
    return [r, m]


def cmd_suite(args: argparse.Namespace) -> int:
    return _run(args) if args.suite_cmd == "run" else _summary(args)


def _run(args: argparse.Namespace) -> int:
    from contract.text import normalize_tags
    from engine.cli.run import execute_here
    from storage import enqueue_run, open_database

    overrides = dict(parse_override(item) for item in args.set)
    suite = load_suite(args.file, overrides=overrides, check_device=not args.queue)
    tags = normalize_tags([suite.tag, *suite.tags, *args.tag])
    db = open_database(args.db, lasting=True)
    ids = [enqueue_run(db, spec, tags=tags, note=f"suite {suite.name}") for spec in suite.specs]
    print(f"suite {suite.name}: queued runs {', '.join(map(str, ids))}", file=sys.stderr)
    from engine.measure.autotune_draw import few_draws_note

    for run_id, spec in zip(ids, suite.specs, strict=True):
        if note := few_draws_note(spec, setting="max_processes ="):
            print(f"note: run {run_id} ({spec['model']}): {note}", file=sys.stderr)
    failed = 0
    if not args.queue:
        for run_id, spec in zip(ids, suite.specs, strict=True):
            status = execute_here(db, run_id, spec)
            if status.startswith("cancelled:"):
                return 128 + int(status.split(":")[1])
            failed += status != "done"
    if args.json:
        print("\n".join(map(str, ids)))
    elif not args.queue:
        print(_summary_text(db, ids, None, suite.name))
    return 1 if failed else 0


def _summary(args: argparse.Namespace) -> int:
    from pathlib import Path

    from storage import open_database
    from storage.selection import latest_per_config, tagged_runs

    name = args.suite
    if Path(name).is_file() or name.endswith(".toml"):
        name = load_suite(name).name
    tag = args.tag or suite_tag(name)
    db = open_database(args.db, create=False)
    heads_of_tag = tagged_runs(db, tag)
    if args.tag:  # the suite's runs among those with the tag
        of_suite = {h.run_id for h in tagged_runs(db, suite_tag(name))}
        heads_of_tag = [h for h in heads_of_tag if h.run_id in of_suite]
    heads = latest_per_config(heads_of_tag)
    if not heads:
        raise SuiteError(f"no finished run is tagged {tag!r}")
    ids = [h.run_id for h in heads.values()]
    if args.json:
        cand, base = _sides(db, ids, args.baseline)
        print(json.dumps({"suite": name, "tag": tag, "runs": ids,
                          "baseline_runs": [b["run_id"] for b in base],
                          "modes": _mode_dicts(headline(cand), headline(base))},
                         allow_nan=False, default=str))
    else:
        print(_summary_text(db, ids, args.baseline, name))
    return 0


def _sides(db: Any, ids: list[int], baseline: str | None
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The candidate runs and the baseline run of each of their configs (where one exists)."""
    from contract.config_key import config_key
    from engine.cli.gate import parse_ref
    from storage.selection import (
        baseline_for,
        latest_per_config,
        load_runs_plain,
        tagged_runs,
    )

    cand = load_runs_plain(db, ids)
    base_ids: list[int] = []
    if baseline is None:
        for run in cand:
            run_id, _how = baseline_for(db, run["spec"], exclude=ids)
            if run_id is not None:
                base_ids.append(run_id)
    else:
        ref = parse_ref(baseline)
        if ref.kind == "run":
            base_ids = [int(ref.value)]
        else:
            keys = {config_key(r["spec"]) for r in cand}
            latest = latest_per_config(h for h in tagged_runs(db, ref.value)
                                       if h.run_id not in ids and h.key in keys)
            base_ids = [h.run_id for h in latest.values()]
    return cand, load_runs_plain(db, base_ids)


def _mode_dicts(cand: list[Headline], base: list[Headline]) -> list[dict[str, Any]]:
    by_mode = {h.mode: h for h in base}
    return [{"mode": h.mode, "candidate": h.as_dict(),
             "baseline": by_mode[h.mode].as_dict() if h.mode in by_mode else None} for h in cand]


def _summary_text(db: Any, ids: list[int], baseline: str | None, name: str) -> str:
    from contract import fmt

    cand, base = _sides(db, ids, baseline)
    rows = _mode_dicts(headline(cand), headline(base))
    out = [f"suite {name}: {len(cand)} config(s), runs {', '.join(map(str, ids))}; baseline: "
           + (", ".join(str(b["run_id"]) for b in base) or "none (pin one: python -m engine "
                                                             "baseline pin)"),
           f"{'mode':<28s} {'pass rate':>16s} {'geomean speedup':>22s} "
           f"{'mean compile':>20s} {'memory ratio':>20s}"]

    def pair(c: Any, b: Any, show: Any) -> str:
        text = show(c) if c is not None else "-"
        return text + (f" ({show(b)})" if b is not None else "")

    for r in rows:
        c, b = r["candidate"], r["baseline"] or {}
        out.append(f"{r['mode']:<28s} "
                   f"{pair(c['pass_rate'], b.get('pass_rate'), lambda v: f'{v:.0%}'):>16s} "
                   f"{pair(c['geomean_speedup'], b.get('geomean_speedup'), fmt.ratio):>22s} "
                   f"{pair(c['mean_compile_s'], b.get('mean_compile_s'), fmt.seconds):>20s} "
                   f"{pair(c['memory_ratio'], b.get('memory_ratio'), fmt.ratio):>20s}")
    out.append("(baseline in parentheses)")
    return "\n".join(out)
