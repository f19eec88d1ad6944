"""Hugging Face ``generate()`` with its static cache, as a second decoding path.

For ``hf:ARCH`` decoder-only models given ``new_tokens > 0``: after the ordinary protocol (one
timed call = one forward over ``seq`` tokens), whole greedy generations through the library's
own ``model.generate()`` with a static cache, prompt = the run's ``seq`` tokens,
measured by engine/measure/decode.py's ``measure_generations`` (warm-up watched for recompiles, timed
generations alternating with eager's, TTFT, per-token latency, tokens/s, compile cost,
break-even in tokens).

How it is timed: a streamer's ``put`` is called with each new token moved to the host
(``tokens.cpu()``, which waits for the device), so the time of each ``put`` is when that token
existed; the first ``put`` is the prompt itself. What is compiled: the model's ``forward``,
with the variant's own ``torch.compile`` options, as the transformers docs show for a static
cache; ``disable_compile=True`` keeps generate() from compiling on its own (it does so on CUDA
with a static cache), so eager stays eager and each variant is the mode it names. The forward is
restored afterwards. Under CUDA graphs (reduce-overhead, max-autotune) each forward starts a new
CUDA-graph step and its outputs are cloned (:func:`step_safe` says why).

The static cache is built once per side and allocated before the first generation
(:func:`static_cache`), then reset before each one, instead of generate() building a new one
whose buffers are allocated lazily by the first forward: that forward is the prefill, which is
compiled here, so its buffers would be created inside a CUDA-graph recording (transformers then
skips ``mark_static_address``), pooled by it and overwritten by the next replay; transformers
initialises early for the same reason when it compiles a prefill itself. Where the installed
transformers cannot do this, the figure holds the error and the run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

from engine.measure import decode, signals
from engine.measure.losttime import CUDAGRAPH_MODES
from engine.measure.timing import Timer


def wanted(model: torch.nn.Module) -> bool:
    return isinstance(getattr(model, "compilelab_hf_generate", None), dict)


class _Clock:
    """A streamer recording when each token reached the host, and the frames compiled and
    CUDA graphs recorded by then."""

    def __init__(self, watch: bool) -> None:
        self.times: list[float] = []
        self.compiles: list[tuple[int, int]] = []
        self.watch = watch

    def put(self, value: Any) -> None:
        self.times.append(time.perf_counter())
        self.compiles.append(signals.compile_counts() if self.watch else (0, 0))

    def end(self) -> None:
        pass


def static_cache(inner: torch.nn.Module, batch: int, max_len: int) -> Any:
    """A transformers ``StaticCache`` for ``inner``, its buffers allocated now (outside any
    compiled region, so marked as static addresses), or None where the layout is not one
    StaticCache can take up front (layers across devices, attention with distinct key and value
    sizes): generate() then builds its own, as before."""
    from transformers import StaticCache

    cfg = inner.config.get_text_config(decoder=True)
    if getattr(cfg, "qk_head_dim", None) is not None or len(
            {p.device for p in inner.parameters()}) > 1:
        return None
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    param = next(inner.parameters())
    cache = StaticCache(config=cfg, max_cache_len=max_len)
    cache.early_initialization(batch_size=batch, num_heads=heads, head_dim=head_dim,
                               dtype=param.dtype, device=param.device)
    return cache


def _one(inner: torch.nn.Module, ids: torch.Tensor, new_tokens: int, timer: Timer,
         watch: bool, cache: Any = None) -> dict[str, Any]:
    clock = _Clock(watch)
    before = signals.compile_counts() if watch else (0, 0)
    if cache is not None:
        cache.reset()  # in place: the buffers keep their addresses from generation to generation
    where = {"past_key_values": cache} if cache is not None else {"cache_implementation": "static"}
    timer.sync()
    t0 = time.perf_counter()
    inner.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                   min_new_tokens=new_tokens, do_sample=False, use_cache=True,
                   disable_compile=True, streamer=clock, pad_token_id=0, **where)
    timer.sync()
    end = time.perf_counter()
    tokens = clock.times[1:]  # [0] is the prompt
    if not tokens:
        raise RuntimeError("generate() produced no token")
    steps = [(b - a) * 1e3 for a, b in zip(tokens, tokens[1:], strict=False)]
    counts = clock.compiles[1:]
    pairs = list(enumerate(zip(counts, counts[1:], strict=False)))
    return {"ttft_ms": (tokens[0] - t0) * 1e3, "decode_ms": (end - tokens[0]) * 1e3,
            "total_ms": (end - t0) * 1e3, "step_ms": steps,
            "prefill_compiles": (counts[0][0] - before[0]) if watch else 0,
            "prefill_records": (counts[0][1] - before[1]) if watch else 0,
            "compiled_steps": [i for i, (a, b) in pairs if b[0] > a[0]],
            "recorded_steps": [i for i, (a, b) in pairs if b[1] > a[1]]}


def uses_cudagraphs(compile_kwargs: dict[str, Any] | None, device: torch.device) -> bool:
    """Whether the compiled forward replays CUDA graphs (its mode, or inductor's option)."""
    if compile_kwargs is None or device.type != "cuda":
        return False
    options = compile_kwargs.get("options") or {}
    return (compile_kwargs.get("mode") in CUDAGRAPH_MODES
            or bool(options.get("triton.cudagraphs")))


def step_safe(compiled: Callable[..., Any]) -> Callable[..., Any]:
    """The compiled forward as generate() must call it under CUDA graphs: each decoding step a
    new CUDA-graph step, its tensors cloned out of the graph's memory. generate() reads a
    step's outputs after the next replay has overwritten them (torch refuses: "accessing
    tensor output of CUDAGraphs that has been overwritten by a subsequent run"); torch's
    message names these two remedies, which a user's own loop needs too, so they are timed."""
    mark = torch.compiler.cudagraph_mark_step_begin

    def forward(*args: Any, **kwargs: Any) -> Any:
        mark()
        return _cloned(compiled(*args, **kwargs))
    return forward


def _cloned(out: Any) -> Any:
    """Every tensor of ``out`` cloned. A ``ModelOutput`` is a dict whose items are its fields;
    transformers registers it with torch's pytree only once an instance was built outside a
    compile, so its items are walked here rather than trusting the registration."""
    if isinstance(out, dict):
        for key in list(out.keys()):
            out[key] = _cloned(out[key])
        return out
    return pytree.tree_map_only(torch.Tensor, torch.Tensor.clone, out)


def measure(model: torch.nn.Module, compile_kwargs: dict[str, Any] | None, timer: Timer, *,
            seed: int, progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """The ``hf_generate`` figure of one variant: ``compile_kwargs`` None for eager, else the
    variant's ``torch.compile`` options applied to the model's forward."""
    cfg = model.compilelab_hf_generate
    inner = model.inner
    batch, prompt, new_tokens = int(cfg["batch"]), int(cfg["prompt"]), int(cfg["new_tokens"])
    gen = torch.Generator().manual_seed(seed)
    device = next(inner.parameters()).device
    ids = torch.randint(0, int(cfg["vocab"]), (batch, prompt), generator=gen).to(device)
    compiled = None if compile_kwargs is None else torch.compile(inner.forward, **compile_kwargs)
    graphs = uses_cudagraphs(compile_kwargs, device)
    if graphs:
        compiled = step_safe(compiled)

    def side(forward: Callable[..., Any] | None) -> decode.GenFn:
        cache = static_cache(inner, batch, prompt + new_tokens)  # one per side, reused

        def run(per_step: bool, watch: bool) -> dict[str, Any]:
            if forward is not None:
                inner.forward = forward  # the instance attribute shadows the class's method
            try:
                return _one(inner, ids, new_tokens, timer, watch, cache)
            finally:
                inner.__dict__.pop("forward", None)
        return run

    try:
        out = decode.measure_generations(
            side(compiled), None if compiled is None else side(None), batch=batch,
            prompt=prompt, new_tokens=new_tokens, first_call_ms=None, repeats=3,
            progress=progress)
    except Exception as e:  # an older/newer transformers without this path: say so, go on
        return {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
                if str(e).strip() else type(e).__name__}
    out["path"] = "transformers generate(), static cache allocated before the first, greedy" + (
        "; CUDA graphs: a new step and the outputs cloned on every forward" if graphs else "")
    return out
