"""A small ResNet-style CNN (torch.nn only): conv-BN-ReLU stem, three stages of basic residual
blocks (stride 2 between stages), global average pool and a linear head."""

import torch
from torch import nn

from engine.models.losses import cross_entropy


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.short(x))


def build(batch: int = 32, image: int = 64, width: int = 32, blocks: int = 2):
    layers: list[nn.Module] = [nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                               nn.ReLU()]
    cin = width
    for stage in range(3):
        cout = width * 2**stage
        for i in range(blocks):
            layers.append(BasicBlock(cin, cout, 2 if (i == 0 and stage > 0) else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]
    images = torch.randn(batch, 3, image, image)
    # training: 1000-class cross-entropy on random labels (fixed by the seed)
    return nn.Sequential(*layers), (images,), cross_entropy(torch.randint(0, 1000, (batch,)))
