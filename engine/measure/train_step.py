"""The training step a ``step="train"`` run times: forward, loss, backward, optimizer step.

One step, as a fine-tuning loop runs it::

    opt.zero_grad(set_to_none=True)
    with autocast(dtype):                    # only with autocast bfloat16/float16
        loss = loss_fn(model(*inputs))       # model and loss compiled together (one module)
    scaler.scale(loss).backward()            # GradScaler only with autocast float16
    scaler.step(opt); scaler.update()        # else loss.backward(); opt.step()

on one fixed batch: the inputs the factory built from the seed, and labels the factory (or the
default loss) drew from the seed too. The loss comes from the model factory, which may return
``(model, inputs, loss_fn)`` with ``loss_fn(output) -> scalar tensor`` (it closes over its
labels); without one, the loss is the mean squared error of every floating output against a
fixed random target (:func:`default_loss`).

Variants (``engine.grid.split_variant``): ``eager`` (nothing compiled), a compile mode such as
``default`` (model + loss compiled with ``torch.compile``; backward through AOTAutograd's compiled
backward graph), and ``MODE+opt`` (also the optimizer step, ``torch.compile`` on ``opt.step``, the
"compiled optimizer"; ``eager+opt`` compiles the optimizer step alone). The optimizer step is
compiled with the run's backend and its default mode.

Forward, backward and the optimizer step are also timed apart (:func:`phase_times`), after the
steady state, over a few more steps: marks at the phase boundaries, CUDA events recorded on the
stream (nothing synchronises inside the step, so the step runs as it does when timed whole) or
the host clock on a CPU (where every op has finished when it returns). The three spans add up to
the step (means over the middle steps by step time). In a compiled variant's process the eager twin's step is split the same way.

Dropout is switched off (every dropout module's ``p`` set to 0, also the ``dropout_prob`` that
some Hugging Face attention layers read): compiled code draws different random numbers than
eager, so with dropout on neither the float64 accuracy check nor "same step, faster" would hold.
BatchNorm and the rest train normally. Stated in docs/METHOD.md (the training step).

Inside a compiled variant's process there are two copies of the model: the compiled one and an
eager twin that the interleaved rounds time against it. The twin's parameters, gradients and
optimizer state are resident while the compiled variant's peak memory is read, so they are
subtracted from it (:meth:`Training.discount_eager_twin`): the peak reported is the compiled
step's own (its parameters, gradients, optimizer state, and the activations it keeps for
backward), comparable with the eager variant's, which runs alone in its process.
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils import _pytree as pytree

from engine import grid
from engine.grid import split_variant
from engine.measure import accuracy

LossFn = Callable[[Any], torch.Tensor]
Mark = Callable[[int], None]
"""``mark(i)``: phase boundary ``i`` of a step (0 start, 1 after the loss, 2 after backward, 3
after the optimizer step)."""
PHASES = ("forward", "backward", "optimizer")
PHASE_STEPS = 10
TRIM = 0.2  # share of the fastest and of the slowest steps left out of the phase split


def upcast(x: torch.Tensor) -> torch.Tensor:
    """At least float32 for a loss (a bfloat16 reduction loses the loss), float64 stays."""
    return x if x.dtype == torch.float64 else x.float()


def default_loss(model: nn.Module, inputs: tuple, seed: int) -> LossFn:
    """MSE of every floating output against a fixed random target drawn from ``seed``. One
    forward under no_grad finds the output's shapes (the target must exist before any compile
    sees the loss)."""
    with torch.no_grad():
        out = model(*inputs)
    leaves = [t for t in pytree.tree_leaves(out)
              if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not leaves:
        raise TypeError("the model's output has no floating tensor to train on; return "
                        "(model, inputs, loss_fn) from the factory")
    gen = torch.Generator(device=leaves[0].device).manual_seed(seed + 1)
    targets = [torch.randn(t.shape, generator=gen, device=t.device, dtype=torch.float32)
               for t in leaves]

    def loss(output: Any) -> torch.Tensor:
        outs = [t for t in pytree.tree_leaves(output)
                if isinstance(t, torch.Tensor) and t.is_floating_point()]
        total = None
        for o, target in zip(outs, targets, strict=True):
            o = upcast(o)
            term = F.mse_loss(o, target.to(o.dtype))
            total = term if total is None else total + term
        return total

    return loss


class WithLoss(nn.Module):
    """Model and loss as one module, so ``torch.compile`` fuses the loss into the forward graph
    (as a training script that computes its loss in ``forward`` gets)."""

    def __init__(self, model: nn.Module, loss_fn: LossFn) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *inputs: Any) -> torch.Tensor:
        return self.loss_fn(self.model(*inputs))


def disable_dropout(model: nn.Module) -> None:
    """Dropout off, training mode otherwise on (see the module docstring for why)."""
    for m in model.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd):
            m.p = 0.0
        for attr in ("dropout_prob", "attention_dropout"):  # Hugging Face attention layers
            if isinstance(getattr(m, attr, None), float):
                setattr(m, attr, 0.0)


def make_optimizer(run: dict[str, Any], params: Any) -> torch.optim.Optimizer:
    """SGD (momentum 0.9) or AdamW at the run's learning rate; ``foreach``/``fused`` when
    asked (an implementation this torch or device lacks fails the variant with torch's reason)."""
    kw: dict[str, Any] = {"lr": float(run.get("lr", 1e-4))}
    impl = run.get("optimizer_impl", "default")
    if impl in ("foreach", "fused"):
        kw[impl] = True
    if run.get("optimizer", "adamw") == "sgd":
        return torch.optim.SGD(params, momentum=0.9, **kw)
    return torch.optim.AdamW(params, **kw)


def _grad_scaler(device: str, init_scale: float | None) -> Any:
    kw = {} if init_scale is None else {"init_scale": init_scale}
    try:
        return torch.amp.GradScaler(device.split(":")[0], **kw)
    except (AttributeError, TypeError):  # older torch: CUDA only
        return torch.cuda.amp.GradScaler(**kw)


# GradScaler halves its scale on every step whose float16 gradients overflow; from its default
# start (65536) a large model needs a few such skipped steps, 24 reach a scale of 1/256.
MAX_SCALE_STEPS = 24


def _mark_step() -> None:
    # CUDA-graph trees (reduce-overhead) must know where an iteration starts; cheap otherwise.
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    if mark is not None:
        mark()


class Replica:
    """One trainable copy: model (+ loss), its optimizer, scaler and autocast settings."""

    def __init__(self, run: dict[str, Any], model: nn.Module, loss_fn: LossFn, inputs: tuple,
                 device: str, *, autocast: str | None, compile_model: dict[str, Any] | None,
                 compile_optimizer: dict[str, Any] | None, init_scale: float | None = None,
                 track_skips: bool = False) -> None:
        self.model = model
        self.inputs = inputs
        self.module: nn.Module = WithLoss(model, loss_fn)
        self.forward: Callable[..., torch.Tensor] = self.module
        if compile_model is not None:
            self.forward = torch.compile(self.module, **compile_model)
        self.opt = make_optimizer(run, model.parameters())
        if compile_optimizer is not None:
            # an instance attribute: GradScaler.step(opt) and opt.step() both reach it
            self.opt.step = torch.compile(self.opt.step, **compile_optimizer)  # type: ignore
        self.device_type = device.split(":")[0]
        self.autocast = autocast
        self.scaler = _grad_scaler(device, init_scale) if autocast == "float16" else None
        self.compiled = compile_model is not None or compile_optimizer is not None
        # accuracy runs only: reading the scale synchronises, so the timed steps never do
        self.track_skips = track_skips and self.scaler is not None
        self.skipped: list[bool] = []
        # steps (0-based) whose optimizer update is left out, as GradScaler left it out in the
        # run this copy is compared with (the float64 reference has no scaler of its own)
        self.skip_steps: frozenset[int] = frozenset()

    def step(self, mark: Mark | None = None) -> torch.Tensor:
        """One training step; returns the loss (a tensor: reading it would synchronise).
        ``mark``: called at each phase boundary (``phase_times``); None when timed whole."""
        if self.compiled:
            _mark_step()
        if mark is not None:
            mark(0)
        self.opt.zero_grad(set_to_none=True)
        ctx = (torch.autocast(self.device_type, dtype=getattr(torch, self.autocast))
               if self.autocast else contextlib.nullcontext())
        with ctx:
            loss = self.forward(*self.inputs)
        if mark is not None:
            mark(1)
        if self.scaler is not None:
            self._scaled_update(loss, mark)
        else:
            loss.backward()
            if mark is not None:
                mark(2)
            if not self._mirror_skip():
                self.opt.step()
        if mark is not None:
            mark(3)
        return loss

    def _mirror_skip(self) -> bool:
        """Whether this step's update is one the compared run's GradScaler skipped."""
        if not self.skip_steps:
            return False
        self.skipped.append(len(self.skipped) in self.skip_steps)
        return self.skipped[-1]

    def _scaled_update(self, loss: torch.Tensor, mark: Mark | None) -> None:
        before = self.scaler.get_scale() if self.track_skips else 0.0
        self.scaler.scale(loss).backward()
        if mark is not None:
            mark(2)
        self.scaler.step(self.opt)
        self.scaler.update()
        if self.track_skips:  # GradScaler halves its scale exactly when it skipped the step
            self.skipped.append(self.scaler.get_scale() < before)

    def resident_bytes(self) -> int:
        """Device bytes this copy keeps between steps: parameters, buffers, gradients and
        optimizer state, each storage counted once (tied weights share one)."""
        seen: dict[int, int] = {}

        def add(t: Any) -> None:
            if isinstance(t, torch.Tensor) and t.device.type != "cpu":
                s = t.untyped_storage()
                seen[s.data_ptr()] = s.nbytes()

        for p in self.model.parameters():
            add(p)
            add(p.grad)
        for b in self.model.buffers():
            add(b)
        for state in self.opt.state.values():
            for v in state.values():
                add(v)
        return sum(seen.values())

    def snapshot(self, losses: list[torch.Tensor]) -> accuracy.Tensors:
        """Losses of steps 1..N and every parameter now, copied to the host (so the copy
        takes no device memory and later steps cannot overwrite it)."""
        out = {f"loss@{i + 1}": loss.detach().to("cpu", copy=True).reshape(())
               for i, loss in enumerate(losses)}
        for name, p in self.model.named_parameters():
            out[f"param:{name}"] = p.detach().to("cpu", copy=True)
        return out


def phase_times(step: Callable[[Mark | None], Any], cuda: bool, steps: int = PHASE_STEPS
                ) -> dict[str, Any]:
    """Each phase's ms over ``steps`` steps (module docstring), as the mean over the middle
    steps by step time (the fastest and slowest ``TRIM`` of them left out whole): a mean, so the
    three phases add up to the step; whole steps trimmed, so one stalled phase on a busy host
    does not count. (Medians taken phase by phase did not add up: 0.6 + 0.5 + 0.4 ms beside a
    median step of 9.6 ms on this project's loaded CPU.)"""
    cuts: list[list[float]] = []
    t = [0.0] * 4
    if cuda:
        stream = torch.cuda.current_stream()
        events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    for _ in range(steps):
        if cuda:
            torch.cuda.synchronize()
            step(lambda i: events[i].record(stream))
            events[3].synchronize()
            cuts.append([events[i].elapsed_time(events[i + 1]) for i in range(3)])
        else:
            step(lambda i: t.__setitem__(i, time.perf_counter()))
            cuts.append([(t[i + 1] - t[i]) * 1e3 for i in range(3)])
    drop = int(len(cuts) * TRIM)
    kept = sorted(cuts, key=sum)[drop:len(cuts) - drop] or cuts
    out: dict[str, Any] = {f"{p}_ms": statistics.fmean(c[i] for c in kept)
                           for i, p in enumerate(PHASES)}
    out.update(step_ms=statistics.fmean(sum(c) for c in kept), steps=steps, kept=len(kept),
               timer="cuda_event" if cuda else "perf_counter")
    return out


def gradients(model: nn.Module) -> accuracy.Tensors:
    """Every parameter's gradient now, on the host (after a step with GradScaler: unscaled);
    a parameter that got none counts as zeros, so eager and compiled compare key for key."""
    return {f"grad:{n}": (p.grad if p.grad is not None else torch.zeros_like(p))
            .detach().to("cpu", copy=True) for n, p in model.named_parameters()}


class Training:
    """The training step of one variant inside the measuring child.

    ``eager_step`` and ``variant_step`` are the two functions the child times (the same thing
    in the eager variant's process); :meth:`after_call` keeps the compiled copy's losses and
    parameters after ``accuracy_steps`` warm-up steps; :meth:`accuracy` runs float64 and eager
    (twice) from the same initial state for as many steps and judges them."""

    def __init__(self, run: dict[str, Any], variant: str, model: nn.Module, inputs: tuple,
                 loss_fn: LossFn | None, device: str) -> None:
        self.run, self.variant, self.device = run, variant, device
        self.inputs = inputs
        self.n_steps = int(run.get("accuracy_steps", 3))
        model.train()
        disable_dropout(model)
        self.loss_fn = loss_fn or default_loss(model, inputs, int(run.get("seed", 0)))
        # the initial state, on the host: every accuracy run starts from it
        self.initial = copy.deepcopy(model).to("cpu")
        self.autocast = None if run.get("autocast", "none") == "none" else run["autocast"]
        mode, compile_opt = split_variant(variant)
        self.is_eager = variant == "eager"
        self.compiles_optimizer = compile_opt
        base = {"backend": run.get("backend", "inductor")}
        self.init_scale: float | None = None
        if self.autocast == "float16":
            self.init_scale = self._settled_scale()
        model_kw = None
        if mode != "eager":  # mode, dynamic, fullgraph, inductor options (engine/grid.py)
            model_kw = grid.compile_kwargs(run, variant)
        # the eager twin is built before the variant's copy is ever stepped: same start
        self.twin = None if self.is_eager else self._replica(copy.deepcopy(model), None, None)
        self.main = self._replica(model, model_kw, base if compile_opt else None)
        self.losses: list[torch.Tensor] = []
        self.compiled_state: accuracy.Tensors | None = None
        self.compiled_grads: accuracy.Tensors | None = None
        self.eager_step = (self.main if self.is_eager else self.twin).step  # type: ignore[union-attr]

    def _replica(self, model: nn.Module, compile_model: dict[str, Any] | None,
                 compile_optimizer: dict[str, Any] | None, *, autocast: str | None = "run",
                 loss_fn: LossFn | None = None, inputs: tuple | None = None,
                 track_skips: bool = False) -> Replica:
        return Replica(self.run, model, loss_fn or self.loss_fn,
                       self.inputs if inputs is None else inputs, self.device,
                       autocast=self.autocast if autocast == "run" else autocast,
                       compile_model=compile_model, compile_optimizer=compile_optimizer,
                       init_scale=self.init_scale, track_skips=track_skips)

    def _settled_scale(self) -> float:
        """The scale GradScaler settles on from the initial state, which every copy's scaler
        starts from. From its default start a model whose float16 gradients overflow skips
        its first steps (no update, gradients inf); the float64 reference never skips, so
        eager and compiled would be judged on updates they did not make. Skipped steps change nothing but the scale, so the
        scale at the first step that is not skipped is where a training run goes on from."""
        rep = self._replica(copy.deepcopy(self.initial).to(self.device), None, None,
                            track_skips=True)
        scale = float(rep.scaler.get_scale())
        for _ in range(MAX_SCALE_STEPS):
            rep.step()
            if not rep.skipped[-1]:
                break
            scale = float(rep.scaler.get_scale())
        del rep
        if self.device.startswith("cuda"):
            # its freed blocks would stay reserved and count in the variant's peak memory
            torch.cuda.empty_cache()
        return scale

    def variant_step(self) -> torch.Tensor:
        """The timed step of this variant; the first ``accuracy_steps`` losses are kept."""
        loss = self.main.step()
        if len(self.losses) < self.n_steps:
            # a private copy: CUDA-graph outputs are overwritten by the next replay
            self.losses.append(loss.detach().clone())
        return loss

    def after_call(self, index: int) -> None:
        """Called by the child between warm-up calls (outside any timed window): after call
        ``accuracy_steps`` the compiled copy's state is what accuracy is judged on."""
        if self.is_eager:
            return
        if index == 1 and self.compiled_grads is None:  # the gradients of step 1
            self.compiled_grads = gradients(self.main.model)
        if index == self.n_steps and self.compiled_state is None:
            self.compiled_state = {**self.main.snapshot(self.losses),
                                   **(self.compiled_grads or {})}

    def phase_figures(self, cuda: bool) -> dict[str, Any]:
        """The ``train_phases_ms`` figure: this variant's step split into forward, backward and
        optimizer (:func:`phase_times`) and, in a compiled variant's process, the eager twin's;
        never raises (a failure is the figure's ``error``)."""
        try:
            out = {"variant": phase_times(self.main.step, cuda)}
            if self.twin is not None:
                out["eager"] = phase_times(self.twin.step, cuda)
            return out
        except Exception as e:  # a figure after the measurement must never cost it
            return {"error": f"{type(e).__name__}: {str(e)[:300]}"}

    def discount_eager_twin(self, res: dict[str, Any]) -> None:
        """Peak memory of the variant's own step: less the eager twin's resident bytes."""
        if self.twin is None or res.get("peak_allocated_bytes") is None:
            return
        twin = self.twin.resident_bytes()
        res["eager_twin_bytes"] = twin
        for key in ("peak_allocated_bytes", "peak_reserved_bytes"):
            res[key] = max(int(res[key]) - twin, 0)

    def explain_target(self) -> tuple[nn.Module, tuple]:
        """What ``torch._dynamo.explain`` traces for graph breaks: model and loss."""
        return self.main.module, self.inputs

    def _run_from_start(self, dtype: torch.dtype | None, skips: frozenset[int] = frozenset()
                        ) -> tuple[accuracy.Tensors, list[bool]]:
        """``accuracy_steps`` eager steps from the initial state; float64: no autocast, and no
        update on ``skips``, the steps the compared run's GradScaler skipped. Returns the state
        and which steps were skipped."""
        model = copy.deepcopy(self.initial).to(self.device)
        inputs = self.inputs
        if dtype is not None:
            model = model.to(dtype)
            inputs = accuracy.to_float64(inputs)
        rep = self._replica(model, None, None, autocast=None if dtype is not None else "run",
                            inputs=inputs, track_skips=True)
        rep.skip_steps = skips
        losses, grads = [], {}
        for i in range(self.n_steps):
            losses.append(rep.step().detach().clone())
            if i == 0:
                grads = gradients(rep.model)
        return {**rep.snapshot(losses), **grads}, rep.skipped

    @staticmethod
    def _updates(state: accuracy.Tensors, start: accuracy.Tensors) -> accuracy.Tensors:
        return {k: (v.double() - start[k] if k in start else v) for k, v in state.items()}

    def accuracy(self) -> dict[str, Any]:
        """Loss of each step, gradients after step 1 and parameters after ``accuracy_steps``
        steps, float64 against eager (twice) and, in a compiled variant's process, against the
        compiled copy."""
        mult = float(self.run.get("accuracy_multiplier", accuracy.DEFAULT_MULTIPLIER))
        floor = accuracy.floor_for(self.run)
        try:
            eager_a, skipped = self._run_from_start(None)
            eager_b, _ = self._run_from_start(None)
            fp64, _ = self._run_from_start(
                torch.float64, frozenset(i for i, s in enumerate(skipped) if s))
        except Exception as e:
            return accuracy.failed(f"float64 reference failed: {type(e).__name__}: {e}")
        compiled = self.compiled_state
        if not self.is_eager and compiled is None:
            return accuracy.failed("the compiled copy did not reach the accuracy step")
        # parameters are judged by their update since the start (see engine/measure/accuracy.py)
        start = {f"param:{n}": p.detach().double() for n, p in self.initial.named_parameters()}
        eager_a, eager_b, fp64 = (self._updates(d, start) for d in (eager_a, eager_b, fp64))
        if compiled is not None:
            compiled = self._updates(compiled, start)
        groups = {}
        # losses and step-1 gradients tensor by tensor; updates over the whole model, because
        # an adaptive optimizer turns near-zero gradients into lr-sized steps whose sign
        # rounding decides (engine/measure/accuracy.py says why)
        for group, prefix, judge in (("loss", "loss@", accuracy.judge),
                                     ("gradients", "grad:", accuracy.judge),
                                     ("parameters", "param:", accuracy.judge_whole)):
            pick = lambda d, p=prefix: {k: v for k, v in d.items() if k.startswith(p)}  # noqa: E731
            groups[group] = judge(pick(fp64), pick(eager_a),
                                  None if compiled is None else pick(compiled),
                                  multiplier=mult, floor=floor)
        extra: dict[str, Any] = {"step": "train", "steps": self.n_steps,
                                 "final_loss_fp64": float(fp64[f"loss@{self.n_steps}"]),
                                 "final_loss_eager": float(eager_a[f"loss@{self.n_steps}"])}
        if self.init_scale is not None:
            extra.update(grad_scale=self.init_scale,
                         scaler_skipped_steps=[i + 1 for i, s in enumerate(skipped) if s])
        out: dict[str, Any] = {}
        if compiled is not None:
            extra["final_loss_compiled"] = float(compiled[f"loss@{self.n_steps}"])
            extra["torch_same"] = accuracy._torch_same(eager_a, compiled, fp64, tol=floor * 10)
            diff = accuracy.max_abs_diff(eager_a, compiled)
            scale = max((float(v.double().abs().max()) for v in eager_a.values() if v.numel()),
                        default=1.0) or 1.0
            out.update(max_abs_err=diff, max_rel_err=diff / scale, atol=None, rtol=None)
        out.update(accuracy.figures(groups, deterministic_diff=accuracy.max_abs_diff(
            eager_a, eager_b), extra=extra))
        out["correct"] = bool(out["accuracy_ok"])
        return out
