"""OptimalGaussian: least-trace Gaussian noise under Corollary A.1 (Chen & Ohrimenko 2023, appendix A)."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import calibration_from_samples
from bayespriv.mechanisms import ExpM
from bayespriv.privacy import gaussian_radius
from bayespriv.mechanisms import optimal as optimal_module
from bayespriv.mechanisms.expected_value import DauM, EigM
from bayespriv.mechanisms.optimal import OptimalGaussian

THETA1 = bp.DistributionSecret("theta", 1.0)
THETA2 = bp.DistributionSecret("theta", 2.0)
MU1 = np.array([100.0, 101.0])
MU2 = np.array([99.0, 102.0])
SIGMA = np.array([[22.0, -6.0], [-6.0, 13.0]])
C2_PAPER = 2 * math.log(1.25 / 1e-3)


@pytest.fixture(scope="module")
def example() -> bp.Calibration:
    """The worked example after Theorem 4.5 of the paper."""
    return bp.Calibration.from_moments({THETA1: MU1, THETA2: MU2}, {THETA1: SIGMA, THETA2: SIGMA},
                                       bp.SecretPair(THETA1, THETA2))


def mahalanobis_sq(d: np.ndarray, cov: np.ndarray) -> float:
    """dᵀ cov⁻¹ d by np.linalg.solve; for a (numerically) singular cov, the pseudo-inverse form
    with a range check (inf when d is outside the range). Independent of the library."""
    w = np.linalg.eigvalsh(cov)
    if w.min() > 1e-10 * max(w.max(), 1e-300):
        return float(d @ np.linalg.solve(cov, d))
    x = np.linalg.lstsq(cov, d, rcond=1e-12)[0]
    if np.linalg.norm(cov @ x - d) > 1e-8 * max(np.linalg.norm(d), 1.0):
        return math.inf
    return float(d @ x)


def single_pair_optimum(d: np.ndarray, cov: np.ndarray, r2: float) -> float:
    """Closed form of the least trace for ONE constraint: Σ + S ⪰ ddᵀ/r² (Schur) and S ⪰ 0 give
    tr S ≥ uᵀSu ≥ uᵀ(ddᵀ/r² − Σ)u for the top eigenvector u, attained by S = (ddᵀ/r² − Σ)₊
    (ddᵀ/r² − Σ has at most one positive eigenvalue). So the optimum is λ_max(ddᵀ/r² − Σ)₊."""
    return max(0.0, float(np.linalg.eigvalsh(np.outer(d, d) / r2 - cov).max()))


def classic(mech_cls, cal, **kwargs):
    with pytest.warns(bp.PrivacyAssumptionWarning, match="epsilon"):
        return mech_cls(cal, epsilon=1, delta=1e-3, gaussian_calibration="classic", **kwargs)


# -- the worked example --------------------------------------------------------------------------


def test_worked_example_classic(example):
    """Classic constant (as the paper): the least trace is λ_max(ddᵀ·2c²/2 − Σ) ≈ 6.17 — below
    DauM's 6.78, EigM's 22.05 and ExpM(G)'s 57.05 — and Corollary A.1 holds (direct solve)."""
    mech = classic(OptimalGaussian, example)
    r2 = 1.0 / C2_PAPER
    d = MU1 - MU2
    assert mahalanobis_sq(d, SIGMA + mech.noise_cov) <= r2
    optimum = single_pair_optimum(d, SIGMA, r2)
    assert optimum == pytest.approx(6.17, abs=0.01)
    assert mech.trace == pytest.approx(optimum, rel=1e-6)
    assert mech.source in ("closed form", "closed form+repair") and mech.fallback_reason is None
    assert mech.solver_status == optimal_module.CLOSED_FORM
    assert mech.trace <= np.trace(classic(DauM, example).noise_cov)
    assert np.trace(classic(DauM, example).noise_cov) < np.trace(classic(EigM, example).noise_cov)
    assert np.trace(classic(EigM, example).noise_cov) < np.trace(classic(ExpM, example).noise_cov)
    assert set(mech.candidates) >= {"EigM", "DauM", "ExpM"}
    g = mech.guarantee
    assert {"gaussian_query", "equal_covariance"} <= set(g.assumptions)
    assert "Corollary A.1" in g.theorem and (g.epsilon, g.delta, g.confidence) == (1.0, 1e-3, 1.0)
    assert list(mech.pair_table.columns) == ["noiseless", "mahalanobis_sq"]
    assert mech.pair_table["noiseless"].iloc[0] == pytest.approx(0.092, rel=1e-12)  # dᵀΣ⁻¹d = 23/250


def test_worked_example_analytic_needs_no_noise(example):
    """Analytic r*(1, 1e-3)² ≈ 0.151 > dᵀΣ⁻¹d = 0.092: Theorem 4.4 holds, S = 0, no solver call."""
    mech = OptimalGaussian(example, epsilon=1.0, delta=1e-3)
    assert mech.source == "noiseless" and mech.noiseless and mech.trace == 0.0
    assert mech.solver_status is None
    assert mech.noiseless_report.holds


def test_deterministic_query_closed_form():
    """Σ = 0: the optimum is ‖d‖²/r*² along d (single-pair closed form with Σ = 0)."""
    a, b = bp.DistributionSecret("phi", 0.0), bp.DistributionSecret("phi", 1.0)
    d = np.array([3.0, -1.0, 2.0])
    cal = bp.Calibration.from_moments({a: np.zeros(3), b: -d}, {a: np.zeros((3, 3)), b: np.zeros((3, 3))},
                                      bp.SecretPair(a, b))
    r2 = gaussian_radius(0.8, 1e-6) ** 2
    mech = OptimalGaussian(cal, epsilon=0.8, delta=1e-6)
    assert mech.trace == pytest.approx(d @ d / r2, rel=1e-6)
    assert mahalanobis_sq(d, mech.noise_cov) <= r2


# -- random calibrations: validity and never more than EigM / DauM ---------------------------------------

SECRETS = tuple(bp.DistributionSecret("phi", float(i)) for i in range(3))
PAIRS = bp.all_pairs(SECRETS)


def random_member(rng: np.random.Generator, k: int, theta: dict) -> bp.Calibration:
    """Equal covariance within the member (sometimes singular), random means for three secrets."""
    A = rng.standard_normal((k, k)) * rng.uniform(0.1, 3.0)
    if rng.random() < 0.15:
        A[:, -1] = 0.0  # singular Σ
    cov = A @ A.T
    means = {s: rng.standard_normal(k) * rng.uniform(0.1, 3.0) for s in SECRETS}
    if rng.random() < 0.2:  # parallel differences, where DauM applies
        v = rng.standard_normal(k)
        means = {s: 5.0 + rng.uniform(-2, 2) * v for s in SECRETS}
    return dataclasses.replace(bp.Calibration.from_moments(means, {s: cov for s in SECRETS}, PAIRS), theta=theta)


@pytest.mark.slow
def test_random_calibrations_valid_and_never_worse_than_eigm_or_daum():
    """200 random calibrations (k ∈ {2, 3, 4}, three pairs, 30% families of two members):
    dᵀ(Σ + S)⁻¹d ≤ r*² for every member and pair (direct solve), trace ≤ EigM's and DauM's
    (when DauM applies), and ≥ the best single-pair optimum (a lower bound of the optimum)."""
    rng = np.random.default_rng(2024)
    sources: dict[str, int] = {}
    n_dau = 0
    for _ in range(200):
        k = int(rng.integers(2, 5))
        cal = random_member(rng, k, {"m": 0})
        if rng.random() < 0.3:
            cal = dataclasses.replace(cal, family=(cal, random_member(rng, k, {"m": 1})))
        epsilon, delta = float(rng.uniform(0.3, 3.0)), float(rng.choice([1e-3, 1e-6]))
        r2 = gaussian_radius(epsilon, delta) ** 2
        mech = OptimalGaussian(cal, epsilon=epsilon, delta=delta)
        S = mech.noise_cov
        assert np.allclose(S, S.T) and np.linalg.eigvalsh(S).min() >= -1e-9 * max(1.0, np.abs(S).max())
        lower = 0.0
        for member in cal.members:
            for p in member.pairs:
                d = member.means[p.a] - member.means[p.b]
                cov = member.covs[p.a]
                assert mahalanobis_sq(d, cov + S) <= r2, (mech.source, member.theta, p.label)
                lower = max(lower, single_pair_optimum(d, cov, r2))
        assert mech.trace >= lower * (1 - 1e-6) - 1e-9
        assert mech.trace <= np.trace(EigM(cal, epsilon=epsilon, delta=delta).noise_cov) * (1 + 1e-12)
        try:
            dau = DauM(cal, epsilon=epsilon, delta=delta)
        except bp.ValidationError:
            pass
        else:
            n_dau += 1
            assert mech.trace <= np.trace(dau.noise_cov) * (1 + 1e-12)
        sources[mech.source] = sources.get(mech.source, 0) + 1
    assert sources.get("solver", 0) + sources.get("solver+repair", 0) > 150, sources
    assert n_dau > 20


def _corners(cal: bp.Calibration, pair: bp.SecretPair) -> list[np.ndarray]:
    ia, ib = cal.index(pair.a), cal.index(pair.b)
    diff = cal.mean_array[ia] - cal.mean_array[ib]
    half = cal.z * (cal.mean_se[ia] + cal.mean_se[ib])
    return [diff + np.array(signs) * half for signs in itertools.product((-1.0, 1.0), repeat=cal.k)]


def _cov_lower(cal: bp.Calibration, pair: bp.SecretPair) -> np.ndarray:
    """Σ̂/(1 + z·ρ(s_white)) for both secrets, then the common lower bound (A + B)/2 − |A − B|/2
    (recomputed here from the calibration's raw arrays)."""
    low = []
    for s in pair.secrets:
        i = cal.index(s)
        perron = np.linalg.eigvalsh(cal.cov_se_white[i])[-1]
        low.append(cal.cov_array[i] / (1.0 + cal.z * perron))
    w, V = np.linalg.eigh((low[0] - low[1]) / 2)
    return (low[0] + low[1]) / 2 - (V * np.abs(w)) @ V.T


def test_sampled_calibrations_hold_at_every_corner():
    """Sampled calibrations (confidence 0.95, half widths > 0): the condition holds at every corner
    of every difference box with the covariance lower bounds, recomputed independently."""
    rng = np.random.default_rng(7)
    for _ in range(10):
        k = int(rng.integers(2, 4))
        A = rng.standard_normal((k, k))
        chol = np.linalg.cholesky(A @ A.T + 0.2 * np.eye(k))
        samples = np.stack([rng.standard_normal((1500, k)) @ chol.T + rng.normal(0, 0.5, k) for _ in SECRETS])
        cal = calibration_from_samples(samples, SECRETS, PAIRS, None, confidence=0.95)
        mech = OptimalGaussian(cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
        r2 = gaussian_radius(1.0, 1e-5) ** 2
        assert cal.pair_constraints().half_width.min() > 0
        for p in PAIRS:
            low = _cov_lower(cal, p)
            assert np.linalg.eigvalsh(low + mech.noise_cov).min() > 0
            for d in _corners(cal, p):
                assert mahalanobis_sq(d, low + mech.noise_cov) <= r2
        assert mech.trace <= np.trace(EigM(cal, epsilon=1.0, delta=1e-5, accountant="gaussian").noise_cov) * (1 + 1e-12)
        assert mech.guarantee.confidence == 0.95


def test_scs_solver(example):
    """SCS on the one-pair program (the SDP, bypassing the closed form used by the class)."""
    r2 = gaussian_radius(0.5, 1e-3) ** 2
    S, status = optimal_module._solve_sdp_box(example.pair_constraints(), gaussian_radius(0.5, 1e-3), "SCS")
    assert status.startswith("optimal")
    assert float(np.trace(S)) == pytest.approx(single_pair_optimum(MU1 - MU2, SIGMA, r2), rel=1e-3)
    mech = OptimalGaussian(example, epsilon=0.5, delta=1e-3, solver="SCS")
    assert mahalanobis_sq(MU1 - MU2, SIGMA + mech.noise_cov) <= r2
    assert mech.trace <= np.trace(EigM(example, epsilon=0.5, delta=1e-3).noise_cov)


# -- robustness: a solver that misbehaves ------------------------------------------------------------


def _patched(monkeypatch, result):
    monkeypatch.setattr(optimal_module, "_solve_sdp", lambda cons, radius, solver: result)


def test_solver_failure_falls_back_to_best_formula(example, monkeypatch):
    _patched(monkeypatch, (None, "infeasible"))
    mech = OptimalGaussian(example, epsilon=0.5, delta=1e-3)
    dau = DauM(example, epsilon=0.5, delta=1e-3)
    assert mech.source == "DauM" and "solver failed (infeasible)" in mech.fallback_reason
    np.testing.assert_allclose(mech.noise_cov, dau.noise_cov, rtol=1e-12)


def test_too_little_noise_from_solver_is_repaired(example, monkeypatch):
    """Broken twin of the solver: half the optimal S violates Corollary A.1; the certified check
    catches it and t·I is added until it holds."""
    r2 = gaussian_radius(0.5, 1e-3) ** 2
    good = OptimalGaussian(example, epsilon=0.5, delta=1e-3).noise_cov
    assert mahalanobis_sq(MU1 - MU2, SIGMA + good / 2) > r2  # the twin is really broken
    _patched(monkeypatch, (good / 2, "optimal"))
    mech = OptimalGaussian(example, epsilon=0.5, delta=1e-3)
    assert mech.repair > 0
    assert mahalanobis_sq(MU1 - MU2, SIGMA + mech.noise_cov) <= r2
    assert mech.trace <= np.trace(DauM(example, epsilon=0.5, delta=1e-3).noise_cov)


def test_wasteful_solver_result_is_replaced(example, monkeypatch):
    _patched(monkeypatch, (1e6 * np.eye(2), "optimal"))
    mech = OptimalGaussian(example, epsilon=0.5, delta=1e-3)
    assert mech.source == "DauM" and "more trace than DauM" in mech.fallback_reason


# -- bad input -----------------------------------------------------------------------------------------


def test_bad_inputs(example):
    with pytest.raises(bp.ValidationError, match=r"solver must be None or the name of an installed cvxpy solver .*got 'NOPE'"):
        OptimalGaussian(example, epsilon=1.0, delta=1e-3, solver="NOPE")
    with pytest.raises(bp.ValidationError, match="solver must be"):
        OptimalGaussian(example, epsilon=1.0, delta=1e-3, solver=3)
    with pytest.raises(bp.ValidationError, match=r"delta must be in the open interval \(0, 1\); got 0"):
        OptimalGaussian(example, epsilon=1.0, delta=0)
    with pytest.raises(bp.ParameterTypeError, match="calibration must be a bayespriv Calibration"):
        OptimalGaussian(None, epsilon=1.0, delta=1e-3)
    with pytest.raises(bp.ValidationError, match="gaussian_calibration must be one of"):
        OptimalGaussian(example, epsilon=1.0, delta=1e-3, gaussian_calibration="rdp")


# -- unequal covariances ---------------------------------------------------------------------------


def test_unequal_covariances_scale_the_least_trace_shape():
    """Exact moments whose covariances differ: the default scales the least-trace S of the
    equal-covariance program until the exact privacy curve meets δ (checked with the
    privacy-loss module; half the noise fails); ``trace`` is the released noise's."""
    from bayespriv.privacy import privacy_loss

    a, b = bp.DistributionSecret("t", 1.0), bp.DistributionSecret("t", 2.0)
    d, ca, cb = np.array([1.0, 0.5]), np.array([[1.0, 0.2], [0.2, 0.5]]), np.array([[2.0, -0.1], [-0.1, 0.8]])
    cal = bp.Calibration.from_moments({a: d, b: np.zeros(2)}, {a: ca, b: cb}, bp.SecretPair(a, b))
    equal = OptimalGaussian(cal, epsilon=1.0, delta=1e-4, covariance="equal")
    mech = OptimalGaussian(cal, epsilon=1.0, delta=1e-4)
    assert mech.covariance_mode == "unequal" and "equal_covariance" not in mech.guarantee.assumptions
    S = mech.noise_cov
    assert mech.trace == pytest.approx(float(np.trace(S)), rel=1e-12)
    assert privacy_loss.gaussian_delta(1.0, d, ca + S, cb + S) <= 1e-4
    assert privacy_loss.gaussian_delta(1.0, d, ca + S / 2, cb + S / 2) > 1e-4
    if not any("widened" in n for n in mech.assumption_notes):
        np.testing.assert_allclose(S, mech.noise_scale_factor * equal.noise_cov, rtol=1e-10, atol=1e-14)


# -- closed form for one pair; S-procedure instead of 2^k corners -------------------------------------


def test_closed_form_equals_corner_sdp_and_is_certified():
    """One pair, exact moments, k ∈ {2..6}, random Σ (sometimes singular): the closed form
    (ddᵀ/r² − Σ)₊ has the trace of the corner SDP (Clarabel; relative tolerance 1e-5,
    the solver's accuracy, plus an absolute 1e-9 for zero optima), never exceeds it beyond that
    tolerance, and the mechanism meets Corollary A.1 by a direct solve."""
    rng = np.random.default_rng(11)
    a, b = bp.DistributionSecret("phi", 0.0), bp.DistributionSecret("phi", 1.0)
    n_noisy = 0
    for _ in range(25):
        k = int(rng.integers(2, 7))
        A = rng.standard_normal((k, k)) * rng.uniform(0.1, 2.0)
        if rng.random() < 0.2:
            A[:, 0] = 0.0
        cov = A @ A.T
        d = rng.standard_normal(k) * rng.uniform(0.5, 5.0)
        cal = bp.Calibration.from_moments({a: d, b: np.zeros(k)}, {a: cov, b: cov}, bp.SecretPair(a, b))
        eps = float(rng.uniform(0.3, 2.0))
        radius = gaussian_radius(eps, 1e-5)
        cons = cal.pair_constraints()
        closed, status = optimal_module._solve_sdp(cons, radius, "CLARABEL")
        assert status == optimal_module.CLOSED_FORM
        old, old_status = optimal_module._solve_sdp_corners(cons, radius, "CLARABEL")
        assert old_status.startswith("optimal")
        assert np.trace(closed) == pytest.approx(np.trace(old), rel=1e-5, abs=1e-9)
        mech = OptimalGaussian(cal, epsilon=eps, delta=1e-5)
        if mech.source != "noiseless":
            n_noisy += 1
            assert mech.source.startswith("closed form")
            assert mahalanobis_sq(d, cov + mech.noise_cov) <= radius**2
            assert mech.trace == pytest.approx(single_pair_optimum(d, cov, radius**2), rel=1e-6)
    assert n_noisy >= 15


def _sampled(rng: np.random.Generator, k: int, n: int = 400) -> bp.Calibration:
    A = rng.standard_normal((k, k))
    chol = np.linalg.cholesky(A @ A.T + 0.2 * np.eye(k))
    samples = np.stack([rng.standard_normal((n, k)) @ chol.T + rng.normal(0, 0.5, k) for _ in SECRETS])
    return calibration_from_samples(samples, SECRETS, PAIRS, None, confidence=0.95)


def _violates_some_corner(cal: bp.Calibration, S: np.ndarray, r2: float) -> bool:
    return any(mahalanobis_sq(d, _cov_lower(cal, p) + S) > r2 for p in PAIRS for d in _corners(cal, p))


@pytest.mark.slow
def test_sprocedure_is_a_conservative_relaxation_of_the_corners():
    """Sampled bounds (k ∈ {2..5}, three pairs): the S-procedure SDP's S, before any certification
    or repair, meets the condition at every corner (direct solve, relative slack 1e-7 for the
    solver's accuracy) and has at least the corner SDP's trace (it is a relaxation; rel 1e-6).
    Twin: the same program with the box dropped (half widths 0) violates some corner."""
    rng = np.random.default_rng(5)
    r2 = gaussian_radius(1.0, 1e-5) ** 2
    caught = 0
    for _ in range(8):
        cal = _sampled(rng, int(rng.integers(2, 6)))
        cons = cal.pair_constraints()
        assert cons.half_width.min() > 0
        new, status = optimal_module._solve_sdp(cons, gaussian_radius(1.0, 1e-5), "CLARABEL")
        old, _ = optimal_module._solve_sdp_corners(cons, gaussian_radius(1.0, 1e-5), "CLARABEL")
        assert status.startswith("optimal")
        assert not _violates_some_corner(cal, new, r2 * (1 + 1e-7))
        assert np.trace(new) >= np.trace(old) * (1 - 1e-6)
        no_box = dataclasses.replace(cons, half_width=np.zeros_like(cons.half_width))
        broken, _ = optimal_module._solve_sdp(no_box, gaussian_radius(1.0, 1e-5), "CLARABEL")
        caught += _violates_some_corner(cal, broken, r2)
    assert caught == 8


def test_sampled_k12_uses_one_sdp_and_holds_at_every_corner():
    """k = 12 sampled bounds (2^12 corners per pair): one SDP, the
    released noise meets the condition at all 3 × 4096 corners (vectorized direct check)."""
    rng = np.random.default_rng(3)
    cal = _sampled(rng, 12, n=3000)
    mech = OptimalGaussian(cal, epsilon=1.0, delta=1e-5, accountant="gaussian")  # the SDP on the corners
    r2 = gaussian_radius(1.0, 1e-5) ** 2
    assert mech.source.startswith("solver"), (mech.source, mech.fallback_reason)
    for p in PAIRS:
        M = _cov_lower(cal, p) + mech.noise_cov
        corners = np.array(_corners(cal, p))
        assert np.linalg.eigvalsh(M).min() > 0
        assert np.einsum("ck,ck->c", corners, np.linalg.solve(M, corners.T).T).max() <= r2


def test_polynomial_box_bound_is_sound_and_close():
    """``box_mahalanobis_sq_bound`` (no corners) is ≥ the corner maximum of
    ``PairConstraints.mahalanobis_sq`` (deterministic bound: relative slack 1e-10 for rounding),
    equal to it for exact differences, and at most 1.6× it on these sampled boxes (k ∈ {2..8};
    measured median 1.0004, max 1.065 since it keeps the smaller of the dual (S-procedure) and
    coarse bounds; the coarse bound alone measured median 1.16, max 1.51).
    Twin: the same bound without its quadratic term falls below the corner maximum somewhere."""
    rng = np.random.default_rng(9)
    below = 0
    for _ in range(12):
        k = int(rng.integers(2, 9))
        cal = _sampled(rng, k)
        cons = cal.pair_constraints()
        for S in (np.zeros((k, k)), OptimalGaussian(cal, epsilon=1.0, delta=1e-5, accountant="gaussian").noise_cov):
            corner = cons.mahalanobis_sq(S)
            bound = optimal_module.box_mahalanobis_sq_bound(cons, S)
            finite = np.isfinite(corner)
            assert np.all(bound[finite] >= corner[finite] * (1 - 1e-10))
            assert np.all(bound[finite] <= corner[finite] * 1.6)  # measured: median 1.0004, max 1.065
            exact = dataclasses.replace(cons, half_width=np.zeros_like(cons.half_width))
            np.testing.assert_allclose(optimal_module.box_mahalanobis_sq_bound(exact, S)[finite],
                                       exact.mahalanobis_sq(S)[finite], rtol=1e-9)
        # twin (S = 0, one route): drop vᵀGv, the part that is not a supremum of a linear function
        C = cons.cov_common
        corner = cons.mahalanobis_sq(np.zeros((k, k)))
        no_quad = np.array([cons.diff[i] @ np.linalg.solve(C[i], cons.diff[i])
                            + 2 * np.abs(cons.half_width[i] * np.linalg.solve(C[i], cons.diff[i])).sum()
                            for i in range(len(cons))])
        below += int(np.any(no_quad < corner * (1 - 1e-10)))
    assert below >= 10


def test_structured_interior_point_matches_clarabel_and_holds_at_every_corner():
    """The structured interior point used beyond 12 uncertain components (``_solve_structured``),
    here on small random S-procedure programs (k ∈ {3..6}, 1–3 constraints, one of them sometimes
    with an exact difference): its S meets ``dᵀ(C_i + S)⁻¹d ≤ 1`` at every corner d = g_i + H_i v
    (brute force; relative slack 1e-9 for rounding: its iterates are strictly feasible), and its
    trace equals Clarabel's on the same program (cvxpy, reduced LMI) to 1e-6 relative.
    Deterministic (no sampling). Twin: the same solver with the boxes dropped violates a corner."""
    import cvxpy as cp

    rng = np.random.default_rng(11)
    caught = boxed = 0
    for trial in range(6):
        k, m = int(rng.integers(3, 7)), int(rng.integers(1, 4))
        A = rng.standard_normal((m, k, k)) / np.sqrt(k)
        Cs = [a @ a.T * 0.3 for a in A]
        gs = [rng.standard_normal(k) * 1.5 for _ in range(m)]
        hs = [np.abs(rng.standard_normal(k)) * 0.3 * (i > 0 or trial % 2 == 0) for i in range(m)]
        w = rng.uniform(0.5, 1.0, k)
        S, status = optimal_module._solve_structured(Cs, gs, hs, w, np.ones(k))
        assert status.startswith("optimal"), status
        X = cp.Variable((k, k), PSD=True)
        cons = [c for C, g, h in zip(Cs, gs, hs) for c in (
            optimal_module._reduced_sprocedure_lmi(cp, X, C, g, h) if h.any()
            else [optimal_module._sprocedure_lmi(cp, X, C, g, h)])]
        cp.Problem(cp.Minimize(w @ cp.diag(X)), cons).solve(solver="CLARABEL")
        assert w @ np.diag(S) == pytest.approx(w @ np.diag(X.value), rel=1e-6)

        def violates(S, slack):
            for C, g, h in zip(Cs, gs, hs):
                for v in itertools.product((-1.0, 1.0), repeat=k):
                    d = g + h * np.array(v)
                    if mahalanobis_sq(d, C + S) > slack:
                        return True
            return False

        assert not violates(S, 1 + 1e-9)
        broken, _ = optimal_module._solve_structured(Cs, gs, [np.zeros(k)] * m, w, np.ones(k))
        if any(h.any() for h in hs):
            boxed += 1
            caught += violates(broken, 1.0)
    assert boxed >= 4 and caught == boxed


def test_sampled_k14_uses_the_structured_interior_point_and_holds_at_every_corner():
    """k = 14 sampled bounds (beyond the 12 enumerable components): the SDP goes through the
    structured interior point, needs no repair, and the released noise meets the condition at all
    3 × 16384 corners (vectorized direct check, independent of the library's certificate)."""
    rng = np.random.default_rng(14)
    cal = _sampled(rng, 14, n=3000)
    mech = OptimalGaussian(cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
    r2 = gaussian_radius(1.0, 1e-5) ** 2
    assert mech.source == "solver", (mech.source, mech.fallback_reason)
    assert "structured interior point" in mech.solver_status
    for p in PAIRS:
        M = _cov_lower(cal, p) + mech.noise_cov
        corners = np.array(_corners(cal, p))
        assert np.einsum("ck,ck->c", corners, np.linalg.solve(M, corners.T).T).max() <= r2
