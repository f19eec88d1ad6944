"""An attention block meant to be fed a changing sequence length, as a serving process sees. A
sweep over ``seq`` shows dynamo's first recompile (static -> dynamic shapes with ``dynamic=None``)
or one recompile per length (``dynamic=False``)."""

import torch
from torch import nn
from torch.nn import functional as F


class AttentionBlock(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
        self.heads = heads
        self.ln = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.out(y.transpose(1, 2).reshape(b, t, c))


def build(batch: int = 8, seq: int = 64, hidden: int = 256, heads: int = 4):
    return AttentionBlock(hidden, heads), (torch.randn(batch, seq, hidden),)
