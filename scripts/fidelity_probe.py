"""Compile-time fidelity probe: the engine's measuring child against the hand-written harness,
each compile alone, to find what makes a first call differ (issue "time to answer": reported
cold and warm compile times within 15 % of the harness's).

    python scripts/fidelity_probe.py --device cuda --modes reduce-overhead --repeats 3 \
        --configs harness,child,child-nologs,child-inference

Every config runs one fresh process with an empty inductor cache (the cold first call) and one
more with the same cache (the warm first call), alone, interleaved over ``--repeats``.  Configs:

* ``harness``: ``../shared/bench/naive_harness.py``'s own child (``torch.inference_mode``).
* ``child``: ``python -m engine.measure.child`` with the run's spec, as the runner starts it, but alone.
* ``child-nologs``: the same without the recompile / cudagraph artifact logs and the cache-log
  handlers (``signals.LogCapture.install``, ``forensics.CacheLog.install`` made no-ops).
* ``child-inference``: the same as ``child`` with ``torch.no_grad`` replaced by
  ``torch.inference_mode`` (the harness's context) in the child's own module.

Prints each first call and, per config, the median over repeats and its distance from the
harness's median.  A benchmark script, not a test.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts.bench_vs_naive import NAIVE  # noqa: E402

PATCHES = {
    "child": "",
    "child-nologs": ("import engine.measure.signals as s, engine.measure.forensics as f\n"
                     "s.LogCapture.install = lambda self: None\n"
                     "f.CacheLog.install = lambda self: None\n"),
    # only the child's own context: torch's internals keep their no_grad
    "child-inference": ("import torch, engine.measure.child as c\n"
                        "class _Torch:\n"
                        "    no_grad = staticmethod(torch.inference_mode)\n"
                        "    def __getattr__(self, name):\n"
                        "        return getattr(torch, name)\n"
                        "c.torch = _Torch()\n"),
}


def harness_child() -> str:
    """The harness's CHILD program, read from its source (it is a module-level string)."""
    tree = ast.parse(NAIVE.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CHILD":
            return ast.literal_eval(node.value)
    raise SystemExit(f"no CHILD in {NAIVE}")


def run_harness(args: argparse.Namespace, mode: str, cache: str) -> float | None:
    spec = {"device": args.device, "mode": mode, "model": "mlp", "batch": 32, "hidden": 1024,
            "seq": 128, "calls": 200}
    out = subprocess.run([sys.executable, "-c", harness_child(), json.dumps(spec)],
                         env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache),
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])["first_call_s"]
    print(out.stderr[-1500:], file=sys.stderr)
    return None


def run_child(args: argparse.Namespace, config: str, mode: str, phase: str, cache: str,
              tmp: str) -> float | None:
    from engine.spec import normalise

    run = normalise({"model": "mlp", "dims": {"batch": 32, "hidden": 1024},
                     "device": args.device, "variants": ["eager", mode], "profile": False,
                     "min_samples": 20, "max_time_s": 2})
    spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "out.json"
    spec_path.write_text(json.dumps({"run": run, "variant": mode, "phase": phase}))
    out_path.unlink(missing_ok=True)
    code = (PATCHES[config] + "import sys\nfrom engine.measure.child import main\n"
            f"sys.exit(main([{str(spec_path)!r}, {str(out_path)!r}]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPILELAB_")}
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env=dict(env, TORCHINDUCTOR_CACHE_DIR=cache))
    if not out_path.exists():
        print(p.stderr[-1500:], file=sys.stderr)
        return None
    res = json.loads(out_path.read_text())
    key = "first_call_cold_s" if phase == "cold" else "first_call_warm_s"
    if res.get(key) is None:
        print(f"{config} {phase}: {res.get('status')} {str(res.get('error'))[:800]}",
              file=sys.stderr)
    return res.get(key)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--modes", default="reduce-overhead")
    p.add_argument("--configs", default="harness,child,child-nologs,child-inference")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json-out")
    args = p.parse_args()
    configs = args.configs.split(",")
    got: dict[str, list] = {}
    t_start = time.perf_counter()
    for rep in range(args.repeats):
        for mode in args.modes.split(","):
            for config in configs:
                with tempfile.TemporaryDirectory() as tmp:
                    cache = os.path.join(tmp, "cache")
                    for phase in ("cold", "warm_cache"):
                        t0 = time.perf_counter()
                        v = (run_harness(args, mode, cache) if config == "harness" else
                             run_child(args, config, mode, phase, cache, tmp))
                        got.setdefault(f"{mode} {phase} {config}", []).append(v)
                        print(f"rep {rep + 1} {mode:16s} {phase:10s} {config:16s} first call "
                              f"{v if v is None else round(v, 3)} s  (process "
                              f"{time.perf_counter() - t0:.1f} s)", flush=True)
                if args.json_out:
                    Path(args.json_out).write_text(json.dumps(got, indent=1))
    print(f"\nmedians (s), against the harness's (total {time.perf_counter() - t_start:.0f} s):")
    for mode in args.modes.split(","):
        for phase in ("cold", "warm_cache"):
            ok = [v for v in got.get(f"{mode} {phase} harness", []) if v is not None]
            base = statistics.median(ok) if ok else None
            for config in configs:
                vals = [v for v in got.get(f"{mode} {phase} {config}", []) if v is not None]
                if not vals:
                    continue
                med = statistics.median(vals)
                rel = f"{100 * (med / base - 1):+.1f} %" if base else "-"
                print(f"{mode:16s} {phase:10s} {config:16s} {med:.3f}  {rel}  "
                      f"all: {', '.join(f'{v:.3f}' for v in vals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
