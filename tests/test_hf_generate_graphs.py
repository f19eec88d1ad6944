"""generate() under CUDA graphs: each forward starts a CUDA-graph step and hands generate()
clones, so a step's outputs stay readable after the next replay (on the GPU, without this,
hf:llama and hf:mistral with reduce-overhead ended "accessing tensor output of CUDAGraphs that
has been overwritten by a subsequent run")."""

import torch

from engine.measure import hf_generate

CUDA, CPU = torch.device("cuda", 0), torch.device("cpu")


def test_which_variants_replay_cuda_graphs():
    assert hf_generate.uses_cudagraphs({"mode": "reduce-overhead"}, CUDA)
    assert hf_generate.uses_cudagraphs({"mode": "max-autotune"}, CUDA)
    assert hf_generate.uses_cudagraphs({"options": {"triton.cudagraphs": True}}, CUDA)
    assert not hf_generate.uses_cudagraphs({"mode": "max-autotune-no-cudagraphs"}, CUDA)
    assert not hf_generate.uses_cudagraphs({"mode": "default"}, CUDA)
    assert not hf_generate.uses_cudagraphs(None, CUDA)
    assert not hf_generate.uses_cudagraphs({"mode": "reduce-overhead"}, CPU)


def test_each_forward_is_a_new_step_and_returns_clones(monkeypatch):
    marks = []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    held = torch.arange(4.0)
    cache = object()  # a static cache object passes through as it is

    def compiled(ids, **kw):
        return {"logits": held, "past_key_values": cache, "hidden": (held, None)}

    fwd = hf_generate.step_safe(compiled)
    out = fwd(torch.zeros(1), use_cache=True)
    assert marks == [1]
    assert torch.equal(out["logits"], held)
    assert out["logits"].data_ptr() != held.data_ptr()
    assert out["hidden"][0].data_ptr() != held.data_ptr() and out["hidden"][1] is None
    assert out["past_key_values"] is cache
    fwd(torch.zeros(1))
    assert marks == [1, 1]


def test_a_model_output_pytree_does_not_know_is_cloned_too(monkeypatch):
    """A dict subclass torch's pytree has no entry for (as a ModelOutput before transformers
    registered it) is a leaf to tree_map: its tensors are cloned all the same."""
    import collections

    class Output(collections.OrderedDict):
        pass

    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: None)
    held = torch.ones(3)
    out = hf_generate.step_safe(lambda: Output(logits=held, extra=[held]))()
    assert isinstance(out, Output)
    assert out["logits"].data_ptr() != held.data_ptr()
    assert out["extra"][0].data_ptr() != held.data_ptr()


def _tiny_llama():
    import pytest

    pytest.importorskip("transformers")
    from engine.models.catalogue import load_factory

    torch.manual_seed(0)
    model, *_ = load_factory("hf:llama")(batch=1, seq=8, layers=2, hidden=32, heads=4,
                                         new_tokens=4)
    return model.inner.eval()


def test_the_static_cache_is_allocated_before_the_compiled_prefill_and_reused():
    """Its buffers exist before the first (compiled) forward and keep their addresses from one
    generation to the next; a compiled forward generates what eager does."""
    from engine.measure.timing import Timer

    model = _tiny_llama()
    cache = hf_generate.static_cache(model, batch=1, max_len=12)
    keys = cache.layers[0].keys
    assert keys.shape == (1, 4, 12, 8) and cache.layers[0].is_initialized
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(1))
    timer = Timer("cpu")
    eager = hf_generate._one(model, ids, 4, timer, watch=False, cache=cache)
    model.forward = torch.compile(model.forward, backend="aot_eager")
    try:
        for _ in range(2):
            out = hf_generate._one(model, ids, 4, timer, watch=False, cache=cache)
            assert len(out["step_ms"]) == 3
            assert cache.get_seq_length() == 8 + 3  # generate() filled this cache, not its own
            assert cache.layers[0].keys.data_ptr() == keys.data_ptr()
    finally:
        model.__dict__.pop("forward", None)
    assert eager["ttft_ms"] > 0


def test_the_cache_is_reset_before_each_generation(monkeypatch):
    model = _tiny_llama()
    cache = hf_generate.static_cache(model, batch=1, max_len=12)
    resets = []
    monkeypatch.setattr(cache, "reset", lambda: resets.append(1))
    monkeypatch.setattr(model, "generate", lambda *a, **kw: kw["streamer"].put(None) or [
        kw["streamer"].put(None) for _ in range(2)])
    from engine.measure.timing import Timer

    hf_generate._one(model, torch.zeros(1, 8, dtype=torch.long), 2, Timer("cpu"),
                     watch=False, cache=cache)
    assert resets == [1]
