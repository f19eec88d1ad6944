"""The measuring child's eager variant stays free of the compiler."""

import json
import subprocess
import sys
from pathlib import Path

from engine.spec import normalise

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, sys
from engine.measure.child import Progress, measure
result = measure(json.loads(sys.argv[1]), Progress(None))
print(json.dumps({"status": result["status"], "error": result["error"],
                  "device_startup_ms": result.get("device_startup_ms"),
                  "warmup_ms": result.get("warmup_ms"),
                  "dynamo_imported": "torch._dynamo" in sys.modules,
                  "inductor_imported": "torch._inductor.compile_fx" in sys.modules}))
"""


def test_eager_child_never_imports_dynamo_or_inductor():
    """Eager never compiles, so its child must not pay for importing dynamo and inductor
    (3 s on this 2-core CPU): that time landed in eager's setup figure (the MLP's eager setup on
    the H200 fell from 8.7 s to 3.7 s without it) and made every eager child start 2.5x slower
    here."""
    run = normalise({"model": "mlp", "variants": ["eager"], "dims": {"batch": 2, "hidden": 8},
                     "device": "cpu", "warmup_calls": 3, "min_samples": 3, "min_time_s": 0.0,
                     "max_time_s": 0.2, "pipeline_k": 2, "warm_cache": False, "profile": False})
    spec = json.dumps({"run": run, "variant": "eager", "phase": "cold"})
    p = subprocess.run([sys.executable, "-c", SCRIPT, spec], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["status"] == "ok", out
    assert not out["dynamo_imported"] and not out["inductor_imported"], out
    # the device's start-up call is a figure of its own, and no warm-up curve holds it
    assert out["device_startup_ms"] > 0 and len(out["warmup_ms"]) == 3
