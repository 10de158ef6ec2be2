"""Gaussian calibration: r*(ε, δ), σ, the classic constant.

The analytic radius is checked against an independent 50-digit mpmath
evaluation of the privacy profile of two unit-variance Gaussians whose means
are r apart (Balle & Wang 2018, Theorem 8):

    δ(r) = Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r).

Nothing here is random, so there is no α: every check is exact up to the
stated numerical precision.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.privacy import analytic_gaussian_log_delta, classic_constant, gaussian_radius, gaussian_sigma

from tests._gaussian_oracles import analytic_delta as mp_delta

EPSILONS = [float(e) for e in np.geomspace(0.01, 50.0, 15)]
DELTAS = [float(d) for d in np.geomspace(1e-12, 0.1, 12)]
#: Relative step used to show that r* is tight (a larger radius breaks δ).
TIGHT = 1e-6


def delta_ratio(epsilon: float, r: float, delta: float) -> float:
    """Achieved δ(r) divided by the target, in 60-digit arithmetic, rounded to float."""
    with mpmath.workdps(60):
        return float(mp_delta(epsilon, r) / mpmath.mpf(delta))


def respects(epsilon: float, r: float, delta: float) -> bool:
    """The check used on the grid: δ(r) ≤ δ exactly (no slack)."""
    with mpmath.workdps(60):
        return mp_delta(epsilon, r) <= mpmath.mpf(delta)


# -- analytic ------------------------------------------------------------------------------


def test_analytic_sigma_reference_value():
    """(ε, δ, Δ) = (1, 1e-3, 1): σ = Δ/r* = 2.5747 (Balle & Wang's analytic Gaussian)."""
    sigma = gaussian_sigma(1.0, 1.0, 1e-3)
    assert sigma == pytest.approx(2.5747, abs=1e-4)
    assert sigma == pytest.approx(1.0 / gaussian_radius(1.0, 1e-3), rel=1e-15)
    # σ scales linearly with the sensitivity
    assert gaussian_sigma(3.5, 1.0, 1e-3) == pytest.approx(3.5 * sigma, rel=1e-15)
    # and the profile at r* is (just below) 1e-3
    assert 1 - 1e-9 < delta_ratio(1.0, gaussian_radius(1.0, 1e-3), 1e-3) <= 1.0


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_analytic_radius_never_exceeds_delta_and_is_tight(epsilon):
    """Over δ ∈ geomspace(1e-12, 0.1): δ(r*) ≤ δ exactly, and δ(r*(1 + 1e-6)) > δ.

    The second condition fails an implementation that is over-conservative by
    more than one part in a million (adds more noise than needed).
    """
    for delta in DELTAS:
        r = gaussian_radius(epsilon, delta)
        assert respects(epsilon, r, delta), (epsilon, delta, r, delta_ratio(epsilon, r, delta))
        assert not respects(epsilon, r * (1 + TIGHT), delta), (epsilon, delta, r)


#: The extreme grid every Gaussian mechanism is tested on (tests/privacy/test_extreme_gaussian.py).
GRID_EPSILONS = (0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 35, 50)
GRID_DELTAS = (1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1)


@pytest.mark.parametrize("epsilon", GRID_EPSILONS)
def test_analytic_radius_on_the_extreme_grid(epsilon):
    """Down to δ = 1e-15 and up to ε = 50: δ(r*) ≤ δ exactly (60 digits), and r* is within
    1e-9 relative of the exact root (δ(r*(1 + 1e-9)) > δ); measured gap ≤ 7.5e-11."""
    for delta in GRID_DELTAS:
        r = gaussian_radius(epsilon, delta)
        assert respects(epsilon, r, delta), (epsilon, delta, r, delta_ratio(epsilon, r, delta))
        assert not respects(epsilon, r * (1 + 1e-9), delta), (epsilon, delta, r)


def test_grid_worst_ratio():
    """The worst achieved/target δ over the whole grid, for the record (≤ 1, ≥ 1 − 1e-6)."""
    ratios = [delta_ratio(e, gaussian_radius(e, d), d) for e in EPSILONS for d in DELTAS]
    assert max(ratios) <= 1.0
    assert min(ratios) > 1 - 1e-6


def test_grid_check_catches_too_little_noise():
    """Broken twin of the grid check: a radius 0.1% too large (0.1% too little
    noise) violates δ at every grid point, so the check above has teeth."""
    for epsilon in EPSILONS[::3]:
        for delta in DELTAS[::3]:
            assert not respects(epsilon, gaussian_radius(epsilon, delta) * 1.001, delta)


def test_extreme_parameters_that_break_naive_implementations():
    """DESIGN pitfall: at ε = 20, δ = 1e-9 naive code gives 9× the target δ."""
    for epsilon, delta in [(20.0, 1e-9), (50.0, 1e-12), (1e-3, 1e-12), (1e-4, 1e-15), (0.5, 0.9)]:
        r = gaussian_radius(epsilon, delta)
        assert respects(epsilon, r, delta)
        assert not respects(epsilon, r * (1 + 1e-4), delta)


@pytest.mark.parametrize("epsilon, r", [(0.1, 0.05), (1.0, 0.4), (1.0, 2.0), (5.0, 1.0), (20.0, 3.0), (50.0, 6.0)])
def test_analytic_log_delta_matches_mpmath(epsilon, r):
    """log δ(r) agrees with 60-digit mpmath to 1e-9 (absolute, in log)."""
    with mpmath.workdps(60):
        expected = float(mpmath.log(mp_delta(epsilon, r)))
    assert analytic_gaussian_log_delta(epsilon, r) == pytest.approx(expected, abs=1e-9)


def test_analytic_log_delta_increasing_in_r():
    rs = np.geomspace(0.05, 20, 50)
    values = [analytic_gaussian_log_delta(1.0, float(r)) for r in rs]
    assert np.all(np.diff(values) > 0)
    assert analytic_gaussian_log_delta(1.0, 0.0) == -math.inf


# -- classic ------------------------------------------------------------------------------------


def test_classic_constant():
    assert classic_constant(1e-3) == pytest.approx(math.sqrt(2 * math.log(1250.0)), rel=1e-15)
    assert classic_constant(1e-3) == pytest.approx(3.7765, abs=1e-4)


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 0.99])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-3, 0.05])
def test_classic_radius_below_one_no_warning(epsilon, delta):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = gaussian_radius(epsilon, delta, "classic")
    assert r == pytest.approx(epsilon / math.sqrt(2 * math.log(1.25 / delta)), rel=1e-14)


@pytest.mark.parametrize("epsilon", [1.0, 2.0, 10.0])
def test_classic_radius_warns_for_epsilon_at_least_one(epsilon):
    with pytest.warns(bp.PrivacyAssumptionWarning, match="epsilon"):
        r = gaussian_radius(epsilon, 1e-3, "classic")
    assert r == pytest.approx(epsilon / math.sqrt(2 * math.log(1250.0)), rel=1e-14)


def test_classic_sigma_warns_too():
    with pytest.warns(bp.PrivacyAssumptionWarning):
        assert gaussian_sigma(1.0, 1.0, 1e-3, "classic") == pytest.approx(math.sqrt(2 * math.log(1250.0)))


def test_analytic_never_more_noise_than_classic_where_classic_is_valid():
    """For ε < 1 (where the classic proof holds) the analytic radius is at least the classic one."""
    for epsilon in [e for e in EPSILONS if e < 1]:
        for delta in DELTAS:
            assert gaussian_radius(epsilon, delta) >= gaussian_radius(epsilon, delta, "classic")


def test_classic_respects_delta_where_valid():
    """Sanity of the independent checker: the classic radius (valid for ε < 1) meets δ."""
    for epsilon in [e for e in EPSILONS if e < 1][::2]:
        for delta in DELTAS[::3]:
            assert respects(epsilon, gaussian_radius(epsilon, delta, "classic"), delta)


# -- invalid arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "epsilon, error",
    [(0, bp.ValidationError), (-1, bp.ValidationError), (math.inf, bp.ValidationError), (math.nan, bp.ValidationError),
     ("1", bp.ParameterTypeError), (True, bp.ParameterTypeError)],
)
@pytest.mark.parametrize("func", [gaussian_radius, gaussian_sigma])
def test_invalid_epsilon(func, epsilon, error):
    args = (epsilon, 1e-3) if func is gaussian_radius else (1.0, epsilon, 1e-3)
    with pytest.raises(error) as info:
        func(*args)
    message = str(info.value)
    assert "epsilon" in message
    assert repr(epsilon) in message
    assert isinstance(info.value, bp.BayesPrivError)
    assert isinstance(info.value, ValueError if error is bp.ValidationError else TypeError)


@pytest.mark.parametrize("delta", [0, 1, -0.1, 1.5, math.nan, 0.0, 1.0])
@pytest.mark.parametrize("calibration", ["analytic", "classic"])
def test_invalid_delta(delta, calibration):
    with pytest.raises(bp.ValidationError) as info:
        gaussian_radius(0.5, delta, calibration)
    message = str(info.value)
    assert "delta" in message and repr(delta) in message and "(0, 1)" in message


@pytest.mark.parametrize("delta", ["0.1", None, False])
def test_delta_wrong_type(delta):
    with pytest.raises(bp.ParameterTypeError, match="delta"):
        gaussian_radius(0.5, delta)


@pytest.mark.parametrize("name", ["exact", "Analytic", "", None])
def test_unknown_calibration(name):
    with pytest.raises(bp.ValidationError) as info:
        gaussian_radius(0.5, 1e-3, name)
    message = str(info.value)
    assert "gaussian_calibration" in message and repr(name) in message
    assert "analytic" in message and "classic" in message
