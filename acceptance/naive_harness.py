"""The baseline a user would write by hand: one fresh process per compile mode, cold cache, then
again with the cache warm; each process times its first call and a steady-state median with
proper synchronisation.  Compile Lab's time to answer is compared against this script's wall
time on the same machine, in the same command (bench_vs_naive.py, time_to_answer_steps.py).
Kept as it was written, outside the engine on purpose: it imports nothing from Compile Lab, so
it measures what a user's own script would.

    python acceptance/naive_harness.py --device cuda --modes eager,default,reduce-overhead,max-autotune
    python acceptance/naive_harness.py --device cpu --modes eager,default --batch 32 --hidden 1024
    python acceptance/naive_harness.py --model bert --batch 8 --seq 128 --modes eager,default,reduce-overhead

It prints one line per process and, last, `NAIVE_WALL_S=<seconds>`.  Models: the seed MLP
(Linear(hidden, hidden) -> ReLU -> Linear(hidden, hidden)), float32; or BERT-base from its
default config (transformers, random weights), bfloat16, returning the last hidden state.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, statistics, sys, time
import torch
a = json.loads(sys.argv[1]); dev = a["device"]
torch.manual_seed(0)
if a["model"] == "bert":
    from transformers import BertConfig, BertModel
    bert = BertModel(BertConfig()).to(dev, torch.bfloat16).eval()
    model = lambda ids: bert(input_ids=ids).last_hidden_state
    x = torch.randint(0, 30522, (a["batch"], a["seq"]), device=dev)
else:
    h = a["hidden"]
    model = torch.nn.Sequential(torch.nn.Linear(h, h), torch.nn.ReLU(), torch.nn.Linear(h, h)).to(dev)
    x = torch.randn(a["batch"], h, device=dev)
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
fn = model if a["mode"] == "eager" else torch.compile(model, mode=None if a["mode"] == "default" else a["mode"])
with torch.inference_mode():
    t = time.perf_counter(); fn(x); sync(); first = time.perf_counter() - t
    for _ in range(20): fn(x)
    sync(); lat = []
    for _ in range(a["calls"]):
        t = time.perf_counter(); fn(x); sync(); lat.append(time.perf_counter() - t)
print("RESULT " + json.dumps({"first_call_s": first, "median_ms": 1e3 * statistics.median(lat)}))
"""


def run(args: argparse.Namespace, mode: str, cache: str) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
    spec = {"device": args.device, "mode": mode, "model": args.model, "batch": args.batch,
            "hidden": args.hidden, "seq": args.seq, "calls": args.calls}
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]), wall_s=wall)
    return {"error": (p.stderr or p.stdout)[-400:], "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", choices=["mlp", "bert"], default="mlp")
    ap.add_argument("--modes", default="eager,default,reduce-overhead,max-autotune")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    start = time.perf_counter()
    for mode in args.modes.split(","):
        cache = tempfile.mkdtemp(prefix="naive_inductor_")
        for phase in ("cold", "warm") if mode != "eager" else ("cold",):
            r = run(args, mode, cache)
            print(f"{mode:16s} {phase}: " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()), flush=True)
    print(f"NAIVE_WALL_S={time.perf_counter() - start:.1f}")


if __name__ == "__main__":
    main()
