"""A chain of LayerNorm + GELU blocks: in eager each op is its own memory-bound kernel, so a
compiler that fuses the chain moves the tensor through memory once instead of ~2x depth times."""

import torch
from torch import nn


class PointwiseChain(nn.Module):
    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for norm in self.norms:
            x = nn.functional.gelu(norm(x))
        return x


def build(batch: int = 64, width: int = 4096, depth: int = 8):
    return PointwiseChain(width, depth), (torch.randn(batch, width),)
