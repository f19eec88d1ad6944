"""Device resource figures per variant: peak memory, kernels per call, device busy vs wall time.

All three read columns of the ``variants`` DataFrame that only CUDA runs (memory) or the
profiler pass (kernels, busy time) fill; without them each figure says why it is empty.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from contract import fmt
from dashboard.charts_base import _col, _labels, _layout, _ok, empty_figure, variant_colour

MiB = 2**20


MEMORY_TITLE = "Peak memory per variant (MiB)"


def _mib_label(value) -> str:
    """Bar label in MiB without the unit (the axis has it): short enough to stay legible."""
    if not fmt.is_num(value):
        return ""
    v = float(value) / MiB
    return f"{v:,.0f}" if v >= 10 else f"{v:.1f}"


def peak_memory(variants: pd.DataFrame) -> go.Figure:
    """Peak allocated and reserved device memory per variant (each measured in its own process)."""
    x_title, y_title = "variant", "peak memory (MiB)"
    df = _ok(variants)
    alloc, reserved = _col(df, "peak_allocated_bytes"), _col(df, "peak_reserved_bytes")
    if df.empty or (alloc.isna().all() and reserved.isna().all()):
        return empty_figure(MEMORY_TITLE, "Peak memory is measured on CUDA devices only.",
                            x_title, y_title)
    labels = _labels(df)
    fig = go.Figure()
    for y, name, colour in [(alloc, "allocated", "#1f77b4"),
                            (reserved, "reserved (caching allocator)", "#aec7e8")]:
        if y.notna().any():
            fig.add_trace(go.Bar(
                name=name, x=labels, y=y / MiB, marker_color=colour,
                text=[_mib_label(v) for v in y], textposition="outside",
                hovertemplate="%{x}<br>%{y:,.1f} MiB<extra>" + name + "</extra>",
            ))
    return _layout(fig, MEMORY_TITLE, x_title, y_title,
                   "peak allocated and reserved, each variant in its own process",
                   barmode="group")


KERNELS_TITLE = "Kernels per call (count)"


def kernels_per_call(variants: pd.DataFrame) -> go.Figure:
    """Device kernels per call per variant; fewer kernels usually means fusion worked."""
    x_title, y_title = "variant", "kernels per call (count)"
    df = _ok(variants)
    k = _col(df, "kernels_per_call")
    if df.empty or k.isna().all():
        return empty_figure(KERNELS_TITLE, "No kernel counts recorded (profiler pass off, or "
                            "no device kernels on this device).",
                            x_title, y_title)
    df = df.assign(k=k)[k.notna()]
    labels = _labels(df)
    fig = go.Figure(go.Bar(
        name="kernels per call", x=labels, y=df["k"],
        marker_color=[variant_colour(v) for v in df["variant"]],
        text=[f"{v:.4g}" for v in df["k"]], textposition="outside",
        hovertemplate="%{x}<br>%{y:.4g} kernels per call<extra></extra>",
    ))
    return _layout(fig, KERNELS_TITLE, x_title, y_title,
                   "device kernels launched per call, from a separate profiler pass",
                   showlegend=False)


DEVICE_BUSY_TITLE = "Device busy vs wall time per call (ms)"
DEVICE_BUSY_SUB = "busy: kernel time on the device, profiler pass · wall: steady-state median " \
    "per call"


def device_busy(variants: pd.DataFrame) -> go.Figure:
    """Time the device spent in kernels per call vs the wall time of a call.

    Busy time comes from the separate profiler pass (the profiler slows the host, not the
    kernels); wall time is the steady-state median per call, as the engine stores it. A big
    gap means the device sits idle waiting for the host (launch/Python overhead), which fusion
    (fewer kernels) and CUDA graphs (reduce-overhead) shrink. Empty without busy times (CPU
    runs, or the profiler pass switched off): wall alone would repeat the latency chart.
    """
    x_title, y_title = "variant", "time per call (ms)"
    df = _ok(variants)
    # wall: the same per-call median every other figure and the verdict use
    busy, wall = _col(df, "device_busy_ms_per_call"), _col(df, "median_ms")
    if df.empty or busy.isna().all():
        return empty_figure(DEVICE_BUSY_TITLE, "No device busy times: they come from the "
                            "profiler pass on CUDA devices (off, or a CPU run).",
                            x_title, y_title)
    labels = _labels(df)
    share = [f"{b / w:.0%} busy" if fmt.is_num(b) and fmt.is_num(w) and w > 0 else ""
             for b, w in zip(busy, wall, strict=True)]
    fig = go.Figure([
        go.Bar(name="device busy", x=labels, y=busy, marker_color="#2ca02c", text=share,
               textposition="outside",
               hovertemplate="%{x}<br>%{y:.4g} ms busy<extra></extra>"),
        go.Bar(name="wall", x=labels, y=wall, marker_color="#c7c7c7",
               hovertemplate="%{x}<br>%{y:.4g} ms wall<extra></extra>"),
    ])
    return _layout(fig, DEVICE_BUSY_TITLE, x_title, y_title, DEVICE_BUSY_SUB, barmode="group")
