"""A model with three deliberate graph breaks, one per line below, so the engine's break report
can be checked against known causes: a ``print``, a ``.item()`` read back to Python, and a
Python ``if`` on a tensor value (data-dependent control flow)."""

import torch
from torch import nn


class BreakyMLP(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(hidden, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        print("compilelab: graph break by print", end="\r")  # BREAK: print
        scale = x.abs().mean().item()  # BREAK: .item()
        x = self.fc2(x) / (1.0 + scale)
        if x.sum() > 0:  # BREAK: data-dependent branch
            x = torch.relu(x)
        else:
            x = torch.tanh(x)
        return self.fc3(x)


def build(batch: int = 32, hidden: int = 256):
    return BreakyMLP(hidden), (torch.randn(batch, hidden),)
