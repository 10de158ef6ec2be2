"""One-dimensional kernel sums by cell moments (``mechanisms/kernel_sums.py``), checked against the direct sums.

Exact part: both sums equal Σ w φ(y − x) computed directly (NumPy, every atom against every grid point) to an
absolute 1e-14 of the density's peak — the Taylor remainder is below 1e-13 relative and the FFT adds rounding of
that order. Twin: the expansion cut to two terms is caught (its error is far above that).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayespriv.privacy import kernel_sums as K


def _kernel(y: np.ndarray, x: np.ndarray, s: float, laplace: bool) -> np.ndarray:
    """φ(y_g − x_i), one row per grid point, computed directly."""
    d = y[:, None] - x[None, :]
    return np.exp(-np.abs(d) / s) / (2 * s) if laplace else np.exp(-0.5 * (d / s) ** 2) / (s * math.sqrt(2 * math.pi))


def _direct(y: np.ndarray, x: np.ndarray, w: np.ndarray, s: float, laplace: bool) -> np.ndarray:
    return _kernel(y, x, s, laplace) @ w


def _setting(seed: int, s: float, laplace: bool):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(0.0, 1.0, 700), rng.standard_t(3, 300), [25.0]])
    w = rng.random(x.size)
    w /= w.sum()
    reach = (40.0 if laplace else 12.0) * s
    h = s / 16
    lo = x.min() - reach
    size = int(math.ceil((x.max() + reach - lo) / h)) + 1
    return x, w, lo, h, size, lo + h * np.arange(size)


@pytest.mark.parametrize("laplace", [False, True])
@pytest.mark.parametrize("s", [0.05, 0.7, 3.0])
def test_grid_density_is_the_direct_sum(laplace, s):
    x, w, lo, h, size, y = _setting(1, s, laplace)
    fast = K.grid_density(lo, h, size, x, w, s, laplace)
    idx = np.linspace(0, size - 1, min(size, 3000)).astype(int)
    direct = _direct(y[idx], x, w, s, laplace)
    assert np.max(np.abs(fast[idx] - direct)) <= 1e-14 * direct.max() * 10


@pytest.mark.parametrize("laplace", [False, True])
@pytest.mark.parametrize("s", [0.05, 0.7, 3.0])
def test_atom_sums_are_the_direct_sums(laplace, s):
    x, w, lo, h, size, y = _setting(2, s, laplace)
    v = (np.random.default_rng(3).random(size) < 0.4) * h
    fast = K.atom_sums(lo, h, v, x, s, laplace)
    direct = np.array([_direct(y, np.array([xi]), np.array([1.0]), s, laplace) @ v for xi in x[:200]])
    assert np.max(np.abs(fast[:200] - direct)) <= 1e-13 * max(direct.max(), 1e-300)


def test_twin_two_terms_are_caught(monkeypatch):
    x, w, lo, h, size, y = _setting(4, 0.7, False)
    direct = _direct(y[::7], x, w, 0.7, False)
    monkeypatch.setattr(K, "_terms", lambda ratio: 2)
    K._kernel_spectra.cache_clear()
    try:
        cut = K.grid_density(lo, h, size, x, w, 0.7, False)[::7]
    finally:
        K._kernel_spectra.cache_clear()
    assert np.max(np.abs(cut - direct)) > 1e-6 * direct.max()


def test_terms_follow_the_grid_spacing():
    assert K._terms(1 / 16) < K._terms(1 / 8) < K._terms(1 / 4) <= K.TERMS
    with pytest.raises(ValueError, match="too coarse"):
        K._terms(2.0)


def test_atoms_outside_the_grid_are_refused():
    with pytest.raises(ValueError, match="within the grid"):
        K.grid_density(0.0, 0.1, 10, [5.0], [1.0], 1.0, False)


@pytest.mark.parametrize("laplace", [False, True])
def test_one_correlation_serves_several_atom_sets(laplace):
    """sums_at over two placements gives each set's atom_sums (the correlation with the kernels is shared), and a
    placement's density is grid_density."""
    x, w, lo, h, size, y = _setting(5, 0.7, laplace)
    v = (np.random.default_rng(6).random(size) < 0.3) * h
    first, second = x[: x.size // 2], x[x.size // 2:] + 0.01
    both = K.sums_at(v, K.place(lo, h, size, first, 0.7, laplace), K.place(lo, h, size, second, 0.7, laplace))
    assert np.array_equal(both[0], K.atom_sums(lo, h, v, first, 0.7, laplace))
    assert np.array_equal(both[1], K.atom_sums(lo, h, v, second, 0.7, laplace))
    placed = K.place(lo, h, size, x, 0.7, laplace)
    assert np.array_equal(placed.density(w), K.grid_density(lo, h, size, x, w, 0.7, laplace))


@pytest.mark.parametrize("s", [0.05, 0.7])
def test_sorted_atoms_sum_their_cells_by_segments_to_the_direct_sums(s):
    """Atoms in order (the accountant's distinct values) take the segment sums: the same density as the
    direct sum and as the same atoms unordered (per-cell bincount)."""
    x, w, lo, h, size, y = _setting(5, s, False)
    order = np.argsort(x)
    placed = K.place(lo, h, size, x[order], s, False)
    assert placed.starts is not None and K.place(lo, h, size, x, s, False).starts is None
    fast = placed.density(w[order])
    idx = np.linspace(0, size - 1, min(size, 3000)).astype(int)
    direct = _direct(y[idx], x, w, s, False)
    assert np.max(np.abs(fast[idx] - direct)) <= 1e-14 * direct.max() * 10
    assert np.max(np.abs(fast - K.grid_density(lo, h, size, x, w, s, False))) <= 1e-15 * fast.max() * 10


def test_atom_sums_across_blocks_are_the_direct_sums(monkeypatch):
    """Horner's rule runs on blocks of atoms: with blocks of 64, every one of the 1 001 atoms (16 blocks, the
    last one short) still gets its direct sum."""
    monkeypatch.setattr(K, "_BLOCK", 64)
    x, w, lo, h, size, y = _setting(6, 0.7, False)
    v = (np.random.default_rng(7).random(size) < 0.4) * h
    fast = K.atom_sums(lo, h, v, x, 0.7, False)
    direct = v @ _kernel(y, x, 0.7, False)
    assert np.max(np.abs(fast - direct)) <= 1e-13 * direct.max()
