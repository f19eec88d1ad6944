"""Real architectures from the libraries people ship, built from config with random weights (no
hub download): BERT-base (transformers) and ResNet-50 (torchvision)."""

import torch
from torch import nn


class _LastHidden(nn.Module):
    """Return a tensor, not a ModelOutput, so correctness checks and cudagraphs see plain tensors."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.inner(input_ids=input_ids).last_hidden_state


def _torchvision_if_installed() -> None:
    """transformers imports torchvision when it is installed; one whose compiled operators
    cannot load would take transformers down with it (engine/models/compat.py)."""
    import importlib.util

    if importlib.util.find_spec("torchvision") is not None:
        from engine.models.compat import import_torchvision

        import_torchvision()


def bert_base(batch: int = 8, seq: int = 128):
    _torchvision_if_installed()
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig())  # bert-base-uncased shape: 12 layers, 768 hidden, 12 heads
    # training: no loss here, so the default one (MSE of the last hidden state against a fixed
    # random target, engine/measure/train_step.py) trains every layer of the encoder
    return _LastHidden(model), (torch.randint(0, 30522, (batch, seq)),)


def resnet50(batch: int = 32, image: int = 224):
    _torchvision_if_installed()
    from torchvision.models import resnet50 as make

    from engine.models.losses import cross_entropy

    images = torch.randn(batch, 3, image, image)
    return make(weights=None), (images,), cross_entropy(torch.randint(0, 1000, (batch,)))
