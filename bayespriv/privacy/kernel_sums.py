"""Kernel sums between many atoms and a regular grid in one dimension, in O(G log G + n).

The one-dimensional accountant needs two sums of the noise density φ (Gaussian of standard
deviation s, or Laplace of scale s) between n atoms x_i and a grid y_g = lo + g·h:

* the released density on the grid, ``p(y_g) = Σ_i w_i φ(y_g − x_i)`` (:func:`grid_density`);
* per atom, a weighted sum over the grid, ``Σ_g v_g φ(y_g − x_i)`` (:func:`atom_sums`) — with v the
  indicator of the optimal set times h, the probability that the atom's noisy value falls in it.

Computed directly they cost n × (grid points within the kernel's reach). Here each atom is written
as its nearest grid point plus an offset, ``x = y_j + t`` with ``|t| ≤ h/2``, and the kernel is
factored around the grid point:

* Gaussian: ``φ(d − t) = φ(d) e^{−t²/2s²} e^{d t/s²}`` with ``d = y_g − y_j``, and the last factor
  expanded, ``e^{dt/s²} = Σ_m (d/s)^m (t/s)^m / m!``. The sum becomes M discrete convolutions (one
  batch of FFTs) of per-cell moments ``Σ w (t/s)^m e^{−t²/2s²}/m!`` with the kernels ``φ(d)(d/s)^m``.
  Over the kernel's reach (|d| ≤ 12 s, as the direct sums) ``|dt/s²| ≤ x = 6h/s``; the remainder
  after M terms is at most ``x^M/M!·e^x`` relative to each kernel value, and M is the smallest
  with that below 1e-13 (M = 11 on the accountant's grid, h = s/16; at most :data:`TERMS`).
* Laplace: the factorisation is exact — ``e^{−|d − t|/s} = e^{−|d|/s} e^{± t/s}`` for d ≠ 0 — and
  the sums are two first-order recursions over the grid (no reach, no truncation).

An atom set is placed on a grid once (:func:`place`: cells, scaled offsets t/s and the Gaussian
factor e^{−t²/2s²}), and the placement serves its density and the per-atom sums of any values on that
grid; :func:`sums_at` reads one set of values' correlations with the kernels at the atoms of several
placements. The expansion is never stored per atom (M rows of n values): the cell moments are one running
product of the offsets, each power summed per cell as it is made (by segments when the atoms come sorted,
as the accountant's distinct values do), and the per-atom sums are Horner's rule in t/s on blocks of
atoms that stay in cache, the 1/m! folded into the per-cell coefficients. Both sums are checked against
the direct sums in ``tests/privacy/test_kernel_sums.py``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import fft as scipy_fft

__all__ = ["grid_density", "atom_sums", "place", "sums_at", "Placed", "TERMS", "REACH"]

#: Most terms of the Taylor expansion of the Gaussian factor (the grid spacing sets how many: module docstring).
TERMS = 24
#: Relative remainder of the expansion.
REMAINDER = 1e-13
#: Reach of the Gaussian kernel in standard deviations (e^{-72} of its peak beyond).
REACH = 12.0
#: Atoms per block of Horner's rule in :func:`sums_at` (a block's few arrays stay in a core's cache).
_BLOCK = 1 << 15


def _cells(x: np.ndarray, lo: float, h: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Nearest grid index of each atom and its offset from it (|t| ≤ h/2), atoms inside the grid's span."""
    j = np.rint((x - lo) / h).astype(np.int64)
    if j.size and (j.min() < 0 or j.max() >= size):
        raise ValueError("atoms must lie within the grid")
    return j, x - (lo + j * h)


def _gauss_kernels(h: float, s: float) -> tuple[np.ndarray, np.ndarray]:
    """(d/s) on the kernel's reach and φ(d) there (normalised density)."""
    half = int(math.ceil(REACH * s / h))
    u = np.arange(-half, half + 1) * h / s
    return u, np.exp(-0.5 * u * u) / (s * math.sqrt(2.0 * math.pi))


@functools.lru_cache(maxsize=64)
def _terms(ratio: float) -> int:
    """Terms needed for a grid spacing of ``ratio`` noise scales (module docstring); at most :data:`TERMS`."""
    x = REACH * ratio / 2.0
    m = 1
    while m < TERMS and x**m / math.factorial(m) * math.exp(x) > REMAINDER:
        m += 1
    if x**m / math.factorial(m) * math.exp(x) > REMAINDER:
        raise ValueError(f"grid spacing {ratio:g} noise scales is too coarse for the expansion")
    return m


@functools.lru_cache(maxsize=32)
def _kernel_spectra(size: int, ratio: float) -> tuple[np.ndarray, int, int]:
    """The real FFTs of the TERMS kernels φ(d)(d/s)^m / φ-normaliser on a grid of spacing h = ratio·s (one row
    each), the FFT length for a signal of ``size`` points and the kernel's half-width: the convolutions of every
    term share one transform of the kernels per grid size (the accountant's grid spacing is a fixed share of
    the noise scale)."""
    half = int(math.ceil(REACH / ratio))
    u = np.arange(-half, half + 1) * ratio
    base = np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)
    kernels = base[None, :] * u[None, :] ** np.arange(_terms(ratio))[:, None]
    n_fft = scipy_fft.next_fast_len(size + 2 * half, real=True)
    spectra = scipy_fft.rfft(kernels, n_fft, axis=1)
    spectra.setflags(write=False)
    return spectra, n_fft, half


@dataclass(frozen=True, eq=False)
class Placed:
    """Atoms placed on a grid y_g = lo + g·h (g < ``size``) for a kernel of scale ``s``: each atom's cell ``j``
    and offset ``t`` (:func:`_cells`) and, for the Gaussian, the scaled offset ``ts`` = t/s and the factor
    ``base`` = e^{−t²/2s²} of its expansion (module docstring); ``starts``, the first atom of each occupied
    cell when the cells come in order (None otherwise). Made once per atoms and grid by :func:`place`,
    shared by the density and by the per-atom sums of every set of grid values."""

    j: np.ndarray
    t: np.ndarray
    ts: np.ndarray | None
    base: np.ndarray | None
    starts: np.ndarray | None
    size: int
    h: float
    s: float
    laplace: bool

    def density(self, weights: Any) -> np.ndarray:
        """Σ_i w_i φ(y_g − x_i) at every grid point."""
        w = np.asarray(weights, float)
        if self.laplace:
            return _laplace_density(self.j, self.t, w, self.h, self.s, self.size)
        spectra, n_fft, half = _kernel_spectra(self.size, round(self.h / self.s, 15))
        moments = self._moments(w, len(spectra))
        total = (scipy_fft.rfft(moments, n_fft, axis=1) * spectra).sum(axis=0)
        out = scipy_fft.irfft(total, n_fft)[half:half + self.size] / self.s
        return np.maximum(out, 0.0)

    def _moments(self, w: np.ndarray, terms: int) -> np.ndarray:
        """Per-cell moments Σ w e^{−t²/2s²} (t/s)^m / m!, m < ``terms``: one running product over the atoms,
        each power summed per cell as it is made, the 1/m! applied to the cells."""
        moments = np.zeros((terms, self.size))
        power = w * self.base
        cells = self.j[self.starts] if self.starts is not None else None
        for m in range(terms):
            if m:
                power *= self.ts
            if cells is None:
                moments[m] = np.bincount(self.j, weights=power, minlength=self.size)
            elif cells.size:
                moments[m, cells] = np.add.reduceat(power, self.starts)
        return moments / _factorials(terms)[:, None]


@functools.lru_cache(maxsize=8)
def _factorials(terms: int) -> np.ndarray:
    out = np.array([math.factorial(m) for m in range(terms)], float)
    out.setflags(write=False)
    return out


def place(lo: float, h: float, size: int, atoms: Any, s: float, laplace: bool) -> Placed:
    """:class:`Placed` of ``atoms`` on the grid y_g = lo + g·h, g < size, for a kernel of scale ``s``."""
    j, t = _cells(np.asarray(atoms, float), lo, h, size)
    if laplace:
        return Placed(j, t, None, None, None, size, h, s, True)
    _terms(round(h / s, 15))  # refuses a grid too coarse for the expansion
    ts = t / s
    ordered = j.size == 0 or bool(np.all(j[1:] >= j[:-1]))
    starts = np.flatnonzero(np.diff(j, prepend=-1)) if ordered else None
    return Placed(j, t, ts, np.exp(-0.5 * ts * ts), starts, size, h, s, False)


def grid_density(lo: float, h: float, size: int, atoms: Any, weights: Any, s: float, laplace: bool) -> np.ndarray:
    """Σ_i w_i φ(y_g − x_i) on the grid y_g = lo + g·h, g < size (module docstring)."""
    return place(lo, h, size, atoms, s, laplace).density(weights)


def atom_sums(lo: float, h: float, values: Any, atoms: Any, s: float, laplace: bool) -> np.ndarray:
    """Σ_g v_g φ(y_g − x_i) for every atom x_i (module docstring); ``values`` on the grid."""
    v = np.asarray(values, float)
    return sums_at(v, place(lo, h, v.size, atoms, s, laplace))[0]


def sums_at(values: np.ndarray, *placements: Placed) -> tuple[np.ndarray, ...]:
    """:func:`atom_sums` of one set of grid values for the atoms of each placement (on the same grid): the
    correlations of the values with the kernels are computed once for all of them."""
    v = np.asarray(values, float)
    first = placements[0]
    if first.laplace:
        return tuple(_laplace_atom_sums(p.j, p.t, v, p.h, p.s) for p in placements)
    spectra, n_fft, half = _kernel_spectra(v.size, round(first.h / first.s, 15))
    # Σ_g v_g K_m(y_g − y_j): a correlation of v with each kernel, read at every cell j (K_m reversed is
    # (−1)^m K_m, the kernels being even times (d/s)^m), divided by m! for Horner's rule in t/s
    terms = len(spectra)
    sign = (-1.0) ** np.arange(terms) / _factorials(terms)
    corr = scipy_fft.irfft(scipy_fft.rfft(v, n_fft)[None, :] * spectra * sign[:, None], n_fft, axis=1)
    corr = np.ascontiguousarray(corr[:, half:half + v.size]) / first.s
    return tuple(np.maximum(_horner(corr, p.j, p.ts) * p.base, 0.0) for p in placements)


def _horner(coefficients: np.ndarray, j: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Σ_m c_m[j_i] ts_i^m for every atom, by Horner's rule on blocks of :data:`_BLOCK` atoms."""
    out = np.empty(j.size)
    top = len(coefficients) - 1
    for lo in range(0, j.size, _BLOCK):
        cell, x = j[lo:lo + _BLOCK], ts[lo:lo + _BLOCK]
        acc = coefficients[top][cell]
        for m in range(top - 1, -1, -1):
            acc *= x
            acc += coefficients[m][cell]
        out[lo:lo + _BLOCK] = acc
    return out


def _laplace_density(j: np.ndarray, t: np.ndarray, w: np.ndarray, h: float, s: float, size: int) -> np.ndarray:
    """Exact: atoms left of y_g contribute e^{−(g−j)h/s}·w e^{t/s}, right of it e^{−(j−g)h/s}·w e^{−t/s}."""
    from scipy.signal import lfilter  # here: scipy.signal costs start-up time
    r = math.exp(-h / s)
    up = np.bincount(j, weights=w * np.exp(t / s), minlength=size)
    down = np.bincount(j, weights=w * np.exp(-t / s), minlength=size)
    same = np.bincount(j, weights=w * np.exp(-np.abs(t) / s), minlength=size)
    left = lfilter([0.0, r], [1.0, -r], up)  # Σ_{j<g} r^{g−j} up_j
    right = lfilter([0.0, r], [1.0, -r], down[::-1])[::-1]  # Σ_{j>g} r^{j−g} down_j
    return np.maximum(left + right + same, 0.0) / (2.0 * s)


def _laplace_atom_sums(j: np.ndarray, t: np.ndarray, v: np.ndarray, h: float, s: float) -> np.ndarray:
    """Exact: Σ_{g>j} v_g e^{−((g−j)h − t)/s} + Σ_{g<j} v_g e^{−((j−g)h + t)/s} + v_j e^{−|t|/s}."""
    from scipy.signal import lfilter  # here: scipy.signal costs start-up time
    r = math.exp(-h / s)
    above = lfilter([0.0, r], [1.0, -r], v[::-1])[::-1]  # Σ_{g>j} r^{g−j} v_g
    below = lfilter([0.0, r], [1.0, -r], v)  # Σ_{g<j} r^{j−g} v_g
    out = above[j] * np.exp(t / s) + below[j] * np.exp(-t / s) + v[j] * np.exp(-np.abs(t) / s)
    return np.maximum(out, 0.0) / (2.0 * s)
