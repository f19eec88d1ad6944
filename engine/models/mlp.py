"""A two-layer MLP: at batch 32 the whole call is a few tiny GEMMs, so launch overhead
dominates and compiled variants have little to win."""

import torch
from torch import nn


def build(batch: int = 32, hidden: int = 1024) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    model = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
    return model, (torch.randn(batch, hidden),)
