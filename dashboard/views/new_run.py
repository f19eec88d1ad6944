"""New run: pick a model and its dims, choose variants and options, queue it, watch it run."""

from __future__ import annotations

import functools

import streamlit as st

from dashboard import auth, data, glossary, hardware, safe, slurm_view, widgets
from dashboard.grid_form import grid_form
from dashboard.spec import (
    AUTOCASTS,
    BACKENDS,
    COMPILE_VARIANTS,
    DYNAMIC_CHOICES,
    OPT_VARIANTS,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    STEPS,
    RunRequest,
    build_spec,
    number_widget,
)
from engine.spec import DEFAULTS, normalise

st.title("New run")
st.caption("Measures eager against each compile variant on the worker's machine: cold and warm "
           "compile, warm-up curve, steady-state latency, memory, kernels, graph breaks. "
           + glossary.terms_line(["eager", "compile variant", "measuring process", "sweep",
                                  "grid", "CUDA graphs"]))

if not auth.can_write():
    st.info("Read-only access: you can browse, compare and export runs; queuing a run needs "
            "the editor password.", icon=":material/lock:")
    st.page_link(widgets.PAGE_RUNS, label="Go to Runs", icon=":material/table_rows:")
    st.stop()

try:
    models = data.catalogue()
except Exception as exc:  # noqa: BLE001 - the engine's own message is the most useful
    st.error(f"Cannot load the model catalogue (engine.models.catalogue): {safe.md(exc, 500)}",
             icon=":material/error:")
    st.stop()
if not models:
    st.warning("The model catalogue is empty. Built-in models need their optional packages; "
               "operators can add models in the folder named by `COMPILELAB_PLUGIN_DIR`.")
    st.stop()

try:
    # The machines that would measure: workers registered now, never past (imported) runs.
    workers = data.live_workers()
    recent = data.list_runs(status=list(widgets.ACTIVE), limit=200)
except Exception as exc:  # noqa: BLE001
    widgets.storage_unavailable(exc)
    st.stop()
if not workers:
    st.warning(f"**No worker running** — start one with {hardware.START_ONE}. You can still "
               "queue a run: it waits until a worker that can serve it connects.",
               icon=":material/warning:")
else:
    widgets.worker_banner()

# the models the connected workers can build (their catalogue), not only this host's
offer = hardware.offered_models(workers, models)
host_lacks = set(offer.host_lacks)  # validated by form here, by the worker when it claims
if offer.note(workers):
    st.caption(offer.note(workers))
by_name = {m.name: m for m in offer.models or models}
wanted = st.query_params.get("model")
if wanted and wanted not in by_name:  # a registry model picked on the Models page
    try:
        by_name[wanted] = data.model_choice(wanted)
    except Exception as exc:  # noqa: BLE001 - e.g. the package to install
        remote = offer.registry_choice(wanted)  # this host lacks it; a worker has it
        if remote is not None:
            by_name[wanted] = remote
            host_lacks.add(wanted)
        else:
            st.warning(f"Model {safe.md(wanted, 200)}: {safe.md(exc, 500)}")
names = list(by_name)
model_name = st.selectbox(
    "Model", names, index=names.index(wanted) if wanted in by_name else 0, key="model",
    format_func=lambda n: (f"{n} — {by_name[n].description}"
                           + (" (operator plugin)" if by_name[n].source == "plugin" else "")),
    help="The models the connected workers can build: built-ins whose libraries their hosts "
         "have, plus their operators' plugin folders (`COMPILELAB_PLUGIN_DIR`); timm, "
         "torchvision and Hugging Face models by name: find them on the Models page.")
widgets.set_param("model", model_name)
model = by_name[model_name]
errors_at = {}  # field key (SpecError.field) -> st.empty() beside that field


def field_error(key: str) -> None:
    """Reserve the spot beside a field where its validation error will appear."""
    errors_at[key] = st.empty()


# Expanders that hold fields, so one refused field opens its expander: an error is never hidden
# inside a closed one.
SECTIONS = {"compile": {"backend", "dynamic", "fullgraph"},
            "budget": {"warmup_calls", "min_samples", "pipeline_k", "min_time_s", "max_time_s",
                       "timeout_s", "seed"}}
OPEN_FOR_ERRORS = "new-run-open-for-errors"


def section(label: str, name: str):  # noqa: ANN201 - Streamlit's expander container
    """The expander ``name``, opened while the last check refused one of its fields."""
    key = f"section-{name}"
    if name in st.session_state.get(OPEN_FOR_ERRORS, ()):
        st.session_state[key] = True
    return st.expander(label, key=key, on_change="rerun")


def open_sections_with_errors(errors: dict[str, str]) -> None:
    """Rerun once when a closed section newly holds a refused field, so it opens."""
    wanted = {name for name, keys in SECTIONS.items() if keys & set(errors)}
    newly = wanted - set(st.session_state.get(OPEN_FOR_ERRORS, ()))
    st.session_state[OPEN_FOR_ERRORS] = wanted
    if newly:
        st.rerun()


def index_of(options: list, value: object) -> int:
    """The spec's default among a widget's options (the first when it is not offered)."""
    return options.index(value) if value in options else 0


def option_number(label: str, key: str, step: float, **kw: object) -> float:
    """A numeric spec option: its default and limits are the validator's (dashboard.spec
    number_widget), with the error spot under it."""
    args = number_widget(key)
    value = st.number_input(label, **args, step=type(args["value"])(step), key=key, **kw)
    field_error(key)
    return value


# ---------------------------------------------------------------- shape
st.subheader("Shape")
dims: dict[str, float] = {}
cols = st.columns(min(max(len(model.dims), 1), 4))
for i, d in enumerate(model.dims):
    with cols[i % len(cols)]:
        # A float input even for whole-number dims: an int input silently truncated a typed 2.5
        # to 2; this way 2.5 reaches build_spec, which says "must be a whole number".
        dims[d.name] = st.number_input(
            d.name, value=float(d.default), step=1.0, format="%g",
            min_value=None if d.min is None else float(d.min),
            max_value=None if d.max is None else float(d.max),
            key=f"dim-{model.name}-{d.name}",
            help=f"{d.help + '. ' if d.help else ''}Range {d.range_text()}.")
        field_error(f"dims.{d.name}")

sweep_dim = st.selectbox(
    "Sweep over one dim (optional)", ["(no sweep)", *[d.name for d in model.sweepable]],
    key=f"sweep-dim-{model.name}",
    help="Feed one compiled model several values of an input dim (batch, seq, …): shows "
         "latency per value and the recompiles a new shape triggers.")
sweep_values = sweep_weights = ""
if sweep_dim != "(no sweep)":
    d = model.dim(sweep_dim)
    sweep_values = st.text_input(
        f"Values of {sweep_dim} (comma-separated, range {d.range_text()})",
        key=f"sweep-values-{model.name}", placeholder="e.g. 32, 64, 128")
    sweep_weights = st.text_input(
        "How often a service sees each value (optional weights, comma-separated)",
        key=f"sweep-weights-{model.name}", placeholder="e.g. 6, 3, 1",
        help="Each variant then replays requests in this mix and reports the expected "
             "per-request time with its recompile stalls (python -m engine recommend).")
field_error("sweep")

c1, c2 = st.columns(2)
with c1:
    dtype = st.selectbox("dtype", list(model.dtypes), key="dtype",
                         index=index_of(list(model.dtypes), DEFAULTS["dtype"]))
    field_error("dtype")
with c2:
    devices, preferred = hardware.device_choices(workers)
    device = st.selectbox("Device", devices, index=devices.index(preferred), key="device",
                          help="The devices of the connected workers (cpu and cuda when none "
                               "is connected).")
    field_error("device")
if workers:
    st.caption("Connected: " + " | ".join(safe.md(hardware.describe_worker(w), 200)
                                          for w in workers))
require_gpu = require_torch = None
if workers:
    with st.expander("Run only on… (a GPU model, a torch release)"):
        r1, r2 = st.columns(2)
        if device == "cuda":
            picked_gpu = r1.selectbox(
                "GPU model", hardware.gpu_choices(workers), key="require-gpu",
                help="Only a worker with this GPU claims the run: re-measure a baseline on the "
                     "GPU it was measured on.")
            require_gpu = None if picked_gpu == hardware.ANY_GPU else picked_gpu
        picked_torch = r2.selectbox("torch release", hardware.torch_choices(workers),
                                    key="require-torch",
                                    help="Only a worker with this torch release claims the run.")
        require_torch = None if picked_torch == hardware.ANY_TORCH else picked_torch
    if not hardware.servers(workers, device, require_gpu, require_torch):
        st.warning(f"No connected worker can run this "
                   f"({safe.md(hardware.needs_text(device, require_gpu, require_torch))}): it "
                   "will wait in the queue until one connects.", icon=":material/hourglass:")

# ---------------------------------------------------------------- variants and options
st.subheader("Variants")
step = st.radio("What one timed call is", list(STEPS), horizontal=True, key="step",
                index=index_of(list(STEPS), DEFAULTS["step"]),
                help="inference: one forward under no_grad. train: one training step — forward, "
                     "loss, backward and optimizer step on a fixed batch drawn from the seed.")
field_error("step")
train = step == "train"
variants = st.multiselect(
    "Compile variants (eager is always measured as the baseline)",
    list(COMPILE_VARIANTS) + (list(OPT_VARIANTS) if train else []),
    default=[v for v in DEFAULTS["variants"] if v != "eager"],
    key="variants-train" if train else "variants",
    help="torch.compile modes. reduce-overhead adds CUDA graphs; max-autotune benchmarks "
         "kernel configs while compiling (slow compile). MODE+opt (training): the optimizer "
         "step compiled too; eager+opt compiles the optimizer step alone.")
field_error("variants")
optimizer, optimizer_impl, lr, autocast, accuracy_steps = (
    DEFAULTS[k] for k in ("optimizer", "optimizer_impl", "lr", "autocast", "accuracy_steps"))
if train:
    with st.expander("Training step", expanded=True):
        t1, t2, t3 = st.columns(3)
        with t1:
            optimizer = st.selectbox("Optimizer", list(OPTIMIZERS), key="optimizer",
                                     index=index_of(list(OPTIMIZERS), DEFAULTS["optimizer"]))
            field_error("optimizer")
            optimizer_impl = st.selectbox(
                "Implementation", list(OPTIMIZER_IMPLS), key="optimizer_impl",
                index=index_of(list(OPTIMIZER_IMPLS), DEFAULTS["optimizer_impl"]),
                help="foreach / fused kernels where torch has them.")
            field_error("optimizer_impl")
        with t2:
            lr = option_number("Learning rate", "lr", 1e-5, format="%.1e")
            autocast = st.selectbox("Autocast", list(AUTOCASTS), key="autocast",
                                    index=index_of(list(AUTOCASTS), DEFAULTS["autocast"]),
                                    help="Mixed precision on float32 parameters (dtype "
                                         "float32); float16 adds a GradScaler.")
            field_error("autocast")
        with t3:
            accuracy_steps = option_number(
                "Accuracy after N steps", "accuracy_steps", 1,
                help="Loss and parameters after N steps are compared with a float64 run.")

with section("Compile options", "compile"):
    o1, o2, o3 = st.columns(3)
    backend = o1.selectbox("Backend", list(BACKENDS), key="backend",
                           index=index_of(list(BACKENDS), DEFAULTS["backend"]),
                           help="Modes apply to inductor only; aot_eager/eager test plumbing.")
    with o1:
        field_error("backend")
    dynamic_label = o2.selectbox(
        "dynamic", list(DYNAMIC_CHOICES), key="dynamic",
        index=list(DYNAMIC_CHOICES.values()).index(DEFAULTS["dynamic"]),
        help="None: static first, dynamic after a shape change.")
    with o2:
        field_error("dynamic")
    fullgraph = o3.checkbox("fullgraph (error on graph breaks)", key="fullgraph",
                            value=DEFAULTS["fullgraph"])
    with o3:
        field_error("fullgraph")
grid_choice, grid_limit = grid_form()  # several values per option: a grid
field_error("grid")
field_error("grid_limit")

with section("Measurement budget", "budget"):
    m1, m2, m3 = st.columns(3)
    with m1:
        warmup_calls = option_number("Warm-up calls", "warmup_calls", 1,
                                     help="Calls 1..N timed one by one (call 1 compiles).")
        min_samples = option_number("Minimum samples", "min_samples", 1)
        pipeline_k = option_number("Pipelined calls K", "pipeline_k", 1,
                                   help="K back-to-back calls, one synchronise; fewer where K "
                                        "calls would take over about 75 ms.")
    with m2:
        min_time = option_number("Minimum time (s)", "min_time_s", 0.5)
        max_time = option_number("Maximum time (s)", "max_time_s", 1.0)
        timeout = option_number("Timeout per variant (s)", "timeout_s", 60.0,
                                help="A variant past it is stopped and stored as failed "
                                     "(timeout); the others carry on.")
    with m3:
        seed = option_number("Seed", "seed", 1)
        profile = st.checkbox("Profiler pass (kernels per call)", value=DEFAULTS["profile"],
                              key="profile")
        warm_cache = st.checkbox("Warm-cache compile (2nd process)",
                                 value=DEFAULTS["warm_cache"], key="warm_cache")
        keep_trace = st.checkbox("Keep TORCH_TRACE log", value=DEFAULTS["keep_trace"],
                                 key="keep_trace",
                                 help="Keep torch's structured compile log of each compiled "
                                 "variant's cold compile, downloadable from the run (open it "
                                 "with tlparse). Logging adds a little to that compile.")

t1, t2 = st.columns([1, 2])
tags = t1.text_input("Tags (comma-separated)", key="tags", placeholder="e.g. baseline, h200")
with t1:
    field_error("tags")
note = t2.text_input("Note", key="note", placeholder="What are you trying to find out?",
                     max_chars=data.max_note_chars())  # what storage and bundles accept

request = RunRequest(
    model=model.name, dims=dims, dtype=dtype, device=device, variants=variants,
    backend=backend, dynamic=DYNAMIC_CHOICES[dynamic_label], fullgraph=fullgraph,
    warmup_calls=warmup_calls, min_samples=min_samples, min_time_s=min_time,
    max_time_s=max_time, pipeline_k=pipeline_k, timeout_s=timeout, seed=seed, profile=profile,
    warm_cache=warm_cache, keep_trace=keep_trace, step=step, optimizer=optimizer,
    optimizer_impl=optimizer_impl, lr=lr, autocast=autocast, accuracy_steps=accuracy_steps,
    sweep_dim=None if sweep_dim == "(no sweep)" else sweep_dim,
    sweep_values=sweep_values, sweep_weights=sweep_weights, tags=tags, note=note,
    grid=grid_choice, grid_limit=grid_limit, require_gpu=require_gpu,
    require_torch=require_torch,
)
check = build_spec(request, model, devices, engine_check=functools.partial(
    normalise, stored=True) if model_name in host_lacks else data.engine_normalise)
open_sections_with_errors(check.errors)
for key, message in check.errors.items():
    (errors_at.get(key) or st).error(safe.md(message, 500), icon=":material/warning:")
for w in check.warnings:
    st.caption(f"ℹ️ {safe.md(w, 500)}")
if check.ok and len(check.spec["variants"]) > 2:  # the grid's size and cost before queuing
    st.info(safe.md(data.grid_plan_text(check.spec), 500), icon=":material/grid_on:")

on_slurm = slurm_view.run_on()
if st.button("Queue run", type="primary", icon=":material/play_arrow:", key="submit"):
    if not auth.can_write():
        st.error(auth.READ_ONLY_HELP)
    elif not check.ok:
        st.error(f"Fix the {len(check.errors)} field(s) marked above; nothing was queued.")
    else:
        try:
            if on_slurm:  # a bad setting or no Slurm: nothing stored; a refused job: failed
                run_id = data.submit_to_slurm(check.spec, tags=check.tags, note=note).run_id
            else:
                run_id = data.enqueue_run(check.spec, tags=check.tags, note=note)
        except (ValueError, TypeError, RuntimeError) as exc:  # storage's or Slurm's one line
            st.error(f"Nothing was queued: {safe.md(exc, 500)}")
        else:
            st.session_state["watch"] = run_id
            widgets.set_param("watch", run_id)
            st.toast(f"Run #{run_id} queued.")

watch = st.session_state.get("watch") or widgets.parse_run_id(st.query_params.get("watch"))
if watch:
    st.subheader("Progress")
    known = recent[recent["run_id"] == int(watch)] if not recent.empty else recent
    widgets.progress_view(int(watch), status=None if known.empty else known.iloc[0]["status"])
    slurm_view.job_panel(int(watch), None if known.empty else known.iloc[0]["status"])

active = recent[recent["status"].isin(widgets.ACTIVE)] if not recent.empty else recent
others = [int(r) for r in active["run_id"]] if not active.empty else []
others = [r for r in others if str(r) != str(watch)]
if others:
    with st.expander(f"Other queued or running runs ({len(others)})"):
        for rid in others[:10]:
            widgets.progress_view(rid, live=False)
