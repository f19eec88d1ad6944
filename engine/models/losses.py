"""Losses the catalogue's factories return for the training step (engine/measure/train_step.py).

A factory may return ``(model, inputs, loss_fn)``; ``loss_fn(output) -> scalar tensor`` closes
over labels drawn from the seeded RNG when the factory ran, so every process, every variant and
the float64 reference train on the same batch.
"""

from collections.abc import Callable

import torch
from torch.nn import functional as F


def cross_entropy(labels: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """Cross-entropy of logits ``[..., classes]`` against fixed integer ``labels`` ``[...]``,
    computed in at least float32 (float64 stays float64, for the reference run)."""

    def loss(logits: torch.Tensor) -> torch.Tensor:
        x = logits if logits.dtype == torch.float64 else logits.float()
        return F.cross_entropy(x.reshape(-1, x.shape[-1]), labels.reshape(-1))

    return loss
