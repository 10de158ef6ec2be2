"""Every Gaussian mechanism at extreme (ε, δ): it builds, states exactly the (ε, δ) asked, and
its noise — the grid release, discretisation included — meets δ against an independent
50-digit mpmath reference.

Grid: ε ∈ {0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 35, 50} × δ ∈ {1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1},
k ∈ {1, 3}, for APGM, ExpM(G), DirM(G), EigM, DauM, OptimalGaussian and GroupDP(G). The
calibrations are exact (``Calibration.from_moments``), two secrets with equal covariances
Σ = 0.2·I + 0.05 and means 0 and 0.5·1, queries means of columns bounded in [0, 1] over 50
records. For each cell the reference computes, independently of bayespriv:

* the worst pair's distance r: the Mahalanobis distance of the mean difference under Σ + S
  (S = ``noise_cov``, read as the exact rationals its floats are; 50-digit LU solve), or for
  GroupDP, whose guarantee is differential privacy for groups of all 50 records, the group L2
  sensitivity √k (50 · 1/50 per component) over σ;
* δ_continuous = Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r) (Balle & Wang 2018, Theorem 8), the exact δ
  of two Gaussians with covariance Σ + S whose means are r apart;
* τ: the total-variation bound of the exact sampler, from its theorem (exact_noise.
  gaussian_tv_bound, un-simplified: exact cut A, exact normal tails) at each coordinate's
  ⌊σ_c⌋ = isqrt(σ_c²) grid steps of the mechanism's plan, summed over coordinates;

and checks δ_continuous + (1 + e^ε)·τ ≤ δ exactly (the grid release is within TV τ of a
post-processing of the continuous mechanism: exact_noise.delta_with_discretization), the
plan's grid against the documented rule, and the library's own τ against the reference τ.
The twin test shrinks the noise (σ × 0.9, i.e. S × 0.81) at each mechanism's tightest cells
and the same check rejects it. Nothing is random: no α.
"""

from __future__ import annotations

import functools
import math
import warnings

import mpmath
import numpy as np
import pytest

import bayespriv as bp
from bayespriv import mechanisms as M

EPSILONS = (0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 35, 50)
DELTAS = (1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1)
KS = (1, 3)
N_RECORDS = 50
DPS = 50
A = bp.DistributionSecret("p", 0.3)
B = bp.DistributionSecret("p", 0.7)

MECHANISMS = {
    "APGM": lambda cal, e, d: M.APGM(cal, epsilon=e, delta=d),
    "ExpM": lambda cal, e, d: M.ExpM(cal, epsilon=e, delta=d, noise="gaussian"),
    "DirM": lambda cal, e, d: M.DirM(cal, epsilon=e, delta=d, noise="gaussian"),
    "EigM": lambda cal, e, d: M.EigM(cal, epsilon=e, delta=d),
    "DauM": lambda cal, e, d: M.DauM(cal, epsilon=e, delta=d),
    "OptimalGaussian": lambda cal, e, d: M.OptimalGaussian(cal, epsilon=e, delta=d),
    "GroupDP": lambda cal, e, d: M.GroupDP(cal, epsilon=e, delta=d, noise="gaussian"),
}


def query_cov(k: int) -> np.ndarray:
    return np.eye(k) * 0.2 + 0.05


def mean_diff(k: int) -> np.ndarray:
    return np.full(k, 0.5)


@functools.lru_cache(maxsize=None)
def calibration(k: int) -> bp.Calibration:
    cols = "xyz"[:k]
    query = bp.stack(*[bp.mean(c, bounds=(0.0, 1.0)) for c in cols]) if k > 1 else bp.mean("x", bounds=(0.0, 1.0))
    return bp.Calibration.from_moments({A: np.zeros(k), B: mean_diff(k)}, {A: query_cov(k), B: query_cov(k)},
                                       [bp.SecretPair(A, B)], query=query, n_records=N_RECORDS)


@functools.lru_cache(maxsize=None)
def built(name: str, k: int) -> dict:
    """(ε, δ) → the mechanism, for every cell (built once, shared by the tests)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # assumption notes of from_moments calibrations; not under test here
        for e in EPSILONS:
            for d in DELTAS:
                mech = MECHANISMS[name](calibration(k), e, d)
                mech.guarantee  # noqa: B018 - computed (and checked) at construction
                out[(e, d)] = mech
    return out


# -- the reference (mpmath, independent of bayespriv) ------------------------------------------------


def reference_delta(epsilon: float, r: mpmath.mpf) -> mpmath.mpf:
    """Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r); 0 for r = 0 (identical laws)."""
    with mpmath.workdps(DPS):
        if r == 0:
            return mpmath.mpf(0)
        e = mpmath.mpf(epsilon)
        return mpmath.ncdf(r / 2 - e / r) - mpmath.exp(e) * mpmath.ncdf(-r / 2 - e / r)


def worst_distance(name: str, k: int, noise_cov: np.ndarray) -> mpmath.mpf:
    """The worst pair's distance for noise S (see the module docstring)."""
    with mpmath.workdps(DPS):
        if name == "GroupDP":  # DP for groups of all records: sensitivity 50 · (1 − 0)/50 per component
            var = mpmath.mpf(float(noise_cov[0, 0]))
            return mpmath.sqrt(mpmath.mpf(k) / var) if var > 0 else mpmath.inf
        sigma = query_cov(k)
        total = mpmath.matrix([[mpmath.mpf(float(sigma[i, j])) + mpmath.mpf(float(noise_cov[i, j])) for j in range(k)]
                               for i in range(k)])
        diff = mpmath.matrix([mpmath.mpf(float(v)) for v in mean_diff(k)])
        return mpmath.sqrt((diff.T * mpmath.lu_solve(total, diff))[0])


def tv_theorem(s: mpmath.mpf) -> mpmath.mpf:
    """The sampler theorem's bound (exact_noise.gaussian_tv_bound, un-simplified) at s ≥ 1 grid steps:
    1/(2√(2π)s) + ½[(2A + 1)/(24√(2π)s³) + 2Φ̄((A + ½)/s) + 2Φ̄(A/s) + 2q/(1 − q)],
    A = ⌈xs⌉, x = max(10, 2√(ln s)), q = exp(−2π²s²)."""
    with mpmath.workdps(DPS):
        x = max(mpmath.mpf(10), 2 * mpmath.sqrt(mpmath.log(s)))
        a = mpmath.ceil(x * s)
        root = mpmath.sqrt(2 * mpmath.pi)
        q = mpmath.exp(-2 * mpmath.pi**2 * s**2)
        core = (2 * a + 1) / (24 * root * s**3)
        tails = 2 * mpmath.ncdf(-(a + mpmath.mpf(1) / 2) / s) + 2 * mpmath.ncdf(-a / s)
        return 1 / (2 * root * s) + (core + tails + 2 * q / (1 - q)) / 2


def reference_tv(plan) -> mpmath.mpf:
    """Σ_c of :func:`tv_theorem` at ⌊σ_c⌋ = isqrt(σ_c²) grid steps (0 without noise)."""
    if plan is None:
        return mpmath.mpf(0)
    with mpmath.workdps(DPS):
        return mpmath.fsum(tv_theorem(mpmath.mpf(math.isqrt(s2))) for s2 in plan.sigma2_units if s2)


def grid_bits_rule(epsilon: float, delta: float, k: int) -> int:
    """min(1000, max(60, ⌈log2(200·(1 + e^ε)·k/δ)⌉)), the documented rule."""
    with mpmath.workdps(DPS):
        return min(1000, max(60, int(mpmath.ceil(mpmath.log(200 * (1 + mpmath.exp(epsilon)) * k / mpmath.mpf(delta), 2)))))


def delta_spent(name: str, k: int, epsilon: float, noise_cov: np.ndarray, tau: mpmath.mpf) -> mpmath.mpf:
    """δ_continuous(noise) + (1 + e^ε)·τ."""
    with mpmath.workdps(DPS):
        r = worst_distance(name, k, noise_cov)
        cont = mpmath.mpf(1) if r == mpmath.inf else reference_delta(epsilon, r)
        return cont + (1 + mpmath.exp(epsilon)) * tau


def meets(name: str, k: int, epsilon: float, delta: float, noise_cov: np.ndarray, tau: mpmath.mpf) -> bool:
    with mpmath.workdps(DPS):
        return delta_spent(name, k, epsilon, noise_cov, tau) <= mpmath.mpf(delta)


def plan_of(mech):
    return mech.__dict__["_noise_plan"]


# -- tests ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_every_cell_builds_states_the_request_and_meets_delta(name, k):
    for (e, d), mech in built(name, k).items():
        g = mech.guarantee
        assert (g.epsilon, g.delta) == (e, d), (name, k, e, d, g)
        plan = plan_of(mech)
        tau = reference_tv(plan)
        if plan is not None:
            bits = grid_bits_rule(e, d, k)
            assert plan.grid_bits == bits and min(v for v in plan.sigma2_units if v) >= 4**bits
            assert mpmath.mpf(plan.tv_bound) >= tau  # the library's τ is at least the theorem's
            with mpmath.workdps(DPS):
                assert (1 + mpmath.exp(e)) * tau <= mpmath.mpf(d) / 1000  # the grid costs at most δ/1000
        assert meets(name, k, e, d, mech.noise_cov, tau), (name, k, e, d, float(delta_spent(name, k, e, mech.noise_cov, tau) / d))


def test_group_dp_noise_is_tight():
    """GroupDP's σ is Δ/r*(ε, δ − reserve) with nothing else in the way. Its continuous mechanism
    has the budget δ − reserve, reserve = 1.001·(1 + e^ε)·k·τ(2^b) ≤ δ/1000 (the documented rule,
    recomputed here); 1e-6 less noise (σ/(1 + 1e-6)) already exceeds that budget in every cell,
    so the noise is within 1e-6 of the least that meets it."""
    for k in KS:
        for (e, d), mech in built("GroupDP", k).items():
            bits = grid_bits_rule(e, d, k)
            with mpmath.workdps(DPS):
                reserve = mpmath.mpf("1.001") * (1 + mpmath.exp(e)) * k * tv_theorem(mpmath.mpf(2) ** bits)
                assert reserve <= mpmath.mpf(d) / 1000
                r = worst_distance("GroupDP", k, mech.noise_cov / (1 + 1e-6) ** 2)
                assert reference_delta(e, r) > mpmath.mpf(d) - reserve, (k, e, d)


def tightest_cells(name: str, k: int) -> list[tuple[float, float]]:
    """The three cells where the mechanism's δ is most used, and every δ = 1e-15 cell where it uses
    at least half of δ (the extreme row; cells without noise, or whose noise is set by a looser
    criterion than this pair's δ, have nothing to shrink)."""
    use = {}
    for cell, mech in built(name, k).items():
        if plan_of(mech) is not None:
            e, d = cell
            with mpmath.workdps(DPS):
                use[cell] = float(delta_spent(name, k, e, mech.noise_cov, reference_tv(plan_of(mech))) / d)
    top = sorted(use, key=use.get, reverse=True)[:3]
    return top + [c for c in use if c[1] == min(DELTAS) and use[c] >= 0.5 and c not in top]


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_under_noised_twin_is_caught(name, k):
    """The same check rejects σ × 0.9 (S × 0.81) at the mechanism's tightest cells (for GroupDP
    that includes every ε at δ = 1e-15, up to ε = 50)."""
    cells = tightest_cells(name, k)
    assert len(cells) >= 3 and any(d == min(DELTAS) for _, d in cells)
    for e, d in cells:
        mech = built(name, k)[(e, d)]
        tau = reference_tv(plan_of(mech))
        assert meets(name, k, e, d, mech.noise_cov, tau)
        assert not meets(name, k, e, d, mech.noise_cov * 0.81, tau), (name, k, e, d)


def test_requests_below_the_exact_samplers_reserve_release():
    """(ε, δ) = (10, 1e-15), (20, 1e-12), (50, 1e-3): δ at or below the exact sampler's reserve still
    builds and releases a finite value on the grid."""
    for e, d in [(10, 1e-15), (20, 1e-12), (50, 1e-3), (50, 1e-15)]:
        mech = built("GroupDP", 3)[(e, d)]
        value = mech.release_value(np.array([0.1, 0.2, 0.3]), rng=1).value
        assert np.all(np.isfinite(value))
        assert plan_of(mech).grid_bits == grid_bits_rule(e, d, 3) > 60
