"""Draws on demand (``mechanisms/on_demand.py``, ``mechanisms/draw_schedule.py``): the number a refusal asks for,
calibrating until established, and the schedule of the rounds (:class:`DrawSchedule`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.errors import BayesPrivDeprecationWarning, ParameterTypeError, ValidationError
from bayespriv.mechanisms.on_demand import DrawSchedule, build_on_demand, draws_for_delta, round_confidence

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
    out = build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3, rng=2,
                          schedule=DrawSchedule(start=500))
    assert out.rounds[0] == 500 and len(out.rounds) >= 2 and out.mechanism.guarantee.established
    assert all(b >= 2 * a for a, b in zip(out.rounds, out.rounds[1:]))
    assert out.mechanism.calibration.confidence == pytest.approx(round_confidence(0.95, len(out.rounds)))


def test_the_ceiling_refuses_naming_the_rounds():
    """Round 2 takes what round 1's refusal asked for, capped at the ceiling, where the procedure stops."""
    with pytest.raises(bp.DrawsNeededError, match=r"the ceiling max_draws=3000 is reached \(rounds: \[500, 3000\]\)"):
        build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3, rng=3,
                        schedule=DrawSchedule(start=500, max_draws=3000))


def test_bad_arguments_name_the_parameter():
    with pytest.raises(bp.ParameterTypeError, match="mechanism must be a mechanism class"):
        build_on_demand("APGM", _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ParameterTypeError, match=r"schedule must be None or a bayespriv DrawSchedule; got "
                                                    r"\{'start'"):
        build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3,
                        schedule={"start": 500})
    assert math.isfinite(np.float64(draws_for_delta(PAIR, 0.5)))


# -- the schedule of the rounds: one option object, DrawSchedule; its fields' own keywords deprecated for one release


def test_draw_schedule_defaults():
    assert DrawSchedule() == DrawSchedule(start=None, max_draws=2_000_000, confidence=0.95, progress=None)
    schedule = DrawSchedule(start=np.int64(500), confidence=np.float64(0.9), progress=np.bool_(False))
    assert type(schedule.start) is int and type(schedule.confidence) is float and schedule.start == 500
    assert hash(schedule) == hash(DrawSchedule(start=500, confidence=0.9, progress=False))
    with pytest.raises(dataclasses.FrozenInstanceError):
        schedule.start = 10
    with pytest.raises(TypeError):
        DrawSchedule(500)


@pytest.mark.parametrize("field, value, error, rule", [
    ("start", 1, ValidationError, "an integer >= 2"),
    ("start", 500.0, ParameterTypeError, "an integer >= 2"),
    ("max_draws", 1, ValidationError, "an integer >= 2"),
    ("max_draws", True, ParameterTypeError, "an integer >= 2"),
    ("confidence", None, ValidationError, "a number in (0, 1) (draws on demand need a confidence to spend)"),
    ("confidence", 1.0, ValidationError, "None or in the open interval (0, 1)"),
    ("confidence", "0.9", ParameterTypeError, "a real number"),
    ("progress", "yes", ParameterTypeError, "None, True or False"),
])
def test_draw_schedule_refuses_an_invalid_value_naming_the_field(field, value, error, rule):
    with pytest.raises(error) as info:
        DrawSchedule(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field} must be") and rule in message and f"got {value!r}" in message


OLD_SCHEDULE = dict(start=500, max_draws=40_000, confidence=0.9, progress=False)


def test_old_schedule_keywords_warn_and_give_the_same_result():
    """``start=..., max_draws=..., …`` (deprecated) warn and give the rounds and mechanism of
    ``schedule=DrawSchedule(...)``; the mechanism's own options still reach it."""
    call = dict(epsilon=0.5, delta=1e-3, rng=2, gaussian_calibration="classic")
    new = build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), schedule=DrawSchedule(**OLD_SCHEDULE),
                          **call)
    with pytest.warns(BayesPrivDeprecationWarning, match=r"build_on_demand\(start=\.\.\., max_draws=\.\.\., "
                                                         r"confidence=\.\.\., progress=\.\.\.\) is deprecated.*"
                                                         r"schedule=DrawSchedule\(start="):
        old = build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), **OLD_SCHEDULE, **call)
    assert old.rounds == new.rounds and old.confidence == new.confidence == 0.9
    assert old.mechanism.gaussian_calibration == new.mechanism.gaussian_calibration == "classic"
    np.testing.assert_array_equal(old.mechanism.calibration.sample_array, new.mechanism.calibration.sample_array)
    assert old.mechanism.guarantee.epsilon == new.mechanism.guarantee.epsilon


def test_schedule_and_its_old_keywords_together_are_refused():
    with pytest.raises(ValidationError, match=r"pass schedule= only \(start=\.\.\. is its deprecated spelling\); "
                                              r"got both"):
        build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3,
                        schedule=DrawSchedule(), start=500)


def test_an_unknown_keyword_is_the_mechanisms_type_error():
    """The broken twin: only the four schedule keywords are picked out of the options; any other goes to the
    mechanism, whose own TypeError names it (without a deprecation warning)."""
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'strat'"):
        build_on_demand(bp.mechanisms.APGM, _model(), PAIR, bp.mean("x"), epsilon=1.0, delta=1e-3, rng=0,
                        schedule=DrawSchedule(start=500, max_draws=500), strat=500)
