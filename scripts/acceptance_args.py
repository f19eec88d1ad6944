"""The command-line options every GPU acceptance script shares (scripts/*_acceptance.py)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable


def common_parser(models: Iterable[str], what: str) -> argparse.ArgumentParser:
    """--db, --device, --only, --tiny, --backend and --bundle, with the defaults the scripts
    use on the H200 (cuda, inductor, every model)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=os.environ.get("COMPILELAB_DB"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", default=",".join(models), help="comma list of models")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes, fp32 (a CPU check)")
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--bundle", default=None, help=f"also export every {what} run here")
    return ap
