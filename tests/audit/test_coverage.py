"""Coverage of "(ε, δ) with confidence 0.95": repeated calibrations against laws whose true δ is known.

The harness (``bayespriv.audit.coverage``) calibrates with independent seeds, builds APGM with its default
accountant, and computes the true δ(ε) of the noise built from the law itself, with no code of
``bayespriv.mechanisms``. A calibration *fails* when its guarantee is established and the true δ (the
oracle's lower end) exceeds the request; a refusal is safe.

Twins. The same mechanism with half its noise variance must be flagged. Where δ is carried by a far region's
mass (the rare component at 60), half the variance hardly moves the true δ — that twin still meets the request
in most calibrations (``RESULTS_coverage.md``: 12 of 100 fail), so there the twin is half the noise's standard
deviation (a quarter of its variance).

Tolerance. Under the claim each calibration fails with probability at most 5 %, independently, so the
failures of ``runs`` calibrations are at most Binomial(runs, 0.05) in distribution; a law is flagged when they
exceed ``failure_threshold(runs, 0.95, FALSE_ALARM)``, the count such a binomial exceeds with probability at
most FALSE_ALARM = 1e-3 (per law, whatever the seed). Twins: the same mechanism with half its noise variance must
be flagged (its true δ exceeds the request in most calibrations).

Oracles are checked first, against computations of their own: one-component mixtures against the closed form,
mixtures against SciPy's adaptive quadrature, the 2-D quadrature against the 1-D one on laws that lie on a line,
the t(3) convolution against quadrature of the convolution integral.

Tiers: a short run by default (20 calibrations per law); the long run (``make coverage``; in CI with the whole
suite, ``make test-all``, on two workers) covers every law of the design notes: 100 calibrations per law at
δ = 1e-3, and 10 of each δ = 1e-5 law at the ~1.5 million draws per secret it needs (about 10 s each; ``benchmarks/bench_coverage.py``
runs 30, ``RESULTS_coverage.md``). Their twins are the δ = 1e-3 laws' twins.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import bayespriv as bp
from bayespriv.audit.coverage import (
    CalibrationRuns,
    binomial_law,
    coverage_by_noise,
    measure_coverage,
    failure_threshold,
    gaussian_2d_law,
    gaussian_mean_law,
    gaussian_pair_delta,
    hypergeometric_law,
    mixture_delta_1d,
    rare_far_2d_law,
    rare_far_law,
    student_t_law,
)

#: Probability that a correct mechanism is flagged on one law (module docstring).
FALSE_ALARM = 1e-3
CONFIDENCE = 0.95


# ------------------------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("distance", [0.2, 1.0, 3.0])
def test_one_component_mixtures_are_the_closed_form(distance):
    sd = 1.7
    lo, hi = mixture_delta_1d([distance * sd], [1.0], [0.0], [1.0], sd, 1.0)
    exact = gaussian_pair_delta(distance, 1.0)
    assert lo <= exact * (1 + 1e-9) and exact <= hi * (1 + 1e-9) and hi - lo < 1e-3 * exact + 1e-12


def test_mixture_oracle_matches_adaptive_quadrature():
    ca, wa, cb, wb, sd, eps = [0.0, 2.0, 9.0], [0.6, 0.399, 0.001], [0.5, 1.0], [0.5, 0.5], 1.3, 0.7

    def dens(y, c, w):
        return sum(wi * stats.norm.pdf(y, ci, sd) for ci, wi in zip(c, w))

    ref = max(integrate.quad(lambda y: max(0.0, dens(y, p, pw) - math.exp(eps) * dens(y, q, qw)), -40, 60,
                             points=[0, 2, 9], limit=500, epsabs=1e-13)[0]
              for (p, pw), (q, qw) in (((ca, wa), (cb, wb)), ((cb, wb), (ca, wa))))
    lo, hi = mixture_delta_1d(ca, wa, cb, wb, sd, eps)
    assert lo - 1e-10 <= ref <= hi + 1e-10


def test_two_dimensional_oracle_agrees_with_one_dimension_on_a_line():
    """Centres on the first axis and isotropic noise: the second coordinate carries nothing, so the 2-D δ is the
    1-D δ of the first coordinates."""
    law = rare_far_2d_law(0.01, far=(8.0, 0.0), shift=(1.0, 0.0))
    noise = np.eye(2) * 4.0
    lo2, hi2 = law.true_delta(noise, 1.0)
    lo1, hi1 = mixture_delta_1d([1.0, 8.0], [0.99, 0.01], [0.0], [1.0], math.sqrt(5.0), 1.0)
    assert max(lo1, lo2) <= min(hi1, hi2) * (1 + 1e-6), ((lo1, hi1), (lo2, hi2))


@pytest.mark.slow
def test_student_oracle_matches_quadrature_of_the_convolution():
    """The t(3) density convolved with the noise by adaptive quadrature at each point of a grid over [−60, 60]
    (Simpson's rule on the excess over e^ε p_b); beyond ±60 at most the t(3) ∗ noise mass there is left."""
    s = 2.0
    lo, hi = student_t_law(3.0).true_delta(np.array([[s * s]]), 1.0)

    t3 = 2.0 / (math.pi * math.sqrt(3.0))  # the t(3) density's constant, Γ(2)/(√(3π) Γ(3/2)), written out
    gauss = 1.0 / (s * math.sqrt(2.0 * math.pi))
    assert math.isclose(t3, stats.t.pdf(0.0, 3), rel_tol=1e-14) and math.isclose(gauss, stats.norm.pdf(0.0, scale=s))

    def pa(v: float) -> float:
        # scalar closed forms (scipy.stats' pdf costs ~0.2 ms per scalar call: 200 000 calls here)
        f = lambda x: t3 * (1.0 + x * x / 3.0) ** -2 * gauss * math.exp(-0.5 * ((v - x) / s) ** 2)  # noqa: E731
        return (integrate.quad(f, -np.inf, v - 14 * s)[0] + integrate.quad(f, v - 14 * s, v + 14 * s, limit=200)[0]
                + integrate.quad(f, v + 14 * s, np.inf)[0])

    y = np.linspace(-60.0, 60.0, 601)  # spacing s/10
    excess = np.clip(np.array([pa(v) for v in y]) - math.e * stats.norm.pdf(y, scale=math.sqrt(1 + s * s)), 0.0, None)
    ref = integrate.simpson(excess, x=y)
    beyond = 2 * stats.t.sf(60.0 - 8 * s, 3) + 2 * stats.norm.sf(8.0)  # P(|T + Z| > 60) at most
    assert lo <= (ref + beyond) * (1 + 1e-3) and ref <= hi * (1 + 1e-3), (lo, hi, ref, beyond)


def test_failure_threshold_is_a_binomial_tail():
    c = failure_threshold(100, CONFIDENCE, FALSE_ALARM)
    assert stats.binom.sf(c, 100, 0.05) <= FALSE_ALARM < stats.binom.sf(c - 1, 100, 0.05)


# ------------------------------------------------------------------------------------------ harness
def _check(law, n_draws, delta, runs, seed, twin=0.5):
    """Coverage within the threshold; the twin (noise variance × ``twin``; None: none) flagged on the same
    calibrations and mechanisms."""
    limit = failure_threshold(runs, CONFIDENCE, FALSE_ALARM)
    factors = (1.0,) if twin is None else (1.0, twin)
    result, *broken = coverage_by_noise(law, n_draws=n_draws, delta=delta,
                                        calibrations=CalibrationRuns(runs=runs, seed=seed), noise_factors=factors)
    assert result.failures <= limit, result
    for twin_result in broken:
        assert twin_result.failures > limit, twin_result
    return result


@pytest.mark.slow
def test_twins_judged_together_are_the_separate_measurements():
    """One pass over the calibrations for the mechanism and its twin gives what two separate passes give."""
    law = gaussian_mean_law()
    three = CalibrationRuns(runs=3, seed=8)
    together = coverage_by_noise(law, n_draws=20_000, delta=1e-3, calibrations=three, noise_factors=(1.0, 0.5))
    apart = tuple(measure_coverage(law, n_draws=20_000, delta=1e-3, calibrations=three, noise_factor=f)
                  for f in (1.0, 0.5))
    assert together == apart
    assert together[1].failures > together[0].failures  # the twin's δ is above the request where the mechanism's is not



# ------------------------------------------------------------------------------ CalibrationRuns
RUNS_FIELD_CASES = [
    ("runs", 2.0, bp.ParameterTypeError, r"runs must be an integer >= 1; got 2.0"),
    ("runs", 0, bp.ValidationError, r"runs must be an integer >= 1; got 0"),
    ("seed", "0", bp.ParameterTypeError, r"seed must be an integer >= 0; got '0'"),
    ("seed", -1, bp.ValidationError, r"seed must be an integer >= 0; got -1"),
]


def test_calibration_runs_defaults():
    runs = CalibrationRuns()
    assert (runs.runs, runs.seed) == (100, 0)
    with pytest.raises(TypeError):
        CalibrationRuns(20)  # keyword-only
    with pytest.raises(AttributeError):  # frozen
        runs.runs = 5


@pytest.mark.parametrize("field, value, error, message", RUNS_FIELD_CASES,
                         ids=[f"{c[0]}={c[1]!r}" for c in RUNS_FIELD_CASES])
def test_calibration_runs_checks_each_field(field, value, error, message):
    with pytest.raises(error, match=message):
        CalibrationRuns(**{field: value})


@pytest.mark.parametrize("harness, factor", [(measure_coverage, {"noise_factor": 0.5}),
                                             (coverage_by_noise, {"noise_factors": (1.0, 0.5)})])
def test_old_runs_and_seed_warn_and_give_the_same_measurement(harness, factor):
    from bayespriv.errors import BayesPrivDeprecationWarning

    law = gaussian_mean_law()
    new = harness(law, n_draws=2000, delta=1e-2, calibrations=CalibrationRuns(runs=2, seed=9), **factor)
    name = harness.__name__
    with pytest.warns(BayesPrivDeprecationWarning, match=rf"{name}\(runs=\.\.\., seed=\.\.\.\) is deprecated .*use "
                                                         rf"{name}\(calibrations=CalibrationRuns\("):
        old = harness(law, n_draws=2000, delta=1e-2, runs=2, seed=9, **factor)
    assert old == new


@pytest.mark.parametrize("harness", [measure_coverage, coverage_by_noise])
def test_old_runs_with_calibrations_or_unknown_keyword_is_refused(harness):
    law, name = gaussian_mean_law(), harness.__name__
    with pytest.raises(bp.ValidationError, match=r"pass calibrations= only \(seed=\.\.\. is its deprecated spelling\)"):
        harness(law, n_draws=2000, calibrations=CalibrationRuns(runs=1), seed=3)
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'repeats'$"):
        harness(law, n_draws=2000, repeats=3)
    with pytest.raises(bp.ParameterTypeError, match=r"calibrations must be None or a bayespriv CalibrationRuns; got 3"):
        harness(law, n_draws=2000, calibrations=3)

SHORT = [
    (gaussian_mean_law(), 20_000, 1e-3),
    (binomial_law(), 20_000, 1e-3),
    (rare_far_law(2e-3, 31.0), 10_000, 1e-3),
    (student_t_law(3.0), 20_000, 1e-3),
]


@pytest.mark.parametrize("law,n_draws,delta", SHORT, ids=[c[0].name for c in SHORT])
@pytest.mark.slow
def test_short_coverage_and_the_twin(law, n_draws, delta):
    result = _check(law, n_draws, delta, runs=20, seed=11)
    assert result.established > 0  # these draws can certify δ: the harness tests established guarantees


def test_a_request_the_draws_cannot_show_is_refused_naming_the_draws():
    """p = 2e-3 at 31 from 500 draws (the far region is missed by all of them with probability 37 %): every
    calibration refuses δ = 1e-3 and names the same number of draws, at which the law is established."""
    law = rare_far_law(2e-3, 31.0)
    refused = measure_coverage(law, n_draws=500, delta=1e-3, calibrations=CalibrationRuns(runs=10, seed=3))
    assert refused.refused == 10 and refused.failures == 0 and len(set(refused.draws_asked)) == 1
    asked = refused.draws_asked[0]
    assert asked > 500 and "n_draws=" in refused.reasons[0]
    enough = measure_coverage(law, n_draws=asked, delta=1e-3, calibrations=CalibrationRuns(runs=5, seed=4))
    assert enough.established == 5 and enough.failures == 0


LONG = [  # law, draws per secret, δ, calibrations, twin's variance factor (None: the δ = 1e-3 twins stand for it)
    (gaussian_mean_law(), 20_000, 1e-3, 100, 0.5),
    (binomial_law(), 20_000, 1e-3, 100, 0.5),
    (hypergeometric_law(), 20_000, 1e-3, 100, 0.5),
    (rare_far_law(2e-3, 31.0), 10_000, 1e-3, 100, 0.5),
    (rare_far_law(5e-4, 60.0), 20_000, 1e-3, 100, 0.25),
    (student_t_law(3.0), 20_000, 1e-3, 100, 0.5),
    (gaussian_2d_law(), 10_000, 1e-3, 100, 0.5),
    (rare_far_2d_law(2e-3), 10_000, 1e-3, 100, 0.5),
    (rare_far_law(2e-3, 31.0), 1_551_360, 1e-5, 10, None),
    (rare_far_law(5e-4, 60.0), 1_551_360, 1e-5, 10, None),
]


@pytest.mark.coverage_long
@pytest.mark.parametrize("law,n_draws,delta,runs,twin", LONG, ids=[f"{c[0].name}, δ={c[2]:g}" for c in LONG])
def test_long_coverage_and_the_twin(law, n_draws, delta, runs, twin):
    _check(law, n_draws, delta, runs=runs, seed=2026, twin=twin)
