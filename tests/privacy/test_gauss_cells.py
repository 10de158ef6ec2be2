"""Two-dimensional Gaussian kernel sums by cell expansions (``privacy/gauss_cells.py``), against direct sums.

Exact part: every sum the expansions keep (their error bound within TOLERANCE) equals Σ W φ(y − x) computed
directly in float64 (every point against every atom) within TOLERANCE relative — also when the expansion is cut
to a few terms, where many sums are marked for the direct route instead. Twin: with the remainder bound taken as
0 the cut expansion keeps sums that are off by far more than TOLERANCE, and the same check catches them.
In the importance sampler: an estimate through the expansions equals the direct blocks' to the float32
rounding of the direct kernels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayespriv.privacy import gauss_cells as G
from bayespriv.privacy import mixture_mc as MC
from bayespriv.privacy.accountant import GaussianNoise
from bayespriv.privacy.mixture_mc import WeightedAtoms, mixture_hockey


def _kernel(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """φ(y_j − x_i) of the standard two-dimensional Gaussian, (points, atoms), directly in float64."""
    d2 = ((y[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-0.5 * d2) / (2.0 * math.pi)


def _setting(seed: int):
    """Atoms of a correlated cloud plus a far cluster, three weight columns (one zero on half the atoms), and
    points from the cloud and some fourteen standard deviations away."""
    rng = np.random.default_rng(seed)
    x = np.vstack([rng.normal(size=(3000, 2)) @ np.array([[0.5, 0.1], [0.0, 0.3]]),
                   rng.normal(size=(20, 2)) * 0.2 + [4.0, 2.0]])
    w = rng.random((len(x), 3))
    w[: len(x) // 2, 2] = 0.0
    w /= w.sum(axis=0)
    y = np.vstack([rng.normal(size=(300, 2)) * 2.0, rng.normal(size=(40, 2)) * 0.3 + [-12.0, -8.0]])
    return x, w, y


def _relative_errors(x, w, y):
    cells = G.CellAtoms.of(x)
    log_sums, ok = cells.log_sums(y, cells.moments(w))
    direct = _kernel(y, x) @ w
    with np.errstate(divide="ignore"):
        log_err = np.abs(log_sums - np.log(direct))
    v = np.random.default_rng(5).random(len(y)) * (np.arange(len(y)) % 3 == 0)
    sums, good = cells.atom_sums(y, v)
    exact = _kernel(y, x).T @ v
    return log_err[ok], ok, np.abs(sums - exact)[good] / exact[good], good


def test_kept_sums_are_the_direct_sums_within_the_tolerance():
    log_err, ok, atom_err, good = _relative_errors(*_setting(1))
    assert ok.mean() > 0.8 and good.mean() > 0.9  # the expansions do the work
    assert np.max(log_err, initial=0.0) <= 1.01 * G.TOLERANCE
    assert np.max(atom_err, initial=0.0) <= 1.01 * G.TOLERANCE


def test_far_points_are_left_to_the_direct_sums():
    x, w, y = _setting(2)
    cells = G.CellAtoms.of(x)
    _, ok = cells.log_sums(y, cells.moments(w))
    assert not ok[-40:].any()  # fourteen standard deviations from every atom: beyond the expansion's reach


def test_a_cut_expansion_marks_what_it_cannot_keep(monkeypatch):
    monkeypatch.setattr(G, "TERMS", 10)
    log_err, ok, atom_err, good = _relative_errors(*_setting(3))
    assert 0 < ok.sum() < len(ok) and 0 < good.sum() < len(good)
    assert np.max(log_err, initial=0.0) <= 1.01 * G.TOLERANCE
    assert np.max(atom_err, initial=0.0) <= 1.01 * G.TOLERANCE


def test_twin_a_cut_expansion_without_its_remainder_bound_is_caught(monkeypatch):
    monkeypatch.setattr(G, "TERMS", 10)
    monkeypatch.setattr(G, "_remainder", lambda u0, u1, counts: np.zeros(np.broadcast(u0, counts).shape))
    log_err, ok, atom_err, good = _relative_errors(*_setting(3))
    assert np.max(log_err) > 100 * G.TOLERANCE and np.max(atom_err) > 5 * G.TOLERANCE


def test_the_cells_hold_their_atoms():
    x, _, _ = _setting(4)
    cells = G.CellAtoms.of(x)
    assert cells.counts.sum() == len(x) and cells.starts[0] == 0 and np.all(cells.counts > 0)
    cell_of = np.repeat(np.arange(len(cells.counts)), cells.counts)
    d = x[cells.order] - cells.centers[cell_of]
    assert np.all(np.abs(d) <= G.SIDE / 2 * (1 + 1e-12))
    assert np.allclose(cells.reach, np.maximum.reduceat(np.abs(d), cells.starts[:-1], axis=0))
    assert np.array_equal(np.sort(cells.order), np.arange(len(x)))


def test_only_two_dimensional_atoms_are_grouped():
    with pytest.raises(ValueError, match=r"two-dimensional atoms; got shape \(5, 3\)"):
        G.CellAtoms.of(np.zeros((5, 3)))


def test_a_column_of_zero_weights_is_minus_infinity_and_kept():
    x, _, y = _setting(5)
    w = np.column_stack([np.full(len(x), 1.0 / len(x)), np.zeros(len(x))])
    cells = G.CellAtoms.of(x)
    log_sums, ok = cells.log_sums(y[:50], cells.moments(w))
    assert np.all(log_sums[ok, 1] == -np.inf) and ok.any()


# ------------------------------------------------------------------------------- in the importance sampler
def _laws(seed: int, n: int):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, 2)) @ np.array([[1.0, 0.3], [0.0, 0.6]]) + [1.0, 0.5]
    b = rng.normal(size=(n, 2)) @ np.array([[1.0, 0.3], [0.0, 0.6]])
    w = np.full(n, 1.0 / n)
    return WeightedAtoms(a, w), WeightedAtoms(b, w)


@pytest.mark.parametrize("seed", [1, 2])
def test_an_estimate_through_the_expansions_is_the_direct_estimate(monkeypatch, seed):
    law_a, law_b = _laws(seed, 4000)
    noise = GaussianNoise(np.array([[9.0, 1.0], [1.0, 6.0]]))
    fast = mixture_hockey(law_a, law_b, noise, 1.0, seed=seed)
    monkeypatch.setattr(MC, "CELL_MIN_ATOMS", 10**9)
    direct = mixture_hockey(law_a, law_b, noise, 1.0, seed=seed)
    assert fast.value == pytest.approx(direct.value, rel=1e-5)
    assert fast.halves == pytest.approx(direct.halves, rel=1e-5)
    for got, want in ((fast.contributions.values_a, direct.contributions.values_a),
                      (fast.contributions.values_b, direct.contributions.values_b)):
        assert np.max(np.abs(got - want)) <= 1e-6 * max(want.max(), 1e-300)


def test_the_expansions_are_used_where_they_pay():
    law_a, _ = _laws(3, 4000)
    atoms = np.asarray(law_a.atoms)
    assert MC._cells_for(atoms / 3.0, False) is not None
    assert MC._cells_for(atoms * 10.0, False) is None  # wide against the noise: more cells × terms than atoms
    assert MC._cells_for(atoms[:1000] / 3.0, False) is None  # below CELL_MIN_ATOMS
    assert MC._cells_for(atoms / 3.0, True) is None  # Laplace noise


def test_points_and_atoms_beyond_the_reach_go_to_the_direct_blocks():
    x, w, y = _setting(6)
    cells = G.CellAtoms.of(x)
    law = MC._LawSums(x, w, False, MC._Scratch(), cells, cells.moments(w))
    chunk = law.at(y)
    assert 0 < chunk.expanded.sum() < len(y)
    direct = MC.Block.of(y, x, False)
    assert np.max(np.abs(chunk.log_mix - direct.log_mix(w))) <= 1e-5
    v = np.random.default_rng(7).random(len(y))
    want = direct.atom_sums(v)
    assert np.max(np.abs(chunk.atom_sums(v) - want)) <= 1e-5 * want.max()
