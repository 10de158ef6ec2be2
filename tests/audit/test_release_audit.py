"""Empirical ε on the REAL release path: the guarantee under the exact grid noise.

For each secret s, F is drawn from its law and released through ``Mechanism.release_value``
(exact grid sampler, bits from one seeded generator); a test fixed in advance ("guess b when the
release exceeds t") is scored and :func:`bayespriv.audit.empirical_epsilon.epsilon_lower_bound` turns
the counts into a lower bound on the ε the release satisfies. The bound exceeds the true ε with
probability ≤ α = 1e-3 (Clopper–Pearson at α/2 per rate; module docstring of
``bayespriv.audit.empirical_epsilon``), so "bound ≤ claimed ε" is a test with false-failure probability
≤ α for a correct mechanism. Each mechanism has a twin with half the noise scale (subclass that
overrides the noise in ``__init__``, before the mechanism freezes), whose bound must exceed the
claim. Thresholds t and sizes were chosen from the continuous laws (expected bounds below).

* ExpM(noise="laplace") on a count: the proportion secrets 0.4 / 0.6 of 50 records fix the count
  to 20 / 30 (F's law is a point mass), Δ = 10, ε = 1, so the release is 20 or 30 plus Lap(10).
  t = 30: TPR = ½, FPR = ½e^{−1}, log-ratio exactly ε = 1 (the bound, ≈ 0.93, stays below);
  twin (scale 5): FPR = ½e^{−2}, estimate 2, bound ≈ 1.9.
* APGM on a Gaussian query: F | s ~ N(μ_s, V), μ = 0 / 1, V = 0.01, (ε, δ) = (1, 1e-3); the
  release is N(μ_s, V + σ²) with σ ≈ 2.57. t = 1.3·σ_tot: expected bound ≈ 0.50; twin
  (σ/2) expected bound ≈ 1.50 (its CP margin is ≈ 0.1 at 20 000 releases per secret).
"""

from __future__ import annotations

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.audit.empirical_epsilon import epsilon_lower_bound
from bayespriv.mechanisms.apgm import APGM
from bayespriv.mechanisms.expected_value import ExpM

#: Both audits release 20 000 times per secret through the release path: long statistical runs.
pytestmark = pytest.mark.slow

ALPHA = 1e-3
N_PER_SECRET = 20_000


class HalfScaleExpM(ExpM):
    """Deliberately broken: half the Laplace scale (really 2ε-private)."""

    def _freeze(self) -> None:  # the noise halved as construction ends, before it is fixed
        self._set_laplace(self.noise_scale / 2.0, self.noise_basis)
        super()._freeze()


class HalfScaleAPGM(APGM):
    """Deliberately broken: half the Gaussian noise standard deviation."""

    def _freeze(self) -> None:  # the noise halved as construction ends, before it is fixed
        self._set_gaussian(self._gaussian_cov / 4.0)
        super()._freeze()


def released(mech, answers: np.ndarray, seed: int) -> np.ndarray:
    """Release each row of ``answers`` (n, k) through ``release_value`` (one seeded generator
    feeding the exact sampler's bits); returns the first component of each release."""
    gen = np.random.default_rng(seed)
    return np.array([mech.release_value(x, rng=gen).value[0] for x in answers])


def audit(mech, draws: dict[str, np.ndarray], threshold: float, seed: int):
    """Empirical ε of "guess b iff release > threshold" from ``draws['a']``, ``draws['b']`` (F values)."""
    out_a = released(mech, draws["a"], seed)
    out_b = released(mech, draws["b"], seed + 1)
    g = mech.guarantee
    return epsilon_lower_bound(int(np.sum(out_b > threshold)), out_b.size, int(np.sum(out_a > threshold)), out_a.size,
                               delta=g.delta, alpha=ALPHA, claimed_epsilon=g.epsilon)


def _count_calibration() -> bp.Calibration:
    a_sec = bp.DatasetSecret.proportion("sex", "Female", 0.4)
    b_sec = bp.DatasetSecret.proportion("sex", "Female", 0.6)
    return bp.Calibration.from_moments({a_sec: [20.0], b_sec: [30.0]}, {a_sec: [[0.0]], b_sec: [[0.0]]},
                                       bp.SecretPair(a_sec, b_sec), n_records=50)


def test_expm_laplace_count_audit_on_release_path():
    """ExpM(L), ε = 1: empirical ε ≤ 1 (false failure ≤ α = 1e-3) and informative (> 0.8; expected
    ≈ 0.93); the half-scale twin's bound exceeds the claim (expected ≈ 1.9)."""
    cal = _count_calibration()
    draws = {"a": np.full((N_PER_SECRET, 1), 20.0), "b": np.full((N_PER_SECRET, 1), 30.0)}
    mech = ExpM(cal, epsilon=1.0, noise="laplace")
    emp = audit(mech, draws, 30.0, seed=11)
    assert emp.epsilon <= 1.0 and not emp.contradicts_claim, emp
    assert emp.epsilon > 0.8, emp
    twin = audit(HalfScaleExpM(cal, epsilon=1.0, noise="laplace"), draws, 30.0, seed=11)
    assert twin.epsilon > 1.0 and twin.contradicts_claim, twin


def test_apgm_gaussian_query_audit_on_release_path():
    """APGM, (ε, δ) = (1, 1e-3), F | s ~ N(μ_s, 0.01): empirical ε ≤ 1 (false failure ≤ α = 1e-3;
    expected ≈ 0.50) and the half-noise twin's bound exceeds the claim (expected ≈ 1.50)."""
    a_sec, b_sec = bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0)
    var = 0.01
    cal = bp.Calibration.from_moments({a_sec: [0.0], b_sec: [1.0]}, {a_sec: [[var]], b_sec: [[var]]},
                                      bp.SecretPair(a_sec, b_sec), n_records=10)
    gen = np.random.default_rng(2026)
    draws = {s: gen.normal(mu, np.sqrt(var), (N_PER_SECRET, 1)) for s, mu in (("a", 0.0), ("b", 1.0))}
    mech = APGM(cal, epsilon=1.0, delta=1e-3)
    threshold = 1.3 * float(np.sqrt(var + mech.noise_cov[0, 0]))
    emp = audit(mech, draws, threshold, seed=12)
    assert emp.epsilon <= 1.0 and not emp.contradicts_claim, emp
    assert emp.epsilon > 0.3, emp
    twin_mech = HalfScaleAPGM(cal, epsilon=1.0, delta=1e-3)
    assert np.isclose(twin_mech.noise_cov[0, 0], mech.noise_cov[0, 0] / 4.0)
    twin = audit(twin_mech, draws, threshold, seed=12)
    assert twin.epsilon > 1.0 and twin.contradicts_claim, twin
