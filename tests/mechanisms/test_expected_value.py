"""ExpM: the Expected Value mechanism (Chen & Ohrimenko, AISTATS 2023, Theorems 4.1 and 4.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.mechanisms import ExpM, gaussian_radius

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
    with pytest.raises(bp.ValidationError, match=r"delta must be in the open interval \(0, 1\); got 0"):
        ExpM(example, epsilon=1.0)  # default delta = 0 is only for Laplace noise


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

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._set_laplace(self.noise_scale / 2.0, self.noise_basis)


def test_laplace_noise_variance(example):
    """Empirical E[noise²] = 2b² with b = 2 (computed by hand), Chebyshev tolerance, α = 1e-3."""
    mech = ExpM(example, epsilon=1.0, noise="laplace")
    ok, v, tol = laplace_variance_check(mech, 2.0, seed=4101)
    assert ok, (v, 8.0, tol)


def test_laplace_noise_variance_catches_half_scale(example):
    """Broken twin: half the scale gives E[noise²] = 2 instead of 8, a gap of 6 ≫ t = 2.
    By the same Chebyshev bound (scale 1: t = 0.5) the broken estimate is within
    0.5 of 2 with probability ≥ 1 − 1e-3, so it is caught."""
    broken = HalfScaleExpM(example, epsilon=1.0, noise="laplace")
    ok, v, tol = laplace_variance_check(broken, 2.0, seed=4101)
    assert not ok, (v, tol)
