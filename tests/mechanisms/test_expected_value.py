"""ExpM: the Expected Value mechanism (Chen & Ohrimenko, AISTATS 2023, Theorems 4.1 and 4.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.mechanisms import ExpM
from bayespriv.privacy import gaussian_radius

THETA1 = bp.DistributionSecret("theta", 1.0)
THETA2 = bp.DistributionSecret("theta", 2.0)
MU1 = np.array([100.0, 101.0])
MU2 = np.array([99.0, 102.0])
SIGMA = np.array([[22.0, -6.0], [-6.0, 13.0]])


@pytest.fixture(scope="module")
def example() -> bp.Calibration:
    """The worked example after Theorem 4.5: Δ_{E,2} = √2, Δ_{E,1} = 2."""
    return bp.Calibration.from_moments({THETA1: MU1, THETA2: MU2}, {THETA1: SIGMA, THETA2: SIGMA},
                                       bp.SecretPair(THETA1, THETA2))


# -- Gaussian (Theorem 4.2) ------------------------------------------------------------------------


def test_worked_example_gaussian_classic(example):
    """(cΔ_{E,2}/ε)² ≈ 28.52 with c = sqrt(2 ln 1250), Δ_{E,2} = √2, ε = 1 (warns: ε ≥ 1)."""
    with pytest.warns(bp.PrivacyAssumptionWarning, match="epsilon"):
        mech = ExpM(example, epsilon=1, delta=1e-3, gaussian_calibration="classic")
    np.testing.assert_allclose(mech.noise_cov, 28.52 * np.eye(2), atol=0.01)
    independent = 2.0 * 2 * math.log(1.25 / 1e-3)  # Δ² c² / ε²
    np.testing.assert_allclose(mech.noise_cov, independent * np.eye(2), rtol=1e-12)
    assert mech.sensitivity == pytest.approx(math.sqrt(2), rel=1e-15)
    assert mech.guarantee.delta == 1e-3
    assert mech.guarantee.epsilon == 1.0
    assert "translation" in mech.guarantee.assumptions
    assert "4.2" in mech.guarantee.theorem


def test_worked_example_gaussian_analytic(example):
    """Analytic calibration: σ = √2 · 2.5747 at (1, 1e-3), less than the classic σ."""
    mech = ExpM(example, epsilon=1, delta=1e-3)
    assert mech.sigma == pytest.approx(math.sqrt(2) * 2.5747, abs=2e-4)
    np.testing.assert_allclose(mech.noise_cov, (math.sqrt(2) / gaussian_radius(1.0, 1e-3)) ** 2 * np.eye(2), rtol=1e-12)
    assert mech.noise_cov[0, 0] < 28.52
    assert mech.guarantee.confidence == 1.0


def test_gaussian_needs_positive_delta(example):
    with pytest.raises(bp.ValidationError, match=r"delta must be in the open interval \(0, 1\); got 0.0 — Gaussian noise needs δ > 0.*noise=\"laplace\""):
        ExpM(example, epsilon=1.0, noise="gaussian")
    assert ExpM(example, epsilon=1.0).noise == "laplace"  # the default that works: δ = 0 → Laplace
    assert ExpM(example, epsilon=1.0, delta=1e-3).noise == "gaussian"


# -- Laplace (Theorem 4.1) -----------------------------------------------------------------------------


def test_worked_example_laplace(example):
    """Lap(Δ_{E,1}/ε) per component: Δ_{E,1} = |100 − 99| + |101 − 102| = 2, so b = 2 at ε = 1."""
    mech = ExpM(example, epsilon=1.0, noise="laplace")
    np.testing.assert_allclose(mech.noise_scale, [2.0, 2.0], rtol=1e-15)
    np.testing.assert_array_equal(mech.noise_basis, np.eye(2))
    np.testing.assert_allclose(mech.noise_cov, 8.0 * np.eye(2), rtol=1e-15)  # 2b²
    np.testing.assert_allclose(mech.expected_abs_error, [2.0, 2.0], rtol=1e-15)  # E|Lap(b)| = b
    g = mech.guarantee
    assert (g.epsilon, g.delta, g.confidence) == (1.0, 0.0, 1.0)
    assert "translation" in g.assumptions
    assert "4.1" in g.theorem
    assert mech.noise == "laplace"
    # δ given anyway: the guarantee is still pure
    assert ExpM(example, epsilon=1.0, delta=1e-3, noise="laplace").guarantee.delta == 0.0
    # scale is Δ_{E,1}/ε
    np.testing.assert_allclose(ExpM(example, epsilon=0.25, noise="laplace").noise_scale, [8.0, 8.0], rtol=1e-15)


def test_unknown_noise(example):
    with pytest.raises(bp.ValidationError, match="noise must be one of .*'cauchy'"):
        ExpM(example, epsilon=1.0, noise="cauchy")


N_RELEASES = 40_000
ALPHA = 1e-3


def variance_tolerance(b: float, m: int, alpha: float) -> float:
    """Half-width t with P(|v̂ − 2b²| ≥ t) ≤ α, v̂ = mean of m squared Lap(b) draws.

    E X² = 2b², E X⁴ = 24b⁴, so Var(X²) = 20b⁴ and Var(v̂) = 20b⁴/m. By
    Chebyshev (distribution-free, exact), t = b² sqrt(20 / (m α)). With
    m = 2 × 40 000 (two independent components) and α = 1e-3: t = 0.5 b²,
    i.e. 25% of the target 2b².
    """
    return b * b * math.sqrt(20.0 / (m * alpha))


def laplace_variance_check(mech: ExpM, b: float, seed: int) -> tuple[bool, float, float]:
    gen = np.random.default_rng(seed)
    answer = np.array([100.0, 101.0])
    noise = np.array([mech.release_value(answer, rng=gen).value for _ in range(N_RELEASES)]) - answer
    v = float((noise**2).mean())  # the mean is known to be 0
    tol = variance_tolerance(b, noise.size, ALPHA)
    return abs(v - 2 * b * b) <= tol, v, tol


class HalfScaleExpM(ExpM):
    """Deliberately broken: half the Laplace scale."""

    def _freeze(self) -> None:  # the noise halved as construction ends, before it is fixed
        self._set_laplace(self.noise_scale / 2.0, self.noise_basis)
        super()._freeze()


@pytest.mark.slow
def test_laplace_noise_variance(example):
    """Empirical E[noise²] = 2b² with b = 2 (computed by hand), Chebyshev tolerance, α = 1e-3."""
    mech = ExpM(example, epsilon=1.0, noise="laplace")
    ok, v, tol = laplace_variance_check(mech, 2.0, seed=4101)
    assert ok, (v, 8.0, tol)


@pytest.mark.slow
def test_laplace_noise_variance_catches_half_scale(example):
    """Broken twin: half the scale gives E[noise²] = 2 instead of 8, a gap of 6 ≫ t = 2.
    By the same Chebyshev bound (scale 1: t = 0.5) the broken estimate is within
    0.5 of 2 with probability ≥ 1 − 1e-3, so it is caught."""
    broken = HalfScaleExpM(example, epsilon=1.0, noise="laplace")
    ok, v, tol = laplace_variance_check(broken, 2.0, seed=4101)
    assert not ok, (v, tol)


# =====================================================================================================
# DirM, Noiseless (Theorem 4.4), EigM, DauM — Chen & Ohrimenko 2023, §4.2–4.3 and appendix A
# =====================================================================================================

import dataclasses
import itertools

from scipy import stats

from bayespriv.calibration import PairConstraints, calibration_from_samples
from bayespriv.mechanisms.expected_value import (
    DauM,
    DirM,
    EigM,
    Noiseless,
    NoiselessReport,
    certified_mahalanobis_sq,
    noiseless_ok,
)

C2_PAPER = 2 * math.log(1.25 / 1e-3)  # c² at δ = 1e-3; (cΔ_{E,2}/ε)² = 2c² ≈ 28.52 at ε = 1
V1 = np.array([1.0, 2.0]) / math.sqrt(5)  # eigenvector of SIGMA, eigenvalue 10
V2 = np.array([2.0, -1.0]) / math.sqrt(5)  # eigenvector of SIGMA, eigenvalue 25
SIGMA_INV = np.array([[13.0, 6.0], [6.0, 22.0]]) / 250.0  # by hand: det SIGMA = 286 − 36 = 250


def classic(mech_cls, cal, **kwargs):
    """The paper's constant at ε = 1 is outside its proof: the mechanism must warn."""
    with pytest.warns(bp.PrivacyAssumptionWarning, match="epsilon"):
        return mech_cls(cal, epsilon=1, delta=1e-3, gaussian_calibration="classic", **kwargs)


def mahalanobis_sq(d, cov):
    """dᵀ cov⁻¹ d by a direct solve (independent of the library's checks)."""
    return float(d @ np.linalg.solve(cov, d))


# -- the worked example after Theorem 4.5 -----------------------------------------------------------


def test_worked_example_eigm_classic(example):
    """Paper, §4.3, example after Theorem 4.5 (distribution-privacy-aistats23.md, lines 211–217):
    μ₁ = (100, 101), μ₂ = (99, 102), Σ = [[22, −6], [−6, 13]], ε = 1, δ = 0.001:
    "(cΔ_{E,2}/ε)² ≈ 28.52 ... eigenvalues 10 and 25 ... variance σ₁² ≈ 18.52 in the direction
    of v₁ and σ₂² ≈ 3.52 in the direction of v₂"."""
    mech = classic(EigM, example)
    expected = 18.52 * np.outer(V1, V1) + 3.52 * np.outer(V2, V2)
    np.testing.assert_allclose(mech.noise_cov, expected, atol=0.01)
    # exactly: σ_l² = 2c² − λ_l (the theorem's λ² *is* the eigenvalue), up to the 1e-9 safety margin
    exact = (2 * C2_PAPER - 10.0) * np.outer(V1, V1) + (2 * C2_PAPER - 25.0) * np.outer(V2, V2)
    np.testing.assert_allclose(mech.noise_cov, exact, rtol=1e-8)
    np.testing.assert_allclose(mech.eigenvalues, [10.0, 25.0], rtol=1e-12)
    assert V1 @ mech.noise_cov @ V1 == pytest.approx(18.52, abs=0.01)
    assert V2 @ mech.noise_cov @ V2 == pytest.approx(3.52, abs=0.01)
    assert mech.assumption_notes == ()
    g = mech.guarantee
    assert {"gaussian_query", "equal_covariance"} <= set(g.assumptions) and "4.5" in g.theorem
    assert (g.epsilon, g.delta, g.confidence) == (1.0, 1e-3, 1.0)


def test_worked_example_daum_and_expm_classic(example):
    """DauM along v = (1, −1)/√2 (the difference direction): σ² = 2c² − 1/(vᵀΣ⁻¹v)
    = 28.52 − 500/23 ≈ 6.78 (vᵀΣ⁻¹v = 23/500 by hand); ExpM(G): 28.52·I."""
    v = np.array([1.0, -1.0]) / math.sqrt(2)
    dau = classic(DauM, example)
    np.testing.assert_allclose(dau.noise_cov, 6.78 * np.outer(v, v), atol=0.01)
    assert dau.sigma2 == pytest.approx(2 * C2_PAPER - 500.0 / 23.0, rel=1e-8)
    assert abs(dau.direction @ v) == pytest.approx(1.0, rel=1e-15)
    assert dau.parallel
    assert "Theorem A.1" in dau.guarantee.theorem
    assert "parallel_differences" not in dau.guarantee.assumptions  # checked, not assumed
    exp = classic(ExpM, example)
    np.testing.assert_allclose(exp.noise_cov, 28.52 * np.eye(2), atol=0.01)
    # the ordering the paper's example illustrates: adversarial uncertainty saves noise
    assert np.trace(dau.noise_cov) < np.trace(classic(EigM, example).noise_cov) < np.trace(exp.noise_cov)


def test_worked_example_noiseless_depends_on_calibration(example):
    """dᵀΣ⁻¹d = 23/250 = 0.092 (by hand). Classic r*² = 1/(2 ln 1250) ≈ 0.0701 < 0.092: noise
    needed. Analytic r*(1, 1e-3) ≈ 0.3884, r*² ≈ 0.151 > 0.092: Theorem 4.4 holds, no noise."""
    d = MU1 - MU2
    assert d @ SIGMA_INV @ d == pytest.approx(0.092, rel=1e-12)
    with pytest.warns(bp.PrivacyAssumptionWarning):
        rep = noiseless_ok(example, epsilon=1, delta=1e-3, gaussian_calibration="classic")
    assert isinstance(rep, NoiselessReport) and not rep and not rep.holds
    assert rep.distance == pytest.approx(math.sqrt(0.092), rel=1e-10)
    assert rep.radius == pytest.approx(1 / math.sqrt(C2_PAPER), rel=1e-12)
    assert rep.worst_pair == "theta=1 vs theta=2"
    rep = noiseless_ok(example, epsilon=1, delta=1e-3)
    assert rep.holds and rep.radius == pytest.approx(gaussian_radius(1.0, 1e-3), rel=1e-15)
    mech = Noiseless(example, epsilon=1, delta=1e-3)
    assert mech.noiseless and mech.release_value(MU1, rng=1).value.tolist() == MU1.tolist()
    assert "4.4" in mech.guarantee.theorem
    for cls in (EigM, DauM):
        m = cls(example, epsilon=1, delta=1e-3)
        assert m.noiseless and "4.4" in m.guarantee.theorem
    with pytest.raises(bp.ValidationError, match=r"Theorem 4.4.*0\.3033\d* > r\* = 0\.2647"):
        classic(Noiseless, example)


# -- DauM: closed form vs the paper's determinant condition -----------------------------------------


def determinant_bisection(cov, v, alpha, r):
    """Algorithm 1, line 7, by brute force: the smallest σ² with det(Σ + (σ² − (α/r)²)vvᵀ) > 0,
    found by bisection on the determinant's sign (the paper's note after Theorem A.1)."""
    def ok(s2):
        return np.linalg.det(cov + (s2 - (alpha / r) ** 2) * np.outer(v, v)) > 0

    if ok(0.0):
        return 0.0
    lo, hi = 0.0, (alpha / r) ** 2 + 1.0
    assert ok(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


@pytest.mark.parametrize("seed", range(8))
def test_daum_closed_form_equals_determinant_bisection(seed):
    """k = 3, three secrets whose means move along one direction v by random amounts; σ² from
    DauM's closed form = the bisection on det (relative 1e-7: DauM keeps a 1e-9 safety margin)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((3, 3))
    cov = A @ A.T + 0.05 * np.eye(3)
    v = rng.standard_normal(3)
    v /= np.linalg.norm(v)
    secrets = [bp.DistributionSecret("phi", float(i)) for i in range(3)]
    steps = rng.uniform(0.5, 3.0, size=3)
    means = {s: 10.0 + t * v for s, t in zip(secrets, steps)}
    cal = bp.Calibration.from_moments(means, {s: cov for s in secrets}, bp.all_pairs(secrets))
    epsilon, delta = 0.5, 1e-5
    r = gaussian_radius(epsilon, delta)
    mech = DauM(cal, epsilon=epsilon, delta=delta, direction=v)
    alpha = max(abs(a - b) for a, b in itertools.combinations(steps, 2))
    brute = determinant_bisection(cov, v, alpha, r)
    assert brute > 0
    assert mech.sigma2 == pytest.approx(brute, rel=1e-7)
    assert mech.parallel and mech.repair == 0.0
    np.testing.assert_allclose(mech.noise_cov, mech.sigma2 * np.outer(v, v), rtol=1e-12, atol=1e-12)
    for a, b in itertools.combinations(secrets, 2):
        assert mahalanobis_sq(means[a] - means[b], cov + mech.noise_cov) <= r * r


def test_daum_singular_covariance_along_v_gets_no_credit():
    """Σ = diag(0, 5), differences along e₁: Σ is singular along v, so σ² = (α/r*)²."""
    a, b = bp.DistributionSecret("phi", 0.0), bp.DistributionSecret("phi", 1.0)
    cov = np.diag([0.0, 5.0])
    cal = bp.Calibration.from_moments({a: [0.0, 1.0], b: [2.0, 1.0]}, {a: cov, b: cov}, bp.SecretPair(a, b))
    r = gaussian_radius(1.0, 1e-4)
    mech = DauM(cal, epsilon=1.0, delta=1e-4)
    assert mech.sigma2 == pytest.approx((2.0 / r) ** 2, rel=1e-8)
    assert mech.sigma2 >= (2.0 / r) ** 2  # never below the no-credit value
    # a deterministic query (Σ = 0) also gets the directional noise (α/r*)² only
    zero = bp.Calibration.from_moments({a: [0.0, 1.0], b: [2.0, 1.0]}, {a: np.zeros((2, 2)), b: np.zeros((2, 2))},
                                       bp.SecretPair(a, b))
    assert DauM(zero, epsilon=1.0, delta=1e-4).sigma2 == pytest.approx((2.0 / r) ** 2, rel=1e-8)


def _two_pair_calibration(second):
    s = [bp.DistributionSecret("phi", float(i)) for i in range(3)]
    means = {s[0]: np.zeros(2), s[1]: np.array([1.0, 0.0]), s[2]: np.asarray(second, dtype=float)}
    return bp.Calibration.from_moments(means, {x: np.eye(2) for x in s}, (bp.SecretPair(s[0], s[1]), bp.SecretPair(s[0], s[2]))), s, means


def test_daum_non_parallel_falls_back_to_exact_corollary():
    """Differences (1, 0) and (0, 0.1) with Σ = I: not parallel to v = e₁ (Theorem A.1 fails);
    Σ hides the orthogonal 0.1 (0.01 < r*²), so DauM solves Corollary A.1 exactly:
    σ² = max(1/r*² − 1, e²/(r*² − p⊥) − s₀ with e = 0) = 1/r*² − 1, and each pair's
    dᵀ(Σ + S)⁻¹d ≤ r*² (direct solve)."""
    cal, s, means = _two_pair_calibration([0.0, 0.1])
    r = gaussian_radius(1.0, 1e-3)
    mech = DauM(cal, epsilon=1.0, delta=1e-3)
    assert not mech.parallel
    assert "non-parallel" in mech.guarantee.theorem
    assert any("parallel_differences" in n for n in mech.assumption_notes)
    assert mech.sigma2 == pytest.approx(1 / r**2 - 1, rel=1e-8)
    for x in s[1:]:
        assert mahalanobis_sq(means[s[0]] - means[x], np.eye(2) + mech.noise_cov) <= r * r
    # a tilted second difference: the closed form is still exact (the binding pair reaches r*²)
    cal, s, means = _two_pair_calibration([3.0, 0.2])
    mech = DauM(cal, epsilon=1.0, delta=1e-3, direction=[1.0, 0.0])
    values = [mahalanobis_sq(means[s[0]] - means[x], np.eye(2) + mech.noise_cov) for x in s[1:]]
    assert max(values) <= r * r
    assert max(values) == pytest.approx(r * r, rel=1e-8)


def test_daum_refuses_when_sigma_cannot_hide_the_orthogonal_part():
    cal, _, _ = _two_pair_calibration([0.0, 1.0])  # orthogonal part 1 > r*² ≈ 0.151
    with pytest.raises(bp.ValidationError, match=r"direction must be .* Mahalanobis distance 1 ≥ r\*"):
        DauM(cal, epsilon=1.0, delta=1e-3, direction=[1.0, 0.0])
    a, b = bp.DistributionSecret("phi", 0.0), bp.DistributionSecret("phi", 1.0)
    zero = bp.Calibration.from_moments({a: [0.0, 0.0], b: [1.0, 1.0]}, {a: np.zeros((2, 2)), b: np.zeros((2, 2))},
                                       bp.SecretPair(a, b))
    with pytest.raises(bp.ValidationError, match="direction must be parallel"):
        DauM(zero, epsilon=1.0, delta=1e-3, direction=[1.0, 0.0])


# -- EigM: families and non-common eigenvectors ------------------------------------------------------


def _member(mu_shift, cov, theta):
    cal = bp.Calibration.from_moments({THETA1: MU1, THETA2: MU1 + mu_shift}, {THETA1: cov, THETA2: cov},
                                      bp.SecretPair(THETA1, THETA2))
    return dataclasses.replace(cal, theta=theta)


def test_eigm_family_takes_the_sup_over_theta():
    """Two members sharing Σ's eigenvectors: σ_l² = max over θ (Theorem 4.5's σ_k² = max_θ σ_θ,k²)."""
    m1 = _member(np.array([-1.0, 1.0]), SIGMA, {"member": 1})
    m2 = _member(np.array([2.0, 1.0]), 2 * SIGMA, {"member": 2})
    fam = dataclasses.replace(m1, family=(m1, m2))
    r2 = gaussian_radius(0.5, 1e-3) ** 2
    mech = EigM(fam, epsilon=0.5, delta=1e-3)
    per = [np.maximum(0.0, 2.0 / r2 - np.array([10.0, 25.0])), np.maximum(0.0, 5.0 / r2 - np.array([20.0, 50.0]))]
    expected = np.maximum(*per)
    np.testing.assert_allclose(V1 @ mech.noise_cov @ V1, expected[0], rtol=1e-8)
    np.testing.assert_allclose(V2 @ mech.noise_cov @ V2, expected[1], rtol=1e-8)
    assert mech.worst_theta == {"member": 2}
    assert len(mech.pair_table) == 2
    assert (mech.pair_table["mahalanobis_sq"] <= r2).all()


def test_eigm_non_common_eigenvectors_is_noted_and_still_valid():
    """Members with covariances of different eigenvectors: Theorem 4.5's assumption fails; EigM
    notes it and credits a Gershgorin bound; Corollary A.1 still holds for every member (direct solve)."""
    cov2 = np.array([[5.0, 4.0], [4.0, 5.0]])  # eigenvectors (1, ±1)/√2, unlike SIGMA's
    m1 = _member(np.array([-1.0, 1.0]), SIGMA, {"member": 1})
    m2 = _member(np.array([1.0, 1.0]), cov2, {"member": 2})
    fam = dataclasses.replace(m1, family=(m1, m2))
    mech = EigM(fam, epsilon=0.5, delta=1e-3)
    assert any("eigenvectors" in n for n in mech.assumption_notes)
    r2 = gaussian_radius(0.5, 1e-3) ** 2
    for m in (m1, m2):
        d = m.means[THETA1] - m.means[THETA2]
        assert mahalanobis_sq(d, m.covs[THETA1] + mech.noise_cov) <= r2


# -- the conservative check ---------------------------------------------------------------------------


def test_certified_check_discards_indefinite_lower_bounds():
    """A covariance lower bound diag(1, −1) (few draws) with d = e₁: the naive value dᵀ(Σ_lo)⁺d is 1,
    but Σ = [[2, √3], [√3, 2]] ⪰ diag(1, −1) is a possible truth with dᵀΣ⁻¹d = 2 (this was a bug of
    an earlier PairConstraints.mahalanobis_sq). The certified check refuses to credit the indefinite
    bound (inf). With noise S = 4I the bound
    diag(5, 3) ⪯ Σ + S is PD again: 1/5 = 0.2, the smaller of it and ‖d‖²/4 = 0.25 (Σ + S ⪰ S),
    and above the truth e₁ᵀ(Σ + 4I)⁻¹e₁ = 6/33."""
    low = np.diag([1.0, -1.0])[None]
    cons = PairConstraints(("a vs b",), (bp.SecretPair(THETA1, THETA2),), (None,), np.array([[1.0, 0.0]]),
                           np.zeros((1, 2)), low, low, 1.0)
    truth = np.array([[2.0, math.sqrt(3)], [math.sqrt(3), 2.0]])
    assert np.linalg.eigvalsh(truth - low[0]).min() >= -1e-12 and np.linalg.eigvalsh(truth).min() > 0
    assert mahalanobis_sq(np.array([1.0, 0.0]), truth) == pytest.approx(2.0)
    assert cons.mahalanobis_sq(np.zeros((2, 2)))[0] == np.inf
    assert certified_mahalanobis_sq(cons, np.zeros((2, 2)))[0] == np.inf
    assert certified_mahalanobis_sq(cons, 4 * np.eye(2))[0] == pytest.approx(0.2, rel=1e-12)
    assert mahalanobis_sq(np.array([1.0, 0.0]), truth + 4 * np.eye(2)) == pytest.approx(6 / 33) and 6 / 33 <= 0.2
    # S = diag(0, 0.5): the bound diag(1, −0.5) is still indefinite (its naive value 1 would be below
    # the truth 1.25), and d = e₁ is outside the range of S: inf
    small = np.diag([0.0, 0.5])
    assert mahalanobis_sq(np.array([1.0, 0.0]), truth + small) == pytest.approx(1.25)
    assert certified_mahalanobis_sq(cons, small)[0] == np.inf


# -- statistical check of the release distribution ----------------------------------------------------

N_GAUSS = 20_000
ALPHA_GAUSS = 1e-6


def variance_interval(n, alpha):
    """Exact interval for v̂/σ² where v̂ = mean of n squared N(0, σ²) draws: n·v̂/σ² ~ χ²_n, so
    P(v̂/σ² ∉ [χ²_n(α/2)/n, χ²_n(1 − α/2)/n]) = α. With n = 20 000 and α = 1e-6 (split by
    Bonferroni over the directions checked): about [0.951, 1.050]."""
    return stats.chi2.ppf(alpha / 2, n) / n, stats.chi2.ppf(1 - alpha / 2, n) / n


def eigen_variance_check(mech, seed, n_dirs):
    """Noise projected on each eigenvector of noise_cov (with variance > 0) has the stated variance,
    and the release has no noise at all in noise_cov's null space."""
    gen = np.random.default_rng(seed)
    noise = np.array([mech.release_value(MU1, rng=gen).value for _ in range(N_GAUSS)]) - MU1
    w, V = np.linalg.eigh(mech.noise_cov)
    pos = w > 1e-12 * w.max()
    assert pos.sum() == n_dirs
    null = noise @ V[:, ~pos]
    assert np.abs(null).max(initial=0.0) <= 1e-9 * np.sqrt(w.max())  # exact: nothing outside the range
    lo, hi = variance_interval(N_GAUSS, ALPHA_GAUSS / n_dirs)
    ratio = ((noise @ V[:, pos]) ** 2).mean(axis=0) / w[pos]
    return bool(np.all((ratio >= lo) & (ratio <= hi))), ratio


class HalfNoiseEigM(EigM):
    """Deliberately broken: half the noise variance."""

    def _freeze(self) -> None:  # the noise halved as construction ends, before it is fixed
        self._set_gaussian(self.noise_cov / 2.0)
        super()._freeze()


@pytest.mark.slow
def test_eigm_release_distribution(example):
    """EigM at ε = 0.5 (analytic): both eigen-directions noisy; each projected variance within the
    exact χ² interval (α = 1e-6 in total)."""
    mech = EigM(example, epsilon=0.5, delta=1e-3)
    ok, ratio = eigen_variance_check(mech, seed=77, n_dirs=2)
    assert ok, ratio


@pytest.mark.slow
def test_eigm_release_distribution_catches_half_noise(example):
    """Broken twin: half the variance. Measured against the correct noise_cov, the ratio is
    0.5·χ²_n/n ≤ 0.526 with probability ≥ 1 − 1e-6, far below 0.951: caught."""
    broken = HalfNoiseEigM(example, epsilon=0.5, delta=1e-3)
    correct = EigM(example, epsilon=0.5, delta=1e-3)  # the stated noise
    gen = np.random.default_rng(77)
    noise = np.array([broken.release_value(MU1, rng=gen).value for _ in range(N_GAUSS)]) - MU1
    w, V = np.linalg.eigh(correct.noise_cov)
    lo, hi = variance_interval(N_GAUSS, ALPHA_GAUSS / 2)
    ratio = ((noise @ V) ** 2).mean(axis=0) / w
    assert not np.all((ratio >= lo) & (ratio <= hi)), ratio


@pytest.mark.slow
def test_daum_release_distribution(example):
    """DauM at ε = 0.5: noise only along v (exactly 0 orthogonally), variance σ² along v (χ², α = 1e-6)."""
    mech = DauM(example, epsilon=0.5, delta=1e-3)
    assert mech.sigma2 > 0
    ok, ratio = eigen_variance_check(mech, seed=78, n_dirs=1)
    assert ok, ratio


# -- DirM -------------------------------------------------------------------------------------------


def laplace_loss(mech, diffs):
    """Independent privacy-loss bound of DirM(L) for the given differences: inf if a difference
    leaves the span of the noise directions, else max_d Σ_j |b_jᵀd| / s_j (appendix B.3, per direction)."""
    B, s = mech.noise_basis, mech.noise_scale
    worst = 0.0
    for d in diffs:
        coords = B.T @ d
        if np.linalg.norm(d - B @ coords) > 1e-12 * max(np.linalg.norm(d), 1.0):
            return np.inf
        worst = max(worst, float(np.sum(np.abs(coords) / s)))
    return worst


def gaussian_loss(mech, diffs):
    """Independent: max_d dᵀS⁺d, inf if d is outside the range of S."""
    S = mech.noise_cov
    worst = 0.0
    for d in diffs:
        x = np.linalg.lstsq(S, d, rcond=None)[0]
        if np.linalg.norm(S @ x - d) > 1e-9 * max(np.linalg.norm(d), 1.0):
            return np.inf
        worst = max(worst, float(d @ x))
    return worst


def test_dirm_parallel_is_theorem_4_3(example):
    """One direction v = ±(1, −1)/√2; Laplace scale Δ_{E,2}/ε = √2 (Theorem 4.3), Gaussian σ = √2/r*."""
    v = np.array([1.0, -1.0]) / math.sqrt(2)
    lap = DirM(example, epsilon=1.0)
    assert lap.noise_basis.shape == (2, 1) and abs(lap.noise_basis[:, 0] @ v) == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(lap.noise_scale, [math.sqrt(2)], rtol=1e-8)
    assert lap.guarantee.delta == 0.0 and "4.3" in lap.guarantee.theorem
    assert lap.guarantee.assumptions[0] == "translation"
    assert laplace_loss(lap, [MU1 - MU2]) <= 1.0
    r = gaussian_radius(1.0, 1e-3)
    gau = DirM(example, epsilon=1.0, delta=1e-3, noise="gaussian")
    np.testing.assert_allclose(gau.noise_cov, (math.sqrt(2) / r) ** 2 * np.outer(v, v), rtol=1e-8)
    assert gau.noise_basis is None and gau.directions.shape == (2, 1)
    assert gaussian_loss(gau, [MU1 - MU2]) <= r * r
    # user direction v (the paper's input) gives the same noise
    np.testing.assert_allclose(DirM(example, epsilon=1.0, directions=v).noise_cov, lap.noise_cov, rtol=1e-12)
    # releases move only along v
    rel = lap.release_value(MU1, rng=3).value - MU1
    assert abs(rel @ np.array([1.0, 1.0])) < 1e-12 and np.any(rel)


def _three_dim_two_directions():
    s = [bp.DistributionSecret("phi", float(i)) for i in range(3)]
    means = {s[0]: np.array([0.0, 0.0, 5.0]), s[1]: np.array([1.0, 1.0, 5.0]), s[2]: np.array([2.0, -1.0, 5.0])}
    cal = bp.Calibration.from_moments(means, {x: np.eye(3) for x in s}, bp.all_pairs(s))
    diffs = [means[a] - means[b] for a, b in itertools.combinations(s, 2)]
    return cal, diffs


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_dirm_several_directions_laplace(epsilon):
    """k = 3, differences spanning the (x, y) plane: two noise directions, no noise along z;
    privacy loss (independent computation) ≤ ε; no more noise than the simple valid choice
    s_j = max‖Bᵀd‖₁/ε; and the paper's literal 'Δ_{E,2}/ε per direction' is caught as too little."""
    cal, diffs = _three_dim_two_directions()
    mech = DirM(cal, epsilon=epsilon)
    B = mech.noise_basis
    assert B.shape == (3, 2)
    np.testing.assert_allclose(B.T @ B, np.eye(2), atol=1e-12)
    assert np.abs(B[2]).max() < 1e-12  # nothing along z
    assert laplace_loss(mech, diffs) <= epsilon
    simple = max(np.abs(B.T @ d).sum() for d in diffs) / epsilon
    assert np.sum(mech.noise_scale**2) <= 2 * simple**2 * (1 + 1e-9)
    # twin: the paper's suggestion taken literally (Laplace scale Δ_{E,2}/ε in each direction)
    paper = copy_with_scales(mech, np.full(2, max(np.linalg.norm(d) for d in diffs) / epsilon))
    assert laplace_loss(paper, diffs) > epsilon * 1.1


def copy_with_scales(mech, scales):
    twin = DirM.__new__(DirM)
    twin.__dict__.update(mech.__dict__)
    twin.__dict__["_frozen"] = False  # a test-only twin: mechanisms are frozen after construction
    twin._set_laplace(scales, mech.noise_basis)
    return twin


def test_dirm_several_directions_gaussian():
    cal, diffs = _three_dim_two_directions()
    r = gaussian_radius(0.7, 1e-5)
    mech = DirM(cal, epsilon=0.7, delta=1e-5, noise="gaussian")
    assert np.linalg.matrix_rank(mech.noise_cov, tol=1e-9) == 2
    assert np.abs(mech.noise_cov[2]).max() < 1e-12
    assert gaussian_loss(mech, diffs) <= r * r
    # never more than the paper's isotropic-in-span choice σ = Δ_{E,2}/r* per direction
    delta2 = max(np.linalg.norm(d) for d in diffs)
    assert np.trace(mech.noise_cov) <= 2 * (delta2 / r) ** 2 * (1 + 1e-8)
    # twin: half the variance breaks the bound
    half = DirM.__new__(DirM)
    half.__dict__.update(mech.__dict__)
    half.__dict__["_frozen"] = False  # a test-only twin: mechanisms are frozen after construction
    half._set_gaussian(mech.noise_cov / 2)
    assert gaussian_loss(half, diffs) > r * r


def test_dirm_uncertain_differences_span_everything():
    """A sampled calibration: the confidence box of the difference spans both components, so the
    noise must cover the whole plane (any shift orthogonal to the noise would be unprotected);
    the loss bound holds at every corner of the box."""
    rng = np.random.default_rng(9)
    samples = np.stack([rng.normal([0.0, 0.0], 1.0, (400, 2)), rng.normal([1.0, -1.0], 1.0, (400, 2))])
    cal = calibration_from_samples(samples, (THETA1, THETA2), (bp.SecretPair(THETA1, THETA2),), None, confidence=0.95)
    mech = DirM(cal, epsilon=1.0)
    assert mech.noise_basis.shape == (2, 2)
    i1, i2 = cal.index(THETA1), cal.index(THETA2)
    diff = cal.mean_array[i1] - cal.mean_array[i2]
    half = cal.z * (cal.mean_se[i1] + cal.mean_se[i2])
    assert np.all(half > 0)
    corners = [diff + np.array(signs) * half for signs in itertools.product((-1, 1), repeat=2)]
    assert laplace_loss(mech, corners) <= 1.0


def test_dirm_zero_differences_need_no_noise():
    a, b = bp.DistributionSecret("phi", 0.0), bp.DistributionSecret("phi", 1.0)
    cal = bp.Calibration.from_moments({a: [1.0, 2.0], b: [1.0, 2.0]}, {a: np.eye(2), b: np.eye(2)}, bp.SecretPair(a, b))
    mech = DirM(cal, epsilon=1.0)
    assert mech.noise_basis.shape == (2, 0) and mech.noiseless
    assert mech.release_value([1.0, 2.0], rng=0).value.tolist() == [1.0, 2.0]


# -- bad input ----------------------------------------------------------------------------------------


def test_bad_inputs(example):
    with pytest.raises(bp.ParameterTypeError, match="calibration must be a bayespriv Calibration; got dict"):
        EigM({}, epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ParameterTypeError, match="calibration must be"):
        noiseless_ok("cal", epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ValidationError, match=r"epsilon must be a finite number > 0; got -1"):
        DauM(example, epsilon=-1, delta=1e-3)
    for cls in (EigM, DauM, Noiseless):
        with pytest.raises(bp.ValidationError, match=r"delta must be in the open interval \(0, 1\); got 0"):
            cls(example, epsilon=1.0, delta=0.0)
    with pytest.raises(bp.ValidationError, match=r"delta must be in the open interval \(0, 1\); got 0"):
        DirM(example, epsilon=1.0, noise="gaussian")
    with pytest.raises(bp.ValidationError, match=r"delta must be in the open interval \(0, 1\); got 1\.5"):
        noiseless_ok(example, epsilon=1.0, delta=1.5)
    with pytest.raises(bp.ValidationError, match="gaussian_calibration must be one of .*'exact'"):
        EigM(example, epsilon=1.0, delta=1e-3, gaussian_calibration="exact")
    with pytest.raises(bp.ValidationError, match="gaussian_calibration must be one of"):
        noiseless_ok(example, epsilon=1.0, delta=1e-3, gaussian_calibration="exact")
    with pytest.raises(bp.ValidationError, match="noise must be one of .*'cauchy'"):
        DirM(example, epsilon=1.0, noise="cauchy")
    with pytest.raises(bp.ValidationError, match=r"direction must be a vector of shape \(2,\); got shape \(3,\)"):
        DauM(example, epsilon=1.0, delta=1e-3, direction=[1.0, 0.0, 0.0])
    with pytest.raises(bp.ValidationError, match="direction must be a non-zero vector"):
        DauM(example, epsilon=1.0, delta=1e-3, direction=[0.0, 0.0])
    with pytest.raises(bp.ValidationError, match="direction must be finite"):
        DauM(example, epsilon=1.0, delta=1e-3, direction=[np.nan, 1.0])
    with pytest.raises(bp.ValidationError, match=r"directions must be an array of shape \(2,\) or \(2, D\)"):
        DirM(example, epsilon=1.0, directions=np.ones((3, 1)))
    with pytest.raises(bp.ValidationError, match="directions must be non-zero vectors"):
        DirM(example, epsilon=1.0, directions=np.zeros((2, 1)))
    with pytest.raises(bp.ValidationError, match="directions must be vectors whose span contains every mean difference"):
        DirM(example, epsilon=1.0, directions=[1.0, 1.0])  # orthogonal to the difference (1, −1)


# -- unequal covariances ---------------------------------------------------------------------------
# Exact moments: nothing is random. The privacy curve itself is checked against mpmath and
# 10⁷ Monte-Carlo draws in test_privacy_loss.py; here the mechanisms use it.

from bayespriv.privacy import privacy_loss  # noqa: E402

D2 = np.array([1.0, 0.5])
COV_A2 = np.array([[1.0, 0.2], [0.2, 0.5]])
COV_B2 = np.array([[2.0, -0.1], [-0.1, 0.8]])


def two_dim_unequal() -> bp.Calibration:
    a, b = bp.DistributionSecret("t", 1.0), bp.DistributionSecret("t", 2.0)
    return bp.Calibration.from_moments({a: D2, b: np.zeros(2)}, {a: COV_A2, b: COV_B2}, bp.SecretPair(a, b))


@pytest.mark.parametrize("cls", [EigM, DauM])
def test_unequal_covariances_scale_the_noise_shape(cls):
    """The default is the unequal calibration: δ(ε) ≤ δ for the true pair, half the noise
    breaks it (twin), the shape is the equal-covariance one unless it had to be widened."""
    cal = two_dim_unequal()
    equal = cls(cal, epsilon=1.0, delta=1e-4, covariance="equal")
    assert equal.guarantee.failed_assumptions == ("equal_covariance",)
    mech = cls(cal, epsilon=1.0, delta=1e-4)
    assert mech.covariance_mode == "unequal"
    assert "equal_covariance" not in mech.guarantee.assumptions and "gaussian_query" in mech.guarantee.assumptions
    S = mech.noise_cov
    assert privacy_loss.gaussian_delta(1.0, D2, COV_A2 + S, COV_B2 + S) <= 1e-4
    assert privacy_loss.gaussian_delta(1.0, D2, COV_A2 + S / 2, COV_B2 + S / 2) > 1e-4
    assert mech.privacy_curve([1.0])[0] <= 1e-4 and mech.pair_table["delta"].max() <= 1e-4
    widened = any("widened" in n for n in mech.assumption_notes)
    if not widened:
        np.testing.assert_allclose(S, mech.noise_scale_factor * equal.noise_cov, rtol=1e-10, atol=1e-14)
    if cls is DauM:  # noise along one direction cannot hide a variance difference across it
        assert widened
    with pytest.raises(bp.errors.ImmutableError):
        mech.covariance_mode = "equal"
