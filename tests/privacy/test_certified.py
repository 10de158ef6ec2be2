"""The distribution-free route (``mechanisms/certified.py``, ``accountant="certified"``).

Exact parts against independent computations: the pair terms are the Gaussian mechanism's δ (Balle & Wang's
formula, here through SciPy's normal CDF) and the Laplace mechanism's (a closed form checked by quadrature of the
two densities); in one dimension the blocks' pairing is the sorted one (checked against every permutation of a
small block). Coverage: on a Gaussian mean the certified noise meets δ on the exact law in every one of R
calibrations with a tolerance derived as in ``tests/audit/test_coverage.py``; the half-variance twin is caught.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import bayespriv as bp
from bayespriv.audit.coverage import CalibrationRuns, coverage_by_noise, failure_threshold, gaussian_mean_law
from bayespriv.calibration.laws import Condition, SampledLaw
from bayespriv.privacy import certified as C
from bayespriv.privacy.accountant import GaussianNoise, certified_account, certified_scale


@pytest.mark.parametrize("r", [0.1, 0.8, 2.5, 6.0])
@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_gaussian_pair_terms_are_the_analytic_gaussian(r, eps):
    exact = stats.norm.cdf(r / 2 - eps / r) - math.exp(eps) * stats.norm.cdf(-r / 2 - eps / r)
    got = float(C.pair_delta(np.array([r]), eps)[0])
    assert got >= exact * (1 - 1e-12) and got == pytest.approx(max(exact, 0.0), rel=1e-8, abs=1e-300)


@pytest.mark.parametrize("d", [0.5, 1.0, 2.0, 5.0])
def test_laplace_pair_terms_match_quadrature(d):
    eps = 1.0
    f = lambda y: max(0.0, 0.5 * math.exp(-abs(y)) - math.exp(eps) * 0.5 * math.exp(-abs(y - d)))  # noqa: E731
    ref = integrate.quad(f, -60, 60, points=[0.0, d], limit=200)[0]
    assert float(C.pair_delta(np.array([d]), eps, laplace=True)[0]) == pytest.approx(ref, rel=1e-7, abs=1e-12)


def test_one_dimensional_blocks_are_paired_in_sorted_order_which_is_optimal():
    rng = np.random.default_rng(1)
    xa, xb = rng.normal(0, 1, (1, 6, 1)), rng.normal(1, 2, (1, 6, 1))
    matched = C._match(xa, xb)[0]
    best = min(sum(abs(xa[0, i, 0] - xb[0, p[i], 0]) ** 2 for i in range(6)) for p in itertools.permutations(range(6)))
    assert float((matched**2).sum()) == pytest.approx(best, rel=1e-12)


def test_two_dimensional_blocks_use_the_least_squares_assignment():
    rng = np.random.default_rng(2)
    xa, xb = rng.normal(size=(1, 5, 2)), rng.normal(size=(1, 5, 2))
    matched = C._match(xa, xb)[0]
    best = min(sum(((xa[0, i] - xb[0, p[i]]) ** 2).sum() for i in range(5)) for p in itertools.permutations(range(5)))
    assert float((matched**2).sum()) == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize("k", [2, 5])
def test_small_blocks_by_every_permutation_are_the_assignment_solvers_pairs(monkeypatch, m, k):
    rng = np.random.default_rng(m * k)
    xa, xb = rng.normal(size=(300, m, k)), rng.normal(1.0, 2.0, size=(300, m, k))
    enumerated = C._match(xa, xb)
    monkeypatch.setattr(C, "MAX_ENUMERATED", 0)
    assert np.array_equal(enumerated, C._match(xa, xb))


def test_a_tie_takes_a_least_squares_permutation():
    xa = np.array([[[0.0, 0.0], [2.0, 0.0]]])
    xb = np.array([[[1.0, 1.0], [1.0, -1.0]]])  # every pairing costs 4
    assert np.array_equal(C._match(xa, xb), np.full((1, 2), math.sqrt(2.0)))


def test_the_bound_is_monotone_in_the_noise_scale():
    rng = np.random.default_rng(4)
    cond = Condition("c", SampledLaw(rng.normal(1.0, 0.3, (4000, 1))), SampledLaw(rng.normal(0.0, 0.3, (4000, 1))))
    bounds = [certified_account([cond], GaussianNoise([[t * t]]), 1.0, confidence=0.95).delta
              for t in (1.0, 1.5, 2.0, 3.0, 5.0)]
    assert all(a >= b for a, b in zip(bounds, bounds[1:]))
    t, acc = certified_scale([cond], GaussianNoise([[1.0]]), 1.0, 1e-2, confidence=0.95)
    assert acc.delta <= 1e-2 < certified_account([cond], GaussianNoise([[(t * 0.99) ** 2]]), 1.0, confidence=0.95).delta


@pytest.mark.slow
def test_certified_apgm_covers_the_exact_law_and_the_twin_is_caught():
    """F's spread small against the shift (sd 0.2): the certified route is within a small factor of the estimated
    one; over 20 calibrations its noise meets δ on the exact law (threshold for α = 1e-3), half its variance not."""
    law = gaussian_mean_law(shift=1.0, sd=0.2)
    build = lambda cal, e, d: bp.mechanisms.APGM(cal, epsilon=e, delta=d, accountant="certified")  # noqa: E731
    limit = failure_threshold(20, 0.95, 1e-3)
    ok, twin = coverage_by_noise(law, n_draws=20_000, delta=1e-3, calibrations=CalibrationRuns(runs=20, seed=5),
                                 build=build, noise_factors=(1.0, 0.5))
    assert ok.established == 20 and ok.failures <= limit, ok
    assert twin.failures > limit, twin


def test_auto_states_the_certificate_when_it_holds_at_the_same_noise():
    """A law with almost no spread of its own: the estimated route's noise also meets the certificate, and the
    guarantee then assumes nothing but independent draws."""
    model = bp.FunctionDataModel(lambda s, n, rng: {"x": rng.normal(s.value, 0.01, (n, 1))}, columns=["x"],
                                 n_records=1)
    pair = bp.SecretPair(bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 1.0))
    cal = bp.calibrate(model, pair, bp.mean("x"), n_draws=20_000, rng=1)
    auto = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    assert auto.accounting.certified and auto.guarantee.assumptions == ("independent_draws",)
    assert auto.accounting.estimated is not None and auto.accounting.estimated.delta <= 1e-3
    wide = bp.calibrate(bp.FunctionDataModel(lambda s, n, rng: {"x": rng.normal(s.value, 1.0, (n, 1))},
                                             columns=["x"], n_records=1), pair, bp.mean("x"), n_draws=20_000, rng=1)
    assert not bp.mechanisms.APGM(wide, epsilon=1.0, delta=1e-3).accounting.certified  # F's spread: not within reach


def test_certified_route_needs_draws_of_both_secrets():
    exact = bp.Calibration.from_laws({bp.DistributionSecret("m", 0.0): ([0.0, 1.0], [0.5, 0.5]),
                                      bp.DistributionSecret("m", 1.0): ([0.0, 1.0], [0.4, 0.6])},
                                     bp.SecretPair(bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 1.0)))
    mech = bp.mechanisms.APGM(exact, epsilon=1.0, delta=1e-3, accountant="certified")  # exact laws: nothing to certify
    assert mech.guarantee.established and mech.accounting.account.confidence == 1.0
