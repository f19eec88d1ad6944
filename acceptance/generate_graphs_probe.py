"""Which way of compiling a model's forward lets transformers' generate() (static cache) run
under CUDA graphs (reduce-overhead)? Each way runs in its own process on a small random Llama
or Mistral model, so a crash is reported as one; a way that fails prints the end of its error.
A probe for the GPU: it prints what it saw.

    python acceptance/generate_graphs_probe.py [--ways early,plain] [--tokens 8] [LlamaForCausalLM ...]

Each way prints the frames dynamo compiled and the run-time (CUDA-graph set-up and recording)
records after each of 3 generations, and why each frame was
compiled (torch's compilation metrics).

Ways: ``plain`` (the forward compiled, generate() builds its static cache, which the compiled
prefill then allocates), ``step_safe`` (plus a CUDA-graph step and cloned outputs per forward),
``early`` (plus the product's cache, allocated before the first generation:
engine/measure/hf_generate.static_cache).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[3])
import torch, transformers
from engine.measure.hf_generate import static_cache, step_safe
import torch._dynamo.utils as dynamo_utils
from torch._dynamo.utils import get_compilation_metrics
dynamo_utils.set_compilation_metrics_limit(100_000)  # torch keeps only its last 64 records
arch, way, tokens = sys.argv[1], sys.argv[2], int(sys.argv[4])
cfg = getattr(transformers, arch.replace("ForCausalLM", "Config"))(
    hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, vocab_size=1000)
model = getattr(transformers, arch)(cfg).to("cuda", torch.bfloat16).eval()
ids = torch.randint(0, 1000, (1, 16), device="cuda")
fwd = torch.compile(model.forward, mode="reduce-overhead")
model.forward = fwd if way == "plain" else step_safe(fwd)
cache = static_cache(model, 1, 16 + tokens) if way == "early" else None
with torch.no_grad():
    for g in range(3):
        if cache is not None:
            cache.reset()
        where = {"past_key_values": cache} if cache is not None else {
            "cache_implementation": "static"}
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens,
                             min_new_tokens=tokens, do_sample=False, disable_compile=True,
                             pad_token_id=0, **where)
        ms = get_compilation_metrics()
        runtime = sum(1 for m in ms if getattr(m, "is_runtime", False) is True)
        print(f"generation {g + 1}: {len(ms) - runtime} frames compiled and {runtime} run-time "
              "(CUDA-graph) records so far")
# what each compile was and why dynamo compiled it again (fields differ by release); of the
# run-time records, the first in full (what recorded it)
shown = False
for m in get_compilation_metrics():
    if getattr(m, "is_runtime", False) is True:
        if not shown:
            fields = getattr(m, "__dict__", {}) or {}
            print("  first run-time record:", {k: str(v)[:60] for k, v in fields.items()
                                                if v not in (None, 0, "", [], {}, False)})
            shown = True
        continue
    why = getattr(m, "recompile_reason", None) or getattr(m, "fail_reason", None) or "-"
    print(" ", getattr(m, "co_name", "?"), getattr(m, "co_firstlineno", "?"), str(why)[:160])
print("transformers", transformers.__version__, "torch", torch.__version__)
print("OK", tuple(out.shape))
"""


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ways", default="plain,step_safe,early")
    ap.add_argument("--tokens", type=int, default=8, help="new tokens per generation")
    ap.add_argument("archs", nargs="*", default=["LlamaForCausalLM", "MistralForCausalLM"])
    args = ap.parse_args()
    for arch in args.archs:
        for way in args.ways.split(","):
            try:
                p = subprocess.run([sys.executable, "-c", CHILD, arch, way, str(ROOT),
                                    str(args.tokens)],
                                   capture_output=True, text=True, timeout=150)
                said = p.stdout.strip().splitlines() or ["-"]
                tail = [line for line in p.stderr.splitlines()
                        if "Error" in line or "error" in line][-3:]
                print(f"{arch} {way}: exit {p.returncode}", *said, *tail, sep="\n  ",
                      flush=True)
            except subprocess.TimeoutExpired:
                print(f"{arch} {way}: no answer in 150 s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
