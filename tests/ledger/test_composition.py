"""Joint accounting of Gaussian releases (bayespriv.ledger.composition).

Exact parts are checked against independent mpmath computations (50 digits) of the analytic Gaussian
profile at the stacked Mahalanobis distance, computed from the model's closed-form moments, not from
the calibration. The unequal-covariance route is checked against Monte Carlo draws of the privacy
loss with a stated false-failure probability, and each check has a broken twin that it catches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import mpmath as mp
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.ledger import Ledger
from bayespriv.ledger.composition import JointGaussian, joint_delta, joint_epsilon, joint_gaussian_laws
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.models import hospital as H

from tests._gaussian_oracles import analytic_delta


@pytest.fixture(autouse=True)
def _fifty_digits():
    """mpmath at 50 digits inside each test of this file only (its precision is process-global)."""
    with mp.workdps(50):
        yield


WEIGHT, BLOOD = "average weight", "average blood pressure"


def mp_delta(epsilon: float, r2: Any) -> mp.mpf:
    """Balle & Wang 2018, Theorem 8: δ(ε) of two unit Gaussians at squared distance r2, in 50 digits."""
    return analytic_delta(epsilon, mp.sqrt(mp.mpf(r2)), dps=50)


# -- the hospital model: two releases, jointly --------------------------------------------------------------


def _calibration(names: list[str], pairs) -> bp.Calibration:
    secrets = list(dict.fromkeys(s for p in pairs for s in (p.a, p.b)))
    mom = {s: [H.exact_moments(n, s.value) for n in names] for s in secrets}
    means = {s: np.array([m for m, _ in mom[s]]) for s in secrets}
    covs = {s: np.diag([v for _, v in mom[s]]) for s in secrets}  # given the women, the two means are independent
    query = bp.stack(*[H.QUERIES[n] for n in names]) if len(names) > 1 else H.QUERIES[names[0]]
    return bp.Calibration.from_moments(means, covs, pairs, query=query)


@pytest.fixture(scope="module")
def hospital():
    pairs = H.secret_pairs()
    cal_w, cal_b = _calibration([WEIGHT], pairs), _calibration([BLOOD], pairs)
    stacked = _calibration([WEIGHT, BLOOD], pairs)
    mech_w = bp.mechanisms.APGM(cal_w, epsilon=1.0, delta=1e-3)
    mech_b = bp.mechanisms.APGM(cal_b, epsilon=1.0, delta=1e-3)
    return pairs, mech_w, mech_b, stacked


def _independent_r2(pairs, noise: np.ndarray) -> mp.mpf:
    """max over pairs of Σ_i d_i² / (σ_i² + S_ii), from hospital.exact_moments (independent queries)."""
    best = mp.mpf(0)
    for p in pairs:
        r2 = mp.mpf(0)
        for i, name in enumerate((WEIGHT, BLOOD)):
            (ma, va), (mb, _) = H.exact_moments(name, p.a.value), H.exact_moments(name, p.b.value)
            r2 += (mp.mpf(ma) - mp.mpf(mb)) ** 2 / (mp.mpf(va) + mp.mpf(noise[i]))
        best = max(best, r2)
    return best


def test_hospital_weight_and_blood_pressure_cost_less_jointly(hospital):
    """Releasing average weight and average blood pressure (APGM, ε = 1, δ = 1e-3 each): the sum
    charges ε = 2 at δ = 2e-3; the joint release is the analytic Gaussian at the stacked Mahalanobis
    distance, checked against mpmath: it meets δ = 2e-3 at ε ≈ 1.38 and is tight."""
    pairs, mech_w, mech_b, stacked = hospital
    joint = JointGaussian([mech_w, mech_b], stacked)
    # each δ may carry the (1 + e^ε)·τ of exact grid noise (τ < 1e-15)
    assert joint.epsilon_sum == 2.0 and joint.delta_sum == pytest.approx(2e-3, abs=1e-12) == joint.delta
    tv = joint.laws.tv_bound
    assert 0.0 <= tv < 1e-15
    r2 = _independent_r2(pairs, [mech_w.noise_cov[0, 0], mech_b.noise_cov[0, 0]])
    assert joint.laws.radius == pytest.approx(float(mp.sqrt(r2)), rel=1e-12)
    target = mp.mpf(joint.delta)

    def exact_total(eps: float) -> mp.mpf:
        return mp_delta(eps, r2) + (1 + mp.e ** mp.mpf(eps)) * mp.mpf(tv)

    assert exact_total(joint.epsilon) <= target  # the joint ε meets δ exactly ...
    assert exact_total(joint.epsilon * (1 - 1e-8)) > target  # ... and is the smallest that does
    assert joint.epsilon < 0.75 * joint.epsilon_sum  # measured: 1.3845 vs 2
    continuous = dataclasses.replace(joint.laws, tv_bound=0.0)
    for eps in (0.05, 0.3, 1.0, 2.0, 5.0, 10.0):  # the profile, relative 1e-9 (conservative: never below)
        exact = mp_delta(eps, r2)
        got = joint_delta(continuous, eps)[0]
        assert exact <= got <= exact * (1 + 1e-9), (eps, got, exact)
        assert exact_total(eps) <= joint.delta_at(eps) <= exact_total(eps) * (1 + 1e-9)
    assert joint.delta_at(2.0) < 2e-3 / 20  # at the summed ε the joint δ is far below the summed δ (4.8e-5)
    table = joint.summary()
    assert table.loc["sum (sequential composition)", "epsilon"] == 2.0
    assert table.loc["joint (stacked Gaussian)", "epsilon"] == joint.epsilon
    assert "gaussian_query" in joint.guarantee.assumptions and joint.guarantee.confidence == 1.0


def test_a_twin_that_adds_distances_instead_of_squares_is_caught(hospital):
    """The one-dimensional-equivalent check would reject a joint that used r₁ + r₂ (too pessimistic)
    or max(r₁, r₂) (too optimistic) instead of √(r₁² + r₂²)."""
    pairs, mech_w, mech_b, stacked = hospital
    laws = JointGaussian([mech_w, mech_b], stacked).laws
    r2 = _independent_r2(pairs, [mech_w.noise_cov[0, 0], mech_b.noise_cov[0, 0]])
    r_w = math_sqrt_ratio(pairs, WEIGHT, mech_w.noise_cov[0, 0])
    r_b = math_sqrt_ratio(pairs, BLOOD, mech_b.noise_cov[0, 0])
    for wrong in (r_w + r_b, max(r_w, r_b)):
        twin = dataclasses.replace(laws, radius=wrong)
        assert not mp_delta(1.0, r2) <= joint_delta(twin, 1.0)[0] <= mp_delta(1.0, r2) * (1 + 1e-9)


def math_sqrt_ratio(pairs, name: str, noise: float) -> float:
    r2 = 0.0
    for p in pairs:
        (ma, va), (mb, _) = H.exact_moments(name, p.a.value), H.exact_moments(name, p.b.value)
        r2 = max(r2, (ma - mb) ** 2 / (va + noise))
    return float(np.sqrt(r2))


# -- cross-covariances ------------------------------------------------------------------------------------------------


def _two_secrets():
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.6)
    return a, b, bp.SecretPair(a, b)


def test_cross_covariances_are_used_and_a_block_diagonal_twin_is_caught():
    """Correlated queries (ρ = 0.8): the joint distance uses the full (Σ + S)⁻¹ (mpmath matrix
    inverse); a twin that drops the cross-covariances is off by far more than the tolerance."""
    a, b, pair = _two_secrets()
    cov = np.array([[1.0, 0.8 * np.sqrt(2.0)], [0.8 * np.sqrt(2.0), 2.0]])
    stacked = bp.Calibration.from_moments({a: [0.0, 0.0], b: [1.0, 0.4]}, {a: cov, b: cov}, pair)
    S = np.diag([0.7, 0.9])
    laws = joint_gaussian_laws(stacked, S)
    d = mp.matrix([[-1.0], [-0.4]])
    r2 = (d.T * mp.inverse(mp.matrix(cov.tolist()) + mp.matrix(S.tolist())) * d)[0, 0]
    for eps in (0.1, 0.5, 1.0, 3.0):
        exact = mp_delta(eps, r2)
        assert exact <= joint_delta(laws, eps)[0] <= exact * (1 + 1e-9)
    eps = joint_epsilon(laws, 1e-5)
    assert mp_delta(eps, r2) <= 1e-5 < mp_delta(eps * (1 - 1e-8), r2)
    blockdiag = np.diag(np.diag(cov))
    twin = joint_gaussian_laws(bp.Calibration.from_moments({a: [0.0, 0.0], b: [1.0, 0.4]}, {a: blockdiag, b: blockdiag},
                                                           pair), S)
    assert abs(joint_delta(twin, 1.0)[0] / float(mp_delta(1.0, r2)) - 1) > 0.05


def test_unequal_covariances_against_monte_carlo_of_the_privacy_loss():
    """Σ_a ≠ Σ_b with cross-covariances: δ(ε) = max over directions of E_P[(1 − e^{ε − L})₊] with
    L = log dP/dQ, estimated from 4·10⁵ draws per direction. Tolerance 5.3 standard errors per
    estimate: false-failure probability α ≤ 4 · 1.2e-7 ≈ 5e-7 over the 4 estimates (normal
    approximation of a mean of bounded variables). A half-noise twin (S/2) is caught by the same test."""
    a, b, pair = _two_secrets()
    cov_a = np.array([[1.0, 0.5], [0.5, 1.0]])
    cov_b = np.array([[2.0, 0.3], [0.3, 1.5]])
    stacked = bp.Calibration.from_moments({a: [0.0, 0.0], b: [1.0, 0.5]}, {a: cov_a, b: cov_b}, pair)
    S = np.diag([0.5, 0.8])
    laws = joint_gaussian_laws(stacked, S)
    assert not laws.equal_covariance
    gen = np.random.default_rng(20261124)

    def monte_carlo(noise: np.ndarray, eps: float) -> tuple[float, float]:
        pa = (np.array([0.0, 0.0]), cov_a + noise)
        pb = (np.array([1.0, 0.5]), cov_b + noise)
        best, se = 0.0, 0.0
        for p, q in ((pa, pb), (pb, pa)):
            y = gen.multivariate_normal(p[0], p[1], size=400_000)
            loss = _log_pdf(y, *p) - _log_pdf(y, *q)
            h = np.maximum(0.0, 1.0 - np.exp(eps - loss))
            if h.mean() > best:
                best, se = float(h.mean()), float(h.std(ddof=1) / np.sqrt(h.size))
        return best, se

    for eps in (0.25, 1.0):
        est, se = monte_carlo(S, eps)
        assert abs(joint_delta(laws, eps)[0] - est) <= 5.3 * se, (eps, est, se)
    twin_est, twin_se = monte_carlo(S / 2, 1.0)  # what a half-noise mechanism really gives
    assert abs(joint_delta(laws, 1.0)[0] - twin_est) > 5.3 * twin_se


def _log_pdf(y: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    diff = y - mean
    sol = np.linalg.solve(cov, diff.T).T
    return -0.5 * (np.einsum("ij,ij->i", diff, sol) + np.linalg.slogdet(cov)[1] + len(mean) * np.log(2 * np.pi))


# -- releasing and charging once ------------------------------------------------------------------------------------------


def test_release_values_charges_the_joint_cost_once(hospital, tmp_path):
    pairs, mech_w, mech_b, stacked = hospital
    joint = JointGaussian([mech_w, mech_b], stacked)
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("gender", 1.5, delta=3e-3)
    out = joint.release_values([[150.0], [103.0]], rng=7, ledger=led)
    assert [r.value.shape for r in out] == [(1,), (1,)]
    assert all(r.guarantee == joint.guarantee and r.seeded for r in out)
    rows = led.releases()
    assert len(rows) == 1 and rows.iloc[0]["mechanism"] == "JointGaussian"
    assert rows.iloc[0]["epsilon"] == joint.epsilon and rows.iloc[0]["delta"] == joint.delta
    assert rows.iloc[0]["composition"] == "joint"  # accounted with the account's other releases, not summed
    assert "sequential_composition" not in rows.iloc[0]["assumptions"]
    assert all(getattr(r, "ledger_id", rows.index[0]) == rows.index[0] for r in out)
    assert led.spent("gender")[0] == pytest.approx(joint.epsilon, abs=1e-9)  # 1.38, where the sum would need 2
    with pytest.raises(bp.BudgetExceededError):  # a second joint release does not fit: nothing spent
        joint.release_values([[150.0], [103.0]], ledger=led)
    with pytest.raises(ValidationError, match=r"answers\[1\] must be of shape \(1,\)"):
        joint.release_values([[150.0], [103.0, 1.0]], ledger=led)
    led.verify()
    assert len(led.releases()) == 1


@dataclass(frozen=True)
class _Failing:
    """A Gaussian mechanism whose noise sampler raises (after the spend)."""

    inner: Any

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def release_value(self, answer, *, rng=None, **kwargs):
        raise RuntimeError("sampler exploded")


def test_a_failure_after_the_spend_voids_the_row(hospital, tmp_path):
    pairs, mech_w, mech_b, stacked = hospital
    joint = JointGaussian([mech_w, _Failing(mech_b)], stacked)
    led = Ledger(tmp_path / "l.sqlite")
    led.set_budget("gender", 5.0, delta=1e-2)
    with pytest.raises(RuntimeError, match="sampler exploded"):
        joint.release_values([[150.0], [103.0]], ledger=led)
    row = led.releases().iloc[0]
    assert row["voided"] and "sampler exploded" in row["void_reason"]
    assert led.spent("gender") == (0.0, 0.0)
    led.verify()


# -- validation ----------------------------------------------------------------------------------------------------------


def test_inputs_are_checked(hospital):
    pairs, mech_w, mech_b, stacked = hospital
    with pytest.raises(ValidationError, match="stacked_calibration must be a calibration of the stacked query with 3"):
        JointGaussian([mech_w, mech_b, mech_b], stacked)
    with pytest.raises(ParameterTypeError, match="stacked_calibration must be a Calibration"):
        JointGaussian([mech_w, mech_b], "stacked")
    with pytest.raises(ValidationError, match="mechanisms must be a non-empty sequence"):
        JointGaussian([], stacked)
    with pytest.raises(ValidationError, match="covariance must be one of"):
        JointGaussian([mech_w, mech_b], stacked, covariance="bogus")
    swapped = _calibration([BLOOD, WEIGHT], pairs)
    with pytest.raises(ValidationError, match="components .* in the mechanisms' order"):
        JointGaussian([mech_w, mech_b], swapped)
    fewer = _calibration([WEIGHT, BLOOD], pairs[:5])
    with pytest.raises(ValidationError, match=r"mechanisms\[0\] must be calibrated for the same secret pairs"):
        JointGaussian([mech_w, mech_b], fewer)
    laplace = bp.mechanisms.ExpM(mech_w.calibration, epsilon=1.0, noise="laplace")
    with pytest.raises(ParameterTypeError, match=r"mechanisms\[1\] must be a Gaussian mechanism"):
        JointGaussian([mech_w, laplace], stacked)
    a, b, pair = _two_secrets()
    unequal = bp.Calibration.from_moments({a: [0.0], b: [1.0]}, {a: [[1.0]], b: [[2.0]]}, pair)
    with pytest.raises(ValidationError, match="covariance must be 'unequal' or 'auto'"):
        joint_gaussian_laws(unequal, [[1.0]], covariance="equal")
    with pytest.raises(ValidationError, match=r"noise_cov must be of shape \(1, 1\)"):
        joint_gaussian_laws(unequal, np.eye(2))


# -- a sampled calibration: conservative bounds ---------------------------------------------------------------------------


def test_sampled_calibration_uses_conservative_bounds():
    """With a sampled stacked calibration (2000 draws, three pairs), the equal-covariance route uses
    the confidence box and Loewner lower bounds: its radius is at least the plug-in radius, and the
    guarantee keeps the calibration's confidence; the unequal route is labelled estimated_moments."""
    pairs = H.secret_pairs()
    sub = (pairs[0], pairs[len(pairs) // 2], pairs[-1])
    stacked = bp.calibrate(H.hospital_model(), sub, bp.stack(H.QUERIES[WEIGHT], H.QUERIES[BLOOD]), n_draws=2000, rng=0)
    S = np.diag([300.0, 40.0])
    equal = joint_gaussian_laws(stacked, S, covariance="equal")
    unequal = joint_gaussian_laws(stacked, S, covariance="unequal")
    assert not unequal.equal_covariance  # its cov_a / cov_b are the estimates Σ̂ + S
    plug_in = max(float(d @ np.linalg.solve(c, d)) for d, ca, cb in zip(unequal.diff, unequal.cov_a, unequal.cov_b)
                  for c in (ca, cb))
    assert plug_in <= equal.radius**2 <= plug_in * 1.5
    e_eq, e_un = joint_epsilon(equal, 1e-3), joint_epsilon(unequal, 1e-3)
    assert 0.5 < e_un < e_eq * 1.2  # both near the same value; measured within a few percent


def test_unequal_joint_epsilon_is_the_largest_per_pair_epsilon():
    """δ(ε) = max over pairs, each non-increasing: the joint ε is the max of the per-pair ε (each
    found by its own plain bisection), whatever order the pruned search visits the pairs in."""
    secrets = [bp.DistributionSecret("p", v) for v in (0.1, 0.3, 0.5, 0.7)]
    means = {s: [m] for s, m in zip(secrets, (0.0, 0.4, 1.1, 1.3))}
    covs = {s: [[v]] for s, v in zip(secrets, (1.0, 2.0, 0.7, 1.5))}
    pairs = [bp.SecretPair(a, b) for i, a in enumerate(secrets) for b in secrets[i + 1:]]
    laws = joint_gaussian_laws(bp.Calibration.from_moments(means, covs, pairs), [[0.5]])
    assert not laws.equal_covariance and len(laws.labels) == 6
    singles = [dataclasses.replace(laws, labels=laws.labels[i:i + 1], diff=laws.diff[i:i + 1],
                                   cov_a=laws.cov_a[i:i + 1], cov_b=laws.cov_b[i:i + 1]) for i in range(6)]
    per_pair = [joint_epsilon(one, 1e-4) for one in singles]
    joint = joint_epsilon(laws, 1e-4)
    assert joint == pytest.approx(max(per_pair), rel=2e-10)  # both bisections stop within rtol = 1e-10
    assert joint_delta(laws, joint)[0] <= 1e-4  # and the answer meets δ for every pair


def test_joint_release_options_and_their_deprecated_spellings(hospital, tmp_path, monkeypatch):
    """``dataset_name=`` / ``options=`` as on a mechanism; ``dataset=`` and the flags still work, warning, and
    give the same seeded values and the same ledger row. Both spellings at once, or a flag a joint release does
    not read, is refused before anything is spent."""
    pairs, mech_w, mech_b, stacked = hospital
    joint = JointGaussian([mech_w, mech_b], stacked)
    seen = []
    member_release = type(mech_w).release_value

    def spy(self, answer, **kwargs):
        seen.append(kwargs.get("options"))
        return member_release(self, answer, **kwargs)

    monkeypatch.setattr(type(mech_w), "release_value", spy)
    rows = {}
    for spelling in ("new", "old"):
        led = Ledger(tmp_path / f"{spelling}.sqlite")
        led.set_budget("gender", 10.0, delta=0.1)
        if spelling == "new":
            out = joint.release_values([[150.0], [103.0]], rng=3, ledger=led, dataset_name="ward",
                                       options=bp.ReleaseOptions(independent=True))
        else:
            with pytest.warns(bp.errors.BayesPrivDeprecationWarning):
                out = joint.release_values([[150.0], [103.0]], rng=3, ledger=led, dataset="ward", independent=True)
        rows[spelling] = ([r.value.tolist() for r in out], led.releases().iloc[0][["dataset", "assumptions"]].tolist())
    assert rows["new"] == rows["old"]
    assert seen and all(o.accept_failed_assumptions for o in seen)  # the joint guarantee replaces each member's
    led = Ledger(tmp_path / "refused.sqlite")
    led.set_budget("gender", 10.0, delta=0.1)
    with pytest.raises(bp.ValidationError, match="options"):
        joint.release_values([[150.0], [103.0]], ledger=led, options=bp.ReleaseOptions(), independent=True)
    with pytest.raises(TypeError, match="clip"):
        joint.release_values([[150.0], [103.0]], ledger=led, clip=True)
    assert len(led.releases()) == 0
