"""User models for checking the engine's failure paths on a real GPU (not used by the tests).

    python -m engine run --model acceptance/gpu_models.py:allocates_200_gib_when_compiled \\
        --device cuda --variants eager,default

The tests fake an out-of-memory error on the CPU (``tests/fixtures/user_models.py``); this one
makes the CUDA caching allocator itself refuse a request, so the message, the exception type and
the stderr tail are torch's own.
"""

import torch
from torch import nn


@torch.compiler.disable  # dynamo breaks the graph here and calls it for real
def _allocate_200_gib(device: torch.device) -> torch.Tensor:
    # More than any single GPU has (an H200 has about 140 GiB); a plain device allocation, which
    # fails cleanly (never managed memory).
    return torch.empty(200 * 2**30, dtype=torch.uint8, device=device)


class _AllocatesWhenCompiled(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.fc = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            _allocate_200_gib(x.device)
        return torch.relu(self.fc(x))


def allocates_200_gib_when_compiled(batch: int = 32, hidden: int = 1024):
    """Eager runs normally; the compiled variant's first call asks for 200 GiB."""
    return _AllocatesWhenCompiled(hidden), (torch.randn(batch, hidden),)
