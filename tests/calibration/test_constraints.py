"""PairConstraints: the conservative per-(θ, pair) view used by Gaussian mechanisms.

Everything here is exact linear algebra, checked against independent
computations (eigenvalues of the differences, brute-force solves)."""

from __future__ import annotations

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import common_lower_bound


def _psd(rng, k):
    a = rng.normal(size=(k, k))
    return a @ a.T + 0.1 * np.eye(k)


@pytest.mark.parametrize("seed", range(20))
def test_common_lower_bound_is_below_both(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 5))
    a, b = _psd(rng, k), _psd(rng, k)
    c = common_lower_bound(a, b)
    assert np.linalg.eigvalsh(a - c).min() >= -1e-9
    assert np.linalg.eigvalsh(b - c).min() >= -1e-9
    np.testing.assert_allclose(common_lower_bound(a, a), a, atol=1e-10)
    # it is a maximal common lower bound along the difference's eigenbasis: the
    # gap to one of the two is zero on each eigenvector of A − B
    w, v = np.linalg.eigh(a - b)
    gaps = np.minimum(np.einsum("ki,kl,li->i", v, a - c, v), np.einsum("ki,kl,li->i", v, b - c, v))
    np.testing.assert_allclose(gaps, 0, atol=1e-9)


def test_exact_constraints_and_mahalanobis_against_solve():
    rng = np.random.default_rng(0)
    s = [bp.DatasetSecret.mean("x", v) for v in (0.0, 1.0, 2.0)]
    means = {x: rng.normal(size=3) for x in s}
    cov = _psd(rng, 3)
    cal = bp.Calibration.from_moments(means, {x: cov for x in s}, bp.all_pairs(s))
    cons = cal.pair_constraints()
    assert len(cons) == 3 and cons.exact_difference
    assert cons.corners().shape == (3, 1, 3)
    noise = np.diag([0.5, 0.1, 0.0])
    got = cons.mahalanobis_sq(noise)
    for i, p in enumerate(cal.pairs):
        d = means[p.a] - means[p.b]
        assert got[i] == pytest.approx(d @ np.linalg.solve(cov + noise, d), rel=1e-10)


def test_singular_direction_gives_infinite_distance():
    a, b = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
    cal = bp.Calibration.from_moments({a: [0.0, 0.0], b: [1.0, 0.0]}, {a: np.diag([0.0, 1.0]), b: np.diag([0.0, 1.0])},
                                      bp.SecretPair(a, b))
    cons = cal.pair_constraints()
    assert cons.mahalanobis_sq(np.zeros((2, 2)))[0] == np.inf
    assert cons.mahalanobis_sq(np.diag([4.0, 0.0]))[0] == pytest.approx(0.25)


def test_sampled_constraints_box_and_corners():
    model = bp.GaussianDataModel([0.0, 0.0, 0.0], [[1, .5, .2], [.5, 1, .1], [.2, .1, 1]], ["x", "y", "z"], 20)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0))
    cal = bp.calibrate(model, pair, bp.stack(bp.mean("y"), bp.mean("z")), n_draws=200, rng=4)
    cons = cal.pair_constraints()
    ia, ib = cal.index(pair.a), cal.index(pair.b)
    np.testing.assert_allclose(cons.diff[0], cal.mean_array[ia] - cal.mean_array[ib])
    np.testing.assert_allclose(cons.half_width[0], cal.z * (cal.mean_se[ia] + cal.mean_se[ib]))
    np.testing.assert_allclose(cons.cov_a[0], cal.cov_lower(pair.a))
    np.testing.assert_allclose(cons.upper[0], cal.difference(pair, bound=True))
    corners = cons.corners()
    assert corners.shape == (1, 4, 2)
    lo, hi = cons.diff[0] - cons.half_width[0], cons.diff[0] + cons.half_width[0]
    assert np.all(corners[0].min(axis=0) == pytest.approx(lo)) and np.all(corners[0].max(axis=0) == pytest.approx(hi))
    # the corner maximum dominates the value at any point of the box (convexity)
    S = np.eye(2) * 0.01
    inner = cons.diff[0] + cons.half_width[0] * np.random.default_rng(1).uniform(-1, 1, size=(500, 2))
    M = np.linalg.inv(cons.cov_common[0] + S)
    assert cons.mahalanobis_sq(S)[0] >= np.einsum("ni,ij,nj->n", inner, M, inner).max()
