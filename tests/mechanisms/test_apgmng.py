"""APGMnG: the Attribute-Private Gaussian Mechanism for non-Gaussian data
(Zhang et al., arXiv version, Algorithm 2 / Theorem 3), with the δ' of Chen &
Ohrimenko (AISTATS 2023) Theorem 4.6 (the arXiv δ' is wrong: see the erratum test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

import bayespriv as bp
from bayespriv.calibration import calibration_from_samples
from bayespriv.calibration.assumptions import estimate_lambda_eta
from bayespriv.mechanisms import APGM
from bayespriv.mechanisms.apgm import APGMnG

A = bp.DistributionSecret("theta", 1.0)
B = bp.DistributionSecret("theta", 2.0)
PAIR = bp.SecretPair(A, B)
EPS, DELTA = 1.0, 1e-5


def cal_from(xa, xb, confidence=0.95) -> bp.Calibration:
    xa, xb = np.asarray(xa, float)[:, None], np.asarray(xb, float)[:, None]
    return calibration_from_samples(np.stack([xa, xb]), (A, B), (PAIR,), None, confidence=confidence)


def claimed(eps: float, delta: float, lam: float, eta: float) -> tuple[float, float]:
    """Theorem 4.6's (ε + 2λ, e^λ δ + (1 + e^{ε+λ}) η), written out independently."""
    return eps + 2 * lam, math.exp(lam) * delta + (1 + math.exp(eps + lam)) * eta


@pytest.fixture(scope="module")
def skewed() -> bp.Calibration:
    rng = np.random.default_rng(50)
    return cal_from(rng.gamma(20.0, size=20_000), rng.gamma(20.0, size=20_000) + 2.0)


def inner(eps: float, delta: float, lam: float, eta: float) -> tuple[float, float]:
    """(ε₀, δ₀) with claimed(ε₀, δ₀, λ, η) = (ε, δ), solved independently."""
    eps0 = eps - 2 * lam
    return eps0, (delta - (1 + math.exp(eps0 + lam)) * eta) / math.exp(lam)


def test_states_exactly_the_request_and_calibrates_the_inner_parameters(skewed):
    """The guarantee is (ε, δ) as asked; the noise is APGM's at the inner (ε₀, δ₀) whose relaxation is (ε, δ)."""
    eta, delta = 0.05, 0.9
    ng = APGMnG(skewed, epsilon=EPS, delta=delta, eta=eta)
    lam = estimate_lambda_eta(skewed, eta, confidence=0.95).value
    assert ng.lambda_eta == lam and 0 < lam < EPS / 2
    g = ng.guarantee
    assert (g.epsilon, g.delta) == (EPS, delta)
    e0, d0 = inner(EPS, ng._noise_delta, lam, eta)
    assert ng.inner_epsilon == pytest.approx(e0, rel=1e-12) and ng.inner_delta == pytest.approx(min(d0, 0.5), rel=1e-12)
    e, d = claimed(ng.inner_epsilon, ng.inner_delta, lam, eta)
    assert e <= EPS * (1 + 1e-12) and d <= delta
    assert ng.radius == bp.privacy.gaussian_radius(ng.inner_epsilon, ng.inner_delta)
    ap = APGM(skewed, epsilon=EPS, delta=delta, accountant="gaussian", covariance="equal")
    assert ng.sigma2 >= ap.sigma2  # a smaller inner ε needs at least the noise of APGM at (ε, δ)
    assert g.confidence == 0.95 and "estimated_divergence" in g.assumptions
    assert "gaussian_query" not in g.assumptions and "equal_covariance" not in g.assumptions
    assert g.failed_assumptions == () and "Algorithm 2" in g.theorem
    assert ng.check(strict=True).names == ()
    assert ng.relaxed() == g
    r = ng.relaxed(0.1)  # the same noise at another η: explicitly another guarantee
    assert r.epsilon == pytest.approx(ng.inner_epsilon + 2 * estimate_lambda_eta(skewed, 0.1).value)
    assert "lambda_eta=" in repr(ng)


def test_default_eta_needs_the_draws_or_refuses(skewed):
    """The default η is a quarter of δ's budget, δ/(4(1 + e^ε)); 20 000 draws cannot estimate λ at it for δ = 1e-5."""
    with pytest.raises(bp.ValidationError, match=r"needs about 500/eta = \d+ draws per secret \(got 20000\)"):
        APGMnG(skewed, epsilon=EPS, delta=DELTA)
    ng = APGMnG(skewed, epsilon=EPS, delta=DELTA, eta=1e-7, lambda_eta=0.01)
    assert ng.eta == 1e-7 and (ng.guarantee.epsilon, ng.guarantee.delta) == (EPS, DELTA)
    dflt = APGMnG(skewed, epsilon=EPS, delta=DELTA, lambda_eta=0.01)
    assert dflt.eta == pytest.approx(dflt._noise_delta / (4 * (1 + math.exp(EPS))))


def test_refuses_what_it_cannot_give(skewed):
    with pytest.raises(bp.ValidationError, match="cannot meet epsilon=1: the estimated λ_η"):
        APGMnG(skewed, epsilon=EPS, delta=0.9, eta=0.05, lambda_eta=0.6)
    with pytest.raises(bp.ValidationError, match="cannot meet delta=0.001: eta=0.05 alone costs"):
        APGMnG(skewed, epsilon=EPS, delta=1e-3, eta=0.05)


def test_lambda_monotone_in_eta(skewed):
    lams = [estimate_lambda_eta(skewed, e).value for e in (0.02, 0.05, 0.1, 0.2)]
    assert all(a >= b for a, b in zip(lams, lams[1:])) and lams[0] > lams[-1]


def gaussian_tolerance_fitted(n: int, sigma: float, eta: float, alpha: float, grid: int = 16) -> float:
    """Upper bound on APGMnG's λ̂ for F | s ~ N(μ_s, σ²) (k = 1), holding with probability ≥ 1 − α.

    The estimator whitens the draws x = μ_s + σξ (ξ i.i.d. N(0, 1)) by the
    fitted N(μ̂_s, C), C = (s_a² + s_b²)/2, and counts z = aξ + b in the
    documented cells [e_j, e_{j+1}), with a = σ/√C and b = (μ_s − μ̂_s)/√C:
    cell j holds the ξ in [(e_j − b)/a, (e_{j+1} − b)/a).

    * Exact laws: μ̂_s ~ N(μ_s, σ²/n) and 2(n−1)C/σ² ~ χ²_{2(n−1)}; with
      probability ≥ 1 − α/2 the three lie in their α/6 intervals, so (a, b)
      lies in a known box for each secret.
    * Cut each box into grid × grid small boxes. For (a, b) in a small box,
      each fitted cell lies between a fixed outer and a fixed inner ξ-interval
      (extremes over its corners), whose counts are Binomial with known
      probabilities; with probability ≥ 1 − α/2 every such count lies within
      its binomial quantile (union bound over secrets, small boxes, cells and
      both ends).
    * λ̂ increases in the Clopper–Pearson upper ends and decreases in the lower
      ends, so on both events it is at most the largest, over small boxes, of
      the hockey-stick λ from the outer upper and inner lower quantiles.
    """
    m = max(4, round(n ** (1 / 3)))
    L = (10 / n) * 2.0 ** np.arange(64)
    L = L[L <= 0.5 / m]
    edges_u = np.unique(np.concatenate([np.arange(1, m) / m, L, 1 - L]))
    e = np.concatenate([[-np.inf], special.ndtri(edges_u), [np.inf]])
    q = np.diff(special.ndtr(e))
    J = q.shape[0]
    zmu = special.ndtri(1 - alpha / 12)
    c_lo = stats.chi2.ppf(alpha / 12, 2 * (n - 1)) * sigma**2 / (2 * (n - 1))
    c_hi = stats.chi2.isf(alpha / 12, 2 * (n - 1)) * sigma**2 / (2 * (n - 1))
    a_box = np.linspace(sigma / math.sqrt(c_hi), sigma / math.sqrt(c_lo), grid + 1)
    b_max = zmu * sigma / math.sqrt(n) / math.sqrt(c_lo)
    b_box = np.linspace(-b_max, b_max, grid + 1)
    corners_a = np.stack([a_box[:-1], a_box[1:]])  # (2, grid)
    corners_b = np.stack([b_box[:-1], b_box[1:]])
    # ξ-endpoints (e − b)/a at the 4 corners of each small box: (4, grid, grid, J + 1)
    with np.errstate(invalid="ignore"):
        ends = np.stack([(e[None, None, :] - corners_b[j][None, :, None]) / corners_a[i][:, None, None]
                         for i in (0, 1) for j in (0, 1)])
    lo_end, hi_end = ends.min(axis=0), ends.max(axis=0)
    p_out = special.ndtr(hi_end[..., 1:]) - special.ndtr(lo_end[..., :-1])
    p_in = np.clip(special.ndtr(lo_end[..., 1:]) - special.ndtr(hi_end[..., :-1]), 0, None)
    n_events = 2 * grid * grid * J * 2  # secrets x small boxes x cells x ends
    cnt_up = stats.binom.ppf(1 - alpha / (2 * n_events), n, p_out)
    cnt_lo = stats.binom.ppf(alpha / (2 * n_events), n, p_in)
    a_cell = (0.05 / 2) / J  # each of the 2 approximations at confidence 1 − 0.05/2
    hi = np.where(cnt_up < n, stats.beta.ppf(1 - a_cell / 2, cnt_up + 1, n - cnt_up), 1.0)
    lo = np.where(cnt_lo > 0, stats.beta.ppf(a_cell / 2, cnt_lo, n - cnt_lo + 1), 0.0)
    ch = np.zeros(J, bool)
    ch[[0, -1]] = True

    def ok(lam: np.ndarray) -> np.ndarray:
        t = np.exp(lam)[..., None]
        h1 = hi[..., ch].sum(-1) + np.clip(hi[..., ~ch] - t * q[~ch], 0, None).sum(-1)
        h2 = q[ch].sum() + np.clip(q[~ch] - t * lo[..., ~ch], 0, None).sum(-1)
        return (h1 <= eta) & (h2 <= eta)

    a, b = np.zeros(hi.shape[:-1]), np.full(hi.shape[:-1], 50.0)
    if not ok(b).all():
        return math.inf
    for _ in range(60):
        mid = (a + b) / 2
        good = ok(mid)
        a, b = np.where(good, a, mid), np.where(good, mid, b)
    # (the box does not depend on μ_s: both secrets share the same bound)
    return float(np.where(ok(np.zeros_like(a)), 0.0, b).max())


def test_lambda_near_zero_for_gaussian_query():
    """F | s ~ N(μ_s, 3²) with known truth: λ̂ ≤ the derived tolerance (α = 1e-3)."""
    n, eta = 20_000, 0.05
    rng = np.random.default_rng(51)
    cal = cal_from(rng.normal(10.0, 3.0, n), rng.normal(11.0, 3.0, n))
    lam = estimate_lambda_eta(cal, eta, confidence=0.95).value  # what APGMnG(…, eta=eta) uses
    tol = gaussian_tolerance_fitted(n, 3.0, eta, 1e-3)
    assert lam <= tol < 0.45, (lam, tol)  # measured λ̂ 0.10, tolerance 0.38
    assert APGM(cal, epsilon=EPS, delta=DELTA, accountant="gaussian").guarantee.failed_assumptions == ()  # ≤ 2e-3


def test_lambda_clearly_positive_for_skewed_query():
    """Gamma(5) (skewness 0.89), n = 20000, η = 0.025: λ̂ above twice the Gaussian
    tolerance (measured 1.6 against 0.63)."""
    n, eta = 20_000, 0.025
    rng = np.random.default_rng(52)
    cal = cal_from(rng.gamma(5.0, size=n), rng.gamma(5.0, size=n) + 1.0)
    tol = gaussian_tolerance_fitted(n, math.sqrt(5.0), eta, 1e-3)
    assert estimate_lambda_eta(cal, eta, confidence=0.95).value > 2 * tol


def test_from_moments_needs_a_given_lambda():
    cal = bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 2.0, B: 2.0}, PAIR)
    with pytest.raises(bp.ValidationError, match="calibration must carry samples .* Pass lambda_eta="):
        APGMnG(cal, epsilon=EPS, delta=DELTA)
    ng = APGMnG(cal, epsilon=EPS, delta=DELTA, eta=1e-7, lambda_eta=0.05)
    assert (ng.guarantee.epsilon, ng.guarantee.delta) == (EPS, DELTA)
    assert "divergence_bound_given" in ng.guarantee.assumptions and ng.guarantee.confidence == 1.0
    e, d = claimed(ng.inner_epsilon, ng.inner_delta, 0.05, 1e-7)
    assert e == pytest.approx(EPS, rel=1e-12) and d <= DELTA
    with pytest.raises(bp.ValidationError, match="lambda_eta must be a finite number >= 0"):
        APGMnG(cal, epsilon=EPS, delta=DELTA, eta=1e-4, lambda_eta=math.inf)
    with pytest.raises(bp.ValidationError, match=r"eta must be in the open interval \(0, 1\)"):
        APGMnG(cal, epsilon=EPS, delta=DELTA, eta=0.0, lambda_eta=0.05)


def test_eta_too_small_for_the_draws(skewed):
    with pytest.raises(bp.ValidationError, match=r"needs about 500/eta = 5000000 draws per secret \(got 20000\)"):
        APGMnG(skewed, epsilon=EPS, delta=0.9, eta=1e-4)


def test_erratum_arxiv_delta_is_too_small():
    """Counterexample to Theorem 3's δ' = e^λ δ + η (exact arithmetic).

    f̃_a = f̃_b = N(0, 1), so Δ = 0 and APGMnG adds no noise; it is (ε, 0)-private
    for the approximations. R = {x > c}, T = {x < −c} with Φ(−c) = η;
    f_a = φ·(1 + 1_R − 1_T), f_b = φ·(1 − 1_R + 1_T). Each hockey stick between
    f_s and f̃_s is exactly η at λ = 0, so 𝒟^η(f_s, f̃_s) ≤ 0. Yet
    P(F ∈ R | a) = 2η and P(F ∈ R | b) = 0: the true δ(ε) is 2η > η for
    every ε. Theorem 4.6's (1 + e^{ε+λ})η + e^λ δ covers it.
    """
    eta, eps = 1e-3, 1.0
    c = -special.ndtri(eta)
    phi = stats.norm.pdf
    f_a = lambda x: phi(x) * (1 + (x > c) - (x < -c))  # noqa: E731
    f_b = lambda x: phi(x) * (1 - (x > c) + (x < -c))  # noqa: E731

    def hs(f, g, t):
        h = lambda x: max(f(x) - t * g(x), 0.0)  # noqa: E731
        return sum(integrate.quad(h, lo, hi)[0] for lo, hi in ((-40, -c), (-c, c), (c, 40)))

    for f in (f_a, f_b):
        assert hs(f, phi, 1.0) == pytest.approx(eta, rel=1e-6)
        assert hs(phi, f, 1.0) == pytest.approx(eta, rel=1e-6)
    true_delta = hs(f_a, f_b, math.exp(eps))
    assert true_delta == pytest.approx(2 * eta, rel=1e-6)
    arxiv_delta = math.exp(0.0) * 0.0 + eta
    assert true_delta > arxiv_delta
    assert true_delta <= claimed(eps, 0.0, 0.0, eta)[1]


def test_twin_lambda_forced_to_zero_violates_the_bound():
    """F | a ~ Gamma(2), F | b ~ Gamma(2) + 0.2: APGM's noise is 0 and the true
    δ(ε) ≥ P_a(F < 0.2) ≈ 0.0175 (quadrature). With λ_η forced to 0 (η = 1e-3)
    APGMnG would claim δ' ≈ 0.0037: violated. With λ_η estimated at η = 0.1 the
    guarantee holds."""
    rng = np.random.default_rng(53)
    cal = cal_from(rng.gamma(2.0, size=20_000), rng.gamma(2.0, size=20_000) + 0.2)

    def delta_true(eps: float) -> float:
        f = lambda t: max(stats.gamma.pdf(t, 2.0) - math.exp(eps) * stats.gamma.pdf(t - 0.2, 2.0), 0.0)  # noqa: E731
        return integrate.quad(f, 0, 0.2)[0] + integrate.quad(f, 0.2, 60, limit=200)[0]

    forced = APGMnG(cal, epsilon=EPS, delta=0.01, eta=1e-3, lambda_eta=0.0)
    assert forced.sigma2 == 0.0
    assert delta_true(forced.guarantee.epsilon) > forced.guarantee.delta
    honest = APGMnG(cal, epsilon=2.0, delta=0.9, eta=0.1)
    assert honest.lambda_eta > 0
    assert delta_true(honest.guarantee.epsilon) <= honest.guarantee.delta
