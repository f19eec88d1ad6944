"""``python -m engine recommend RUN --calls N [--warm-cache] [--memory-mib M] [--json]``.

Prints the recommendation of engine/analysis/recommend.py for a stored (or imported) run; its first line
is ``Recommend: <config>``.  Reads through ``storage.records`` (plain dicts, no pandas)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def _calls(text: str) -> int:
    """A call count as typed: ``1000``, ``1_000_000``, ``1e6`` (a whole number >= 1)."""
    try:
        value = float(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a call count is a whole number, got {text!r}") \
            from None
    if not (1 <= value <= 1e15 and value == int(value)):  # range first: int(inf) raises
        raise argparse.ArgumentTypeError(f"a call count is a whole number from 1 to 1e15, "
                                         f"got {text!r}")
    return int(value)


def _mib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a memory budget is a number of MiB, got {text!r}") \
            from None
    if not (value > 0 and value < 1e12):
        raise argparse.ArgumentTypeError(f"a memory budget is a positive number of MiB, got "
                                         f"{text!r}")
    return value


def add_recommend_parser(sub: Any, run_id_type: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("recommend", help="which config to ship for N calls per process: least "
                       "compile + N x per-call time among correct configs within a memory budget")
    p.add_argument("run_id", type=run_id_type, metavar="RUN",
                   help="a finished run's id; its variants (and grid configs) are the choices")
    p.add_argument("--calls", type=_calls, required=True, metavar="N",
                   help="calls one process serves before it restarts (1000, 1e6, ...)")
    p.add_argument("--warm-cache", action="store_true",
                   help="the compile cache is warm at start (a restart on the same host)")
    p.add_argument("--memory-mib", type=_mib, default=None, metavar="M",
                   help="leave out configs whose peak GPU memory exceeds M MiB (reserved "
                        "bytes, what the process holds; allocated where reserved was not "
                        "measured: the figure show and the Pareto view use)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    return p


def cmd_recommend(args: argparse.Namespace) -> int:
    from engine.analysis.recommend import recommend
    from engine.measure import shape_mix
    from storage import open_database
    from storage.records import load_run

    db = open_database(args.db, create=False)
    run = load_run(db, args.run_id)
    if run is None:
        raise LookupError(f"no run {args.run_id} in the database")
    rec = recommend(run["variants"], args.calls, warm_cache=args.warm_cache,
                    memory_mib=args.memory_mib)
    mix = shape_mix.lines(run["variants"], args.calls)  # runs with a shape distribution
    if args.json:
        print(json.dumps({"run_id": args.run_id, **rec.as_dict(), "shape_mix": mix},
                         allow_nan=False))
    else:
        print("\n".join([rec.as_text(), *mix]))
    return 0 if rec.best is not None else 1
