"""Gaussian kernel sums between points and two-dimensional atoms, by Taylor expansions on cells.

The importance sampler of :mod:`~bayespriv.privacy.mixture_mc` needs, for points y_j and atoms x_i in
noise coordinates (the noise N(0, I₂), density φ):

* per point and weight column, ``S_j = Σ_i W_i φ(y_j − x_i)`` with W ≥ 0 (the released mixtures);
* per atom, ``A_i = Σ_j v_j φ(y_j − x_i)`` with v ≥ 0 (each atom's probability of the optimal set).

Directly they cost one exponential per point and atom. Here the atoms are grouped into square cells of
side :data:`SIDE`; with c a cell's centre, d = x − c and e = y − c,

    φ(y − x) = φ(e) e^{−|d|²/2} e^{e₀d₀} e^{e₁d₁},   e^{e·d} = Σ_{a,b<p} e₀^a e₁^b d₀^a d₁^b/(a! b!) + R,

so ``S_j = Σ_c φ(e_jc) Σ_ab e₀^a e₁^b M_c,ab`` with the cell moments
``M_c,ab = Σ_{i∈c} W_i e^{−|d_i|²/2} d₀^a d₁^b/(a! b!)``, and ``A_i = e^{−|d_i|²/2} Σ_ab d₀^a d₁^b B_c,ab``
with ``B_c,ab = Σ_j v_j φ(e_jc) e₀^a e₁^b/(a! b!)``: (points + atoms) × cells × p² products, no
exponential per pair.

Error bound, computed for every sum (not assumed)
-------------------------------------------------
The kept part is T_p(z₀)·T_p(z₁), T_p the Taylor polynomial of e^z of degree < p and z = e·d per
coordinate, and ``e^{z₀+z₁} − T_p(z₀)T_p(z₁) = (e^{z₀} − T_p(z₀))e^{z₁} + T_p(z₀)(e^{z₁} − T_p(z₁))``.
By Taylor's theorem (Lagrange's remainder) ``|e^z − T_p(z)| ≤ R(|z|) = |z|^p/p!·e^{|z|}``, and
``|T_p(z)| ≤ e^{|z|}``; with ``u_k = |e_k|·r_ck ≥ |z_k|`` (r_ck the cell's largest |d_k|) the
remainder is at most ``ρ = R(u₀)e^{u₁} + e^{u₀}R(u₁)``. Each cell's part of S_j is therefore off by at
most ``φ(e_jc)·G_c·ρ_jc``, with ``G_c = Σ_{i∈c} W_i e^{−|d_i|²/2}`` (W ≥ 0), and each atom's A_i by at
most ``e^{−|d_i|²/2} Σ_j v_j φ(e_jc) ρ_jc``. Rounding is bounded the same way: the terms' absolute values
sum to at most ``e^{u₀+u₁}`` times the cell's factor, and float64 adds at most ``(p + p² + n_c + C)·2⁻⁵²`` of
that (to first order: p products in each power, p² terms of the expansion, the n_c atoms of its moments, the C
cells of the sum). A sum is kept only when its bound is at most :data:`TOLERANCE` times its value; the
others are marked and the caller computes them directly. Checked against direct sums in
``tests/privacy/test_gauss_cells.py`` (and that the marks catch every sum the expansion misses).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

__all__ = ["CellAtoms", "CellMoments", "SIDE", "TERMS", "TOLERANCE"]

#: Side of the cells, in noise standard deviations.
SIDE = 0.6
#: Powers of each coordinate kept (a, b < TERMS).
TERMS = 16
#: Relative error allowed in every expanded sum (module docstring); beyond it a sum is computed directly.
TOLERANCE = 1e-9


def _powers(x: np.ndarray, p: int, factorial: bool = False) -> np.ndarray:
    """x^a (or x^a/a! with ``factorial``) for a < p: (n, p), a transposed view of rows made one power at a
    time (one multiplication per power over all of x)."""
    out = np.empty((p, x.shape[0]))
    out[0] = 1.0
    for a in range(1, p):
        np.multiply(out[a - 1], x / a if factorial else x, out=out[a])
    return out.T


def _remainder(u0: np.ndarray, u1: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """ρ = R(u₀)e^{u₁} + e^{u₀}R(u₁), R(u) = u^p/p!·e^u (the expansion's remainder bound), plus the rounding
    bound e^{u₀+u₁}·(p² + counts)·2⁻⁵² (``counts``: the other operations per cell, broadcast against u)."""
    with np.errstate(divide="ignore"):
        r0 = np.exp(TERMS * np.log(u0) - gammaln(TERMS + 1.0))
        r1 = np.exp(TERMS * np.log(u1) - gammaln(TERMS + 1.0))
    return (r0 + r1 + (TERMS * TERMS + counts) * 2.0**-52) * np.exp(u0 + u1)


def _offsets(y: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """y_j − c for every centre and point: (C, m, 2)."""
    return y[None, :, :] - centers[:, None, :]


@dataclass(frozen=True)
class CellMoments:
    """The cells' moments of one set of weight columns: M (C, p, cols·p) and G_c per column (C, cols)."""

    m: np.ndarray
    g: np.ndarray


@dataclass(frozen=True)
class CellAtoms:
    """Two-dimensional atoms grouped into cells: centres, radii, each cell's atoms (sorted by cell) and each
    coordinate's scaled powers ``d^a/a!``."""

    centers: np.ndarray  # (C, 2)
    reach: np.ndarray  # (C, 2) largest |x_k − c_k| in each cell, per coordinate
    starts: np.ndarray  # (C + 1,) segment of each cell in the sorted order
    order: np.ndarray  # (n,) atoms sorted by cell
    gauss: np.ndarray  # (n,) e^{−|d|²/2}, sorted order
    powers: tuple[np.ndarray, np.ndarray]  # (n, p) each: d_0^a/a!, d_1^a/a!, sorted order

    @classmethod
    def of(cls, atoms: np.ndarray, side: float = SIDE) -> "CellAtoms":
        atoms = np.asarray(atoms, dtype=float)
        if atoms.ndim != 2 or atoms.shape[1] != 2:
            raise ValueError(f"cell expansions are for two-dimensional atoms; got shape {atoms.shape}")
        index = np.floor(atoms / side).astype(np.int64)
        low = index.min(axis=0, initial=0)
        width = int(index[:, 1].max(initial=0) - low[1]) + 1
        keys, inverse = np.unique((index[:, 0] - low[0]) * width + (index[:, 1] - low[1]), return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        starts = np.searchsorted(inverse[order], np.arange(len(keys) + 1))
        centers = (np.column_stack([keys // width + low[0], keys % width + low[1]]) + 0.5) * side
        d = atoms[order] - centers[inverse[order]]
        reach = np.maximum.reduceat(np.abs(d), starts[:-1], axis=0) if len(atoms) else np.zeros((0, 2))
        powers = (_powers(d[:, 0], TERMS, factorial=True), _powers(d[:, 1], TERMS, factorial=True))
        return cls(centers, reach, starts, order, np.exp(-0.5 * np.einsum("ij,ij->i", d, d)), powers)

    @property
    def cost(self) -> int:
        """Products per point of an expanded sum (cells × p²), against the atoms of a direct one."""
        return self.centers.shape[0] * TERMS * TERMS

    @property
    def counts(self) -> np.ndarray:
        """Atoms per cell."""
        return np.diff(self.starts)

    def moments(self, columns: np.ndarray) -> CellMoments:
        """The cells' moments of the weight columns ``columns`` (n, cols), atoms in their given order."""
        q0, q1 = self.powers
        n, cols = len(self.order), columns.shape[1]
        w = columns[self.order] * self.gauss[:, None]
        right = (w[:, :, None] * q1[:, None, :]).reshape(n, cols * TERMS)
        out = np.empty((self.centers.shape[0], TERMS, cols * TERMS))
        for c, (s, e) in enumerate(zip(self.starts[:-1], self.starts[1:])):
            np.matmul(q0[s:e].T, right[s:e], out=out[c])
        return CellMoments(out, np.add.reduceat(w, self.starts[:-1], axis=0) if n else np.zeros((0, cols)))

    def log_sums(self, y: np.ndarray, moments: CellMoments) -> tuple[np.ndarray, np.ndarray]:
        """log Σ_i W_i φ(y_j − x_i) per point and column (m, cols), and per point whether every column's
        error bound is within :data:`TOLERANCE` (where it is not, the value is not to be used)."""
        cols = moments.g.shape[1]
        off = _offsets(y, self.centers)  # (C, m, 2)
        sq = 0.5 * np.einsum("cmk,cmk->cm", off, off)
        shift = sq.min(axis=0, initial=np.inf) if sq.shape[0] else np.zeros(len(y))
        e0, e1 = _powers_of(off, TERMS)  # (C, m, p) each
        left = np.matmul(e0, moments.m).reshape(*e0.shape[:2], cols, TERMS)  # (C, m, cols, p)
        inner = np.einsum("cmkb,cmb->cmk", left, e1)
        scale = np.exp(shift[None, :] - sq)  # φ(e_jc) / φ at the nearest centre
        total = np.einsum("cm,cmk->mk", scale, inner)
        bound = np.einsum("cm,ck->mk", scale * self._remainders(off), moments.g)
        ok = np.all(bound <= TOLERANCE * total, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(np.maximum(total, 0.0)) - shift[:, None] - math.log(2.0 * math.pi), ok

    def atom_sums(self, y: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Σ_j v_j φ(y_j − x_i) per atom (given order; v ≥ 0), and per atom whether its error bound is within
        :data:`TOLERANCE` of it."""
        q0, q1 = self.powers
        off = _offsets(y, self.centers)
        weights = v[None, :] * np.exp(-0.5 * np.einsum("cmk,cmk->cm", off, off)) / (2.0 * math.pi)  # (C, m)
        e0, e1 = _powers_of(off, TERMS)
        b = np.matmul((e0 * weights[:, :, None]).transpose(0, 2, 1), e1)  # (C, p, p)
        cell_bound = np.einsum("cm,cm->c", weights, self._remainders(off))
        sums = np.empty(len(self.order))
        for c, (s, e) in enumerate(zip(self.starts[:-1], self.starts[1:])):
            sums[s:e] = np.einsum("ia,ia->i", q0[s:e] @ b[c], q1[s:e])
        sums *= self.gauss
        bound = np.repeat(cell_bound, self.counts) * self.gauss
        out, ok = np.empty_like(sums), np.empty(len(sums), dtype=bool)
        out[self.order] = np.maximum(sums, 0.0)
        ok[self.order] = bound <= TOLERANCE * sums
        return out, ok

    def _remainders(self, off: np.ndarray) -> np.ndarray:
        """The remainder bound ρ_jc (module docstring) per cell and point: (C, m)."""
        u = np.abs(off) * self.reach[:, None, :]
        return _remainder(u[:, :, 0], u[:, :, 1], self.counts[:, None] + len(self.counts) + TERMS)


def _powers_of(off: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """(y − c)^a per cell, point and power, for each coordinate: two (C, m, p) arrays."""
    shape = (*off.shape[:2], p)
    return _powers(off[:, :, 0].ravel(), p).reshape(shape), _powers(off[:, :, 1].ravel(), p).reshape(shape)
