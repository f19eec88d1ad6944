"""Importing torchvision where its compiled operators cannot load.

A torchvision wheel built for another torch (on this project's CPU machines: PyPI's CUDA build
of torchvision 0.28 beside the CPU build of torch 2.13) cannot load its C++ extension, and then
fails on import: ``torchvision/_meta_registrations.py`` registers a fake kernel for
``torchvision::nms`` unconditionally, and that operator was never defined. Everything else in
torchvision (every classification model, the transforms, ``torchvision.ops.misc``) is plain
PyTorch and works. timm imports torchvision, and transformers imports it whenever it is
installed, so one broken extension would take all three registries down.

``import_torchvision`` tries the ordinary import first. Only when it fails with exactly that
error does it define the schemas of the two operators registered unconditionally (``nms`` and
``qnms``, as torchvision's C++ declares them), with no kernel, and import again. Models that need
torchvision's compiled operators (detection: nms, roi_align, deform_conv2d) then fail when called
with torch's "no kernel" error, which the run reports as that variant's failure; the
classification models run. With a working extension nothing is changed.
"""

from __future__ import annotations

import sys
from types import ModuleType

_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_LIBRARY: list[object] = []  # keeps the torch.library fragment alive for the process
COMPILED_OPS_NOTE = ("torchvision's compiled operators (nms, roi_align, deform_conv2d, ...) could "
                     "not load with this torch: models that need them (detection) fail, "
                     "classification models run")
degraded = False  # True once the fallback was used in this process


def import_torchvision() -> ModuleType:
    """``import torchvision``, falling back as the module docstring explains."""
    global degraded
    try:
        import torchvision

        return torchvision
    except RuntimeError as e:
        if "torchvision::" not in str(e) or "does not exist" not in str(e):
            raise
    import torch

    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]  # the half-imported package, so the next import starts afresh
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for schema in _SCHEMAS:
        lib.define(schema)
    _LIBRARY.append(lib)
    degraded = True
    import torchvision

    return torchvision
