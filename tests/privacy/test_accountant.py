"""The accountant of the released law (``mechanisms/accountant.py``, ``finite_exact.py``, ``mixture_mc.py``).

Independent computations:

* **finite laws in one dimension** (binomial and hypergeometric mixtures, the
  laws of counts): 40-digit mpmath quadrature of D(y) = p_a(y) − e^ε p_b(y)
  between roots refined by mpmath itself, with the sign pattern checked on a
  dense float grid (no root missed); agreement to 1e-9 relative;
* **sampled laws in five dimensions**: the law of F under each secret is a
  Gaussian mixture with three components, so the released law is an exact
  Gaussian mixture whose privacy loss is computable; δ by plain Monte Carlo of
  the exact privacy loss over 10⁶ draws. The accountant sees only 20 000 draws
  per secret; its estimate must agree within the combined standard errors
  (z for α = 1e-3, two-sided) and its upper bound must not be below the
  reference minus the reference's own error;
* **Gaussian laws**: the exact curve of :mod:`~bayespriv.privacy.privacy_loss`.

Twins: the same checks catch half the noise (standard deviations × 1/√2, i.e.
half the variance): the accounted δ exceeds the target.
"""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest
from scipy.special import logsumexp, ndtri
from scipy.stats import binom, hypergeom

from bayespriv.calibration.laws import Condition, FiniteLaw, GaussianLaw, SampledLaw
from bayespriv.errors import ValidationError
from bayespriv.privacy import privacy_loss as pl
from bayespriv.privacy.accountant import GaussianNoise, LaplaceNoise, PrivacyProfile, account, scale_to_delta
from bayespriv.privacy.finite_exact import finite_hockey
from bayespriv.privacy.mixture_mc import WeightedAtoms, mixture_hockey

#: False-failure probability of each statistical comparison below.
ALPHA = 1e-3
Z = float(ndtri(1 - ALPHA / 2))


# --------------------------------------------------------------------------- exact 1-D laws
def _mp_hockey(xa, wa, xb, wb, eps: float, roots, *, sigma: float = 0.0, lap: float = 0.0) -> mpmath.mpf:
    """∫ (p_a − e^ε p_b)₊ by 40-digit mpmath quadrature between roots refined by mpmath."""
    with mpmath.workdps(40):
        ee = mpmath.e ** mpmath.mpf(eps)
        coef: dict[float, mpmath.mpf] = {}  # D(y) = Σ_x c_x φ(y − x), c_x = w_a(x) − e^ε w_b(x) over both supports
        for x, w in zip(xa, wa):
            coef[float(x)] = coef.get(float(x), mpmath.mpf(0)) + mpmath.mpf(float(w))
        for x, w in zip(xb, wb):
            coef[float(x)] = coef.get(float(x), mpmath.mpf(0)) - ee * mpmath.mpf(float(w))
        terms = [(mpmath.mpf(x), c) for x, c in coef.items()]
        if sigma:
            s = mpmath.mpf(sigma)
            half_prec, norm = 1 / (2 * s * s), 1 / (s * mpmath.sqrt(2 * mpmath.pi))

            def d(y):
                return norm * mpmath.fsum(c * mpmath.exp(-half_prec * (y - x) ** 2) for x, c in terms)
        else:
            b = mpmath.mpf(lap)

            def d(y):
                return mpmath.fsum(c * mpmath.exp(-abs(y - x) / b) for x, c in terms) / (2 * b)

        rs = sorted(mpmath.findroot(d, mpmath.mpf(r)) for r in roots)
        scale = sigma or lap
        lo = mpmath.mpf(min(min(xa), min(xb)) - 60 * scale)
        hi = mpmath.mpf(max(max(xa), max(xb)) + 60 * scale)
        edges = [lo] + rs + [hi]
        total = mpmath.mpf(0)
        for left, right in zip(edges[:-1], edges[1:]):
            if d((left + right) / 2) > 0:  # split at the support points (the Laplace kernel has kinks there)
                inner = sorted({left, right, *[mpmath.mpf(float(x)) for x in set(xa) | set(xb) if left < x < right]})
                total += mpmath.quad(d, inner)
        return total


def _binomial_pair(n: int, pa: float, pb: float):
    x = np.arange(n + 1.0)
    return x, binom.pmf(x, n, pa), x, binom.pmf(x, n, pb)


def _hypergeometric_pair():
    """Counts of a category in 20 records drawn without replacement from 200, of which 60 vs 90 are in it."""
    x = np.arange(21.0)
    return x, hypergeom.pmf(x, 200, 60, 20), x, hypergeom.pmf(x, 200, 90, 20)


def _dense_sign_changes(xa, wa, xb, wb, eps, sigma, lap) -> int:
    """Sign changes of D on a float grid of 2·10⁵ points (independent of the library's root search)."""
    lo, hi = min(xa.min(), xb.min()) - 20 * (sigma or lap), max(xa.max(), xb.max()) + 20 * (sigma or lap)
    y = np.linspace(lo, hi, 200_001)
    if sigma:
        la = logsumexp(-0.5 * ((y[:, None] - xa) / sigma) ** 2 + np.log(np.maximum(wa, 1e-300)), axis=1)
        lb = logsumexp(-0.5 * ((y[:, None] - xb) / sigma) ** 2 + np.log(np.maximum(wb, 1e-300)), axis=1)
    else:
        la = logsumexp(-np.abs(y[:, None] - xa) / lap + np.log(np.maximum(wa, 1e-300)), axis=1)
        lb = logsumexp(-np.abs(y[:, None] - xb) / lap + np.log(np.maximum(wb, 1e-300)), axis=1)
    s = np.sign(la - lb - eps)
    s = s[s != 0]
    return int(np.count_nonzero(s[1:] != s[:-1]))


CASES = [
    ("binomial", _binomial_pair(30, 0.4, 0.5)),
    ("hypergeometric", _hypergeometric_pair()),
]


@pytest.mark.parametrize("name,laws", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("sigma,lap", [(0.7, 0.0), (2.5, 0.0), (0.0, 0.6), (0.0, 2.0)])
@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.slow
def test_finite_1d_matches_mpmath(name, laws, sigma, lap, forward):
    xa, wa, xb, wb = laws if forward else (laws[2], laws[3], laws[0], laws[1])
    eps = 1.0
    r = finite_hockey(xa, wa, xb, wb, eps, sigma=sigma, laplace_scale=lap)
    assert r.complete
    roots = [e for iv in r.intervals for e in iv if math.isfinite(e)]
    assert len(roots) == _dense_sign_changes(xa, wa, xb, wb, eps, sigma, lap)
    ref = _mp_hockey(xa, wa, xb, wb, eps, roots, sigma=sigma, lap=lap)
    assert ref > 1e-6
    assert abs(r.value - float(ref)) <= 1e-9 * float(ref)


def test_finite_1d_without_noise_is_the_discrete_hockey_stick():
    xa, wa, xb, wb = _binomial_pair(12, 0.3, 0.45)
    eps = 0.5
    exact = math.fsum(max(0.0, a - math.exp(eps) * b) for a, b in zip(wa, wb))
    assert finite_hockey(xa, wa, xb, wb, eps).value == pytest.approx(exact, rel=1e-14, abs=1e-17)


def test_finite_1d_half_noise_twin_is_caught():
    """Noise scaled by the accountant meets δ; half its variance does not."""
    xa, wa, xb, wb = _binomial_pair(30, 0.4, 0.5)
    cond = Condition("p=0.4 vs 0.5", FiniteLaw(xa, wa), FiniteLaw(xb, wb))
    t, acc = scale_to_delta([cond], GaussianNoise([[1.0]]), 1.0, 1e-3, confidence=0.95)
    assert acc.delta <= 1e-3 and acc.confidence == 1.0 and acc.assumptions == ()
    assert account([cond], GaussianNoise([[t * t / 2]]), 1.0, confidence=0.95).delta > 1e-3


# ------------------------------------------------------------------------- 5-D sampled laws
K = 5
COMPONENTS_A = (np.array([0.0, 0.0, 0.0, 0.0, 0.0]), np.array([1.5, -1.0, 0.5, 0.0, 0.3]), np.array([-1.0, 0.5, 1.0, 0.5, 0.0]))
COMPONENTS_B = tuple(m + np.array([0.8, 0.4, 0.0, -0.3, 0.2]) for m in COMPONENTS_A)
COMPONENT_COV = np.diag([0.5, 0.3, 0.4, 0.6, 0.2])
WEIGHTS = np.array([0.5, 0.3, 0.2])
NOISE = np.diag([4.0, 3.0, 2.0, 2.0, 1.5])


def _draw(comps, n: int, rng: np.random.Generator) -> np.ndarray:
    idx = rng.choice(3, size=n, p=WEIGHTS)
    return np.array(comps)[idx] + rng.standard_normal((n, K)) @ np.linalg.cholesky(COMPONENT_COV).T


def _log_released(y: np.ndarray, comps, noise: np.ndarray) -> np.ndarray:
    cov = COMPONENT_COV + noise
    prec, logdet = np.linalg.inv(cov), np.linalg.slogdet(cov)[1]
    parts = [np.log(w) - 0.5 * np.einsum("ij,jk,ik->i", y - m, prec, y - m) - 0.5 * logdet for w, m in zip(WEIGHTS, comps)]
    return logsumexp(np.stack(parts), axis=0)


def _reference(noise: np.ndarray, eps: float, forward: bool, n: int = 1_000_000) -> tuple[float, float]:
    """H_ε(P_a‖P_b) of the exact released mixtures by plain Monte Carlo: (estimate, standard error)."""
    rng = np.random.default_rng(20 + forward)
    ca, cb = (COMPONENTS_A, COMPONENTS_B) if forward else (COMPONENTS_B, COMPONENTS_A)
    y = _draw(ca, n, rng) + rng.standard_normal((n, K)) @ np.linalg.cholesky(noise).T
    loss = _log_released(y, ca, noise) - _log_released(y, cb, noise)
    terms = np.clip(1.0 - np.exp(eps - loss), 0.0, None)
    return float(terms.mean()), float(terms.std(ddof=1) / math.sqrt(n))


@pytest.fixture(scope="module")
def sampled_condition() -> Condition:
    rng = np.random.default_rng(5)
    return Condition("a vs b", SampledLaw(_draw(COMPONENTS_A, 20_000, rng)), SampledLaw(_draw(COMPONENTS_B, 20_000, rng)))


@pytest.mark.slow
@pytest.mark.parametrize("forward", [True, False])
def test_sampled_5d_matches_million_draw_reference(sampled_condition, forward):
    cond = sampled_condition
    a, b = (cond.law_a, cond.law_b) if forward else (cond.law_b, cond.law_a)
    n = a.n
    est = mixture_hockey(WeightedAtoms(a.draws, np.full(n, 1 / n)), WeightedAtoms(b.draws, np.full(n, 1 / n)),
                         GaussianNoise(NOISE), 1.0, n_points=2048, seed=3)
    ref, ref_se = _reference(NOISE, 1.0, forward)
    assert ref > 1e-4
    # the draws' fluctuation of the empirical mixtures' divergence by the delta method, from the per-draw
    # probabilities of the optimal set the estimator reports (computed here, not by the accountant)
    c = est.contributions
    se_draws = math.sqrt(np.var(c.values_a) / c.draws_a + math.exp(2.0) * np.var(c.values_b) / c.draws_b)
    assert abs(est.value - ref) <= Z * math.sqrt(est.se_mc**2 + se_draws**2 + ref_se**2)
    se = math.hypot(est.se_mc, se_draws)
    assert est.halves is not None and abs(est.halves[0] - est.halves[1]) <= Z * 2 * math.sqrt(2) * se


@pytest.mark.slow
def test_sampled_5d_scale_meets_reference_and_half_noise_is_caught(sampled_condition):
    """The scale the accountant picks meets δ on the exact law; half the variance exceeds it on the exact law."""
    target = 1e-3
    t, acc = scale_to_delta([sampled_condition], GaussianNoise(NOISE), 1.0, target, confidence=0.95)
    assert acc.delta <= target and acc.assumptions == ("sampled_law", "monte_carlo_clt")
    noise = NOISE * t * t
    for forward in (True, False):
        ref, ref_se = _reference(noise, 1.0, forward)
        assert ref - Z * ref_se <= target
    half = account([sampled_condition], GaussianNoise(noise / 2), 1.0, confidence=0.95)
    assert half.delta > target
    assert max(_reference(noise / 2, 1.0, fwd)[0] for fwd in (True, False)) > target


def test_gaussian_laws_use_the_exact_curve():
    a, b = GaussianLaw([1.0, 0.5], [[1.0, 0.2], [0.2, 2.0]]), GaussianLaw([0.0, 0.0], [[1.5, 0.0], [0.0, 1.0]])
    noise = np.diag([2.0, 3.0])
    acc = account([Condition("c", a, b)], GaussianNoise(noise), 0.7, confidence=0.95)
    exact = pl.gaussian_delta(0.7, a.mean - b.mean, a.cov + noise, b.cov + noise)
    assert acc.delta == pytest.approx(exact, rel=1e-12)
    assert acc.confidence == 1.0 and acc.assumptions == ("gaussian_query",)


def test_draws_without_noise_in_some_direction_cannot_be_accounted(sampled_condition):
    noise = np.diag([4.0, 3.0, 2.0, 2.0, 0.0])
    acc = account([sampled_condition], GaussianNoise(noise), 1.0, confidence=0.95)
    assert acc.delta == 1.0 and acc.worst.method == "not_accountable"
    with pytest.raises(ValidationError, match="meets delta"):
        scale_to_delta([sampled_condition], GaussianNoise(noise), 1.0, 1e-3, confidence=0.95, max_factor=10.0)


def test_laplace_noise_on_finite_law_matches_exact_1d():
    xa, wa, xb, wb = _binomial_pair(20, 0.3, 0.5)
    cond = Condition("c", FiniteLaw(xa, wa), FiniteLaw(xb, wb))
    acc = account([cond], LaplaceNoise([3.0], [[1.0]]), 1.0, confidence=0.95)
    exact = max(finite_hockey(xa, wa, xb, wb, 1.0, laplace_scale=3.0).value,
                finite_hockey(xb, wb, xa, wa, 1.0, laplace_scale=3.0).value)
    assert acc.delta == pytest.approx(exact, rel=1e-9)


@pytest.mark.slow
def test_more_draws_do_not_need_more_noise():
    """Established at 10 000 draws ⇒ established at 40 000 with no more noise (the margins and bias shrink)."""
    rng = np.random.default_rng(11)
    big = (_draw(COMPONENTS_A, 40_000, rng), _draw(COMPONENTS_B, 40_000, rng))
    small = Condition("c", SampledLaw(big[0][:10_000]), SampledLaw(big[1][:10_000]))
    large = Condition("c", SampledLaw(big[0]), SampledLaw(big[1]))
    t_small, _ = scale_to_delta([small], GaussianNoise(NOISE), 1.0, 1e-3, confidence=0.95)
    t_large, _ = scale_to_delta([large], GaussianNoise(NOISE), 1.0, 1e-3, confidence=0.95)
    assert t_large <= t_small * (1 + 4e-3)


def test_an_atom_far_from_every_atom_of_the_other_law_is_counted_in_full():
    """Two 2-D empirical laws of 40 atoms, one atom of P_a 60 noise units away: the estimator counts its weight
    in full (an upper bound, tight for such an atom) and its per-draw probability is 1; the value is at least the
    divergence of the same empirical mixtures by 2-D quadrature (independent of the estimator) and exceeds it by
    little more than the Monte-Carlo error."""
    rng = np.random.default_rng(9)
    a, b = rng.normal(0.0, 1.0, (40, 2)) + [1.0, 0.0], rng.normal(0.0, 1.0, (40, 2))
    a[7] = [60.0, 0.0]
    w = np.full(40, 1 / 40)
    est = mixture_hockey(WeightedAtoms(a, w), WeightedAtoms(b, w), GaussianNoise(np.eye(2) * 4.0), 1.0, n_points=4096,
                         seed=1)
    assert est.far_mass == pytest.approx(1 / 40) and est.contributions.values_a[7] == 1.0
    step = 0.1
    gx, gy = np.meshgrid(np.arange(-12, 75, step), np.arange(-14, 14, step), indexing="ij")

    def dens(atoms):
        out = np.zeros_like(gx)
        for x, y in atoms:
            out += np.exp(-((gx - x) ** 2 + (gy - y) ** 2) / 8.0) / (8.0 * math.pi * len(atoms))
        return out

    exact = float(np.clip(dens(a) - math.e * dens(b), 0.0, None).sum() * step * step)
    assert exact - Z * est.se_mc <= est.value <= exact + 1e-9 + Z * est.se_mc


def test_garwood_bounds_are_the_chi_square_quantiles_of_each_count():
    """Exact part: the Poisson upper bound of every count, read off a table of the distinct counts, is
    χ²_{1−α}(2(c + 1))/2 of that count (SciPy's quantile, computed count by count)."""
    from scipy.stats import chi2

    from bayespriv.privacy.accountant import _garwood
    counts = np.array([3.0, 0.0, 1.0, 1.0, 250.0, 3.0, 7.0, 1.0])
    expected = chi2.ppf(1 - 0.01, 2 * (counts + 1)) / 2
    np.testing.assert_allclose(_garwood(counts, 0.01), expected, rtol=1e-12)
    assert _garwood(np.zeros(0), 0.01).shape == (0,)
    below = np.nextafter(counts, -np.inf)  # one ulp under each whole count: the same bounds, no draw lost
    np.testing.assert_allclose(_garwood(below, 0.01), expected, rtol=1e-12)


# --------------------------------------------------------------------------- one law at many ε
def _profile_cases():
    """(label, conditions, noise): every route :class:`PrivacyProfile` may take, small enough to be fast."""
    rng = np.random.default_rng(11)
    one_a, one_b = rng.standard_t(3.0, (4_000, 1)) + 0.5, rng.normal(0.0, 1.0, (3_000, 1))
    xa, wa, xb, wb = _binomial_pair(30, 0.4, 0.3)
    two = Condition("2-D", SampledLaw(rng.normal(0.4, 1.0, (600, 2))), SampledLaw(rng.normal(0.0, 1.0, (500, 2))))
    return [
        ("1-D draws, Gaussian noise", [Condition("t", SampledLaw(one_a), SampledLaw(one_b))], GaussianNoise([[1.7]])),
        ("1-D draws, Laplace noise", [Condition("t", SampledLaw(one_a), SampledLaw(one_b))],
         LaplaceNoise([1.3], [[1.0]])),
        ("1-D draws and a finite law", [Condition("mixed", SampledLaw(one_b), FiniteLaw(xa[:, None] / 10.0, wa))],
         GaussianNoise([[2.0]])),
        ("finite 1-D", [Condition("binomial", FiniteLaw(xa[:, None], wa), FiniteLaw(xb[:, None], wb))],
         GaussianNoise([[4.0]])),
        ("Gaussian moments", [Condition("g", GaussianLaw([1.0], [[1.0]]), GaussianLaw([0.0], [[1.5]]))],
         GaussianNoise([[3.0]])),
        ("2-D draws", [two], GaussianNoise(np.diag([1.2, 1.2]))),
        ("two 1-D conditions", [Condition("t", SampledLaw(one_a), SampledLaw(one_b)),
                                Condition("n", SampledLaw(one_b), SampledLaw(one_b[::-1] * 1.1))],
         GaussianNoise([[1.5]])),
    ]


PROFILE_CASES = _profile_cases()


@pytest.mark.parametrize("label,conds,noise", PROFILE_CASES, ids=[c[0] for c in PROFILE_CASES])
def test_profile_at_any_epsilon_is_account_bit_for_bit(label, conds, noise):
    profile = PrivacyProfile(conds, noise, confidence=0.95)
    for eps in (2.0, 0.5, 1.0, 0.5, 3.0):  # not monotone, one ε twice
        assert repr(profile.at(eps, target=1e-3)) == repr(account(conds, noise, eps, confidence=0.95, target=1e-3))
    assert repr(profile.at(1.0, diagnostics=False)) == repr(account(conds, noise, 1.0, confidence=0.95,
                                                                      diagnostics=False))
    assert profile.curve([0.5, 2.0]).tolist() == [account(conds, noise, e, confidence=0.95).delta for e in (0.5, 2.0)]


def test_profile_makes_a_one_dimensional_grid_once(monkeypatch):
    import bayespriv.privacy.accountant as accountant

    made = []
    real = accountant.grid_densities
    monkeypatch.setattr(accountant, "grid_densities", lambda *a, **kw: made.append(1) or real(*a, **kw))
    conds, noise = PROFILE_CASES[0][1], PROFILE_CASES[0][2]
    profile = PrivacyProfile(conds, noise, confidence=0.95)
    for eps in (0.5, 1.0, 2.0, 4.0):
        profile.at(eps)
    assert len(made) == 1
    for eps in (0.5, 1.0, 2.0, 4.0):
        account(conds, noise, eps, confidence=0.95)
    assert len(made) == 5


def test_a_grid_kept_for_another_noise_is_caught():
    """Twin: the comparison above sees a profile that reuses densities made for another noise."""
    conds = PROFILE_CASES[0][1]
    stale = PrivacyProfile(conds, GaussianNoise([[0.9]]), confidence=0.95)
    stale.at(1.0)
    broken = PrivacyProfile(conds, GaussianNoise([[1.7]]), confidence=0.95)
    broken._grids.update(stale._grids)
    assert repr(broken.at(1.0)) != repr(account(conds, GaussianNoise([[1.7]]), 1.0, confidence=0.95))


def test_profile_checks_its_arguments():
    with pytest.raises(ValidationError, match="conditions"):
        PrivacyProfile([], GaussianNoise([[1.0]]), confidence=0.95)
    profile = PrivacyProfile(PROFILE_CASES[4][1], GaussianNoise([[1.0]]), confidence=0.95)
    with pytest.raises(ValidationError, match="epsilon"):
        profile.at(-1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):  # kept densities cannot outlive their noise
        profile.noise = GaussianNoise([[2.0]])
