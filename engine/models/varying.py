"""An attention block meant to be fed a changing sequence length, as a serving process sees. A
sweep over ``seq`` shows dynamo's first recompile (static -> dynamic shapes with ``dynamic=None``)
or one recompile per length (``dynamic=False``)."""

import torch
from torch import nn

from engine.models.gpt import CausalSelfAttention


class AttentionBlock(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(self.ln(x))


def build(batch: int = 8, seq: int = 64, hidden: int = 256, heads: int = 4):
    return AttentionBlock(hidden, heads), (torch.randn(batch, seq, hidden),)
