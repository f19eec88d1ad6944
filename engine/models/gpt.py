"""A GPT-style decoder stack written with torch.nn only (pre-norm blocks, causal scaled-dot-product
attention, GELU MLP, tied LM head), in the spirit of gpt-fast / nanoGPT."""

import torch
from torch import nn
from torch.nn import functional as F

from engine.models.losses import cross_entropy


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention through F.scaled_dot_product_attention."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                 nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Decoder(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, vocab: int, max_seq: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def build(batch: int = 8, seq: int = 128, layers: int = 4, hidden: int = 512, heads: int = 8,
          vocab: int = 8192):
    model = Decoder(layers, hidden, heads, vocab, max_seq=max(seq, 8192))
    idx = torch.randint(0, vocab, (batch, seq))
    # training: next-token prediction on random targets (fixed by the seed)
    return model, (idx,), cross_entropy(torch.randint(0, vocab, (batch, seq)))
