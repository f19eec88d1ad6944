"""Does one compile's choice of kernels set a run's speed? Between-compile spread of a compiled
model's steady state against the spread of processes that share one compile's cache.

    python acceptance/compile_choice_probe.py --mode reduce-overhead --caches 3

A run of the engine compiles each variant cold once and its other measuring processes load that
compile from the cache, so every process of a run replays the same Triton configs that the cold
compile's autotuning chose; three identical BERT-base runs read reduce-overhead at 1.245, 1.268
and 1.207 ms while each run's four processes agreed within 1 %. This probe compiles BERT-base
(bf16, b8 s128) cold in ``--caches`` fresh cache directories and once more warm from each, one
process at a time: each process times the compiled model against eager in alternating rounds
(CUDA events) and prints its medians and a digest of the best configs in its cache directory
(``*.best_config``, what autotuning chose) and of the config each autotuned kernel runs in the
process (read from its autotuner: ``in_use``), the autotune cache's decisions and the SM clock.
Same ``in_use`` and different speed: not the choice. ``--redraw`` / ``--redraw-env`` /
``--redraw-engine`` ask whether a warm process can draw the choice anew (cache 0 copied without
its ``*.best_config`` files; ``TORCHINDUCTOR_AUTOTUNE_LOCAL_CACHE=0``; the engine's own redraw,
engine/measure/autotune_draw.py, whose processes should show their kernels "miss" and differ in
``in_use`` from one another while cache 0 replays its choice afterwards).
A benchmark script: it prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import hashlib, json, pathlib, statistics, sys, time
import torch
a = json.loads(sys.argv[1])
torch.manual_seed(0)
from transformers import BertConfig, BertModel
bert = BertModel(BertConfig()).to("cuda", torch.bfloat16).eval()
eager = lambda ids: bert(input_ids=ids).last_hidden_state
x = torch.randint(0, 30522, (8, 128), device="cuda")
sys.path.insert(0, a["root"])
if a.get("redraw"):  # the engine's own redraw (engine/measure/autotune_draw.py)
    from engine.measure.autotune_draw import redraw
    assert redraw() is None
comp = torch.compile(eager, mode=None if a["mode"] == "default" else a["mode"])
def rounds(fn, k):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(k):
        s.record(); fn(x); e.record(); e.synchronize(); out.append(s.elapsed_time(e))
    return statistics.median(out)
with torch.inference_mode():
    eager(x); torch.cuda.synchronize()
    t0 = time.perf_counter(); comp(x); torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    for _ in range(5):
        comp(x); eager(x)
    torch.cuda.synchronize()
    c, e = [], []
    for _ in range(a["rounds"]):
        c.append(rounds(comp, 40)); e.append(rounds(eager, 40))
def choice(p):  # block sizes, warps, stages: not the timing or hashes stored beside them
    try:
        d = json.loads(p.read_text())
    except ValueError:
        return p.name + " unreadable"
    keep = {k: v for k, v in d.items() if k.isupper() or k in ("num_warps", "num_stages")}
    return p.name.split(".")[0] + " " + json.dumps(keep, sort_keys=True)
configs = sorted(choice(p) for p in pathlib.Path(a["cache"]).rglob("*.best_config"))
digest = hashlib.sha1("\n".join(configs).encode()).hexdigest()[:10]
from engine.measure.forensics import _loaded_modules, autotune_states
in_use = []  # what each autotuned kernel runs now, read from its autotuner in this process
for mod in _loaded_modules():
    for name, v in list(getattr(mod, "__dict__", {}).items()):
        # after its compile an autotuner keeps no config list (configs = None), only its
        # launchers: one once autotuned or read from the cache; a kernel with one config
        # never had a choice. No decision recorded (autotune cache off): kept, marked "-".
        ls, info = getattr(v, "launchers", None), getattr(v, "autotune_cache_info", None)
        state = info.get("autotune_cache_state", "-") if isinstance(info, dict) else "-"
        if isinstance(ls, list) and len(ls) == 1 and state != "only 1 config":
            cfg = ls[0].config
            in_use.append(f"{name} {sorted(cfg.kwargs.items())} w{cfg.num_warps} ({state})")
in_use.sort()
try:
    clock = torch.cuda.clock_rate()
except Exception:
    clock = None
print("RESULT " + json.dumps({"first_call_s": round(first_s, 2),
      "compiled_ms": statistics.median(c), "eager_ms": statistics.median(e),
      "speedup": statistics.median(ei / ci for ei, ci in zip(e, c)), "best_configs": len(configs),
      "digest": digest, "choices": configs, "autotune": autotune_states(_loaded_modules()),
      "in_use": hashlib.sha1("\n".join(u.rsplit(" (", 1)[0] for u in in_use).encode()
                             ).hexdigest()[:10], "kernels_in_use": len(in_use),
      "in_use_list": in_use, "sm_clock_mhz": clock}))
"""


def child(mode: str, cache: str, rounds: int, redraw: bool = False, **env_extra: str) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, **env_extra)
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(
        {"mode": mode, "cache": cache, "rounds": rounds, "redraw": redraw,
         "root": str(pathlib.Path(__file__).resolve().parents[1])})], env=env,
        capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (p.stderr or p.stdout)[-300:]}


def _shown(r: dict) -> str:
    return json.dumps({k: v for k, v in r.items() if k not in ("choices", "in_use_list")})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="reduce-overhead")
    ap.add_argument("--caches", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warm", type=int, default=2, help="warm processes per cache")
    ap.add_argument("--redraw", type=int, default=0,
                    help="processes on copies of cache 0 without its autotuning results")
    ap.add_argument("--redraw-env", type=int, default=0,
                    help="processes on cache 0 with TORCHINDUCTOR_AUTOTUNE_LOCAL_CACHE=0")
    ap.add_argument("--redraw-engine", type=int, default=0,
                    help="processes on cache 0 with the engine's redraw "
                         "(engine/measure/autotune_draw.py), then one that replays")
    args = ap.parse_args()
    rows: list[tuple] = []
    tmp: list[str] = []
    for k in range(args.caches):
        cache = tempfile.mkdtemp(prefix=f"choice{k}_")
        tmp.append(cache)
        for phase in ("cold", *["warm"] * args.warm):
            r = child(args.mode, cache, args.rounds)
            rows.append((k, phase, r))
            print(f"cache {k} {phase}: {_shown(r)}", flush=True)
    for n in range(args.redraw):
        # the compile's code, kernels and FX graph kept; its *.best_config files removed. A warm
        # load's pickled autotuners look their choice up at the path of the compile that
        # filled the cache (torch's StaticAutotunerFuture), so this copy is expected to replay
        copy = tempfile.mkdtemp(prefix=f"redraw{n}_")
        shutil.copytree(f"{tmp[0]}", copy, dirs_exist_ok=True)
        gone = [p.unlink() for p in pathlib.Path(copy).rglob("*.best_config")]
        r = child(args.mode, copy, args.rounds)
        rows.append((f"redraw{n}", "warm", r))
        print(f"redraw {n} ({len(gone)} choices removed): {_shown(r)}", flush=True)
    for n in range(args.redraw_env):
        r = child(args.mode, tmp[0], args.rounds, TORCHINDUCTOR_AUTOTUNE_LOCAL_CACHE="0")
        rows.append((f"env{n}", "warm", r))
        print(f"redraw-env {n}: {_shown(r)}", flush=True)
    for n in range(args.redraw_engine):
        r = child(args.mode, tmp[0], args.rounds, redraw=True)
        rows.append((f"engine{n}", "warm", r))
        print(f"redraw-engine {n}: {_shown(r)}", flush=True)
    if args.redraw_engine:  # the redraws must have left cache 0's choice as it was
        r = child(args.mode, tmp[0], args.rounds)
        rows.append(("after-redraws", "warm", r))
        print(f"cache 0 warm after the redraws: {_shown(r)}", flush=True)
    ok = [(k, r) for k, _, r in rows if "compiled_ms" in r]
    if ok:
        per_cache = {k: [r["compiled_ms"] for kk, r in ok if kk == k] for k, _ in ok}
        means = [statistics.fmean(v) for v in per_cache.values()]
        within = [max(v) / min(v) - 1 for v in per_cache.values() if len(v) > 1]
        print(f"compiled ms per cache: {per_cache}")
        chosen = {k: {u.rsplit(" (", 1)[0] for u in r.get("in_use_list") or []}
                  for k, ph, r in rows if ph == "cold" or not isinstance(k, int)}
        common = set.intersection(*chosen.values()) if chosen else set()
        for k, c in chosen.items():
            for line in sorted(c - common):
                print(f"cache {k} chose: {line}")
        print(f"between caches: {100 * (max(means) / min(means) - 1):.1f} % spread of the "
              f"means; within a cache: up to {100 * max(within or [0]):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
