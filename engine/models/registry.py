"""Builders of registry models (``timm:NAME``, ``torchvision:NAME``, ``hf:ARCH``): random
weights from the library's own constructor, never a download. See engine/models/registries.py for the
names and dims; this module imports the libraries and runs in the measuring child (and in the
CLI's checks)."""

from __future__ import annotations

import difflib
import fnmatch
import importlib.util
from typing import Any

import torch
from torch import nn

from engine.models.compat import import_torchvision
from engine.models.losses import cross_entropy

# Config attributes of the feed-forward width, by the names transformers' configs use; they
# scale with ``hidden`` so that a shrunk model keeps its architecture's proportions.
_FFN_ATTRS = ("intermediate_size", "n_inner", "d_ff", "ffn_dim", "encoder_ffn_dim",
              "decoder_ffn_dim")


def _torchvision_if_installed() -> None:
    # transformers and timm import torchvision whenever it is installed: import it first, with
    # the fallback for a build whose compiled operators cannot load (engine/models/compat.py).
    if importlib.util.find_spec("torchvision") is not None:
        import_torchvision()


def _match(names: list[str], pattern: str, limit: int) -> list[str]:
    """Case-insensitive glob when the pattern has one, else substring; names that start with
    the pattern first (``vit_base`` before ``naflexvit_base``)."""
    p = pattern.strip().lower()
    if any(c in p for c in "*?["):
        hits = [n for n in names if fnmatch.fnmatchcase(n.lower(), p)]
    else:
        hits = [n for n in names if p in n.lower()]
    hits.sort(key=lambda n: (not n.lower().startswith(p.strip("*?[")), n))
    return hits[:max(int(limit), 0)]


def _all_names(prefix: str) -> list[str]:
    _torchvision_if_installed()
    if prefix == "timm":
        import timm

        return list(timm.list_models())
    if prefix == "torchvision":
        tv = import_torchvision()
        return list(tv.models.list_models(module=tv.models))  # classification models
    from transformers.models.auto import configuration_auto, modeling_auto

    return sorted(a for a in configuration_auto.CONFIG_MAPPING_NAMES
                  if a in modeling_auto.MODEL_MAPPING_NAMES)


def names(prefix: str, pattern: str = "", limit: int = 50) -> list[str]:
    """Names the library knows, matching ``pattern``."""
    return _match(_all_names(prefix), pattern, limit)


def exists(prefix: str, arch: str) -> bool:
    return arch in set(_all_names(prefix))


def check(name: str, dims: dict[str, int]) -> None:
    """The CLI's check before queuing: the name exists and, for ``hf:``, its config builds with
    these dims (no weights are made). Raises ValueError with a message for the user."""
    prefix, _, arch = name.partition(":")
    known = _all_names(prefix)
    if arch not in set(known):
        close = difflib.get_close_matches(arch, known, n=6, cutoff=0.6)
        raise ValueError(f"{prefix} has no model {arch!r}"
                         + (f"; similar: {', '.join(close)}" if close else ""))
    if prefix == "hf":
        _hf_config(arch, dims.get("layers", 0), dims.get("hidden", 0), dims.get("heads", 0),
                   dims.get("seq", 1) + dims.get("new_tokens", 0))


def build(name: str, **dims: int) -> tuple[nn.Module, tuple, Any]:
    """``factory(**dims)`` of a registry model: ``(model, inputs, loss_fn)``."""
    prefix, _, arch = name.partition(":")
    if prefix == "timm":
        return _timm(arch, **dims)
    if prefix == "torchvision":
        return _torchvision(arch, **dims)
    if prefix == "hf":
        return _hf(arch, **dims)
    raise ValueError(f"unknown registry in {name!r}")


def arch_figures(model: nn.Module) -> dict[str, Any]:
    """What was built: parameter count, plus the effective dims a registry builder recorded
    (``hf:`` dims of 0 stand for the config's own values)."""
    return {"parameters": int(sum(p.numel() for p in model.parameters())),
            **getattr(model, "compilelab_arch", {})}


def _images(batch: int, channels: int, size: int) -> torch.Tensor:
    return torch.randn(batch, channels, size, size)


def _timm(arch: str, batch: int = 8, image: int = 0):
    _torchvision_if_installed()
    import timm

    if not timm.is_model(arch):
        raise ValueError(f"timm has no model {arch!r}")
    model = timm.create_model(arch, pretrained=False)
    cfg = dict(getattr(model, "pretrained_cfg", None) or {})
    channels, default = int(cfg.get("input_size", (3, 224, 224))[0]), int(
        cfg.get("input_size", (3, 224, 224))[-1])
    size = image or default
    if size != default and cfg.get("fixed_input_size"):
        # ViT-style models embed positions for one image size: build them for the asked size
        model = timm.create_model(arch, pretrained=False, img_size=size)
    model.compilelab_arch = {"image": size, "classes": int(getattr(model, "num_classes", 0))}
    classes = max(int(getattr(model, "num_classes", 1000) or 1000), 1)
    return model, (_images(batch, channels, size),), cross_entropy(
        torch.randint(0, classes, (batch,)))


def _torchvision(arch: str, batch: int = 8, image: int = 224):
    tv = import_torchvision()
    if arch not in tv.models.list_models(module=tv.models):
        raise ValueError(f"torchvision has no classification model {arch!r}")
    model = tv.models.get_model(arch, weights=None)
    model.compilelab_arch = {"image": image}
    return model, (_images(batch, 3, image),), cross_entropy(torch.randint(0, 1000, (batch,)))


def _hf_config(arch: str, layers: int, hidden: int, heads: int, seq: int):
    """The architecture's default config with the overridden dims, under the config's own
    attribute names (``attribute_map``: GPT-2's ``n_embd``, T5's ``d_model`` ...)."""
    _torchvision_if_installed()
    from transformers import AutoConfig

    try:
        base = AutoConfig.for_model(arch)
    except (KeyError, ValueError) as e:
        raise ValueError(f"transformers has no architecture {arch!r}: {e}") from None
    real = lambda std: base.attribute_map.get(std, std)  # noqa: E731
    kw: dict[str, Any] = {"use_cache": False}  # one forward pass; no KV cache object returned
    old_hidden = getattr(base, "hidden_size", None)
    old_heads = getattr(base, "num_attention_heads", None)
    if layers:
        kw[real("num_hidden_layers")] = layers
        if isinstance(getattr(base, "num_decoder_layers", None), int):
            kw["num_decoder_layers"] = layers
    if hidden and isinstance(old_hidden, int):
        kw[real("hidden_size")] = hidden
        for attr in _FFN_ATTRS:
            v = getattr(base, attr, None)
            if isinstance(v, int) and not isinstance(v, bool):
                kw[attr] = max(1, round(v * hidden / old_hidden))
    if heads and isinstance(old_heads, int):
        kw[real("num_attention_heads")] = heads
        kv = getattr(base, "num_key_value_heads", None)
        if isinstance(kv, int) and kv:
            new_kv = max(1, heads * kv // old_heads)
            kw["num_key_value_heads"] = new_kv if heads % new_kv == 0 else heads
    h, n = hidden or old_hidden, heads or old_heads
    if (hidden or heads) and isinstance(h, int) and isinstance(n, int):
        if h % n:
            raise ValueError(f"hf:{arch}: hidden ({h}) must be divisible by heads ({n})")
        if hasattr(base, real("head_dim")):
            kw[real("head_dim")] = h // n
    config = AutoConfig.for_model(arch, **kw)
    limit = getattr(config, "max_position_embeddings", None)
    if isinstance(limit, int) and seq > limit:
        raise ValueError(f"hf:{arch}: seq {seq} is more than its max_position_embeddings "
                         f"({limit})")
    return config


class _HFOutput(nn.Module):
    """One forward pass returning a plain tensor (logits, or the last hidden state of an
    encoder), so accuracy checks and CUDA graphs see tensors, not ModelOutput objects."""

    def __init__(self, inner: nn.Module, kind: str) -> None:
        super().__init__()
        self.inner, self.kind = inner, kind

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.kind == "seq2seq":  # teacher-forced: the decoder reads the same tokens
            return self.inner(input_ids=input_ids, decoder_input_ids=input_ids).logits
        if self.kind == "causal":
            return self.inner(input_ids=input_ids).logits
        if self.kind == "encdec-base":
            return self.inner(input_ids=input_ids, decoder_input_ids=input_ids).last_hidden_state
        return self.inner(input_ids=input_ids).last_hidden_state


def _hf(arch: str, batch: int = 8, seq: int = 128, layers: int = 0, hidden: int = 0,
        heads: int = 0, new_tokens: int = 0):
    config = _hf_config(arch, layers, hidden, heads, seq + new_tokens)
    import transformers
    from transformers.models.auto import modeling_auto as ma

    # The head people run: the LM head for decoder-only and encoder-decoder models (BERT-style
    # encoders also have a causal-LM class, but they are used as encoders: no head).
    if config.is_encoder_decoder and arch in ma.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        cls, kind = transformers.AutoModelForSeq2SeqLM, "seq2seq"
    elif (arch in ma.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
          and arch not in ma.MODEL_FOR_MASKED_LM_MAPPING_NAMES):
        cls, kind = transformers.AutoModelForCausalLM, "causal"
    else:
        cls, kind = transformers.AutoModel, ("encdec-base" if config.is_encoder_decoder
                                             else "base")
    model = _HFOutput(cls.from_config(config), kind)
    vocab = int(getattr(config, "vocab_size", 0) or 1000)
    model.compilelab_arch = {
        "layers": getattr(config, "num_hidden_layers", None),
        "hidden": getattr(config, "hidden_size", None),
        "heads": getattr(config, "num_attention_heads", None),
        "kv_heads": getattr(config, "num_key_value_heads", None), "vocab": vocab,
        "head": kind, "class": type(model.inner).__name__}
    if new_tokens:  # engine/measure/hf_generate.py: generate() with its static cache
        if kind != "causal":
            raise ValueError(f"hf:{arch}: new_tokens needs a decoder-only architecture (this "
                             f"one runs as {kind})")
        model.compilelab_hf_generate = {"batch": batch, "prompt": seq, "new_tokens": new_tokens,
                                        "vocab": vocab}
    ids = torch.randint(0, vocab, (batch, seq))
    loss = cross_entropy(torch.randint(0, vocab, (batch, seq))) if kind in ("causal", "seq2seq") \
        else None  # encoders: train_step's default loss (MSE against a fixed random target)
    return (model, (ids,), loss) if loss is not None else (model, (ids,))
