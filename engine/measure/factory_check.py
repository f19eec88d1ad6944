"""``python -m engine.measure.factory_check REF DIMS_JSON OUT.json``: build a user model once, in its
own process, and write whether it returned (torch.nn.Module, tuple_of_inputs).

The CLI checks a user factory before it stores a run (bad input: exit 2, nothing stored). The
factory is arbitrary code, so it runs here rather than in the CLI: whatever it does to its process
(``sys.exit(0)``, ``os._exit(0)``, a crash), the CLI sees "no verdict written" and says so.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def verdict(ref: str, dims: dict[str, int]) -> dict[str, str | None]:
    import torch

    from engine.models.catalogue import CatalogueError, load_factory

    try:
        built = load_factory(ref)(**dims)
    except CatalogueError as e:
        return {"error": str(e)}
    except Exception as e:
        return {"error": f"user model {ref!r} raised {type(e).__name__}: {e}"}
    ok = (isinstance(built, tuple) and len(built) in (2, 3)
          and isinstance(built[0], torch.nn.Module) and isinstance(built[1], (tuple, list))
          and (len(built) == 2 or built[2] is None or callable(built[2])))
    if not ok:
        return {"error": f"user model {ref!r} must return (torch.nn.Module, tuple_of_inputs) or "
                         "(torch.nn.Module, tuple_of_inputs, loss_fn), got "
                         f"{type(built).__name__}"}
    return {"error": _output_problem(ref, built[0], tuple(built[1]))}


def _output_problem(ref: str, model: torch.nn.Module, inputs: tuple) -> str | None:
    """One call: an output without a tensor in it (text, None) can be neither timed against
    eager nor judged correct, so it is refused here rather than measured."""
    import torch
    from torch.utils import _pytree as pytree

    try:
        with torch.no_grad():
            out = model(*inputs)
    except Exception as e:
        return f"user model {ref!r}: calling it on its inputs raised {type(e).__name__}: {e}"
    if not any(isinstance(t, torch.Tensor) for t in pytree.tree_leaves(out)):
        return (f"user model {ref!r}: forward returned {type(out).__name__} with no tensor in "
                "it; a model must return a tensor (or a tuple, list or dict of them)")
    return None


def main(argv: list[str]) -> int:
    ref, dims, out = argv[0], json.loads(argv[1]), argv[2]
    try:
        result = verdict(ref, dims)
    except SystemExit as e:  # sys.exit() while importing or building: a failure, not a verdict
        result = {"error": f"user model {ref!r} called sys.exit({e.code!r}) while being built; "
                           "a factory must return (torch.nn.Module, tuple_of_inputs)"}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
