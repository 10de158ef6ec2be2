"""Exact privacy curves of Gaussians with unequal covariances (``mechanisms/privacy_loss.py``).

Independent computations:

* one dimension: mpmath quadrature (25 digits) of ``(p_a − e^ε p_b)₊`` between
  roots found by mpmath itself; agreement to 1e-9 relative, and the library's
  value must not be below it (it is an upper bound);
* three dimensions: 10⁷ Monte-Carlo draws of the privacy loss under each law,
  computed in the original coordinates with a Cholesky factor (no whitening,
  no eigen-decomposition), δ = E_a[(1 − e^{ε−L})₊] and E_b[(1 − e^{ε+L})₊].
  The tolerance is the empirical-Bernstein bound (Maurer & Pontil 2009) for
  variables in [0, 1], Bonferroni over every ε and both directions, with total
  false-failure probability α = 1e-6 for any seed;
* box rule: brute-force search of the box (grid in one dimension; random
  extreme points plus hill climbing in two), checked with the library's
  *lower* bounds of δ so that numerical slack cannot hide a violation.

Twins: half the calibrated noise is caught by the same checks that pass the
calibrated scale; a calibration that ignores the box is caught by the
brute-force search of the box.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayespriv.errors import ValidationError
from bayespriv.privacy import loss_inversion
from bayespriv.privacy import privacy_loss as pl
from bayespriv.privacy.analytic_gaussian import analytic_gaussian_log_delta, gaussian_radius

from tests._gaussian_oracles import two_sided_delta as mp_delta

EPS_GRID = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.5, 5.0, 7.5, 10.0]
ONE_DIM = [(1.0, 30.63, 6.63), (0.3, 1.0, 0.7), (0.0, 2.0, 1.0), (5.0, 0.2, 0.25)]
ALPHA = 1e-6


# ---------------------------------------------------------------------------- 1-D against mpmath
@pytest.mark.slow
@pytest.mark.parametrize("mu,va,vb", ONE_DIM)
def test_one_dimension_matches_mpmath_to_1e9(mu, va, vb):
    curve = pl.gaussian_privacy_curve(EPS_GRID, [mu], [[va]], [[vb]])
    for eps, ours in zip(EPS_GRID, curve):
        ref = mp_delta(eps, mu, va, vb)
        assert ours >= ref * (1 - 1e-13), (eps, ours, ref)  # an upper bound
        assert abs(ours - ref) <= 1e-9 * ref + 1e-300, (eps, ours, ref)


def test_equal_covariance_noise_on_variances_1_and_25_gives_delta_0_24():
    """N(0, 1 + 5.63) vs N(1, 25 + 5.63): APGM's σ² under equal covariance."""
    ours = pl.gaussian_delta(1.0, [1.0], [[30.63]], [[6.63]])
    ref = mp_delta(1.0, 1.0, 30.63, 6.63)
    assert abs(ours - ref) <= 1e-9 * ref
    assert round(ref, 2) == 0.24 and 0.2415 < ref < 0.2416


@pytest.mark.slow
def test_curve_equals_pointwise_values():
    """One inversion plan for the whole grid vs one per ε: both brackets hold the
    same exact value, so they overlap, and each is narrower than 1e-5."""
    args = ([0.5, 0.2], np.diag([1.5, 0.8]), np.eye(2))
    lo, up = pl.gaussian_delta_bounds(EPS_GRID[:4], *args)
    for e, l_all, u_all in zip(EPS_GRID[:4], lo, up):
        l_one, u_one = (x[0] for x in pl.gaussian_delta_bounds([e], *args))
        assert max(l_all, l_one) <= min(u_all, u_one) and u_all - l_all < 1e-5 and u_one - l_one < 1e-5
    assert np.array_equal(pl.gaussian_privacy_curve(EPS_GRID[:4], *args), up)


# ------------------------------------------------------------------------ special structure
@pytest.mark.parametrize("k", [1, 3])
def test_equal_covariance_reduces_to_analytic_gaussian(k):
    rng = np.random.default_rng(k)
    m = rng.normal(size=(k, k))
    cov = m @ m.T + 0.5 * np.eye(k)
    d = rng.normal(size=k)
    r = math.sqrt(d @ np.linalg.solve(cov, d))
    for eps in EPS_GRID:
        ours = pl.gaussian_delta(eps, d, cov, cov)
        ref = math.exp(analytic_gaussian_log_delta(eps, r))
        assert ours >= ref * (1 - 1e-12) and abs(ours - ref) <= 1e-9 * ref


def test_supports():
    sing = np.diag([1.0, 0.0])
    # same support: the second coordinate is a point mass at 0 under both laws
    assert pl.gaussian_delta(1.0, [1.0, 0.0], sing, 2 * sing) == pytest.approx(pl.gaussian_delta(1.0, [1.0], [[1.0]], [[2.0]]), rel=1e-12)
    assert pl.gaussian_delta(1.0, [1.0, 0.3], sing, sing) == 1.0  # mean leaves the common support
    assert pl.gaussian_delta(1.0, [0.0, 0.0], sing, np.eye(2)) == 1.0  # ranges differ
    assert pl.gaussian_delta(1.0, [0.0, 0.0], np.zeros((2, 2)), np.zeros((2, 2))) == 0.0
    assert pl.gaussian_delta(0.5, [0.0], [[1.0]], [[1.0]]) == 0.0


def test_validation_names_the_parameter():
    with pytest.raises(ValidationError, match="cov_a"):
        pl.gaussian_delta(1.0, [0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]], np.eye(2))
    with pytest.raises(ValidationError, match="epsilon"):
        pl.gaussian_delta(-1.0, [0.0], [[1.0]], [[1.0]])
    with pytest.raises(ValidationError, match="eta_a"):
        pl.PairBox([0.0], [0.1], [[1.0]], [[1.0]], 1.2, 0.1)
    with pytest.raises(ValidationError, match="noise_shape"):
        pl.scale_for_delta(1.0, 1e-3, np.diag([1.0, 0.0]), [([0.0, 1.0], np.eye(2), np.eye(2))])


# --------------------------------------------------------------------------- Monte Carlo 3-D
A3 = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]])
B3 = 1.2 * np.eye(3) + 0.1
D3 = np.array([0.5, -0.3, 0.8])
N_DRAWS = 10_000_000


def _loss(x: np.ndarray, d, a, b) -> np.ndarray:
    """log N(x; d, a) − log N(x; 0, b) for the rows of x, from the two densities'
    inverses (no whitening, no eigen-decomposition)."""
    ia, ib = np.linalg.inv(a), np.linalg.inv(b)
    const = 0.5 * (np.linalg.slogdet(b)[1] - np.linalg.slogdet(a)[1]) - 0.5 * d @ ia @ d
    q, h = 0.5 * (ib - ia), ia @ d
    return np.einsum("ni,ij,nj->n", x, q, x, optimize=True) + x @ h + const


def mc_delta(eps, d, a, b, rng, n=N_DRAWS, chunk=1_000_000):
    """Monte-Carlo δ(ε) (max of both directions) with an empirical-Bernstein
    half-width at confidence 1 − α (Bonferroni over ε and directions)."""
    eps = np.asarray(eps, dtype=float)
    sums = {s: np.zeros((2, eps.size)) for s in ("a", "b")}
    for side, mean, cov, sgn in (("a", d, a, 1.0), ("b", np.zeros_like(d), b, -1.0)):
        ch = np.linalg.cholesky(cov)
        for _ in range(n // chunk):
            x = mean + rng.standard_normal((chunk, d.size)) @ ch.T
            loss = sgn * _loss(x, d, a, b)  # log-likelihood ratio of the drawing law
            for j, e in enumerate(eps):  # g = (1 − e^{ε − L})₊, nonzero only where L > ε
                g = -np.expm1(e - loss[loss > e])
                sums[side][:, j] += (g.sum(), (g * g).sum())
    log_term = math.log(2 * 2 * eps.size / ALPHA)
    est, half = [], []
    for side in ("a", "b"):
        m = sums[side][0] / n
        var = np.maximum(sums[side][1] / n - m * m, 0.0) * n / (n - 1)
        est.append(m)
        half.append(np.sqrt(2 * var * log_term / n) + 7 * log_term / (3 * (n - 1)))
    est, half = np.array(est), np.array(half)
    return est.max(axis=0), half.max(axis=0)


SHAPE3 = np.diag([1.0, 2.0, 0.5])


@pytest.mark.slow
def test_three_dimensions_curve_and_calibration_within_monte_carlo_error():
    """At the scale calibrated for (ε, δ) = (1, 1e-3) with noise shape diag(1, 2, 0.5): the
    curve's bracket agrees with 10⁷ Monte-Carlo draws per law over ε ∈ [0.05, 10], and the
    draws confirm δ(1) ≤ 1e-3. α = 1e-6 (empirical Bernstein, Bonferroni over 6 ε × 2 directions)."""
    c = pl.scale_for_delta(1.0, 1e-3, SHAPE3, [(D3, A3, B3)])
    a, b = A3 + c * SHAPE3, B3 + c * SHAPE3
    eps = np.array([0.05, 0.5, 1.0, 2.0, 5.0, 10.0])
    lo, up = pl.gaussian_delta_bounds(eps, D3, a, b)
    assert np.all(up - lo <= 1e-6)
    # the calibration's own check (one ε) meets δ; the grid's plan bounds it within 1e-12
    assert pl.gaussian_delta(1.0, D3, a, b) <= 1e-3 and up[2] <= 1e-3 + 1e-12
    est, half = mc_delta(eps, D3, a, b, np.random.default_rng(20261124))
    assert np.all(est - half <= up) and np.all(est + half >= lo), (est, half, lo, up)
    assert est[2] - half[2] <= 1e-3


#: Two 3-D Gaussians (the hospital's stacked averages, 1000 draws per secret, no noise) for which a single
#: point ε = 1 needs a longer span than the interval [ε, ε + 1] the node budget was checked on.
D_LADDER = np.array([0.9472277794816648, 0.2523100301471146, 5.470505946334470e-04])
A_LADDER = np.array([[6.933367309409512, -9.105435068382498e-03, -6.520078242652663e-03],
                     [-9.105435068382498e-03, 0.1921986878006571, -5.549877830044583e-04],
                     [-6.520078242652663e-03, -5.549877830044583e-04, 4.793251682115661e-03]])
B_LADDER = np.array([[7.2002180183927367, -7.7928651723176381e-02, -1.6367818010693474e-04],
                     [-7.7928651723176381e-02, 0.17397337096082044, 1.7058264540017532e-04],
                     [-1.6367818010693474e-04, 1.7058264540017532e-04, 5.0016348296875309e-03]])


def test_inversion_uses_the_grid_whose_node_budget_was_checked():
    """The inversion evaluates each tail on the grid of the interval it checked (not of the points alone,
    whose span, rounded up on a 1.5× ladder, may need more nodes: these laws raised a TypeError), and the
    value agrees with 2·10⁶ Monte-Carlo draws per law (α = 1e-6, empirical Bernstein)."""
    lo, up = pl.gaussian_delta_bounds([1.0], D_LADDER, A_LADDER, B_LADDER)
    assert pl.gaussian_delta(1.0, D_LADDER, A_LADDER, B_LADDER) == pytest.approx(up[0], rel=1e-12)
    est, half = mc_delta(np.array([1.0]), D_LADDER, A_LADDER, B_LADDER, np.random.default_rng(3), n=2_000_000)
    assert est[0] - half[0] <= up[0] and est[0] + half[0] >= lo[0], (est, half, lo, up)


@pytest.mark.slow
def test_three_dimension_half_noise_twin_is_caught():
    """Half the calibrated scale: 2·10⁶ draws per law show δ(1) > 1e-3 (α = 1e-6)."""
    c = pl.scale_for_delta(1.0, 1e-3, SHAPE3, [(D3, A3, B3)])
    est, half = mc_delta(np.array([1.0]), D3, A3 + c / 2 * SHAPE3, B3 + c / 2 * SHAPE3,
                         np.random.default_rng(7), n=2_000_000)
    assert est[0] - half[0] > 1e-3


# --------------------------------------------------------------------------------- calibration
def test_one_dimension_scale_meets_delta_and_half_is_caught():
    """Means 0 vs 1, variances 1 vs 25, ε = 1, δ = 1e-3: by mpmath the scale meets δ, tightly; half of it does not."""
    c = pl.scale_for_delta(1.0, 1e-3, [[1.0]], [([1.0], [[1.0]], [[25.0]])])

    def meets(scale):
        return mp_delta(1.0, 1.0, 1.0 + scale, 25.0 + scale) <= 1e-3

    assert meets(c)
    assert not meets(c / 2)
    assert not meets(c * (1 - 1e-7))  # tight: the bracket is 1e-9 wide


def test_scale_with_equal_covariances_is_the_analytic_gaussian():
    r = gaussian_radius(1.0, 1e-5)
    c = pl.scale_for_delta(1.0, 1e-5, [[1.0]], [([2.0], [[0.0]], [[0.0]])])
    assert c == pytest.approx(4.0 / r**2, rel=1e-8) and c >= 4.0 / r**2 * (1 - 1e-12)


def test_worst_delta_names_the_worst_pair():
    pairs = [([0.1], [[1.0]], [[1.0]]), ([1.0], [[1.0]], [[3.0]]), ([0.5], [[1.0]], [[1.0]])]
    value, i = pl.worst_delta(1.0, pairs)
    assert i == 1 and value == pl.gaussian_delta(1.0, *pairs[1])
    assert pl.scale_for_delta(1.0, 1e-3, [[1.0]], pairs) == pl.scale_for_delta(1.0, 1e-3, [[1.0]], [pairs[1]])


# ------------------------------------------------------------------------------------- boxes
BOX_1D = [([1.0], [0.1], [[1.0]], [[25.0]], 0.2, 0.3), ([0.5], [0.05], [[2.0]], [[1.5]], 0.4, 0.1),
          ([0.2], [0.0], [[1.0]], [[1.0]], 0.3, 0.3)]


def _grid_max_lower(eps, bx, s):
    la, ua, lb, ub = (float(m[0, 0]) for m in bx.bounds())
    best = 0.0
    for d in np.linspace(bx.diff[0] - bx.half_width[0], bx.diff[0] + bx.half_width[0], 5):
        for a in np.linspace(la, ua, 11):
            for b in np.linspace(lb, ub, 11):
                best = max(best, float(pl.gaussian_delta_bounds([eps], [d], [[a + s]], [[b + s]])[0][0]))
    return best


@pytest.mark.slow
@pytest.mark.parametrize("spec", BOX_1D)
def test_box_one_dimension_brute_force(spec):
    """The box rule dominates a 5×11×11 grid of the box at the calibrated scale;
    the twin (scale from the estimates only) is caught by the same grid."""
    bx = pl.PairBox(*spec)
    triple = (bx.diff, bx.cov_a, bx.cov_b)
    c = pl.scale_for_delta(1.0, 1e-3, [[1.0]], [triple], box=[bx])
    assert _grid_max_lower(1.0, bx, c) <= 1e-3
    c_point = pl.scale_for_delta(1.0, 1e-3, [[1.0]], [triple])
    assert c_point < c and _grid_max_lower(1.0, bx, c_point) > 1e-3


@pytest.mark.slow
def test_box_two_dimensions_brute_force(monkeypatch):
    """Random extreme points of the 2-D box plus hill climbing, at the calibrated
    scale, never exceed δ (library lower bounds); the point calibration is caught."""
    bx = pl.PairBox([0.8, -0.4], [0.05, 0.1], [[1.5, 0.4], [0.4, 1.0]], [[1.0, -0.2], [-0.2, 2.0]], 0.3, 0.25)
    shape = np.eye(2)
    c = pl.scale_for_delta(1.0, 1e-3, shape, [(bx.diff, bx.cov_a, bx.cov_b)], box=[bx])
    c_point = pl.scale_for_delta(1.0, 1e-3, shape, [(bx.diff, bx.cov_a, bx.cov_b)])
    monkeypatch.setattr(loss_inversion, "MAX_NODES", 2**12)  # cheaper, looser (still valid) brackets for the search
    rng = np.random.default_rng(3)
    assert _search_box(bx, c * shape, rng) <= 1e-3
    assert _search_box(bx, c_point * shape, rng) > 1e-3


def _in_box(lo, hi, angle, lam):
    w, v = np.linalg.eigh(hi - lo)
    root = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    return lo + root @ rot @ np.diag(np.clip(lam, 0, 1)) @ rot.T @ root


def _search_box(bx, noise, rng, n_random=10, n_climb=12):
    la, ua, lb, ub = bx.bounds()

    def lower(th):
        d = bx.diff + bx.half_width * np.clip(th[6:8], -1, 1)
        a, b = _in_box(la, ua, th[0], th[2:4]), _in_box(lb, ub, th[1], th[4:6])
        return float(pl.gaussian_delta_bounds([1.0], d, a + noise, b + noise)[0][0])

    thetas = [np.concatenate([rng.uniform(0, np.pi, 2), rng.choice([0.0, 1.0], 4), rng.choice([-1.0, 1.0], 2)])
              for _ in range(n_random)]
    vals = [lower(t) for t in thetas]
    best, bt = max(vals), thetas[int(np.argmax(vals))]
    for i in range(n_climb):
        th = bt + rng.normal(size=8) * 0.3 / (1 + i // 8)
        v = lower(th)
        if v > best:
            best, bt = v, th
    return best


def test_unequal_box_beyond_twelve_uncertain_components_says_what_to_do():
    k = 13
    box = pl.PairBox(np.ones(k), np.full(k, 0.1), np.eye(k), 2 * np.eye(k), 0.1, 0.1)
    with pytest.raises(ValidationError, match=r"at most 12 uncertain components .*got 13.*from_moments.*covariance='equal'"):
        box.corners()


# ----------------------------------------------------------------------- the screens of the search
def _random_pairs(seed: int, count: int):
    """Unequal-covariance pairs in 1–5 dimensions, with noise from 0.5 to 20 times F's own scale."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = int(rng.integers(1, 6))
        a, b = (m @ m.T * 0.1 + np.eye(k) for m in rng.normal(size=(2, k, k)))
        noise = np.eye(k) * rng.uniform(0.5, 20.0)
        out.append((rng.normal(size=k) * rng.uniform(0.2, 4.0), a + noise, b + noise))
    return out


@pytest.mark.parametrize("eps", [0.25, 1.0, 3.0])
def test_split_screen_never_falls_below_the_exact_delta(eps):
    """The closed-form screen of scale_for_delta is an upper bound of δ, checked against the inversion's
    *lower* bound (an independent computation), in every regime."""
    for d, a, b in _random_pairs(11, 40):
        assert pl.split_delta(eps, d, a, b) >= float(pl.gaussian_delta_bounds([eps], d, a, b)[0][0])


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-3), (0.25, 1e-5), (3.0, 1e-6)])
def test_split_screen_passes_within_a_fifth_of_the_exact_noise_where_noise_dominates(eps, delta):
    """Where the calibrated noise variance is at least 50 times F's own scale (the regime of the mechanisms'
    searches), the screen alone would meet δ at a noise scale at most 1.2× the exact one: close enough to
    spare the search most inversions. (Nearer F's scale it is looser, up to ~4×; the search then inverts.)"""
    rng = np.random.default_rng(14)
    checked = 0
    while checked < 8:
        k = int(rng.integers(1, 6))
        a, b = (m @ m.T * 0.1 + np.eye(k) for m in rng.normal(size=(2, k, k)))
        d = rng.normal(size=k) * rng.uniform(2.0, 8.0)
        exact = pl.scale_for_delta(eps, delta, np.eye(k), [(d, a, b)])
        if exact < 50.0:
            continue
        checked += 1
        assert pl.split_delta(eps, d, a + 1.2 * exact * np.eye(k), b + 1.2 * exact * np.eye(k)) <= delta


def test_split_screen_twin_without_the_covariance_term_is_caught():
    """Dropping the covariance change (the mean-shift term alone, the equal-covariance formula) falls below
    the exact δ of some unequal pair: the check above would catch such a screen."""
    from bayespriv.privacy.hockey_stick import _analytic_delta
    from bayespriv.privacy.loss_reduction import canonical

    below = 0
    for d, a, b in _random_pairs(12, 40):
        c = canonical(d, a, b)
        broken = max(_analytic_delta(1.0, float(np.linalg.norm(x.mu / np.sqrt(x.d)))) for x in (c, c.reverse()))
        below += broken < float(pl.gaussian_delta_bounds([1.0], d, a, b)[0][0])
    assert below >= 5


def test_chernoff_on_a_grid_is_valid_and_close_to_the_exact_minimum():
    """The grid minimum of the Chernoff exponent is never below the continuous minimum (any s gives a bound)
    and within 1e-3 of it in the log (scipy's bounded Brent search, to 1e-12, as the independent reference)."""
    from scipy.optimize import minimize_scalar

    from bayespriv.privacy.loss_reduction import canonical, loss_quadratic

    for d, a, b in _random_pairs(13, 15):
        q = loss_quadratic(canonical(d, a, b), under_a=True)
        for x, upper in ((q.mean + 3 * q.sd, True), (q.mean - 3 * q.sd, False)):
            pos, neg = q.alpha[q.alpha > 0], q.alpha[q.alpha < 0]
            end = (1 / (2 * pos.max()) if pos.size else 1e6) if upper else -(1 / (2 * -neg.min()) if neg.size else 1e6)
            bounds = (0.0, end * (1 - 1e-12)) if upper else (end * (1 - 1e-12), 0.0)
            ref = minimize_scalar(lambda s: q.log_mgf_many(np.array([s]))[0] - s * x, bounds=bounds, method="bounded",
                                  options={"xatol": 1e-12 * abs(end)}).fun
            got = math.log(q.chernoff(x, upper))
            assert got >= min(ref, 0.0) - 1e-9
            assert got <= min(ref, 0.0) + 1e-3
