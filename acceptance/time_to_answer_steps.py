"""Time to answer on a lent GPU host in one command: harness and engine runs in the order given,
then the ratio, the compile-time fidelity, the repeatability of the engine's intervals and
where each engine run's time went.

    python acceptance/time_to_answer_steps.py --device cuda --out "$OUT" e:bert n:bert e:bert n:bert e:bert
    python acceptance/time_to_answer_steps.py --device cuda --out "$OUT" e:mlp n:mlp e:mlp n:mlp e:mlp
    python acceptance/time_to_answer_steps.py --device cpu --out /tmp/tta e:mlp n:mlp

A step is ``n:MODEL`` (one run of ``acceptance/naive_harness.py``), ``e:MODEL`` (one
``python -m engine run`` at the shipped defaults, stored in ``OUT/tta.db``, tagged ``tta-MODEL``) or ``l:MODEL`` (the same with
the ``--lever`` arguments added, tagged ``tta-MODEL-lever``: a scheduling or sampling lever
tried against the defaults in the same command, reported apart and never as the defaults);
MODEL is ``mlp`` or ``bert``.
The variants are the issue's: the seed MLP with eager, default, reduce-overhead and max-autotune
on a GPU (eager and default on a CPU), BERT-base bf16 b8 s128 with eager, default and
reduce-overhead.  Alternate the two kinds so drift of the host reaches both.  After every step
``OUT/steps.json`` holds what was measured so far; a step that would not end before
``--budget-s`` (from the longest earlier step of its kind) is skipped, so the summary is printed
before the device's per-command limit ends the command.  A benchmark script: it prints figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "acceptance"))

import bench_vs_naive  # noqa: E402  (acceptance/ is not a package)
import repeatability  # noqa: E402

MODES = {("mlp", "cuda"): "eager,default,reduce-overhead,max-autotune",
         ("mlp", "cpu"): "eager,default",
         ("bert", "cuda"): "eager,default,reduce-overhead",
         ("bert", "cpu"): "eager,default,reduce-overhead"}


KINDS = {"n": "naive", "e": "engine", "l": "lever"}
TAGS = {"engine": "tta-{model}", "lever": "tta-{model}-lever"}



def parse_step(text: str) -> tuple[str, str]:
    """``e:bert`` -> ("engine", "bert"); anything else is a usage error."""
    kind, _, model = text.partition(":")
    if kind not in KINDS or model not in bench_vs_naive.MODELS:
        raise argparse.ArgumentTypeError(
            f"a step is n:MODEL (harness), e:MODEL (engine) or l:MODEL (engine with --lever), "
            f"MODEL one of {', '.join(sorted(bench_vs_naive.MODELS))}; got {text!r}")
    return (KINDS[kind], model)


def label(who: str, lever: list[str]) -> str:
    return ("shipped defaults" if who == "engine"
            else f"NOT the shipped defaults: engine run {' '.join(lever)}")


def summary(steps: list[dict], db: str, lever: list[str]) -> int:
    """Ratio of medians, fidelity and repeatability per model (the lever's runs apart);
    timelines of the engine runs."""
    for model in dict.fromkeys(s["model"] for s in steps):
        mine = [s for s in steps if s["model"] == model and s.get("wall_s") is not None]
        walls = {who: [s["wall_s"] for s in mine if s["who"] == who]
                 for who in ("naive", "engine", "lever")}
        print(f"\n=== {model} ({mine[0]['modes'] if mine else '?'}) ===")
        for who, w in walls.items():
            if w:
                print(f"  {who:6s} wall (s): " + ", ".join(f"{x:.1f}" for x in w))
        for who in ("engine", "lever"):
            if walls["naive"] and walls[who]:
                n, e = statistics.median(walls["naive"]), statistics.median(walls[who])
                print(f"  ratio of medians ({label(who, lever)}): {e:.1f} / {n:.1f} = {e / n:.2f}")
        firsts: dict[str, dict[tuple[str, str], list[float]]] = {
            "naive": {}, "engine": {}, "lever": {}}
        for s in mine:
            for key, value in s["first_call_s"].items():
                mode, phase = key.rsplit(" ", 1)
                if value is not None:
                    firsts[s["who"]].setdefault((mode, phase), []).append(value)
        for who in ("engine", "lever"):
            lines = bench_vs_naive.fidelity(firsts["naive"], firsts[who])
            if lines:
                print(f"  compile-time fidelity, {label(who, lever)} (first call, s; medians):\n"
                      + "\n".join(lines))
        for s in mine:
            if s.get("run_id"):
                subprocess.run([sys.executable, str(ROOT / "acceptance" / "run_timeline.py"),
                                s["run_id"], "--db", db], cwd=ROOT, check=False)
    groups = dict.fromkeys((s["who"], s["model"]) for s in steps if s.get("run_id"))
    if groups:
        rc = repeatability.table(db, {f"{m}{' (lever)' if w == 'lever' else ''}":
                                      TAGS[w].format(model=m) for w, m in groups})
        return 0 if rc == 2 else rc  # one run per model: nothing to compare, not a failure
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("steps", nargs="+", type=parse_step, metavar="STEP")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--out", required=True, type=Path, help="folder for tta.db and steps.json")
    p.add_argument("--lever", action="append", default=[], metavar="ARG",
                   help="one more `engine run` argument for the l:MODEL steps (repeatable, e.g. "
                        "--lever=--min-samples=20)")
    p.add_argument("--budget-s", type=float, default=560.0,
                   help="skip a step that would end after this many seconds (default 560: the "
                        "device's 600 s per command, less the summary)")
    args = p.parse_args()
    if any(who == "lever" for who, _ in args.steps) and not args.lever:
        p.error("l:MODEL steps need at least one --lever argument")
    args.out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{(args.out / 'tta.db').resolve()}"
    t_start, steps, longest = time.monotonic(), [], {}
    for who, model in args.steps:
        elapsed = time.monotonic() - t_start
        if elapsed + longest.get((who, model), 0.0) > args.budget_s:
            print(f"skipped {who} {model}: {elapsed:.0f} s gone, it took up to "
                  f"{longest[(who, model)]:.0f} s", flush=True)
            continue
        modes = MODES[(model, args.device)]
        a = SimpleNamespace(device=args.device, model=model, modes=modes,
                            engine_arg=args.lever if who == "lever" else [])
        step = {"who": who, "model": model, "modes": modes, "device": args.device,
                "started_s": round(elapsed, 1)}
        try:
            if who == "naive":
                wall, first = bench_vs_naive.naive(a)
            else:
                wall, first, step["run_id"] = bench_vs_naive.engine(
                    a, db, tag=TAGS[who].format(model=model))
                if who == "lever":
                    step["lever"] = list(args.lever)
        except (SystemExit, subprocess.CalledProcessError) as e:  # one failed step: go on
            step["error"] = str(e)[-2000:]
            print(f"{who} {model}: FAILED {step['error']}", flush=True)
            steps.append(step)
            continue
        longest[(who, model)] = max(longest.get((who, model), 0.0), wall)
        step.update(wall_s=round(wall, 2),
                    first_call_s={f"{m} {ph}": v for (m, ph), v in first.items()})
        steps.append(step)
        print(f"{who:6s} {model}: {wall:6.1f} s" + (f" (run {step['run_id']})"
                                                    if "run_id" in step else "") + "  first calls: "
              + ", ".join(f"{m} {ph} {v:.3f}" for (m, ph), v in sorted(first.items())
                          if v is not None and m != "eager"), flush=True)
        (args.out / "steps.json").write_text(json.dumps(steps, indent=1))
    return summary(steps, db, args.lever)


if __name__ == "__main__":
    sys.exit(main())
