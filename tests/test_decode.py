"""LLM decoding (engine/models/llama.py, engine/measure/decode.py, engine/analysis/decode_report.py): the static
KV cache gives the same logits as recomputing the whole sequence, generations are measured apart
(TTFT, per-token latency, tokens/s) eager and compiled, and a step that recompiles per token is
flagged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from engine.analysis import decode_report
from engine.measure import decode
from engine.measure.timing import Timer
from engine.models import llama
from engine.spec import normalise

ROOT = Path(__file__).resolve().parent.parent
TINY = {"batch": 2, "prompt": 8, "new_tokens": 6, "layers": 2, "hidden": 32, "heads": 4}


def test_static_cache_decode_matches_recomputing_the_sequence():
    torch.manual_seed(0)
    model, (token, pos) = llama.build(**TINY)
    model.eval()
    prompt = torch.randint(0, llama.VOCAB, (2, 8))
    with torch.no_grad():
        model(prompt, torch.arange(8))
        stepped = model(token, pos)[:, -1]  # one decode step on the cache
        full = model(torch.cat([prompt, token], 1), torch.arange(9))[:, -1]  # recomputed
    assert pos.tolist() == [8] and token.shape == (2, 1)
    torch.testing.assert_close(stepped, full, rtol=1e-4, atol=1e-4)


def test_cache_is_sized_for_prompt_plus_new_tokens_and_declares_generation():
    model, _ = llama.build(**TINY)
    assert model.layers[0].attention.cache.k.shape == (2, 4, 14, 8)
    assert model.compilelab_decode == {"batch": 2, "prompt": 8, "new_tokens": 6,
                                       "vocab": llama.VOCAB}
    with pytest.raises(ValueError, match="divisible"):
        llama.build(**{**TINY, "hidden": 30})


def _run_child(variant: str) -> dict:
    run = normalise({"model": "llama_decode", "dims": TINY, "variants": ["eager", "default"],
                     "backend": "aot_eager", "device": "cpu", "warmup_calls": 3,
                     "min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.2, "pipeline_k": 2,
                     "profile": False, "processes": 1, "warm_cache": False})
    script = ("import json, sys\nfrom engine.measure.child import Progress, measure\n"
              "r = measure(json.loads(sys.argv[1]), Progress(None))\n"
              "print(json.dumps({k: r.get(k) for k in ('status', 'error', 'decode', 'correct',"
              " 'samples_ms', 'recompiles')}))")
    p = subprocess.run([sys.executable, "-c", script,
                        json.dumps({"run": run, "variant": variant, "phase": "cold"})],
                       cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # an end-to-end run (10-30 s here): the slow tier
def test_child_measures_prefill_and_decode_apart_eager_vs_compiled():
    out = _run_child("default")
    assert out["status"] == "ok", out["error"]
    d = out["decode"]
    assert out["correct"] and len(out["samples_ms"]) >= 3  # the timed call: one decode step
    assert (d["batch"], d["prompt"], d["new_tokens"]) == (2, 8, 6)
    for key in ("ttft_ms", "per_token_ms", "generation_ms", "tokens_per_s", "compile_s"):
        assert d[key] > 0, key
    assert d["tokens_per_s"] == pytest.approx(2 * 6 / (d["generation_ms"] / 1e3))
    assert d["prefill_compiles"] >= 1  # the prompt is a new shape for the compiled step
    assert d["decode_recompiles"] == 0 and d["recompiles_per_step"] is False  # static cache
    assert d["eager"]["tokens_per_s"] > 0  # eager's generations, paired in the same process
    assert d["tokens_per_s_speedup"] == pytest.approx(d["tokens_per_s"] / d["eager"]["tokens_per_s"])
    # the first generation included the prefill compile: far slower than a warm one
    assert d["first_generation_ms"] > 5 * d["generation_ms"]
    be = d["break_even_tokens"]
    assert be is None or be > 0


def test_eager_variant_reports_generation_without_compile_figures():
    d = _run_child("eager")["decode"]
    assert d["ttft_ms"] > 0 and d["prefill_compiles"] == 0 and "eager" not in d
    assert "break_even_tokens" not in d


class _Toy(nn.Module):
    """A two-layer "language model" whose step the test compiles two ways."""

    compilelab_decode = {"batch": 1, "prompt": 4, "new_tokens": 6, "vocab": 50}

    def __init__(self) -> None:
        super().__init__()
        self.emb, self.head = nn.Embedding(50, 8), nn.Linear(8, 50)

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        return self.head(self.emb(tokens)) + input_pos[-1] * 0


def test_a_step_that_recompiles_every_token_is_flagged():
    torch._dynamo.reset()
    model = _Toy().eval()

    def by_int(tokens: torch.Tensor, pos: int) -> torch.Tensor:
        return model.head(model.emb(tokens)) + pos * 0.0  # a Python int position: specialised

    compiled = torch.compile(by_int, backend="eager", dynamic=False)
    with torch.no_grad():
        d = decode.measure(model, lambda t, p: compiled(t, int(p[-1])), model, Timer("cpu"),
                           seed=0, first_call_ms=1.0, repeats=1)
    assert d["decode_recompiles"] >= 4 and d["recompiles_per_step"] is True
    text = "\n".join(decode_report.lines([{"variant": "default", "decode": d}]))
    assert "RECOMPILES WHILE DECODING [default]" in text

    torch._dynamo.reset()
    tensor_step = torch.compile(model, backend="eager")  # a tensor position: one graph
    with torch.no_grad():
        tensor_step(torch.zeros(1, 1, dtype=torch.long), torch.tensor([4]))  # the warm-up curve
        ok = decode.measure(model, tensor_step, model, Timer("cpu"), seed=0, first_call_ms=1.0,
                            repeats=1)
    assert ok["decode_recompiles"] == 0 and ok["recompiles_per_step"] is False
    torch._dynamo.reset()


class _Metrics:
    """A stand-in for torch._dynamo.utils: compilation-metrics records the test appends."""

    def __init__(self) -> None:
        self.records: list[SimpleNamespace] = []

    def get_compilation_metrics(self) -> list[SimpleNamespace]:
        return list(self.records)


def test_cuda_graph_recordings_are_not_counted_as_recompiles(monkeypatch):
    """CUDA-graph trees log each graph they warm up or record as a run-time compilation-metrics
    record under the frame's compile id (seen on a GPU: hf:mistral logged 58 while decoding its
    first generations). Those are not frames compiled: a step that records a graph at each of
    its first positions reads 0 recompiles and that many recordings, none once warm."""
    from engine.measure import signals

    fake = _Metrics()
    monkeypatch.setattr(signals, "_dynamo_utils", lambda: fake)
    model = _Toy().eval()
    seen: set[int] = set()

    def step(tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        key = int(pos[-1])
        if key not in seen:  # a new shape per position, recorded once
            seen.add(key)
            fake.records.append(SimpleNamespace(is_runtime=True, co_name=None,
                                                runtime_cudagraphify_time_us=50))
        return model(tokens, pos)

    fake.records.append(SimpleNamespace(is_runtime=False, co_name="forward"))  # the compile
    assert signals.compile_counts() == (1, 0)
    with torch.no_grad():
        d = decode.measure(model, step, model, Timer("cpu"), seed=0, first_call_ms=1.0,
                           repeats=1)
    steps = d["new_tokens"] - 1
    assert d["decode_recompiles"] == 0 and d["later_recompiles"] == 0
    assert d["recompiles_per_step"] is False
    assert d["cudagraph_records"] == steps + 1  # the prefill's and one per decode position
    assert d["recorded_steps"] == list(range(steps)) and d["later_cudagraph_records"] == 0
    assert signals.compile_counts() == (1, steps + 1)
    text = "\n".join(decode_report.lines([{"variant": "reduce-overhead", "decode": d}]))
    assert "RECOMPILES WHILE DECODING" not in text
    assert (f"CUDA graphs [reduce-overhead]: {steps + 1} set-ups or recordings while warming "
            f"up (first generation's decode steps {', '.join(map(str, range(steps)))}), 0 once "
            "warm (CUDA-graph trees set up") in text

    # dynamo's reset empties the records: the count starts again, though the length repeats
    fake.records = [SimpleNamespace(is_runtime=False, co_name="a")] * (steps + 2)
    assert signals.compile_counts() == (steps + 2, 0)


class _BoundedMetrics:
    """torch._dynamo.utils as torch has it: the last 64 records in a bounded deque, and the
    setter that widens it."""

    def __init__(self) -> None:
        from collections import deque

        self._compilation_metrics: deque = deque(maxlen=64)

    def get_compilation_metrics(self) -> list:
        return list(self._compilation_metrics)

    def set_compilation_metrics_limit(self, n: int) -> None:
        from collections import deque

        self._compilation_metrics = deque(self._compilation_metrics, maxlen=n)


def test_counts_stay_right_past_torchs_64_record_window(monkeypatch):
    """torch keeps 64 records; a decoder that sets up a CUDA graph per position fills that in
    one generation, after which differences read short and the frame count can go down. The
    first count widens the window, so every record after it is counted."""
    from engine.measure import signals

    fake = _BoundedMetrics()
    monkeypatch.setattr(signals, "_dynamo_utils", lambda: fake)
    fake._compilation_metrics.extend(SimpleNamespace(is_runtime=False, co_name=f"f{i}")
                                     for i in range(2))
    assert signals.compile_counts() == (2, 0)
    assert fake._compilation_metrics.maxlen == signals.METRICS_LIMIT
    for i in range(150):
        fake._compilation_metrics.append(SimpleNamespace(is_runtime=True, co_name=None,
                                                         runtime_cudagraphify_time_us=50))
        assert signals.compile_counts() == (2, i + 1)
    fake._compilation_metrics.append(SimpleNamespace(is_runtime=False, co_name="g"))
    assert signals.compile_counts() == (3, 150)


def test_counts_do_not_fail_where_the_window_cannot_be_widened(monkeypatch):
    from collections import deque

    from engine.measure import signals

    kept: deque = deque(maxlen=64)
    fake = SimpleNamespace(get_compilation_metrics=lambda: list(kept))
    monkeypatch.setattr(signals, "_dynamo_utils", lambda: fake)
    kept.extend(SimpleNamespace(is_runtime=True, runtime_cudagraphify_time_us=1)
                for _ in range(70))
    assert signals.compile_counts() == (0, 64)  # what torch still holds; nothing raised


@pytest.mark.parametrize("warm, later", [(None, None), (0, 0), ("7", None), (True, False),
                                         (-3, None), (float("nan"), [1]), ({}, "x")])
def test_graphs_line_says_nothing_of_figures_that_are_not_counts(warm, later):
    d = {"cudagraph_records": warm, "later_cudagraph_records": later,
         "recorded_steps": ["<b>", -1, None]}
    assert decode_report.graphs_line("default", d) is None


def test_graphs_line_warns_when_timed_generations_recorded():
    d = {"cudagraph_records": 2, "later_cudagraph_records": 3, "recorded_steps": "0,1"}
    text = decode_report.graphs_line("default", d)
    assert text == ("    CUDA graphs [default]: 2 set-ups or recordings while warming up, 3 "
                    "once warm: the timed generations include recordings, so their figures "
                    "are slower than a warm server's")


def test_report_lines_say_tokens_per_second_and_break_even():
    rows = [{"variant": "eager", "decode": {"batch": 1, "prompt": 128, "new_tokens": 128,
                                            "repeats": 3, "warmup_generations": 3,
                                            "ttft_ms": 20.0, "per_token_ms": 10.0,
                                            "tokens_per_s": 95.0}},
            {"variant": "reduce-overhead", "decode": {
                "ttft_ms": 8.0, "per_token_ms": 2.0, "tokens_per_s": 450.0,
                "eager": {"tokens_per_s": 95.0}, "tokens_per_s_speedup": 4.7,
                "ttft_speedup": 2.5, "compile_s": 40.0, "break_even_tokens": 4100.0}},
            {"variant": "default", "decode": {"eager": {}, "break_even_tokens": None}},
            {"variant": "max-autotune", "status": "failed"}]
    text = "\n".join(decode_report.lines(rows))
    assert "prompt 128, 128 new tokens" in text
    assert "reduce-overhead: TTFT 8.00 ms, 2.000 ms/token" in text and "450.0 tokens/s" in text
    assert "4.70x" in text and "break-even 4,100 tokens" in text
    assert "default: TTFT - ms" in text and "break-even never" in text
    assert "max-autotune" not in text and decode_report.lines([{"variant": "x"}]) == []


class _FakeCudaTensor:
    """Duck-typed parameter on a CUDA device, for the size check without a GPU."""

    def __init__(self, numel: int) -> None:
        self.device, self._n = torch.device("cuda", 0), numel

    def numel(self) -> int:
        return self._n

    def is_floating_point(self) -> bool:
        return True


def test_float64_reference_is_replaced_by_the_stated_tolerance_when_too_large(monkeypatch):
    from engine.measure import accuracy

    class Big(nn.Module):
        def parameters(self, recurse=True):  # 7 B float parameters: 56 GB in float64
            return iter([_FakeCudaTensor(7_000_000_000)])

        def buffers(self, recurse=True):
            return iter([])

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (80 * 2**30, 141 * 2**30))
    reason = accuracy.float64_too_large(Big())
    assert reason and "52.2 GiB needed, 80.0 GiB free" in reason and "rtol" in reason
    out = accuracy.check_inference(Big(), (), None, None, {"dtype": "bfloat16"})
    assert out["reference_dtype"] is None and "too large" in out["accuracy"]["error"]
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (140 * 2**30, 141 * 2**30))
    assert accuracy.float64_too_large(Big()) is None
    assert accuracy.float64_too_large(nn.Linear(2, 2)) is None  # CPU: always run the reference
