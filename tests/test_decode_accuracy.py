"""llama_decode's generation judged against float64 with the tolerance stated, its memory
(weights, KV cache; peak on a GPU), and tokens/s against the run's one eager (issue 41)."""

from __future__ import annotations

import math

import pytest
import torch

from engine.analysis import decode_report
from engine.measure import decode
from engine.measure.timing import Timer
from engine.models import llama

TINY = {"batch": 2, "prompt": 6, "new_tokens": 5, "layers": 2, "hidden": 32, "heads": 4}
RUN = {"dtype": "float32"}


def _model():
    torch.manual_seed(0)
    model, _ = llama.build(**TINY)
    return model.eval()


def _prompt():
    return torch.randint(0, llama.VOCAB, (TINY["batch"], TINY["prompt"]),
                         generator=torch.Generator().manual_seed(1))


def test_memory_counts_weights_and_the_kv_cache_apart():
    model = _model()
    m = decode.memory_figures(model)
    layers, b, h, seq = TINY["layers"], TINY["batch"], TINY["heads"], TINY["prompt"] + TINY[
        "new_tokens"]
    head_dim = TINY["hidden"] // h
    assert m["kv_cache_bytes"] == layers * 2 * b * h * seq * head_dim * 4
    params = sum(p.numel() for p in model.parameters()) * 4
    # the rotary table (float32) and the causal mask (bool, one byte) are weights, not cache
    assert m["weights_bytes"] == params + model.rotary.numel() * 4 + model.causal.numel()
    assert decode.memory_figures(model.to(torch.bfloat16))["kv_cache_bytes"] == \
        m["kv_cache_bytes"] // 2


def test_eager_and_a_compiled_step_pass_the_float64_check_with_the_tolerance_stated():
    model = _model()
    with torch.no_grad():
        compiled = torch.compile(model, backend="aot_eager")
        acc = decode.generation_accuracy(model, compiled, model, _prompt(), TINY["new_tokens"],
                                         RUN)
        alone = decode.generation_accuracy(model, model, None, _prompt(), TINY["new_tokens"],
                                           RUN)
    assert acc["ok"] is True and acc["reference_dtype"] == "float64"
    assert acc["steps"] == TINY["new_tokens"] and acc["failed_steps"] == 0
    assert acc["multiplier"] == 3.0 and acc["floor"] == 1e-5  # float32's
    w = acc["worst"]
    assert w["compiled_error"] <= w["allowed"] and w["tensor"] in (
        ["prefill"] + [f"step {i}" for i in range(1, TINY["new_tokens"])])
    assert acc["top1_agreement"] == 1.0 and acc["eager_top1_agreement"] == 1.0
    assert alone["ok"] is True and "eager_top1_agreement" not in alone
    assert alone["worst"]["compiled_error"] is None


def test_a_step_that_is_wrong_fails_and_names_the_step():
    model = _model()

    def wrong(tokens, pos):
        out = model(tokens, pos)
        return out * 1.05 if tokens.shape[1] == 1 else out  # decode steps only

    with torch.no_grad():
        acc = decode.generation_accuracy(model, wrong, model, _prompt(), TINY["new_tokens"], RUN)
    assert acc["ok"] is False and acc["failed_steps"] == TINY["new_tokens"] - 1
    assert acc["worst"]["tensor"].startswith("step ")
    assert acc["worst"]["compiled_error"] > acc["worst"]["allowed"]


def test_measure_reports_memory_and_accuracy_beside_the_timings():
    model = _model()
    with torch.no_grad():
        out = decode.measure(model, model, None, Timer("cpu"), seed=0, first_call_ms=None,
                             repeats=1, run={"dtype": "float32"})
    assert out["accuracy"]["ok"] is True
    assert out["memory"]["kv_cache_bytes"] > 0 and out["memory"]["peak_allocated_bytes"] is None
    assert out["tokens_per_s"] > 0


def _row(variant, tps, eager_tps=None, **extra):
    d = {"batch": 1, "prompt": 8, "new_tokens": 4, "repeats": 3, "warmup_generations": 3,
         "tokens_per_s": tps, "decode_tokens_per_s": tps, "ttft_ms": 1.0, "per_token_ms": 1.0,
         **extra}
    if eager_tps is not None:
        d["eager"] = {"tokens_per_s": eager_tps, "decode_tokens_per_s": eager_tps}
        d["tokens_per_s_speedup"] = tps / eager_tps
    return {"variant": variant, "decode": d}


def test_tokens_per_s_speedups_are_against_the_runs_one_eager():
    """Eager's own process read 100 tokens/s; the compiled processes' eager generations 64 and
    144: the run's eager is their geometric mean, about 99 tokens/s, and every speedup divides
    by it (the paired one is kept beside it)."""
    rows = [_row("eager", 100.0), _row("default", 200.0, 64.0),
            _row("reduce-overhead", 400.0, 144.0)]
    eager, n = decode_report.run_eager(rows, "decode", "tokens_per_s")
    assert n == 3 and eager == pytest.approx(math.exp((math.log(100) + math.log(64)
                                                       + math.log(144)) / 3))
    assert decode_report.speedup_vs_run_eager(rows, rows[2], "decode", "tokens_per_s") == \
        pytest.approx(400.0 / eager)
    text = "\n".join(decode_report.lines(rows))
    assert f"the run's eager {eager:.1f} tokens/s (geometric mean of 3 processes' eager " \
        "generations)" in text
    assert f"tokens/s {400.0 / eager:.2f}x vs the run's eager" in text
    assert "2.78x paired in its own process" in text  # 400 / 144
    # eager's own line says how it reads against the run's eager, so no reader divides a
    # compiled row by it
    assert f"eager: TTFT 1.00 ms, 1.000 ms/token (p90 -), 100.0 tokens/s (100.0 decoding " \
        f"alone); {100.0 / eager:.2f}x the run's eager in its own process" in text


def test_report_states_the_tolerance_and_the_memory():
    acc = {"reference_dtype": "float64", "ok": True, "steps": 5, "multiplier": 3.0,
           "floor": 1e-3, "failed_steps": 0, "top1_agreement": 0.8,
           "eager_top1_agreement": 1.0,
           "worst": {"tensor": "step 3", "eager_error": 0.01, "compiled_error": 0.02,
                     "allowed": 0.031, "ok": True}}
    mem = {"weights_bytes": 2 * 2**30, "kv_cache_bytes": 64 * 2**20,
           "peak_allocated_bytes": 3 * 2**30, "peak_reserved_bytes": 4 * 2**30}
    text = "\n".join(decode_report.lines([_row("default", 10.0, 5.0, accuracy=acc,
                                               memory=mem)]))
    assert ("accuracy vs float64 [default]: ok: worst step 3, error 0.02 <= allowed 0.031 "
            "(3 x eager's 0.01 + 0.001 x the float64 logits' RMS)") in text
    assert "top token as float64's on 80% of 5 steps (eager 100%)" in text
    assert "memory [default]: weights 2048 MiB, KV cache 64 MiB, peak 3072 MiB allocated" in text
    cpu = dict(mem, peak_allocated_bytes=None, peak_reserved_bytes=None)
    text = "\n".join(decode_report.lines([_row("eager", 10.0, memory=cpu)]))
    assert "peak: GPU only" in text


def test_a_small_cache_reads_in_kib_not_zero_mib():
    mem = {"weights_bytes": 8 * 2**20, "kv_cache_bytes": 7168}
    assert "KV cache 7 KiB" in decode_report.memory_line("eager", mem)


def test_show_json_gives_each_generation_speedup_over_the_one_eager_it_shows():
    """``show --json``'s ``generation``: every row's vs_run_eager_x is its tokens/s over the
    run_eager_tokens_per_s beside it, eager's own row included; nothing for a run without."""
    rows = [_row("eager", 100.0), _row("default", 200.0, 64.0),
            _row("reduce-overhead", 400.0, 144.0)]
    out = decode_report.summary(rows)["decode"]
    assert out["eager_processes"] == 3
    for name, v in out["variants"].items():
        assert v["vs_run_eager_x"] == pytest.approx(v["tokens_per_s"]
                                                    / out["run_eager_tokens_per_s"]), name
    assert out["variants"]["eager"]["vs_run_eager_x"] != 1.0
    assert decode_report.summary([{"variant": "eager", "median_ms": 1.0}]) == {}


@pytest.mark.parametrize("junk", [None, "fast", float("nan"), float("inf"), -5.0, 0.0, True,
                                  [1.0], {"x": 1}])
def test_hostile_generation_figures_give_no_speedup_and_never_break_a_surface(junk):
    """A stored row's tokens/s (a database row is outside input) that is not a positive finite
    number gives no speedup over the run's eager and is left out of the run's eager; the text,
    the JSON summary and the dashboard table all still render."""
    import pandas as pd

    from dashboard import decode_view

    rows = [_row("eager", junk), _row("default", 200.0, 64.0)]
    eager, n = decode_report.run_eager(rows, "decode", "tokens_per_s")
    assert n == 1 and eager == pytest.approx(64.0)
    out = decode_report.summary(rows)["decode"]
    assert out["variants"]["eager"]["vs_run_eager_x"] is None
    assert out["variants"]["eager"]["tokens_per_s"] is None  # no NaN or text in the JSON
    assert out["variants"]["default"]["vs_run_eager_x"] == pytest.approx(200.0 / 64.0)
    assert decode_report.lines(rows)
    table = decode_view.generation_table(pd.DataFrame(
        [{"run_id": 1, "variant": r["variant"], "decode": r["decode"]} for r in rows]))
    assert len(table) == 2 and table.iloc[1]["tokens_per_s_vs_run_eager_x"] == \
        pytest.approx(200.0 / 64.0)

    # the same junk as a stored count of CUDA-graph recordings: no line, a blank cell
    for row in rows:
        row["decode"].update(cudagraph_records=junk, later_cudagraph_records=junk,
                             recorded_steps=junk)
    assert not any("CUDA graphs [" in line for line in decode_report.lines(rows))
    table = decode_view.generation_table(pd.DataFrame(
        [{"run_id": 1, "variant": r["variant"], "decode": r["decode"]} for r in rows]))
    assert table["graphs_recorded_warming_up"].isna().all()
    assert table["graphs_recorded_once_warm"].isna().all()
