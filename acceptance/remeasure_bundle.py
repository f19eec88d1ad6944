"""Re-measure a shipped bundle's runs with today's protocol, a slice per device command, and check
a bundle against issue 36's bar.

    python acceptance/remeasure_bundle.py check data/h200_bundle.json
    python acceptance/remeasure_bundle.py plan --bundle data/h200_bundle.json [--budget-s 540]
    python acceptance/remeasure_bundle.py run --bundle data/h200_bundle.json --db sqlite:///$OUT/rb.db \
        --only 1,5,8 [--budget-s 540] [--device cuda] [--slice-out $OUT/slice.json]
    python acceptance/remeasure_bundle.py write --bundle data/h200_bundle.json [--db URL ...] \
        [--slice data/remeasure/slice.json ...] --out new_bundle.json

``check`` prints, over every compiled variant that measured a speedup with an interval, the
median relative half-width (bar: at most 5 %), the share within 10 % (bar: at least 90 %), the
variants measured with fewer than 3 processes (bar: none) and those whose interval includes 1.0;
exit 1 when a bar is missed.

``plan`` picks the positions that keep the bundle's set of models, steps and modes (for each
configuration, contract/config_key.py, the fewest runs whose variants cover all of that
configuration's variants, so repeats of one configuration are measured once) and packs them into
``--only`` slices that each fit ``--budget-s`` by the runs' last durations, scaled by the
processes today's defaults plan over those they were measured with (``estimate_s``).

``run`` measures the bundle's runs named by ``--only`` (1-based positions in the bundle) through
the engine's own path (validate, queue, claim, execute, store), each with the run's own model,
shapes, dtype, step and variants and today's measuring defaults (processes, time budgets,
stop rule: the point of re-measuring), tagged ``remeasure`` and ``remeasure-N``. A bundle is
read like any other outside file: each spec goes through the one validator first. A run whose
estimate is longer than the time left is skipped and said so, so a slice fits a
10-minute command; ``--slice-out`` also writes them as a bundle, so a slice measured on a lent
machine that keeps nothing can be committed (data/remeasure/) and joined later. ``write`` puts the re-measured runs, from one or several such databases or slice
bundles, into one bundle in the original order; a position never re-measured is reported, not filled with the
old run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "acceptance"))

MEASURING = ("processes", "max_processes", "target_halfwidth", "process_budget_s", "min_samples",
             "min_time_s", "max_time_s", "pipeline_k", "concurrency", "compile_slots",
             "warmup_calls", "timeout_s")
BAR_MEDIAN, BAR_WITHIN, BAR_SHARE, BAR_PROCESSES = 0.05, 0.10, 0.90, 3


def load_bundle(path: str) -> list[dict[str, Any]]:
    raw = json.loads(Path(path).read_text())
    runs = raw.get("runs") if isinstance(raw, dict) else None
    if not isinstance(runs, list):
        raise SystemExit(f"{path}: not a bundle (no 'runs' list)")
    return runs


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def compiled_intervals(runs: list[dict[str, Any]]
                       ) -> list[tuple[str, float, float, bool, int | None]]:
    """(label, speedup, relative half-width, interval holds 1.0, processes) of every compiled
    variant with an interval; a bundle's variant keeps its figures at the top or under
    ``stats``."""
    out = []
    for i, run in enumerate(runs, 1):
        model = (run.get("spec") or {}).get("model", "?") if isinstance(run, dict) else "?"
        for v in (run.get("variants") or []) if isinstance(run, dict) else []:
            if not isinstance(v, dict) or v.get("variant") == "eager" or v.get("status") != "ok":
                continue
            fig = {**v, **(v.get("stats") if isinstance(v.get("stats"), dict) else {})}
            s, lo, hi = (_num(fig.get(k)) for k in ("speedup", "speedup_ci_low",
                                                      "speedup_ci_high"))
            if s is None or lo is None or hi is None or s <= 0 or hi < lo:
                continue
            out.append((f"{i}:{model}:{v.get('variant')}", s, (hi - lo) / 2 / s, lo <= 1 <= hi,
                        _processes_of(v)))
    return out


def _processes_of(variant: dict[str, Any]) -> int | None:
    """How many processes measured a bundle's variant: its ``n_processes`` (at the top or under
    ``stats``), else, in older bundles, the length of its stored process list; None if neither."""
    fig = {**variant, **(variant.get("stats") if isinstance(variant.get("stats"), dict) else {})}
    n = fig.get("n_processes")
    if isinstance(n, int) and not isinstance(n, bool):
        return n
    extra = variant.get("extra") if isinstance(variant.get("extra"), dict) else {}
    procs = extra.get("processes")
    return len(procs) if isinstance(procs, list) and procs else None


def check(path: str) -> int:
    rows = compiled_intervals(load_bundle(path))
    if not rows:
        print(f"{path}: no compiled variant with an interval")
        return 1
    widths = [h for _, _, h, _, _ in rows]
    few = [label for label, _, _, _, n in rows if n is None or n < BAR_PROCESSES]
    median, share = statistics.median(widths), sum(h <= BAR_WITHIN for h in widths) / len(widths)
    with_one = [label for label, _, _, one, _ in rows if one]
    print(f"{path}: {len(rows)} compiled variants with an interval")
    print(f"  median relative half-width {median:.1%} (bar {BAR_MEDIAN:.0%})")
    print(f"  within {BAR_WITHIN:.0%}: {share:.0%} (bar {BAR_SHARE:.0%})")
    print(f"  fewer than {BAR_PROCESSES} processes, or not recorded: {len(few)} (bar 0)"
          + (f": {', '.join(few[:8])}{' ...' if len(few) > 8 else ''}" if few else ""))
    print(f"  interval includes 1.0: {len(with_one)}")
    ok = median <= BAR_MEDIAN and share >= BAR_SHARE and not few
    print("  meets the bar" if ok else "  misses the bar")
    return 0 if ok else 1


def today_spec(old: dict[str, Any], device: str | None) -> dict[str, Any]:
    """The old run's spec with today's measuring defaults, through the one validator."""
    from engine.spec import normalise

    raw = {k: v for k, v in old.items() if k not in MEASURING}
    if device:
        raw["device"] = device
    return normalise(raw)


def _took_s(run: dict[str, Any]) -> float:
    try:
        return (datetime.fromisoformat(run["finished_at"])
                - datetime.fromisoformat(run["started_at"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return 0.0


def _old_processes(run: dict[str, Any]) -> list[tuple[str, int]]:
    """(variant, processes it was measured with) of each compiled variant that recorded them."""
    out = []
    for v in run.get("variants") or []:
        if not isinstance(v, dict) or v.get("variant") in (None, "eager"):
            continue
        if (n := _processes_of(v)) is not None and n > 0:
            out.append((str(v["variant"]), n))
    return out


def estimate_s(run: dict[str, Any], device: str | None = "cuda") -> float:
    """Seconds a re-measure of ``run`` should take: its last duration times ``run``'s margin of
    1.2, and times the processes today's defaults plan over those it was measured with where
    that is more (a variant that redraws its kernels now gets four: engine/measure/
    autotune_draw.py), so a slice planned from runs measured with two processes still fits.
    An upper bound: a run's processes partly overlap (engine/orchestrate/schedule.py)."""
    from engine.measure.autotune_draw import process_bounds, variant_min_processes
    from engine.spec import SpecError

    took, old = _took_s(run), _old_processes(run)
    try:
        spec = today_spec(run.get("spec") or {}, device)
    except SpecError:
        return 1.2 * took
    k_min, k_max = process_bounds(spec)
    new = sum(variant_min_processes(spec, v, k_min, k_max) for v, _ in old)
    return 1.2 * took * max(1.0, new / sum(n for _, n in old)) if old else 1.2 * took


def cover(runs: list[dict[str, Any]]) -> list[int]:
    """Positions (1-based) that keep every configuration's variants: per config key, greedily
    the run adding the most variants not yet covered, the shorter on a tie."""
    from contract.config_key import stored_config_key

    groups: dict[str, list[int]] = {}
    for n, run in enumerate(runs, 1):
        key = stored_config_key(run.get("spec")) if isinstance(run, dict) else None
        if key is not None:
            groups.setdefault(key, []).append(n)
    chosen: list[int] = []
    for members in groups.values():
        names = {n: {v.get("variant") for v in runs[n - 1].get("variants") or []
                     if isinstance(v, dict)} for n in members}
        left = set().union(*names.values())
        while left:
            best = max(members, key=lambda n: (len(names[n] & left), -_took_s(runs[n - 1])))
            chosen.append(best)
            left -= names[best]
    return sorted(chosen)


def slices(runs: list[dict[str, Any]], positions: list[int], budget_s: float,
           need_s: dict[int, float] | None = None) -> list[list[int]]:
    """``positions`` packed first-fit, longest first, into slices whose runs' estimates
    (``estimate_s``, or ``need_s`` where the caller has them) fit ``budget_s``; a run longer
    than that is a slice alone."""
    packed: list[tuple[float, list[int]]] = []
    need_s = need_s or {n: estimate_s(runs[n - 1]) for n in positions}
    for n in sorted(positions, key=lambda n: -need_s[n]):
        need = need_s[n]
        i = next((i for i, (used, _) in enumerate(packed) if used + need <= budget_s), None)
        if i is None:
            packed.append((need, [n]))
        else:
            packed[i] = (packed[i][0] + need, [*packed[i][1], n])
    return [sorted(members) for _, members in packed]


def plan(args: argparse.Namespace) -> int:
    runs = load_bundle(args.bundle)
    keep = cover(runs)
    total = sum(_took_s(runs[n - 1]) for n in keep)
    print(f"{args.bundle}: {len(keep)} of {len(runs)} runs keep every configuration's variants "
          f"(last took {total:.0f} s together)")
    need_s = {n: estimate_s(runs[n - 1]) for n in keep}  # each validates a spec: once
    for members in slices(runs, keep, args.budget_s, need_s):
        took = sum(_took_s(runs[n - 1]) for n in members)
        need = sum(need_s[n] for n in members)
        models = ", ".join(str((runs[n - 1].get("spec") or {}).get("model")) for n in members)
        print(f"  --only {','.join(map(str, members))}  ({took:.0f} s last time, about "
              f"{need:.0f} s now with the margin: {models})")
    return 0


def run_slice(args: argparse.Namespace) -> int:
    from acceptance_common import measure

    from engine.spec import SpecError
    from storage import open_database

    runs = load_bundle(args.bundle)
    db = open_database(args.db)
    t0, bad, measured = time.monotonic(), 0, []
    for n in args.only:
        if not 1 <= n <= len(runs):
            print(f"{n}: no such run (the bundle holds {len(runs)})")
            bad += 1
            continue
        old = runs[n - 1]
        left, estimate = args.budget_s - (time.monotonic() - t0), estimate_s(old, args.device)
        if estimate > left:
            print(f"{n}: SKIPPED (last took {_took_s(old):.0f} s, about {estimate:.0f} s now "
                  f"with the margin, {left:.0f} s left)")
            continue
        try:
            spec = today_spec(old.get("spec") or {}, args.device)
        except SpecError as e:
            print(f"{n}: refused by the validator: {e}")
            bad += 1
            continue
        started = time.monotonic()
        rid = measure(db, spec, ["remeasure", f"remeasure-{n}"], "remeasure")
        measured.append(rid)
        print(f"{n}: {spec['model']} re-measured as run {rid} in "
              f"{time.monotonic() - started:.0f} s", flush=True)
        if args.slice_out:  # after every run: a machine taken back mid-slice keeps the rest
            _write_slice(db, measured, Path(args.slice_out))
    return 1 if bad else 0


def _write_slice(db: Any, run_ids: list[int], path: Path) -> None:
    from storage import export_bundle

    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(export_bundle(db, run_ids)))
    part.replace(path)  # whole or not at all
    print(f"wrote runs {', '.join(map(str, run_ids))} to {path}", flush=True)


def _sources(args: argparse.Namespace, scratch: Path) -> list[str]:
    """Database URLs to read re-measured runs from: ``--db`` as given, and the ``--slice``
    bundles imported (through the bundle validator) into one scratch SQLite database."""
    import engine.spec  # noqa: F401  installs the spec validator import_bundle checks with
    from storage import import_bundle, open_database

    urls = list(args.db or [])
    if args.slice:
        url = f"sqlite:///{scratch / 'slices.db'}"
        db = open_database(url)
        for path in args.slice:
            try:
                import_bundle(db, Path(path).read_bytes())
            except (OSError, ValueError) as e:  # BundleError is a ValueError
                raise SystemExit(f"{path}: not a slice this can join: {e}") from None
        urls.append(url)
    return urls


def write(args: argparse.Namespace) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        return _write(args, _sources(args, Path(scratch)))


def _write(args: argparse.Namespace, urls: list[str]) -> int:
    from storage import export_bundle, open_database, queries

    if not urls:
        raise SystemExit("write: give --db or --slice")
    runs = load_bundle(args.bundle)
    found: dict[int, dict[str, Any]] = {}
    header: dict[str, Any] = {}
    for url in urls:
        db = open_database(url, create=False)
        listed = queries.list_runs(db, tag="remeasure")
        for rid, tags in zip(listed["run_id"], listed["tags"], strict=True):
            n = next((int(t.split("-", 1)[1]) for t in tags or []
                      if t.startswith("remeasure-") and t.split("-", 1)[1].isdigit()), None)
            if n is not None:  # the newest re-measurement of a position wins
                one = export_bundle(db, [int(rid)])
                header = {k: v for k, v in one.items() if k != "runs"}
                found[n] = one["runs"][0]
    missing = [n for n in range(1, len(runs) + 1) if n not in found]
    bundle = {**header, "runs": [found[n] for n in sorted(found)]}
    Path(args.out).write_text(json.dumps(bundle))
    print(f"wrote {len(found)} re-measured run(s) to {args.out}; not re-measured: "
          + (", ".join(map(str, missing)) if missing else "none"))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("bundles", nargs="+")
    r = sub.add_parser("run")
    r.add_argument("--bundle", required=True)
    r.add_argument("--db", required=True)
    r.add_argument("--only", required=True, type=lambda s: [int(x) for x in s.split(",") if x])
    r.add_argument("--budget-s", type=float, default=540.0)
    r.add_argument("--device", default=None, help="measure on this device instead")
    r.add_argument("--slice-out", default=None, help="also write the runs measured as a bundle")
    pl = sub.add_parser("plan")
    pl.add_argument("--bundle", required=True)
    pl.add_argument("--budget-s", type=float, default=540.0)
    w = sub.add_parser("write")
    w.add_argument("--bundle", required=True)
    w.add_argument("--db", action="append", default=[])
    w.add_argument("--slice", action="extend", nargs="+", default=[])
    w.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.cmd == "check":
        return max(check(b) for b in args.bundles)
    return {"run": run_slice, "plan": plan, "write": write}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
