"""Token generation measured apart: prefill, time to first token, per-token latency, tokens/s.

For a model that declares ``compilelab_decode = {"batch", "prompt", "new_tokens"}`` (the
catalogue's ``llama_decode``: engine/models/llama.py) the child's ordinary protocol times ONE
decode step (warm-up curve, interleaved steady-state rounds, speedup with its interval); this
module then runs whole greedy generations on the same module, the way a serving loop does:

    prefill: step(prompt [B, P], positions 0..P-1) -> first token      (time to first token)
    decode:  step(token [B, 1], position P+i) -> next token, N-1 times  (per-token latency)

Method, in the process of each variant (``step`` is the eager module or the compiled one):
1. Warm-up generations, untimed as figures but watched: the first includes the prefill's compile
   (a new shape) and every recompile decoding triggers; each decode step's frame and CUDA-graph
   counts are read (``signals.compile_counts``) so a step that recompiles every token (a Python
   int position, a growing cache) is flagged, not averaged away, and CUDA-graph set-ups and
   recordings are counted apart from compiles. Three generations in all before timing, because
   reduce-overhead records a CUDA graph on a shape's second call and replays from the third, and
   prefill runs once per generation.
2. Timed generations, ``repeats`` of each kind: one with a synchronise after every step (TTFT and
   per-token latencies, as a streaming client sees them) and one with a single synchronise at the
   end (tokens/s of an uninterrupted loop). A compiled variant also runs eager's generations in
   the same process, alternating, so its speedups are paired as the steady-state rounds are.
3. Derived: tokens/s = batch x new_tokens / generation time (prefill included, as gpt-fast
   reports it) and decode tokens/s (prefill excluded); compile cost = the compiled first call
   beyond a steady step plus the first generation beyond a steady one; break-even in tokens =
   compile cost / (eager's generation time - compiled's) x tokens per generation (None: never).
4. Memory: the weights' bytes and the KV cache's (computed from the tensors, on any device) and,
   on a GPU, the peak allocated and reserved during the generations (after a reset; the float64
   copy of step 5 comes later and is not in it).
5. Accuracy against float64, after the timings: a float64 copy of the same weights generates
   greedily from the same prompt; then eager and the variant are fed the float64 run's tokens
   (teacher forcing, so a token that rounds the other way early does not make every later
   comparison meaningless) and the logits of the prefill and of every decode step are judged as
   the inference check judges an output (engine/measure/accuracy.py ``judge``): per step,
   ``compiled_error <= multiplier x eager_error + floor x RMS(float64 logits)`` (multiplier 3,
   floor 1e-3 in bfloat16/float16 and 1e-5 in float32 unless the run says otherwise). Also the
   share of steps whose top token is float64's (top-1 agreement), for eager and the variant.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from engine.measure import accuracy, signals
from engine.measure.timing import Timer

Step = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
WARMUP_GENERATIONS = 3


def is_decode_model(model: torch.nn.Module) -> bool:
    return isinstance(getattr(model, "compilelab_decode", None), dict)


def generate(step: Step, prompt_ids: torch.Tensor, new_tokens: int, timer: Timer, *,
             per_step: bool, watch_compiles: bool = False) -> dict[str, Any]:
    """One greedy generation of ``new_tokens`` tokens after ``prompt_ids``. ``per_step``:
    synchronise after every step and keep each step's time; ``watch_compiles``: record which
    steps compiled (reads dynamo's compilation metrics, a little host work per step)."""
    device = prompt_ids.device
    prompt = prompt_ids.shape[1]
    positions = [torch.tensor([prompt + i], device=device) for i in range(new_tokens - 1)]
    before = signals.compile_counts() if watch_compiles else (0, 0)
    timer.sync()
    t0 = time.perf_counter()
    logits = step(prompt_ids, torch.arange(prompt, device=device))
    token = logits[:, -1].argmax(-1, keepdim=True)  # a fresh tensor: CUDA-graph outputs are reused
    timer.sync()
    ttft_ms = (time.perf_counter() - t0) * 1e3
    after = signals.compile_counts() if watch_compiles else (0, 0)
    step_ms: list[float] = []
    compiled_steps: list[int] = []
    recorded_steps: list[int] = []
    t_dec = time.perf_counter()
    for i, pos in enumerate(positions):
        n = signals.compile_counts() if watch_compiles else (0, 0)
        t = time.perf_counter()
        token = step(token, pos)[:, -1].argmax(-1, keepdim=True)
        if per_step:
            timer.sync()
            step_ms.append((time.perf_counter() - t) * 1e3)
        if watch_compiles:
            m = signals.compile_counts()
            if m[0] > n[0]:
                compiled_steps.append(i)
            if m[1] > n[1]:
                recorded_steps.append(i)
    timer.sync()
    decode_ms = (time.perf_counter() - t_dec) * 1e3
    return {"ttft_ms": ttft_ms, "decode_ms": decode_ms, "total_ms": ttft_ms + decode_ms,
            "step_ms": step_ms, "prefill_compiles": after[0] - before[0],
            "prefill_records": after[1] - before[1], "recorded_steps": recorded_steps,
            "compiled_steps": compiled_steps, "last_token": token}


def _med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _summary(per_step: list[dict[str, Any]], loop: list[dict[str, Any]], batch: int,
             new_tokens: int) -> dict[str, Any]:
    """Figures of one side (eager or the variant) from its timed generations."""
    steps = [ms for g in per_step for ms in g["step_ms"]]
    total = _med([g["total_ms"] for g in loop])
    decode = _med([g["decode_ms"] for g in loop])
    return {
        "ttft_ms": _med([g["ttft_ms"] for g in per_step]),
        "per_token_ms": _med(steps),
        "per_token_p90_ms": (statistics.quantiles(steps, n=10, method="inclusive")[-1]
                             if len(steps) >= 2 else _med(steps)),
        "generation_ms": total,
        "tokens_per_s": batch * new_tokens / (total / 1e3) if total else None,
        "decode_tokens_per_s": (batch * (new_tokens - 1) / (decode / 1e3)
                                if decode and new_tokens > 1 else None),
    }


GenFn = Callable[[bool, bool], dict[str, Any]]
"""``gen(per_step, watch_compiles)``: one whole generation, as ``generate`` returns it."""


def _is_cache(module: torch.nn.Module) -> bool:
    """A static KV cache module: buffers ``k`` and ``v`` (engine/models/llama.py ``KVCache``)."""
    names = {n for n, _ in module.named_buffers(recurse=False)}
    return {"k", "v"} <= names


def memory_figures(model: torch.nn.Module) -> dict[str, int]:
    """Bytes of the weights (parameters and the buffers that are not a KV cache) and of the KV
    cache, each storage counted once; the same on every device."""
    cache_ids = {id(b) for m in model.modules() if _is_cache(m)
                 for b in m.buffers(recurse=False)}
    seen: set[int] = set()
    weights = cache = 0
    for t in [*model.parameters(), *model.buffers()]:
        key = t.untyped_storage().data_ptr() if t.device.type != "meta" else id(t)
        if key in seen:
            continue
        seen.add(key)
        n = t.numel() * t.element_size()
        if id(t) in cache_ids:
            cache += n
        else:
            weights += n
    return {"weights_bytes": weights, "kv_cache_bytes": cache}


def _forced(step: Step, prompt_ids: torch.Tensor, new_tokens: int,
            tokens: list[torch.Tensor] | None) -> tuple[dict[str, torch.Tensor],
                                                        list[torch.Tensor]]:
    """The logits of the prefill and of each decode step, on the host in float64; the tokens
    fed after each are ``tokens`` (teacher forcing) or the step's own greedy choice (None)."""
    device, prompt = prompt_ids.device, prompt_ids.shape[1]
    logits: dict[str, torch.Tensor] = {}
    chosen: list[torch.Tensor] = []
    out = step(prompt_ids, torch.arange(prompt, device=device))[:, -1]
    for i in range(new_tokens):
        name = "prefill" if i == 0 else f"step {i}"
        logits[name] = out.detach().to("cpu", torch.float64, copy=True)
        token = out.argmax(-1, keepdim=True) if tokens is None else tokens[i].to(device)
        chosen.append(token.detach().to("cpu", copy=True))
        if i < new_tokens - 1:
            out = step(token, torch.tensor([prompt + i], device=device))[:, -1]
    return logits, chosen


def generation_accuracy(model: torch.nn.Module, step: Step, eager: Step | None,
                        prompt_ids: torch.Tensor, new_tokens: int,
                        run: Mapping[str, Any]) -> dict[str, Any]:
    """Step 5 of the module docstring: ``step`` the variant (the module itself for eager),
    ``eager`` the eager module in a compiled variant's process (None for eager)."""
    too_large = accuracy.float64_too_large(model)
    if too_large:
        return {"error": too_large}
    multiplier = float(run.get("accuracy_multiplier", accuracy.DEFAULT_MULTIPLIER))
    floor = accuracy.floor_for(run)
    fp64_model = copy.deepcopy(model).to(torch.float64)
    ref, tokens = _forced(fp64_model, prompt_ids, new_tokens, None)
    del fp64_model
    mine, _ = _forced(step, prompt_ids, new_tokens, tokens)
    theirs = _forced(eager, prompt_ids, new_tokens, tokens)[0] if eager is not None else None
    group = accuracy.judge(ref, theirs if theirs is not None else mine,
                           mine if theirs is not None else None,
                           multiplier=multiplier, floor=floor)
    group.pop("per_tensor", None)  # per step: kept short; the worst step decides

    def agreement(side: dict[str, torch.Tensor]) -> float:
        hits = [bool((side[n].argmax(-1, keepdim=True) == t).all())
                for n, t in zip(ref, tokens, strict=True)]
        return sum(hits) / len(hits)

    out = {"reference_dtype": accuracy.REFERENCE_DTYPE, "ok": group["ok"], "steps": len(ref),
           "method": "teacher-forced on the float64 greedy tokens; logits of the prefill and "
                     "of each decode step against float64",
           "multiplier": multiplier, "floor": floor, "worst": group["worst"],
           "failed_steps": group["failed"], "top1_agreement": agreement(mine)}
    if theirs is not None:
        out["eager_top1_agreement"] = agreement(theirs)
    return out


def measure(model: torch.nn.Module, step: Step, eager: Step | None, timer: Timer, *,
            seed: int, first_call_ms: float | None, repeats: int = 3,
            progress: Callable[[float], None] | None = None,
            run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``decode`` figure of one variant. ``step`` is the variant's callable (the module
    itself for eager, the compiled module otherwise); ``eager`` the eager module for a compiled
    variant (None for the eager variant); ``first_call_ms`` the variant's first decode-step call
    (the cold compile), from the warm-up curve; ``run`` the run's spec (accuracy options)."""
    cfg = model.compilelab_decode
    batch, prompt, new_tokens = int(cfg["batch"]), int(cfg["prompt"]), int(cfg["new_tokens"])
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    prompt_ids = torch.randint(0, int(cfg.get("vocab", 32000)), (batch, prompt),
                               generator=gen).to(device)

    def side(fn: Step) -> GenFn:
        return lambda per_step, watch: generate(fn, prompt_ids, new_tokens, timer,
                                                per_step=per_step, watch_compiles=watch)

    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    out = measure_generations(side(step), None if eager is None else side(eager),
                              batch=batch, prompt=prompt, new_tokens=new_tokens,
                              first_call_ms=first_call_ms, repeats=repeats, progress=progress)
    out["memory"] = {**memory_figures(model),
                     "peak_allocated_bytes": int(torch.cuda.max_memory_allocated(device))
                     if cuda else None,
                     "peak_reserved_bytes": int(torch.cuda.max_memory_reserved(device))
                     if cuda else None}
    try:
        out["accuracy"] = generation_accuracy(model, step, eager, prompt_ids, new_tokens,
                                              run or {"dtype": _dtype_name(model)})
    except Exception as e:  # a figure after the timings must never cost them
        out["accuracy"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    return out


def _dtype_name(model: torch.nn.Module) -> str:
    return str(next(model.parameters()).dtype).replace("torch.", "")


# decode steps kept by number (one more, so a reader can tell that more were cut)
RECORDED_STEPS_KEPT = 20


def _compile_figures(warm: list[dict[str, Any]], later: list[int], new_tokens: int
                      ) -> dict[str, Any]:
    """What compiled and what CUDA graphs were recorded while warming up (``warm``: the warm-up
    generations) and once warm (``later``: frames, recordings in the timed generations)."""
    first = warm[0]
    steps = max(new_tokens - 1, 1)
    return {
        "prefill_compiles": first["prefill_compiles"],
        "decode_recompiles": sum(len(g["compiled_steps"]) for g in warm),
        "recompiled_steps": first["compiled_steps"][:20],
        "later_recompiles": later[0],
        # A step recompiling on most tokens, or compiles still happening once warm: the compiled
        # step is not one graph (e.g. a Python int position or a cache that grows).
        "recompiles_per_step": (len(first["compiled_steps"]) >= max(2, steps // 2)
                                or later[0] > 0),
        # CUDA-graph trees set up and record a graph per new input shape (a Mistral decoder
        # did at each decode position of its first generation): not compiles, but each costs
        # a recording; once warm there should be none.
        "cudagraph_records": sum(g.get("prefill_records", 0) + len(g.get("recorded_steps", []))
                                 for g in warm),
        "recorded_steps": first.get("recorded_steps", [])[:RECORDED_STEPS_KEPT + 1],
        "later_cudagraph_records": later[1],
    }


def measure_generations(variant: GenFn, eager: GenFn | None, *, batch: int, prompt: int,
                        new_tokens: int, first_call_ms: float | None, repeats: int = 3,
                        progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Warm-up generations watched for compiles, then timed ones alternating with eager's
    (module docstring); the figures and the derived speedups, compile cost and break-even."""
    t0 = time.perf_counter()
    warm = [variant(True, True) for _ in range(WARMUP_GENERATIONS)]
    warmup_s = time.perf_counter() - t0
    first = warm[0]
    sides: dict[str, dict[str, list[dict[str, Any]]]] = {"variant": {"per_step": [], "loop": []}}
    fns: dict[str, GenFn] = {"variant": variant}
    if eager is not None:
        sides["eager"] = {"per_step": [], "loop": []}
        fns["eager"] = eager
        for _ in range(2):  # eager's own first generations (caches, allocator) are not timed
            eager(False, False)
    later = [0, 0]  # frames compiled, CUDA graphs recorded, in the timed generations
    for r in range(repeats):
        order = list(fns) if r % 2 == 0 else list(fns)[::-1]  # alternate, as the rounds do
        for name in order:
            watch = name == "variant"
            for kind, per_step in (("per_step", True), ("loop", False)):
                g = fns[name](per_step, watch)
                if watch:
                    later[0] += g["prefill_compiles"] + len(g["compiled_steps"])
                    later[1] += g.get("prefill_records", 0) + len(g.get("recorded_steps", []))
                sides[name][kind].append(g)
        if progress:
            progress((r + 1) / repeats)

    out: dict[str, Any] = {"batch": batch, "prompt": prompt, "new_tokens": new_tokens,
                           "repeats": repeats, "warmup_generations": WARMUP_GENERATIONS,
                           "warmup_s": warmup_s}
    out.update(_summary(sides["variant"]["per_step"], sides["variant"]["loop"], batch,
                        new_tokens))
    out.update(first_generation_ms=first["total_ms"], first_ttft_ms=first["ttft_ms"],
               **_compile_figures(warm, later, new_tokens))
    if eager is not None:
        e = _summary(sides["eager"]["per_step"], sides["eager"]["loop"], batch, new_tokens)
        out["eager"] = e
        for key in ("tokens_per_s", "decode_tokens_per_s"):
            if out.get(key) and e.get(key):
                out[f"{key}_speedup"] = out[key] / e[key]
        if out.get("ttft_ms") and e.get("ttft_ms"):
            out["ttft_speedup"] = e["ttft_ms"] / out["ttft_ms"]
        steady = out["generation_ms"] or 0.0
        compile_ms = max((first_call_ms or 0.0) - (out["per_token_ms"] or 0.0), 0.0) \
            + max(first["total_ms"] - steady, 0.0)
        out["compile_s"] = compile_ms / 1e3
        saving = (e["generation_ms"] or 0.0) - steady  # per generation of batch x new_tokens
        out["break_even_tokens"] = (compile_ms / saving * batch * new_tokens
                                    if saving > 0 else None)
        out["break_even_generations"] = compile_ms / saving if saving > 0 else None
    return out
