"""A Llama-style decoder with a static KV cache, in the manner of gpt-fast's ``model.py``
(torch.nn only): RMSNorm, rotary position embeddings, SwiGLU feed-forward, causal attention over
a preallocated cache through ``F.scaled_dot_product_attention``.

Why a static cache: the cache is allocated once for ``prompt + new_tokens`` positions and written
in place at ``input_pos``; attention always reads the whole cache under a mask. Every decode step
therefore has the same shapes, so a compiled step is one graph (no recompile per token) and
reduce-overhead can replay it as one CUDA graph, which is what makes compiled decoding fast.

``forward(tokens [B, T], input_pos [T]) -> logits [B, T, vocab]`` serves both prefill (T = the
prompt) and one decode step (T = 1). The catalogue's ``llama_decode`` times one decode step
through the ordinary protocol; ``engine/measure/decode.py`` measures prefill and whole generations.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 32000  # Llama-2 / TinyLlama tokenizer size


def _multiple(n: int, k: int) -> int:
    return n if n % k == 0 else n + k - n % k


class KVCache(nn.Module):
    """Keys and values of every position, ``[batch, heads, max_seq, head_dim]``, written in
    place. Buffers, so ``model.to(dtype)`` casts them and compiled graphs treat them as static."""

    def __init__(self, batch: int, heads: int, max_seq: int, head_dim: int) -> None:
        super().__init__()
        self.register_buffer("k", torch.zeros(batch, heads, max_seq, head_dim), persistent=False)
        self.register_buffer("v", torch.zeros(batch, heads, max_seq, head_dim), persistent=False)

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        self.k[:, :, input_pos] = k
        self.v[:, :, input_pos] = v
        return self.k, self.v


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotary_tables(max_seq: int, head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """``[max_seq, head_dim // 2, 2]``: cos and sin of each position's rotation angles."""
    freqs = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(max_seq).float(), freqs)
    return torch.stack([angles.cos(), angles.sin()], dim=-1)


def apply_rotary(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rotate pairs of ``x`` ``[B, T, H, D]`` by ``table`` ``[T, D/2, 2]`` (real arithmetic:
    no complex tensors, which inductor and bfloat16 handle poorly)."""
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    t = table.float().view(1, xs.size(1), 1, xs.size(3), 2)
    out = torch.stack([xs[..., 0] * t[..., 0] - xs[..., 1] * t[..., 1],
                       xs[..., 1] * t[..., 0] + xs[..., 0] * t[..., 1]], dim=-1)
    return out.flatten(3).type_as(x)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, batch: int, max_seq: int) -> None:
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
        self.heads, self.head_dim = heads, hidden // heads
        self.wqkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.wo = nn.Linear(hidden, hidden, bias=False)
        self.cache = KVCache(batch, heads, max_seq, self.head_dim)

    def forward(self, x: torch.Tensor, table: torch.Tensor, mask: torch.Tensor,
                input_pos: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.wqkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, self.head_dim) for z in (q, k, v))
        q, k = apply_rotary(q, table), apply_rotary(k, table)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        k, v = self.cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, c))


class FeedForward(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        inner = _multiple(int(8 * hidden / 3), 256)  # Llama's SwiGLU width
        self.w1 = nn.Linear(hidden, inner, bias=False)
        self.w3 = nn.Linear(hidden, inner, bias=False)
        self.w2 = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, batch: int, max_seq: int) -> None:
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(hidden), RMSNorm(hidden)
        self.attention = Attention(hidden, heads, batch, max_seq)
        self.feed_forward = FeedForward(hidden)

    def forward(self, x, table, mask, input_pos):  # type: ignore[no-untyped-def]
        x = x + self.attention(self.attention_norm(x), table, mask, input_pos)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """The decoder. ``max_seq`` fixes the cache: prompt plus every token to be generated."""

    def __init__(self, layers: int, hidden: int, heads: int, batch: int, max_seq: int,
                 vocab: int = VOCAB) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(Block(hidden, heads, batch, max_seq) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.output = nn.Linear(hidden, vocab, bias=False)
        self.register_buffer("rotary", rotary_tables(max_seq, hidden // heads), persistent=False)
        self.register_buffer("causal", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)),
                             persistent=False)

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        mask = self.causal[None, None, input_pos]  # [1, 1, T, max_seq]: only filled positions
        table = self.rotary[input_pos]
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, table, mask, input_pos)
        return self.output(self.norm(x))


def build(batch: int = 1, prompt: int = 128, new_tokens: int = 128, layers: int = 16,
          hidden: int = 2048, heads: int = 32):
    """``llama_decode``: the module and the inputs of ONE decode step (the token right after the
    prompt), which the ordinary protocol times; ``compilelab_decode`` tells engine/measure/decode.py
    how to run prefill and whole generations on the same module."""
    model = Llama(layers, hidden, heads, batch, max_seq=prompt + new_tokens)
    model.compilelab_decode = {"batch": batch, "prompt": prompt, "new_tokens": new_tokens,
                               "vocab": VOCAB}
    model.compilelab_arch = {"layers": layers, "hidden": hidden, "heads": heads, "vocab": VOCAB,
                             "max_seq": prompt + new_tokens}
    token = torch.randint(0, VOCAB, (batch, 1))
    return model, (token, torch.tensor([prompt]))
