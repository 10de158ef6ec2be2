"""Draws on demand (``mechanisms/on_demand.py``): the number a refusal asks for, and calibrating until established."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.mechanisms.on_demand import build_on_demand, draws_for_delta, round_confidence

PAIR = bp.SecretPair(bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 1.0))


def _model(sd: float = 1.0):
    return bp.FunctionDataModel(lambda s, n, rng: {"x": rng.normal(s.value, sd, (n, 1))}, columns=["x"], n_records=1)


def test_draws_for_delta_is_what_a_refusal_asks_for():
    cal = bp.calibrate(_model(), PAIR, bp.mean("x"), n_draws=2000, rng=0)
    with pytest.raises(bp.DrawsNeededError) as info:
        bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    assert info.value.draws_needed == draws_for_delta(PAIR, 1e-3) and info.value.draws == 2000
    other = bp.SecretPair(bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 2.0))
    assert draws_for_delta([PAIR, other], 1e-3) > draws_for_delta(PAIR, 1e-3)  # more directions share the level
    assert draws_for_delta(PAIR, 1e-5) > 90 * draws_for_delta(PAIR, 1e-3)  # about ln(1/α)/δ


def test_the_rounds_spend_at_most_the_level():
    """Round k calibrates at 1 − (1 − c)/2^k: the error probabilities of any number of rounds sum below 1 − c."""
    c = 0.95
    spent = sum(1 - round_confidence(c, k) for k in range(1, 60))
    assert spent <= (1 - c) * (1 + 1e-12) and round_confidence(c, 1) == pytest.approx(0.975)


def test_build_on_demand_starts_from_the_ask_and_is_established():
    out = build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3, rng=1)
    assert out.mechanism.guarantee.established and out.confidence == 0.95
    assert out.rounds == (draws_for_delta(PAIR, 1e-3, confidence=0.975),)
    assert out.mechanism.calibration.n_draws == out.rounds[-1] and out.mechanism.calibration.confidence == 0.975


def test_too_few_draws_to_start_then_more_rounds():
    out = build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3, rng=2, start=500)
    assert out.rounds[0] == 500 and len(out.rounds) >= 2 and out.mechanism.guarantee.established
    assert all(b >= 2 * a for a, b in zip(out.rounds, out.rounds[1:]))
    assert out.mechanism.calibration.confidence == pytest.approx(round_confidence(0.95, len(out.rounds)))


def test_the_ceiling_refuses_naming_the_rounds():
    """Round 2 takes what round 1's refusal asked for, capped at the ceiling, where the procedure stops."""
    with pytest.raises(bp.DrawsNeededError, match=r"the ceiling max_draws=3000 is reached \(rounds: \[500, 3000\]\)"):
        build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3, rng=3, start=500,
                        max_draws=3000)


@pytest.mark.parametrize("kwargs,match", [
    (dict(confidence=None), "confidence must be a number in \\(0, 1\\)"),
    (dict(max_draws=1), "max_draws must be an integer >= 2"),
])
def test_bad_arguments_name_the_parameter(kwargs, match):
    with pytest.raises(bp.ValidationError, match=match):
        build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3, **kwargs)
    with pytest.raises(bp.ParameterTypeError, match="mechanism must be a mechanism class"):
        build_on_demand("APGM", _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3)
    assert math.isfinite(np.float64(draws_for_delta(PAIR, 0.5)))
