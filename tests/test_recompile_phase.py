"""Where a recompile happened, said by ``show`` from the stored row (contract/recompile.py): its
sweep value first, else the phase the child recorded, else nothing; a stored phase is outside
input, so only the engine's own phases are said."""

from __future__ import annotations

import pytest

from contract.recompile import PHASES, phase_words
from engine.analysis.show import _recompile_where


@pytest.mark.parametrize("phase", sorted(PHASES))
def test_each_phase_the_engine_writes_is_said(phase):
    assert _recompile_where({"phase": phase, "dim_value": None}) == f" ({PHASES[phase]})"


def test_a_sweep_value_places_the_recompile_before_its_phase():
    assert _recompile_where({"phase": "steady", "dim_value": 128.0}) == " at 128"


@pytest.mark.parametrize("junk", [None, "", "<b>steady</b>", "STEADY", 3, True, ["steady"],
                                  {"steady": 1}, float("nan")])
def test_a_phase_the_engine_does_not_write_says_nothing(junk):
    assert phase_words(junk) is None
    assert _recompile_where({"phase": junk}) == ""
