"""Likelihood-ratio attack, the accuracy a claim allows, and n_leaked (Suri & Evans 2022).

Tolerances (fixed seeds; each holds for any seed with the stated false-failure probability):

* Sampling. Given the reference draws the decision rule is fixed, and the 2n trials are
  independent of them, so by Hoeffding |Â − acc(test)| ≤ t_H = sqrt(ln(2/α)/(4n)).
* Mixture. A test built from finitely many draws is at most as accurate as the Bayes test,
  acc(test) ≤ Φ(r/2) (Gaussian laws), and its shortfall comes from the boundary
  {p̂_a = p̂_b} moving off the true one. At the crossing c (the midpoint, by symmetry)
  the log-ratio error δℓ has variance v_a + v_b, v_s = (E[φ(c − X)²] − p_s(c)²)/(n p_s(c)²)
  (X a draw of F | s, φ the noise density); the boundary moves by −δℓ/ℓ'(c), and the
  accuracy lost is ½·½|(p_a − p_b)'(c)|·(shift)². So the shortfall is asymptotically
  E·χ²₁ with E = ¼|(p_a − p_b)'(c)|(v_a + v_b)/ℓ'(c)², and is at most E·χ²₁(1 − α)
  with probability 1 − α (delta method; checked directly too: the fixed test's exact
  accuracy is computed on a grid, given the draws).
* Empirical ε: the Clopper–Pearson lower bound exceeds the true ε with probability ≤ α
  (``bayespriv.audit.empirical_epsilon``), for a claim that holds.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import bayespriv as bp
from bayespriv.audit import (
    AttackTrials,
    LikelihoodRatioResult,
    accuracy_bound,
    direct_accuracy,
    likelihood_ratio_attack,
    log_likelihood_ratio,
    n_leaked,
)
from bayespriv.mechanisms import APGM, DauM, EigM, ExpM, OptimalGaussian

ALPHA = 1e-3


def hoeffding(n: int, alpha: float) -> float:
    """Two-sided Hoeffding half-width for the mean of n independent [0, 1] indicators."""
    return math.sqrt(math.log(2.0 / alpha) / (2.0 * n))


def twin(mech, factor: float = 0.25):
    """The mechanism with its Gaussian noise covariance multiplied by ``factor`` (¼: half the noise)
    and the same claim — what a broken calibration of the same mechanism would release."""
    return types.SimpleNamespace(calibration=mech.calibration, guarantee=mech.guarantee, noise="gaussian",
                                 noise_cov=np.asarray(mech.noise_cov) * factor, noise_scale=None, noise_basis=None)


# -- the Gaussian model: F = mean(y) | mean(x) = a ~ N(ρa, (1 − ρ²)/n), exactly ------------------------------

RHO, N_RECORDS = 0.8, 50
GAUSS = bp.GaussianDataModel([0.0, 0.0], [[1.0, RHO], [RHO, 1.0]], ["x", "y"], n_records=N_RECORDS)
GAUSS_PAIR = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 0.2))
GAUSS_QUERY = bp.mean("y")


@pytest.fixture(scope="module")
def gauss_cal():
    return bp.calibrate(GAUSS, [GAUSS_PAIR], GAUSS_QUERY, n_draws=20_000, rng=11)


def _laws():
    """Exact (mean, variance) of F | a and F | b."""
    return [tuple(float(np.ravel(v)[0]) for v in GAUSS.moments(s, GAUSS_QUERY)) for s in GAUSS_PAIR.secrets]


def _gauss_plus_laplace(y, m, tau2, b):
    """Density of N(m, τ²) + Laplace(b) (exponentially modified Gaussian, in log space)."""
    tau = math.sqrt(tau2)
    z = y - m
    left = tau2 / (2 * b * b) - z / b + special.log_ndtr((z - tau2 / b) / tau)
    right = tau2 / (2 * b * b) + z / b + special.log_ndtr((-z - tau2 / b) / tau)
    return np.exp(np.logaddexp(left, right)) / (2 * b)


def _densities(noise: str, scale: float):
    """Released densities p_a, p_b and the second moments q_s(y) = E[φ(y − X)²], X ~ F | s."""
    (ma, tau2), (mb, _) = _laws()
    if noise == "gaussian":
        v = tau2 + scale**2
        p = [lambda y, m=m: stats.norm.pdf(y, m, math.sqrt(v)) for m in (ma, mb)]
        q = [lambda y, m=m: stats.norm.pdf(y, m, math.sqrt(tau2 + scale**2 / 2)) / (2 * scale * math.sqrt(math.pi))
             for m in (ma, mb)]
    else:
        p = [lambda y, m=m: _gauss_plus_laplace(y, m, tau2, scale) for m in (ma, mb)]
        q = [lambda y, m=m: _gauss_plus_laplace(y, m, tau2, scale / 2) / (4 * scale) for m in (ma, mb)]
    return p, q, (ma + mb) / 2, math.sqrt(tau2 + (1 if noise == "gaussian" else 2) * scale**2)


def _mixture_shortfall(noise: str, scale: float, n_draws: int, alpha: float) -> float:
    """E·χ²₁(1 − α): the bound on Bayes − acc(test) of the module docstring (derivatives numerically)."""
    (pa, pb), (qa, qb), c, sd = _densities(noise, scale)
    h = 1e-4 * sd
    va, vb = ((q(c) - p(c) ** 2) / (n_draws * p(c) ** 2) for p, q in ((pa, qa), (pb, qb)))
    ell = lambda y: math.log(pa(y)) - math.log(pb(y))  # noqa: E731
    slope = (ell(c + h) - ell(c - h)) / (2 * h)
    dgap = ((pa(c + h) - pb(c + h)) - (pa(c - h) - pb(c - h))) / (2 * h)
    return 0.25 * abs(dgap) * (va + vb) / slope**2 * stats.chi2.ppf(1 - alpha, 1)


def _exact_accuracies(mech, noise: str, scale: float, cal) -> tuple[float, float]:
    """(Bayes accuracy, exact accuracy of the attack's fixed test given the calibration's draws), on a grid."""
    (pa, pb), _, c, sd = _densities(noise, scale)
    edges = np.linspace(c - 12 * sd, c + 12 * sd, 20_001)
    mids, width = (edges[1:] + edges[:-1]) / 2, edges[1] - edges[0]
    mass_a, mass_b = pa(mids) * width, pb(mids) * width
    bayes = 0.5 + 0.25 * float(np.abs(mass_a - mass_b).sum())
    ref = [cal.sample_array[cal.index(s)] for s in GAUSS_PAIR.secrets]
    guess_b = log_likelihood_ratio(mids[:, None], ref[0], ref[1], mech) > 0
    return bayes, 0.5 * float(mass_a[~guess_b].sum() + mass_b[guess_b].sum())


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.slow
def test_gaussian_model_reaches_the_exact_bayes_accuracy(gauss_cal, noise):
    """Â within t_H + L of the exact Bayes accuracy (α = 1e-3 for t_H, 1e-3 for L; module docstring).

    Gaussian noise (APGM, ε = 2): Bayes = Φ(r/2), r = |Δ|/sqrt(τ² + σ²) in closed form and by the grid.
    Laplace noise (ExpM(L), ε = 1): the released law is Gaussian ∗ Laplace, its Bayes accuracy
    ½ + ¼∫|p_a − p_b| by a midpoint rule on 20 000 cells (error O(h²) ≈ 1e-8).
    """
    n = 5000
    if noise == "gaussian":
        mech = APGM(gauss_cal, epsilon=2.0, delta=1e-3)
        scale = math.sqrt(float(mech.noise_cov[0, 0]))
        (ma, tau2), (mb, _) = _laws()
        closed = float(stats.norm.cdf(abs(ma - mb) / (2 * math.sqrt(tau2 + scale**2))))
    else:
        mech = ExpM(gauss_cal, epsilon=1.0)
        scale = float(mech.noise_scale[0] * abs(mech.noise_basis[0, 0]))
    assert mech.noise == noise
    bayes, fixed = _exact_accuracies(mech, noise, scale, gauss_cal)
    if noise == "gaussian":
        assert bayes == pytest.approx(closed, abs=1e-7)
    shortfall = _mixture_shortfall(noise, scale, gauss_cal.n_draws, ALPHA)
    assert 0 < shortfall < 2e-3  # the tolerance is not vacuous
    assert fixed <= bayes + 1e-7, (fixed, bayes)  # no test beats Bayes
    assert bayes - fixed <= shortfall, (bayes, fixed, shortfall)
    res = likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=n), rng=12)
    t_h = hoeffding(2 * n, ALPHA)
    assert abs(res.accuracy - fixed) <= t_h, (res.accuracy, fixed, t_h)
    assert abs(res.accuracy - bayes) <= t_h + shortfall, (res.accuracy, bayes, t_h + shortfall)
    assert res.noise == noise and res.n_trials == n and res.n_reference == (20_000, 20_000)
    assert res.accuracy <= res.accuracy_bound and not res.exceeds_bound and not res.contradicts_claim



def _gaussian_radius(mech, cov_factor: float = 1.0) -> float:
    """r = |Δ| / sqrt(τ² + factor·σ²): the released laws' Mahalanobis distance, exactly."""
    (ma, tau2), (mb, _) = _laws()
    return abs(ma - mb) / math.sqrt(tau2 + cov_factor * float(mech.noise_cov[0, 0]))


@pytest.mark.slow
def test_half_noise_twin_exceeds_the_accuracy_a_large_delta_allows(gauss_cal):
    """ε = 0.5, δ = 0.1: the claim allows (e^ε + δ)/(1 + e^ε) = 0.660; the half-noise twin reaches Φ(r/2) ≈ 0.71.

    Caught: the lower end of the 95 % Clopper–Pearson interval is above the bound. Its false-failure
    probability is ≤ 2α: with probability 1 − α the twin's fixed test is within L of Φ(r/2) and Â
    within t_H of it (module docstring); the assertion on ``worst`` checks that even then the interval
    clears the bound. The mechanism itself stays within it (probability ≥ 1 − 0.025 for a claim that holds;
    here Φ(r/2) ≈ 0.63 is far below).
    """
    n = 4000
    mech = APGM(gauss_cal, epsilon=0.5, delta=0.1)
    bound = accuracy_bound(0.5, 0.1)
    res = likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=n), rng=21)
    broken = likelihood_ratio_attack(twin(mech), GAUSS, trials=AttackTrials(n_trials=n), rng=21)
    assert res.accuracy_bound == pytest.approx(bound) and broken.accuracy_bound == pytest.approx(bound)
    assert not res.exceeds_bound, res
    twin_bayes = float(stats.norm.cdf(_gaussian_radius(mech, 0.25) / 2))
    worst = twin_bayes - _mixture_shortfall("gaussian", math.sqrt(float(mech.noise_cov[0, 0]) / 4), 20_000, ALPHA) \
        - hoeffding(2 * n, ALPHA)
    assert bp.audit.clopper_pearson(int(worst * 2 * n), 2 * n, 0.025)[0] > bound  # the test can catch it
    assert broken.exceeds_bound, broken
    assert broken.accuracy > res.accuracy


@pytest.mark.slow
def test_half_noise_twin_is_caught_by_the_empirical_epsilon(gauss_cal):
    """ε = 1, δ = 1e-3: no Gaussian twin's accuracy reaches 0.731, but its privacy curve breaks the claim.

    With Mahalanobis distance r the log-likelihood ratio is N(±r²/2, r²): at threshold ε the twin
    (r ≈ 0.69) has TPR ≈ 0.137, FPR ≈ 0.037, (TPR − δ)/FPR ≈ e^{1.30}. With 30 000 trials per secret
    and α = 1e-3 split over the three default thresholds (0, ±ε), the Clopper–Pearson bounds cost
    about 0.16 in log ratio, leaving ε_lb ≈ 1.15 > 1 with a miss probability ≈ 4e-6 (normal
    approximation of the two rates; 0.3 % at 20 000 trials). The mechanism itself is not
    contradicted (probability ≥ 1 − α).
    """
    n = 30_000
    mech = APGM(gauss_cal, epsilon=1.0, delta=1e-3)
    res = likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=n), rng=22, alpha=ALPHA)
    broken = likelihood_ratio_attack(twin(mech), GAUSS, trials=AttackTrials(n_trials=n), rng=22, alpha=ALPHA)
    assert res.audit_thresholds == (0.0, 1.0, -1.0) and res.empirical.delta == 1e-3
    assert not res.contradicts_claim, res.empirical
    assert broken.contradicts_claim, broken.empirical
    assert abs(broken.audit_threshold) == 1.0
    assert broken.accuracy < broken.accuracy_bound - 0.05  # accuracy alone cannot see it
    assert 0.65 < _gaussian_radius(mech, 0.25) < 0.75  # the twin the docstring's numbers describe


# -- n_leaked -------------------------------------------------------------------------------------------------


def test_n_leaked_by_hand():
    """0.4 vs 0.6. One record: guess 0.6 on a 1, accuracy ½(0.6 + 0.6) = 0.6. Two: counts 0, 1, 2 have
    pmfs (0.36, 0.48, 0.16) and (0.16, 0.48, 0.36); guessing on the tie at 1 either way, accuracy
    ½(0.36 + 0.48 + 0.36) = 0.6 again. Three: (0.216, 0.432, 0.288, 0.064) vs the reverse, accuracy
    ½ + ½(0.144 + 0.152) = 0.648. So 0.62 needs 2 + 0.02/0.048 records, 0.6 exactly one."""
    assert [direct_accuracy(m, 0.4, 0.6) for m in range(4)] == pytest.approx([0.5, 0.6, 0.6, 0.648], abs=1e-12)
    assert n_leaked(0.62, 0.4, 0.6) == pytest.approx(2 + 0.02 / 0.048, abs=1e-9)
    assert n_leaked(0.62, 0.6, 0.4) == pytest.approx(2 + 0.02 / 0.048, abs=1e-9)  # symmetric
    assert n_leaked(0.6, 0.4, 0.6) == pytest.approx(1.0, abs=1e-12)
    assert n_leaked(0.55, 0.4, 0.6) == pytest.approx(0.5, abs=1e-12)
    assert n_leaked(0.5, 0.4, 0.6) == 0.0 and n_leaked(0.3, 0.4, 0.6) == 0.0
    assert n_leaked(1.0, 0.4, 0.6) == math.inf
    # A proportion 0: one record in the category settles it; acc(m) = 1 − ½·0.5^m.
    assert [direct_accuracy(m, 0.0, 0.5) for m in range(4)] == pytest.approx([0.5, 0.75, 0.875, 0.9375])
    assert n_leaked(0.875, 0.0, 0.5) == pytest.approx(2.0) and n_leaked(1.0, 0.5, 1.0) == math.inf
    assert direct_accuracy(3, 0.0, 1.0) == 1.0 and n_leaked(1.0, 0.0, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize("m,pa,pb", [(1, 0.45, 0.55), (37, 0.3, 0.35), (100, 0.45, 0.55), (999, 0.1, 0.12),
                                     (5, 0.2, 1.0), (8, 0.0, 0.3)])
def test_direct_accuracy_matches_the_brute_force_sum(m, pa, pb):
    """½ Σ_k max(pmf_a(k), pmf_b(k)) over all counts, and n_leaked inverts it."""
    k = np.arange(m + 1)
    brute = 0.5 * np.maximum(stats.binom.pmf(k, m, pa), stats.binom.pmf(k, m, pb)).sum()
    acc = direct_accuracy(m, pa, pb)
    assert acc == pytest.approx(brute, abs=1e-12)
    if acc < 1.0 and acc > direct_accuracy(m - 1, pa, pb):
        assert n_leaked(acc, pa, pb) == pytest.approx(m, abs=1e-9)


def test_n_leaked_is_monotone_and_brackets_the_accuracy():
    for acc in np.linspace(0.51, 0.99, 25):
        m = n_leaked(float(acc), 0.45, 0.55)
        assert direct_accuracy(math.floor(m), 0.45, 0.55) <= acc <= direct_accuracy(math.ceil(m), 0.45, 0.55)
    values = [n_leaked(float(a), 0.45, 0.55) for a in np.linspace(0.5, 0.999, 50)]
    assert all(x <= y for x, y in zip(values, values[1:]))


def test_n_leaked_and_bound_validation():
    with pytest.raises(bp.ValidationError, match="p_b must be different from p_a"):
        n_leaked(0.6, 0.5, 0.5)
    with pytest.raises(bp.ValidationError, match="p_a must be a proportion"):
        direct_accuracy(3, 1.5, 0.5)
    with pytest.raises(bp.ValidationError, match="accuracy must be in"):
        n_leaked(1.2, 0.4, 0.6)
    with pytest.raises(bp.ValidationError, match="m must be an integer"):
        direct_accuracy(2.5, 0.4, 0.6)
    assert accuracy_bound(0.0) == 0.5 and accuracy_bound(0.0, 0.2) == pytest.approx(0.6)
    assert accuracy_bound(1.0, 0.0) == pytest.approx(math.e / (1 + math.e))
    assert accuracy_bound(800.0, 1e-3) == 1.0  # no overflow
    with pytest.raises(bp.ValidationError, match="delta must be in"):
        accuracy_bound(1.0, 1.0)


# -- a proportion secret on a table: exact laws of a count, with and without noise -----------------------------

# 400 rows: 200 in group A (140 with h = 1), 200 in B (60 with h = 1); datasets of 20 rows with 6 or 14 in A.
TABLE = pd.DataFrame({"g": ["A"] * 200 + ["B"] * 200, "h": [1] * 140 + [0] * 60 + [1] * 60 + [0] * 140})
TABLE_MODEL = bp.EmpiricalDataModel(TABLE, n_records=20)
TABLE_PAIR = bp.SecretPair(bp.DatasetSecret.proportion("g", "A", 0.3), bp.DatasetSecret.proportion("g", "A", 0.7))
TABLE_QUERY = bp.count(lambda b: b["h"] == 1, "h", name="h ones")


def _count_pmf(k_a: int) -> np.ndarray:
    """pmf of the count of h = 1: Hypergeom(200, 140, k_a) + Hypergeom(200, 60, 20 − k_a), on 0..20."""
    pa = stats.hypergeom.pmf(np.arange(21), 200, 140, k_a)
    pb = stats.hypergeom.pmf(np.arange(21), 200, 60, 20 - k_a)
    return np.convolve(pa, pb)[:21]


@pytest.fixture(scope="module")
def table_cal():
    return bp.calibrate(TABLE_MODEL, [TABLE_PAIR], TABLE_QUERY, n_draws=20_000, rng=31)


@pytest.mark.slow
def test_noiseless_release_uses_the_empirical_pmf(table_cal):
    """No noise: the test is the zero-noise limit — the plug-in pmf on the count's support.

    Its exact accuracy given the draws (sum over the 21 counts) is within the Bayes accuracy
    ½ Σ max(pmf_a, pmf_b) = 0.784 and Â within t_H = 0.025 of it (α = 1e-3). The claim of an APGM at
    ε = 1 allows 0.731: the undefended release is caught (accuracy and empirical ε; their false-failure
    probability is ≤ α + 0.05, the 95 % interval's lower end being ≈ 0.015 below Â).
    """
    n = 3000
    none = types.SimpleNamespace(calibration=table_cal, noise="gaussian", noise_cov=np.zeros((1, 1)),
                                 noise_scale=None, noise_basis=None,
                                 guarantee=APGM(table_cal, epsilon=1.0, delta=1e-3).guarantee)
    pmf_a, pmf_b = _count_pmf(6), _count_pmf(14)
    bayes = 0.5 * float(np.maximum(pmf_a, pmf_b).sum())
    ref = [table_cal.sample_array[table_cal.index(s)] for s in TABLE_PAIR.secrets]
    scores = log_likelihood_ratio(np.arange(21.0)[:, None], ref[0], ref[1], none)
    p_b = np.where(scores > 0, 1.0, np.where(scores < 0, 0.0, 0.5))
    fixed = 0.5 * float((pmf_a * (1 - p_b)).sum() + (pmf_b * p_b).sum())
    assert fixed <= bayes + 1e-12
    res = likelihood_ratio_attack(none, TABLE_MODEL, trials=AttackTrials(n_trials=n), rng=32)
    assert res.noise == "none"
    assert abs(res.accuracy - fixed) <= hoeffding(2 * n, ALPHA), (res.accuracy, fixed)
    assert bayes - fixed < 0.01 and bayes > 0.78
    assert res.exceeds_bound and res.contradicts_claim
    assert res.n_leaked == pytest.approx(n_leaked(res.accuracy, 0.3, 0.7))
    lo, hi = res.n_leaked_interval
    assert lo <= res.n_leaked <= hi
    assert "i.i.d." in res.n_leaked_note and "'A'" in res.n_leaked_note


def test_nearest_draw_scores():
    """Unseen values go to the secret with the nearer draw (±inf); shared values compare counts."""
    none = types.SimpleNamespace(noise_cov=np.zeros((2, 2)), noise_scale=None, noise_basis=None)
    a = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    b = np.array([[1.0, 0.0], [5.0, 5.0]])
    s = log_likelihood_ratio([[0.0, 0.0], [1.0, 0.0], [4.0, 4.0], [0.4, 0.0]], a, b, none)
    assert s[0] == -np.inf and s[2] == np.inf and s[3] == -np.inf
    assert s[1] == pytest.approx(math.log(1 / 2) - math.log(1 / 3))


def test_proportion_pair_with_noise_and_held_out_reference(table_cal):
    """APGM on the count; held-out reference draws (another calibration) give a valid test too."""
    mech = APGM(table_cal, epsilon=1.0, delta=1e-3)
    held_out = bp.calibrate(TABLE_MODEL, [TABLE_PAIR], TABLE_QUERY, n_draws=1500, rng=33)
    res = likelihood_ratio_attack(mech, TABLE_MODEL, trials=AttackTrials(n_trials=2000), rng=34)
    other = likelihood_ratio_attack(mech, TABLE_MODEL, trials=AttackTrials(n_trials=2000, reference_draws=held_out),
                                    rng=34)
    draws = {s: held_out.sample_array[held_out.index(s)] for s in TABLE_PAIR.secrets}
    given = likelihood_ratio_attack(mech, TABLE_MODEL, trials=AttackTrials(n_trials=2000, reference_draws=draws),
                                    rng=34)
    assert "calibration (20000" in res.reference and "separate calibration (1500" in other.reference
    assert other.n_reference == (1500, 1500) and given.reference.startswith("given draws")
    np.testing.assert_array_equal(other.scores, given.scores)
    assert abs(res.accuracy - other.accuracy) < 0.02  # same trials (same seed), nearly the same rule
    for r in (res, other):
        assert not r.exceeds_bound and not r.contradicts_claim
        assert 0 < r.n_leaked < 10 and r.n_leaked == pytest.approx(n_leaked(r.accuracy, 0.3, 0.7))


def test_mean_pairs_have_no_n_leaked(gauss_cal):
    res = likelihood_ratio_attack(APGM(gauss_cal, epsilon=1.0, delta=1e-3), GAUSS, trials=AttackTrials(n_trials=200),
                                  rng=41)
    assert res.n_leaked is None and res.n_leaked_interval is None
    assert "fixes a mean" in res.n_leaked_note


# -- the result, seeding, validation --------------------------------------------------------------------------


def test_result_reproducible_frozen_and_presented(gauss_cal):
    mech = APGM(gauss_cal, epsilon=1.0, delta=1e-3)
    res = likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=300), rng=51)
    again = likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=300), rng=51)
    np.testing.assert_array_equal(res.scores, again.scores)
    assert res.accuracy == again.accuracy and res.confusion.sum() == 600 and res.scores.shape == (2, 300)
    assert res.confusion[1, 1] == round(res.tpr * 300) and res.confusion[0, 1] == round(res.fpr * 300)
    assert res.accuracy == pytest.approx(np.trace(res.confusion) / 600)
    assert res.advantage == pytest.approx(2 * res.accuracy - 1)
    with pytest.raises(Exception):
        res.accuracy = 1.0
    with pytest.raises(ValueError):
        res.scores[0, 0] = 0.0
    table = res.summary()
    assert {"accuracy", "95% CI low", "accuracy bound", "ε lower bound", "n_leaked"} <= set(table.columns)
    assert "LikelihoodRatioResult(mechanism='APGM" in repr(res) and "bound=0.7313" in repr(res)
    assert "Likelihood-ratio attack on &#x27;mean(y)&#x27;" in res._repr_html_()
    assert isinstance(res, LikelihoodRatioResult) and res.pair == GAUSS_PAIR and res.query == "mean(y)"
    custom = likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=300), rng=51, threshold=0.5,
                                     audit_thresholds=[0.5, 2.0])
    np.testing.assert_array_equal(custom.scores, res.scores)
    assert custom.audit_thresholds == (0.5, 2.0) and custom.tpr <= res.tpr and custom.fpr <= res.fpr


def test_family_calibration_uses_the_member_of_the_model():
    family = bp.DataModelFamily(
        lambda rho: bp.GaussianDataModel([0.0, 0.0], [[1.0, rho], [rho, 1.0]], ["x", "y"], n_records=N_RECORDS),
        {"rho": [0.5, 0.8]})
    cal = bp.calibrate(family, [GAUSS_PAIR], GAUSS_QUERY, n_draws=20_000, rng=61)
    mech = APGM(cal, epsilon=1.0, delta=1e-3)
    member = family.members[0]
    res = likelihood_ratio_attack(mech, member, trials=AttackTrials(n_trials=200), rng=62)
    draws = cal.members[0].sample_array
    assert res.n_reference == (draws.shape[1], draws.shape[1])
    with pytest.raises(bp.ParameterTypeError, match="family.members"):
        likelihood_ratio_attack(mech, family, trials=AttackTrials(n_trials=10))
    stranger = bp.GaussianDataModel([0.0, 0.0], [[1.0, 0.3], [0.3, 1.0]], ["x", "y"], n_records=N_RECORDS,
                                    theta={"rho": 0.3})
    with pytest.raises(bp.ValidationError, match="no member has the model's θ"):
        likelihood_ratio_attack(mech, stranger, trials=AttackTrials(n_trials=10))


def test_validation_messages(gauss_cal):
    mech = APGM(gauss_cal, epsilon=1.0, delta=1e-3)
    noise = dict(noise_scale=None, noise_basis=None)
    with pytest.raises(bp.ParameterTypeError, match="mechanism must expose its calibration"):
        likelihood_ratio_attack(types.SimpleNamespace(noise_cov=np.eye(1)), GAUSS)
    with pytest.raises(bp.ValidationError, match="noise 'gaussian\\+laplace'"):
        likelihood_ratio_attack(types.SimpleNamespace(calibration=gauss_cal, noise="gaussian+laplace",
                                                      noise_cov=np.eye(1), **noise), GAUSS,
                                trials=AttackTrials(n_trials=10))
    with pytest.raises(bp.ValidationError, match="full rank"):
        log_likelihood_ratio([[0.0, 0.0]], np.zeros((3, 2)), np.ones((3, 2)),
                             types.SimpleNamespace(noise_cov=np.diag([1.0, 0.0]), **noise))
    with pytest.raises(bp.ValidationError, match="square, invertible basis"):
        log_likelihood_ratio([[0.0, 0.0]], np.zeros((3, 2)), np.ones((3, 2)),
                             types.SimpleNamespace(noise_cov=np.eye(2), noise_scale=np.ones(1),
                                                   noise_basis=np.ones((2, 1))))
    with pytest.raises(bp.ValidationError, match="values must be of shape"):
        log_likelihood_ratio([[0.0]], np.zeros((3, 2)), np.ones((3, 2)), types.SimpleNamespace(noise_cov=np.eye(2), **noise))
    with pytest.raises(bp.ValidationError, match="missing"):
        likelihood_ratio_attack(mech, GAUSS,
                                trials=AttackTrials(n_trials=10, reference_draws={GAUSS_PAIR.a: np.zeros((5, 1))}))
    with pytest.raises(bp.ValidationError, match="shape \\(n, 1\\)"):
        likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(
            n_trials=10, reference_draws={s: np.zeros((5, 2)) for s in GAUSS_PAIR.secrets}))
    other_query = bp.calibrate(GAUSS, [GAUSS_PAIR], bp.mean("x"), n_draws=100, rng=1)
    with pytest.raises(bp.ValidationError, match="calibration of the mechanism's query 'mean\\(y\\)'"):
        likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=10, reference_draws=other_query))
    with pytest.raises(bp.ParameterTypeError, match="reference_draws must be None"):
        AttackTrials(n_trials=10, reference_draws=[1, 2])
    with pytest.raises(bp.ValidationError, match="alpha must be in"):
        likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=10), alpha=1.5)
    with pytest.raises(bp.ValidationError, match="threshold must be a finite"):
        likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=10), threshold=math.inf)
    with pytest.raises(bp.ParameterTypeError, match="n_trials must be an integer"):
        AttackTrials(n_trials=10.0)
    moments = bp.Calibration.from_moments({s: gauss_cal.means[s] for s in GAUSS_PAIR.secrets},
                                          {s: gauss_cal.covs[s] for s in GAUSS_PAIR.secrets}, [GAUSS_PAIR],
                                          query=GAUSS_QUERY)
    with pytest.raises(bp.ValidationError, match="holds no draws"):
        likelihood_ratio_attack(APGM(moments, epsilon=1.0, delta=1e-3), GAUSS, trials=AttackTrials(n_trials=10))



# -- what the attack runs on: AttackTrials ---------------------------------------------------------------------

TRIALS_FIELD_CASES = [
    ("n_trials", 10.0, bp.ParameterTypeError, r"n_trials must be an integer >= 1; got 10.0"),
    ("n_trials", 0, bp.ValidationError, r"n_trials must be an integer >= 1; got 0"),
    ("reference_draws", [1, 2], bp.ParameterTypeError, r"reference_draws must be None, a Calibration, or a mapping"),
]


def test_attack_trials_defaults():
    trials = AttackTrials()
    assert trials.n_trials == 2000 and trials.reference_draws is None
    with pytest.raises(TypeError):
        AttackTrials(100)  # keyword-only
    with pytest.raises(AttributeError):  # frozen
        trials.n_trials = 10


@pytest.mark.parametrize("field, value, error, message", TRIALS_FIELD_CASES,
                         ids=[f"{c[0]}={c[1]!r}" for c in TRIALS_FIELD_CASES])
def test_attack_trials_checks_each_field(field, value, error, message):
    with pytest.raises(error, match=message):
        AttackTrials(**{field: value})


def test_old_trial_keywords_warn_and_give_the_same_attack(gauss_cal):
    from bayespriv.errors import BayesPrivDeprecationWarning

    mech = APGM(gauss_cal, epsilon=1.0, delta=1e-3)
    draws = {s: gauss_cal.sample_array[gauss_cal.index(s)][:200] for s in GAUSS_PAIR.secrets}
    new = likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=50, reference_draws=draws), rng=5)
    with pytest.warns(BayesPrivDeprecationWarning, match=r"likelihood_ratio_attack\(n_trials=\.\.\., "
                                                         r"reference_draws=\.\.\.\) is deprecated .*use "
                                                         r"likelihood_ratio_attack\(trials=AttackTrials\("):
        old = likelihood_ratio_attack(mech, GAUSS, n_trials=50, reference_draws=draws, rng=5)
    np.testing.assert_array_equal(old.scores, new.scores)
    assert old.accuracy == new.accuracy and old.n_trials == 50 and old.n_reference == (200, 200)


def test_old_trial_keyword_with_trials_or_unknown_keyword_is_refused(gauss_cal):
    mech = APGM(gauss_cal, epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ValidationError, match=r"pass trials= only \(n_trials=\.\.\. is its deprecated spelling\)"):
        likelihood_ratio_attack(mech, GAUSS, trials=AttackTrials(n_trials=10), n_trials=10)
    with pytest.raises(TypeError, match=r"^likelihood_ratio_attack\(\) got an unexpected keyword argument 'trial'$"):
        likelihood_ratio_attack(mech, GAUSS, trial=10)
    with pytest.raises(bp.ParameterTypeError, match=r"trials must be None or a bayespriv AttackTrials; got 10"):
        likelihood_ratio_attack(mech, GAUSS, trials=10)

# -- census (UCI Adult): the mechanisms at ε = 1, δ = 1e-3 ------------------------------------------------------

CENSUS_MECHANISMS = {
    "APGM": lambda cal: APGM(cal, epsilon=1.0, delta=1e-3),
    "EigM": lambda cal: EigM(cal, epsilon=1.0, delta=1e-3),
    "DauM": lambda cal: DauM(cal, epsilon=1.0, delta=1e-3),
    "OptimalGaussian": lambda cal: OptimalGaussian(cal, epsilon=1.0, delta=1e-3),
    "ExpM(G)": lambda cal: ExpM(cal, epsilon=1.0, delta=1e-3, noise="gaussian"),
}


@pytest.fixture(scope="module")
def census(adult_dir):
    """Θ = 100-record subsets of Adult, income >50K share 0.45 vs 0.55; calibration of 20 000 draws per secret."""
    from bayespriv.models.census import census_model, census_query, income_pairs, load_adult

    model = census_model(load_adult(adult_dir))
    cal = bp.calibrate(model, income_pairs(0.1), census_query(), n_draws=20_000, rng=71)
    return types.SimpleNamespace(model=model, cal=cal)


@pytest.mark.adult
@pytest.mark.slow
@pytest.mark.parametrize("name", list(CENSUS_MECHANISMS))
def test_census_mechanisms_stay_within_their_claim(census, name):
    """Accuracy ≤ (e + δ)/(1 + e) + t_H (t_H = 0.031 at 2000 trials per secret, α = 1e-3) and no empirical
    ε above 1 (α = 1e-3): both hold whatever noise the mechanism calibrates, as long as its claim holds
    for this Θ (it is the Θ the calibration drew from). Mechanisms are built with default arguments."""
    try:
        mech = CENSUS_MECHANISMS[name](census.cal)
    except bp.ValidationError as exc:
        if name == "DauM" and "along which noise can hide" in str(exc):
            pytest.skip(f"DauM with default arguments refuses this calibration (noise along one direction "
                        f"cannot hide the rest of the difference): {exc}")
        raise
    n = 2000
    res = likelihood_ratio_attack(mech, census.model, trials=AttackTrials(n_trials=n), rng=72, alpha=ALPHA)
    assert res.accuracy_bound == pytest.approx(accuracy_bound(1.0, 1e-3))
    assert res.accuracy <= res.accuracy_bound + hoeffding(2 * n, ALPHA), res
    assert not res.contradicts_claim, res.empirical
    assert res.n_leaked == pytest.approx(n_leaked(res.accuracy, 0.45, 0.55))


@pytest.mark.adult
@pytest.mark.slow
def test_census_half_noise_apgm_is_caught(census):
    """APGM with a quarter of its noise variance, same claim: the empirical ε exceeds 1 (α = 0.05).

    Its released laws are close to Gaussian with Mahalanobis distance r ≈ 0.55 (accuracy Φ(r/2) ≈ 0.61,
    measured), for which the log-likelihood ratio at threshold ε = 1 gives TPR ≈ 0.060, FPR ≈ 0.018 and
    log((TPR − δ)/FPR) ≈ 1.20 (1.26 measured); with 80 000 trials per secret and α split over the
    thresholds (0, ±1), the Clopper–Pearson bounds cost ≈ 0.10, leaving ε_lb > 1 except with
    probability ≈ 3e-4 (normal approximation of the two rates). A mechanism that calibrates less noise
    for the same claim (an accountant of the released law) gives a twin with a larger r, easier to
    catch (r ≈ 0.61: ≈ 1e-11). Accuracy alone (≈ 0.61 < 0.731) cannot see it.
    """
    mech = CENSUS_MECHANISMS["APGM"](census.cal)
    broken = likelihood_ratio_attack(twin(mech), census.model, trials=AttackTrials(n_trials=80_000), rng=73)
    assert broken.contradicts_claim, broken.empirical
    assert broken.accuracy < broken.accuracy_bound
