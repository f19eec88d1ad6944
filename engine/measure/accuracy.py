"""Accuracy judged against a float64 reference, as PyTorch's own benchmark harness judges it.

Why not "compiled vs eager under a fixed tolerance": in bfloat16, eager itself is far from the
true value, so a fixed tolerance is either too tight (fails correct fusions that round
differently) or too loose (passes real bugs). PyTorch's harness (``torch._dynamo.utils.same``
with ``fp64_ref``) instead runs the model once more in float64 and asks whether compiled is about
as close to that reference as eager is:

    eager_error    = RMSE(eager    - fp64)
    compiled_error = RMSE(compiled - fp64)
    pass  <=>  compiled_error <= multiplier * eager_error + floor * RMS(fp64)

per tensor (every output tensor; for a training step the loss of each of the first N steps and
every parameter's gradient after step 1), and for the parameters' *updates* after N steps over
the model as a whole (:func:`judge_whole`, below). ``multiplier`` defaults to 3 as in the harness;
``floor`` is an allowance for when eager's own error is about zero (float32 on small models), the
harness's ``tol / 10``, but relative to the reference's own size (RMS; absolute where the
reference is all zeros). Why relative, and why parameter updates rather than parameters: after 3
AdamW steps at lr 1e-4 a parameter has moved by about 3e-4, so an absolute floor of 1e-3 on the
parameters would pass a compiled optimizer that never updated anything. The update's error is
the parameter's error (both runs start from the same values); only the scale differs. The figures reported are those of the worst tensor (largest
``compiled_error / allowance``), so the sentence a user reads names the tensor that decided.

Why the updates are judged over the whole model and not tensor by tensor: an adaptive optimizer
(Adam, AdamW) divides each gradient by its own running size, so an element whose true gradient is
about zero still moves by about ``lr`` per step, in the direction rounding decides. One such
element in a 768-wide LayerNorm bias gives that tensor an update error of ``2 lr / sqrt(768)``,
ten times the error of a tensor where no element flipped; which tensors it hits, in eager or in
compiled, is a lottery: judged per tensor, correct compiled training steps "failed" on one or two
LayerNorm parameters while PyTorch's own ``same`` passed them, and eager's worst tensor can be a
bias whose true gradient is exactly zero (a key bias, which softmax ignores), its whole update
decided by rounding (docs/measurements/2026-12-03-training-step-h200.md). Over all parameters
together those flips average out (the count of flipped elements is what compares), and a wrong
optimizer (no step, wrong learning rate) still fails by far. A tensor whose update is wrong as a
whole is still caught on its own: its error may not exceed half of its update's size
(``GROSS_SHARE``) unless eager's error is as large. Small but real errors in the backward pass are
caught where they are linear, in the gradients of step 1, judged per tensor (as PyTorch's harness
compares gradients).

Eager is also run twice: a model whose eager result changes between two identical runs (atomic
adds in embedding backward, non-deterministic cuBLAS/cuDNN algorithms) is reported, because then
"differs from eager" by itself proves nothing.

``torch._dynamo.utils.same`` itself is also asked (guarded: its signature moves between torch
releases) and its answer kept in the detail, so a disagreement with our figures shows.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import torch
from torch.utils import _pytree as pytree

from contract import accuracy as accuracy_pick

REFERENCE_DTYPE = "float64"
DEFAULT_MULTIPLIER = 3.0
# The absolute floor by the dtype the arithmetic runs in (autocast's when it is on): the
# harness's tolerances (1e-4 for float32, 1e-2 for half types) divided by 10, as ``same`` does.
DEFAULT_FLOOR = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-3, "float64": 1e-9}

Tensors = dict[str, torch.Tensor]


def compute_dtype(run: Mapping[str, Any]) -> str:
    """The dtype the arithmetic runs in: autocast's when it is on, else the run's dtype."""
    ac = run.get("autocast") or "none"
    return ac if ac != "none" and run.get("step") == "train" else str(run["dtype"])


def floor_for(run: Mapping[str, Any]) -> float:
    floor = run.get("accuracy_floor")
    return float(floor) if floor is not None else DEFAULT_FLOOR.get(compute_dtype(run), 1e-3)


def named_leaves(obj: Any, prefix: str = "output") -> Tensors:
    """Every tensor in a (nested) output, named by its position: ``output[0]``, ``output.logits``."""
    leaves, _ = pytree.tree_flatten_with_path(obj) if hasattr(pytree, "tree_flatten_with_path") \
        else (list(enumerate(pytree.tree_leaves(obj))), None)
    out: Tensors = {}
    for path, leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            key = "".join(str(p) for p in path) if isinstance(path, tuple) else f"[{path}]"
            out[prefix + key] = leaf.detach()
    return out


def rmse(reference: torch.Tensor, value: torch.Tensor) -> float:
    """Root-mean-square error in float64; integer tensors: the fraction of entries that differ.
    A shape mismatch is an infinite error (never a pass)."""
    if reference.shape != value.shape:
        return math.inf
    if not (reference.is_floating_point() or reference.is_complex()):
        return float((reference != value.to(reference.device)).double().mean()) \
            if reference.numel() else 0.0
    if reference.numel() == 0:
        return 0.0
    diff = value.detach().to(reference.device, torch.float64) - reference.detach().double()
    return float(diff.pow(2).mean().sqrt())


NO_TENSOR = "the model's output holds no tensor (forward returned text, None, ...): nothing to compare"


def judge(fp64: Tensors, eager: Tensors, compiled: Tensors | None, *, multiplier: float,
          floor: float) -> dict[str, Any]:
    """Compare eager (and compiled, when given) with the float64 reference, tensor by tensor.

    Returns the worst tensor's figures, how many tensors were compared and how many failed.
    NaN never passes: ``nan <= x`` is False.  An output that holds no tensor (a ``forward``
    that returns a string or None) never passes either: nothing was compared."""
    if not fp64:
        return {"ok": False, "tensors": 0, "failed": 0, "worst": None, "multiplier": multiplier,
                "floor": floor, "error": NO_TENSOR}
    worst: dict[str, Any] | None = None
    failed, score_worst = 0, -1.0
    rows: list[list[Any]] = []
    for name, ref in fp64.items():
        e = rmse(ref, eager[name]) if name in eager else math.inf
        c = None
        if compiled is not None:
            c = rmse(ref, compiled[name]) if name in compiled else math.inf
        scale = rmse(torch.zeros_like(ref), ref) if ref.is_floating_point() else 0.0
        rows.append([name, _finite(e), _finite(c), _finite(scale)])
        allowed = multiplier * e + floor * (scale if 0 < scale < math.inf else 1.0)
        # an eager error that is not finite allows anything: nothing is judged, so no pass
        ok = c is None or (c <= allowed < math.inf)
        failed += not ok
        # the tensor that decided: highest compiled/allowance; eager alone: highest eager error
        score = (c / allowed if allowed > 0 else math.inf) if c is not None else e
        if score != score:  # NaN sorts as the worst
            score = math.inf
        if worst is None or score > score_worst:
            worst, score_worst = {"tensor": name, "eager_error": e, "compiled_error": c,
                                  "allowed": allowed, "ok": ok}, score
    return {"ok": failed == 0, "tensors": len(fp64), "failed": failed, "worst": worst,
            "multiplier": multiplier, "floor": floor, **_per_tensor(rows)}


# Every tensor's figures are kept with the result (``show --json``), so a reader can see which
# tensors are off and a changed rule can be applied to stored runs; past this many (a very
# large model) only the verdict's figures are kept.
MAX_PER_TENSOR = 2000


def _per_tensor(rows: list[list[Any]]) -> dict[str, Any]:
    """``per_tensor``: [name, eager_error, compiled_error, reference RMS] per tensor."""
    return {"per_tensor": rows} if len(rows) <= MAX_PER_TENSOR else {}


# A parameter's update may be off by this share of its own size before it fails on its own
# (judge_whole): Adam's sign flips of near-zero gradients stay far below it (a few per cent of a
# LayerNorm bias's update: docs/measurements/2026-12-03-training-step-h200.md); an update that
# is missing or wrong as a whole reaches it.
GROSS_SHARE = 0.5


def judge_whole(fp64: Tensors, eager: Tensors, compiled: Tensors | None, *, multiplier: float,
                floor: float) -> dict[str, Any]:
    """Judge updates over the model as a whole: one RMSE over every element of every tensor,
    ``pass <=> compiled_error <= multiplier * eager_error + floor * RMS(fp64)`` as in
    :func:`judge`; and tensor by tensor only for gross errors:
    ``compiled_error <= max(multiplier * eager_error + floor * RMS, GROSS_SHARE * RMS)`` (the
    module docstring says why). Same result shape as :func:`judge`; ``worst`` is the whole
    model unless a tensor failed on its own (then the worst such tensor)."""
    def total(errs: list[tuple[float, int]]) -> float:
        n = sum(k for _, k in errs)
        return math.sqrt(sum(e * e * k for e, k in errs) / n) if n else 0.0

    e_all: list[tuple[float, int]] = []
    c_all: list[tuple[float, int]] = []
    s_all: list[tuple[float, int]] = []
    gross: list[dict[str, Any]] = []
    rows: list[list[Any]] = []
    for name, ref in fp64.items():
        k = max(ref.numel(), 1)
        e = rmse(ref, eager[name]) if name in eager else math.inf
        scale = rmse(torch.zeros_like(ref), ref) if ref.is_floating_point() else 0.0
        e_all.append((e, k))
        s_all.append((scale, k))
        if compiled is None:
            rows.append([name, _finite(e), None, _finite(scale)])
            continue
        c = rmse(ref, compiled[name]) if name in compiled else math.inf
        rows.append([name, _finite(e), _finite(c), _finite(scale)])
        c_all.append((c, k))
        allowed = max(multiplier * e + floor * (scale if 0 < scale < math.inf else 1.0),
                      GROSS_SHARE * scale)
        if not c <= allowed < math.inf:  # NaN fails too, and so does nothing to judge by
            gross.append({"tensor": name, "eager_error": e, "compiled_error": c,
                          "allowed": allowed, "ok": False,
                          "score": c / allowed if allowed > 0 else math.inf})
    e, scale = total(e_all), total(s_all)
    c = total(c_all) if compiled is not None else None
    allowed = multiplier * e + floor * (scale if 0 < scale < math.inf else 1.0)
    whole_ok = c is None or c <= allowed < math.inf
    worst: dict[str, Any] = {"tensor": f"all {len(fp64)} tensors together", "eager_error": e,
                             "compiled_error": c, "allowed": allowed, "ok": whole_ok}
    if gross:  # a tensor wrong on its own names the culprit better than the whole model
        top = max(gross, key=lambda g: g["score"] if g["score"] == g["score"] else math.inf)
        worst = {k: v for k, v in top.items() if k != "score"}
    return {"ok": whole_ok and not gross, "tensors": len(fp64), "failed": len(gross)
            + (not whole_ok), "worst": worst, "multiplier": multiplier, "floor": floor,
            "method": "whole model", "gross_share": GROSS_SHARE, **_per_tensor(rows)}


def max_abs_diff(a: Tensors, b: Tensors) -> float:
    """The largest absolute difference between two runs (0.0: bit-identical); NaN where both
    are NaN counts as equal, NaN against a number as infinite."""
    worst = 0.0
    for name, x in a.items():
        y = b.get(name)
        if y is None or y.shape != x.shape:
            return math.inf
        if not x.is_floating_point():
            worst = max(worst, 0.0 if torch.equal(x, y) else math.inf)
            continue
        xd, yd = x.double(), y.to(x.device).double()
        both_nan = xd.isnan() & yd.isnan()
        d = (xd - yd).abs().masked_fill(both_nan, 0.0)
        if d.numel():
            m = float(d.max()) if not d.isnan().any() else math.inf
            worst = max(worst, m)
    return worst


def _torch_same(eager: Tensors, compiled: Tensors, fp64: Tensors, tol: float) -> bool | None:
    """What ``torch._dynamo.utils.same`` says, or None where it cannot be asked."""
    try:
        from torch._dynamo.utils import same

        names = list(fp64)
        return bool(same([eager[n] for n in names], [compiled[n] for n in names],
                         fp64_ref=[fp64[n] for n in names], tol=tol, log_error=lambda *a: None))
    except Exception:
        return None


def figures(groups: dict[str, dict[str, Any]], *, deterministic_diff: float,
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result's top-level accuracy figures from one or more judged groups (``output``, or
    ``loss`` and ``parameters``): the worst group's worst tensor decides (contract/accuracy.py)."""
    worst_group = accuracy_pick.worst_group(groups)
    w = worst_group["worst"] or {}
    ok = all(g["ok"] for g in groups.values())
    detail: dict[str, Any] = {"groups": groups, **(extra or {})}
    return {"reference_dtype": REFERENCE_DTYPE,
            "eager_error": _finite(w.get("eager_error")),
            "compiled_error": _finite(w.get("compiled_error")),
            "accuracy_tensor": w.get("tensor"),
            "accuracy_multiplier": worst_group["multiplier"],
            "accuracy_floor": worst_group["floor"],
            "accuracy_ok": ok,
            "eager_deterministic": deterministic_diff == 0.0,
            "eager_repeat_max_diff": _finite(deterministic_diff),
            "accuracy": detail}


def _finite(x: float | None) -> float | None:
    # storage keeps NaN/inf as null; say "not finite" in the detail instead of losing it
    return x if x is None or math.isfinite(x) else None


def failed(reason: str) -> dict[str, Any]:
    """No float64 reference could be run: the verdict falls back to the fixed tolerance."""
    return {"reference_dtype": None, "accuracy_ok": None, "accuracy": {"error": reason[:500]}}


# Share of the device's free memory a float64 copy of the model may take: the copy, its
# activations and the model itself must fit beside each other.
FLOAT64_MEMORY_SHARE = 0.6


def float64_too_large(model: torch.nn.Module) -> str | None:
    """Why a float64 copy of ``model`` cannot be made on its CUDA device (a 7B model is 56 GB in
    float64), or None. Then the stated tolerance is used instead: the compiled output against
    eager's, max error relative to the output's scale <= the dtype's rtol (``correct``)."""
    tensors = [*model.parameters(), *model.buffers()]
    if not tensors or tensors[0].device.type != "cuda":
        return None
    need = sum(t.numel() for t in tensors if t.is_floating_point()) * 8
    free, _ = torch.cuda.mem_get_info(tensors[0].device)
    if need <= FLOAT64_MEMORY_SHARE * free:
        return None
    return (f"model too large for a float64 reference on this GPU ({need / 2**30:.1f} GiB "
            f"needed, {free / 2**30:.1f} GiB free): judged against eager with the dtype's "
            "tolerance instead (max error relative to the output's scale <= rtol)")


def to_float64(x: Any) -> Any:
    """Floating tensors to float64, the rest (token ids, masks) unchanged."""
    return pytree.tree_map(
        lambda t: t.detach().double() if isinstance(t, torch.Tensor) and t.is_floating_point()
        else t, x)


def check_inference(model: torch.nn.Module, inputs: tuple, eager_out: Any, compiled_out: Any,
                    run: Mapping[str, Any]) -> dict[str, Any]:
    """Inference accuracy: the model's output in float64 (a float64 copy of the very weights
    the run uses, so weight rounding is not counted as error) against eager's and compiled's.
    Eager is called once more to see whether it is deterministic. Runs under no_grad (the
    child's inference context). ``compiled_out`` None: the eager variant, eager figures only.
    ``correct`` follows the float64 verdict when the reference ran."""
    multiplier, floor = float(run.get("accuracy_multiplier", DEFAULT_MULTIPLIER)), floor_for(run)
    too_large = float64_too_large(model)
    if too_large:
        return failed(too_large)
    try:
        with torch.no_grad():
            fp64_model = copy.deepcopy(model).to(torch.float64)
            ref = named_leaves(fp64_model(*to_float64(inputs)))
            del fp64_model
            again = named_leaves(model(*inputs))
    except Exception as e:  # e.g. an op without a float64 kernel on this device
        return failed(f"float64 reference failed: {type(e).__name__}: {e}")
    eager = named_leaves(eager_out)
    compiled = None if compiled_out is None else named_leaves(compiled_out)
    group = judge(ref, eager, compiled, multiplier=multiplier, floor=floor)
    extra: dict[str, Any] = {"step": "inference"}
    if compiled is not None:
        extra["torch_same"] = _torch_same(eager, compiled, ref, tol=floor * 10)
    out = figures({"output": group}, deterministic_diff=max_abs_diff(eager, again), extra=extra)
    out["correct"] = bool(group["ok"])
    return out
