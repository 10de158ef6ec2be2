"""``bp.mechanisms.choose``: every candidate on one calibration, the established one with the least E‖noise‖².

Exact: each candidate is built here on its own and its trace(noise_cov) compared with the table; the chosen one
is the smallest among the established. A candidate that refuses is listed with its reason and never chosen.
"""

from __future__ import annotations

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.errors import ValidationError
from bayespriv.mechanisms.choice import CANDIDATES

A, B = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
PAIR = bp.SecretPair(A, B)


def _calibration(small: float = 1e-4) -> bp.Calibration:
    """Two averages of very different spreads: APGM's equal noise on both is wasteful."""
    cov = [[1.0, 0.0], [0.0, small]]
    return bp.Calibration.from_moments({A: [0.0, 0.0], B: [1.0, 0.01]}, {A: cov, B: cov}, PAIR,
                                       query=bp.stack(bp.mean("x"), bp.mean("y")), n_records=20)


def test_the_choice_is_the_least_noise_among_the_established():
    cal = _calibration()
    choice = bp.mechanisms.choose(cal, epsilon=1.0, delta=1e-3)
    traces = {name: float(np.trace(cls(cal, epsilon=1.0, delta=1e-3).noise_cov)) for name, cls in CANDIDATES.items()}
    assert choice.table["E‖noise‖²"].to_dict() == pytest.approx(traces, rel=1e-12)
    best = min(traces, key=traces.get)
    assert type(choice.best).__name__ == best
    assert float(np.trace(choice.best.noise_cov)) == pytest.approx(min(traces.values()), rel=1e-12)
    assert choice.table.loc["APGM", "× best"] > 5  # the same sd on both components
    assert choice.best.guarantee.epsilon == 1.0 and "best:" in str(choice)


class _Refuses(bp.mechanisms.APGM):
    def __init__(self, calibration, *, epsilon, delta):
        raise ValidationError("this candidate refuses")


def test_a_refusing_candidate_is_listed_and_never_chosen_and_none_established_is_an_error():
    cal = _calibration()
    choice = bp.mechanisms.choose(cal, epsilon=1.0, delta=1e-3,
                                  candidates={"Refuses": _Refuses, "APGM": bp.mechanisms.APGM})
    assert not choice.table.loc["Refuses", "established"] and "refuses" in choice.table.loc["Refuses", "why not"]
    assert type(choice.best).__name__ == "APGM" and "Refuses" not in choice.mechanisms
    with pytest.raises(ValidationError, match="none does"):
        bp.mechanisms.choose(cal, epsilon=1.0, delta=1e-3, candidates={"Refuses": _Refuses})
    with pytest.raises(ValidationError, match="candidates"):
        bp.mechanisms.choose(cal, epsilon=1.0, delta=1e-3, candidates={})
