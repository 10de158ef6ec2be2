"""The hockey-stick divergence of two released mixtures, by importance sampling.

When the law of F(X) under a secret is known through draws x_1 … x_n (or as a
finite law with weights), the released law with additive noise Z of density
φ is the mixture ``p_a(y) = Σ_i w_i φ(y − x_i)``. This module estimates, for
one direction,

    H_ε(P_a‖P_b) = ∫ (p_a(y) − e^ε p_b(y))₊ dy

with its Monte-Carlo error, the error due to the draws themselves, and a
split-half diagnostic.

Estimator
---------
Coordinates: Gaussian noise N(0, S) is whitened (S = I), Laplace noise along a
square basis is mapped to independent standard Laplace coordinates; the
hockey-stick divergence is invariant under such bijections.

* **Control variate.** Let g_a, g_b be the Gaussian fits of the two released
  laws (mean and covariance of the draws, plus the noise's), and
  h(y) = (g_a(y) − e^ε g_b(y))₊, whose integral H_G is computed exactly
  (:mod:`~bayespriv.privacy.privacy_loss`, one direction). With points y_j
  from a proposal q, the estimate is ``H_G + mean_j (f(y_j) − h(y_j))/q(y_j)``
  (f the integrand above): unbiased, and of small variance where the released
  law is close to Gaussian, as it is when the noise dominates F's spread.
  Without a closed form (Laplace noise) the plain ``mean f/q`` is used.
* **Proposal.** A defensive mixture ``q = π_t q_λ + π_d p_a + π_o p_O``:
  q_λ ∝ g_a^{1+λ} g_b^{−λ} is the exponential tilt of the fit toward the
  privacy-loss tail (a Gaussian; λ solves E_{q_λ}[L_G] = ε, the saddle point
  of the Chernoff bound of P(L_G > ε)); p_a itself keeps every weight
  bounded (f/q ≤ 1/π_d everywhere, and h/q_λ ≤ Z_λ e^{−λε} where h > 0); and
  p_O is the mixture around the :data:`OUTLYING_ATOMS` atoms of P_a farthest
  from P_b's atoms (a Mahalanobis distance free of the noise's scale), sampled *stratified* — one point each — so that a
  rare value of the query far from P_b (a region of mass ~δ that the fits
  and a few hundred points would miss) is always visited. The points are
  allocated to the components in fixed numbers (stratified sampling of the
  mixture index), which keeps the estimator unbiased. One-dimensional laws
  are integrated on a grid instead (:mod:`~bayespriv.privacy.mixture_1d`).
* **Error.** ``se_mc`` is the sample standard deviation of the terms over √M
  (terms are bounded; the normal approximation is the assumption
  ``monte_carlo_clt``).
* **Kernel sums.** The mixtures' densities at the points, and each atom's
  probability of the optimal set, are sums of the noise density over points
  × atoms: directly by blocks of float32 kernel values (:class:`Block`), or —
  for a two-dimensional law of at least :data:`CELL_MIN_ATOMS` atoms under
  Gaussian noise, compact enough that it pays — by Taylor expansions on cells
  of atoms (:mod:`~bayespriv.privacy.gauss_cells`), each sum kept only where
  its computed error bound is within 1e-9 relative (finer than the float32
  blocks' rounding) and the rest computed by blocks.

Draws standing for the law
--------------------------
For independent draws the estimate is of ``H_ε(P̂_a‖P̂_b)``, the divergence
between the *empirical* mixtures, a supremum over sets: it is at least the
empirical difference at the true optimal set, whose expectation is the true
divergence. The estimator reports, per atom, the probability ``P(x + Z ∈ Â*)``
of its own optimal set Â* = {L̂ > ε} (one matrix-vector product per chunk of
the kernel pass) and the draws at it (:class:`DrawContributions`), from which
the accountant's betting margins bound the gap
(:mod:`~bayespriv.privacy.accountant`). Atoms of P_a whose kernel peak
exceeds e^ε p̂_b at them by 1/:data:`FAR_SHARE` are counted in full — their
weight added to the divergence as if their whole kernel lay in Â*, an upper
bound tight for them — instead of being probed by one importance point each.
``halves`` are the estimates from each half of the draws (same points): their
agreement is a stability diagnostic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from bayespriv._validation import check_finite_array, described, fail, seal_fields, sealed
from bayespriv.errors import BayesPrivDeprecationWarning, ParameterTypeError, ValidationError, warn
from .gauss_cells import CellAtoms, CellMoments
from .loss_reduction import RANK_RTOL

__all__ = ["WeightedAtoms", "MixtureEstimate", "DrawContributions", "mixture_hockey", "atom_counts",
           "DEFENSIVE_WEIGHT", "KERNEL_BYTES", "FAR_SHARE", "WEIGHTS_SUM_TOL", "CELL_MIN_ATOMS", "sampled_pair"]

#: Share of the proposal drawn from the released mixture itself (bounds every weight by 1/w).
DEFENSIVE_WEIGHT = 0.3
#: Memory of one block of the kernel matrix (float32), which bounds the chunk of points.
KERNEL_BYTES = 64 * 2**20
#: How far from 1 the weights of a :class:`WeightedAtoms` may sum (the tolerance of the calibration's finite laws).
WEIGHTS_SUM_TOL = 1e-9


def _unwritable(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself when it is already read-only float64 in C order (nothing to copy); else a
    :func:`~bayespriv._validation.sealed` copy, so that no holder of the input can change the value."""
    if arr.dtype == np.float64 and arr.flags.c_contiguous and not arr.flags.writeable:
        return arr
    return sealed(arr, float)


@seal_fields
@dataclass(frozen=True, eq=False)
class WeightedAtoms:
    """A finite law given as weighted atoms: ``Σ_i w_i δ_{x_i}`` (the draws of F, each of weight 1/n, or
    the support points of a finite law), checked once.

    Both arrays are read-only float64: an input that already is (in C order) is kept without a copy, any
    other is copied into sealed memory (:func:`~bayespriv._validation.sealed`). A wrong type raises
    :class:`~bayespriv.errors.ParameterTypeError`, a broken rule :class:`~bayespriv.errors.ValidationError`.

    Attributes
    ----------
    atoms : array (n, k)
        The atoms x_i: finite numbers, n ≥ 1 rows of k ≥ 1 coordinates; a vector ``(n,)`` is taken as
        ``(n, 1)``.
    weights : array (n,)
        Their weights w_i: finite, non-negative, one per atom, summing to 1 within
        :data:`WEIGHTS_SUM_TOL`.

    Examples
    --------
    >>> from bayespriv.privacy import WeightedAtoms
    >>> law = WeightedAtoms([0.0, 1.0, 2.0], [0.25, 0.5, 0.25])
    >>> law.atoms.shape, law.weights.flags.writeable
    ((3, 1), False)
    >>> WeightedAtoms([0.0, 1.0], [0.5, 0.6])
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: weights must be numbers summing to 1 (within 1e-09); got sum 1.1
    """

    atoms: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        atoms = check_finite_array(self.atoms, "atoms")
        if atoms.ndim not in (1, 2) or 0 in atoms.shape:
            raise fail("atoms", "an array (n, k) or (n,) with n >= 1 and k >= 1", described(f"shape {atoms.shape}"))
        atoms = _unwritable(atoms)
        atoms = atoms.reshape(-1, 1) if atoms.ndim == 1 else atoms
        weights = check_finite_array(self.weights, "weights", ndim=1)
        if weights.shape[0] != atoms.shape[0]:
            raise fail("weights", f"one per atom ({atoms.shape[0]})", described(f"shape {weights.shape}"))
        if float(weights.min()) < 0.0:
            raise fail("weights", "non-negative", described(f"minimum {float(weights.min())!r}"))
        total = float(weights.sum())
        if not abs(total - 1.0) <= WEIGHTS_SUM_TOL:
            raise fail("weights", f"numbers summing to 1 (within {WEIGHTS_SUM_TOL:g})", described(f"sum {total!r}"))
        object.__setattr__(self, "atoms", atoms)
        object.__setattr__(self, "weights", _unwritable(weights))

    def __setstate__(self, state: dict) -> None:  # unpickled arrays own writable memory: seal them again
        self.__dict__.update({key: sealed(value, float) for key, value in state.items()})


@dataclass(frozen=True)
class DrawContributions:
    """What the draws' margins of the accountant need: per atom of each law, ``P(x + Z ∈ A)`` at the
    estimate's optimal set A = {L̂ > ε}, with the number of draws at that atom.

    Attributes
    ----------
    values_a, counts_a : array
        Per atom of P_a (the first law): the probability and the draws at it (``None`` when P_a is
        known exactly, not through draws).
    draws_a : int
        Draws of P_a in all.
    peak_ratio_a : array
        Per atom of P_a: ``n_a · e^ε p̂_b(x) / φ(0)`` — how many draws at x would make P_a's peak there
        reach e^ε times P_b's density (``inf`` where not computed: atoms in the bulk of P_b). An atom
        seen c times whose region the true law may weigh up to G(c) > this many draws lies in the
        privacy-loss tail of the true law: its probability is taken as 1 by the accountant.
    values_b, counts_b, draws_b :
        The same for P_b (``None`` when exact).
    """

    values_a: np.ndarray | None
    counts_a: np.ndarray | None
    draws_a: int
    peak_ratio_a: np.ndarray | None
    values_b: np.ndarray | None
    counts_b: np.ndarray | None
    draws_b: int


@dataclass(frozen=True)
class MixtureEstimate:
    """One direction of one condition: ``H_ε(P_a‖P_b)`` of the empirical (or finite) mixtures.

    Attributes
    ----------
    value : float
        The estimate (≥ 0); with ``far_mass`` > 0, an upper bound that counts the atoms of P_a far from
        every atom of P_b in full (module docstring).
    se_mc : float
        Its Monte-Carlo standard error (over the points; the quadrature's error estimate in 1-D).
    halves : tuple of float, or None
        Estimates from each half of the draws (sampled laws only).
    gaussian_fit : float
        The exact H_ε of the Gaussian fits (the control variate's integral); nan without one.
    n_points : int
    contributions : DrawContributions or None
        Per-draw probabilities of the optimal set (laws known through draws), for the accountant's margins.
    far_mass : float
        Weight of the atoms of P_a counted in full.
    """

    value: float
    se_mc: float
    halves: tuple[float, float] | None
    gaussian_fit: float
    n_points: int
    contributions: DrawContributions | None = None
    far_mass: float = 0.0


def atom_counts(weights: np.ndarray, n: int) -> np.ndarray:
    """Draws at each atom of an empirical law of ``n`` draws with these weights (rounded to integers)."""
    return np.rint(np.asarray(weights, float) * n)


# ----------------------------------------------------------------------------- coordinates
@dataclass(frozen=True)
class _Frame:
    """Atoms of both laws in noise coordinates, centred, with their weights and the noise kind."""

    a: np.ndarray
    b: np.ndarray
    wa: np.ndarray
    wb: np.ndarray
    laplace: bool


def _whitener(cov: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((cov + cov.T) / 2.0)
    if float(w.min()) <= RANK_RTOL * max(float(w.max()), 1e-300):
        raise ValidationError("noise covariance must be full rank to account a law known through draws or atoms "
                              f"(eigenvalues {np.round(w, 12).tolist()}): a direction without noise releases the "
                              "query's law exactly there, which draws cannot account")
    return (v / np.sqrt(w)).T


def _frame(atoms_a: np.ndarray, wa: np.ndarray, atoms_b: np.ndarray, wb: np.ndarray, noise: Any) -> _Frame:
    """Stage 1: map both laws to coordinates where the noise is standard (and centre them)."""
    if noise.kind == "gaussian":
        t = _whitener(noise.cov)
    else:
        basis, scale = noise.basis, noise.scale
        if basis.shape[0] != basis.shape[1] or np.linalg.matrix_rank(basis) < basis.shape[0] or np.any(scale <= 0):
            raise ValidationError("Laplace noise must have a square, invertible basis with positive scales to account "
                                  "a law known through draws or atoms")
        t = np.linalg.inv(basis) / scale[:, None]
    a, b = atoms_a @ t.T, atoms_b @ t.T
    centre = (wa @ a + wb @ b) / 2.0
    return _Frame(a - centre, b - centre, wa, wb, noise.kind == "laplace")


# --------------------------------------------------------------------------- Gaussian fits
@dataclass(frozen=True)
class _Fit:
    mean: np.ndarray
    cov: np.ndarray
    prec: np.ndarray
    logdet: float

    @classmethod
    def of(cls, atoms: np.ndarray, w: np.ndarray, noise_var: float) -> "_Fit":
        m = w @ atoms
        c = atoms - m
        cov = (c * w[:, None]).T @ c + noise_var * np.eye(atoms.shape[1])
        return cls(m, cov, np.linalg.inv(cov), float(np.linalg.slogdet(cov)[1]))

    def logpdf(self, y: np.ndarray) -> np.ndarray:
        d = y - self.mean
        k = y.shape[1]
        return -0.5 * np.einsum("ij,jk,ik->i", d, self.prec, d) - 0.5 * self.logdet - 0.5 * k * math.log(2 * math.pi)


def _tilt(fa: _Fit, fb: _Fit, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of q_λ ∝ g_a^{1+λ} g_b^{−λ} with E_{q_λ}[L_G] = ε (λ ≥ 0, by bisection)."""

    def params(lam: float) -> tuple[np.ndarray, np.ndarray] | None:
        p = (1.0 + lam) * fa.prec - lam * fb.prec
        p = (p + p.T) / 2.0
        if np.linalg.eigvalsh(p)[0] <= 1e-9 * np.linalg.eigvalsh(fa.prec)[-1]:
            return None
        cov = np.linalg.inv(p)
        return cov @ ((1.0 + lam) * fa.prec @ fa.mean - lam * fb.prec @ fb.mean), cov

    def mean_loss(m: np.ndarray, c: np.ndarray) -> float:
        ea = np.trace(fa.prec @ c) + (m - fa.mean) @ fa.prec @ (m - fa.mean)
        eb = np.trace(fb.prec @ c) + (m - fb.mean) @ fb.prec @ (m - fb.mean)
        return float(-0.5 * ea + 0.5 * eb - 0.5 * (fa.logdet - fb.logdet))

    lo, hi = 0.0, 1.0
    while hi < 1e8 and (p := params(hi)) is not None and mean_loss(*p) < epsilon:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        p = params(mid)
        if p is None or mean_loss(*p) > epsilon:
            hi = mid
        else:
            lo = mid
    return params(lo)  # type: ignore[return-value]


# ------------------------------------------------------------------------------- kernels
#: Largest coordinate (in noise units, centred) for which the kernels are computed in float32: products
#: y·x stay below ~1e4, whose float32 rounding (~1e-3 in the log) is far below the estimates' error.
FLOAT32_REACH = 100.0


def _log_kernel(y: np.ndarray, atoms: np.ndarray, laplace: bool,
                scratch: "_Scratch | None" = None) -> tuple[np.ndarray, np.ndarray]:
    """log φ(y_j − x_i) up to a per-row shift, ``(len(y), len(atoms))``, and that shift (float64).

    Gaussian: ``y·x − |x|²/2`` by one matrix product of augmented arrays; the row shift is
    ``−|y|²/2``. Laplace: ``−Σ_c |y_c − x_c|`` accumulated per coordinate; no shift. Float32 while every
    coordinate is within :data:`FLOAT32_REACH` noise units of the centre, float64 beyond (tiny noise
    against a wide law: float32 would lose the differences that matter). With ``scratch`` the result is
    written into its reused buffer (the same arithmetic; no fresh pages to fault in per chunk).
    """
    dtype = _kernel_dtype(y, atoms)
    out = None if scratch is None else scratch.array((len(y), len(atoms)), dtype)
    if laplace:
        yy, xx = y.astype(dtype), np.ascontiguousarray(atoms.T, dtype=dtype)
        g = np.empty((len(y), len(atoms)), dtype) if out is None else out
        _laplace_rows(yy, xx, g, np.empty_like(g))
        return g, np.zeros(len(y))
    ones = np.ones((len(y), 1))
    aug_y = np.hstack([y, ones]).astype(dtype)
    aug_x = np.hstack([atoms, -0.5 * np.einsum("ij,ij->i", atoms, atoms)[:, None]]).astype(dtype)
    return np.matmul(aug_y, aug_x.T, out=out), -0.5 * np.einsum("ij,ij->i", y, y)


def _kernel_dtype(y: np.ndarray, atoms: np.ndarray) -> Any:
    """Float32 while every coordinate is within :data:`FLOAT32_REACH` of the centre, float64 beyond."""
    reach = max(float(np.abs(y).max(initial=0.0)), float(np.abs(atoms).max(initial=0.0)))
    return np.float32 if reach <= FLOAT32_REACH else np.float64


def _laplace_rows(yy: np.ndarray, xx: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> None:
    """``−Σ_c |y_c − x_c|`` of the points ``yy`` (m, k) against the atoms ``xx`` (k, n) into ``out`` (m, n),
    accumulated per coordinate in place (``tmp``: scratch of out's shape; no temporaries per coordinate)."""
    np.subtract(yy[:, :1], xx[None, 0], out=out)
    np.abs(out, out=out)
    for c in range(1, xx.shape[0]):
        np.subtract(yy[:, c:c + 1], xx[None, c], out=tmp)
        np.abs(tmp, out=tmp)
        out += tmp
    np.negative(out, out=out)


def _log_norm(k: int, laplace: bool) -> float:
    return -k * math.log(2.0) if laplace else -0.5 * k * math.log(2.0 * math.pi)


def chunk_rows(n_atoms: int, k: int, laplace: bool) -> int:
    per_row = 4 * n_atoms * (k if laplace else 1)
    return max(1, min(4096, KERNEL_BYTES // max(per_row, 1)))


#: Kernel values scaled and exponentiated at a time in :meth:`Block.of` (256 KiB of float32: within L2).
CACHE_ELEMENTS = 1 << 16


class _Scratch:
    """Reused buffers for the kernel blocks of one estimate, one per use and dtype: each chunk's block is
    written over the previous one's (a fresh 64 MiB array per chunk costs its page faults every time)."""

    def __init__(self) -> None:
        self._buffers: dict[Any, np.ndarray] = {}

    def array(self, shape: tuple[int, int], dtype: Any) -> np.ndarray:
        size = shape[0] * shape[1]
        key = np.dtype(dtype)
        buf = self._buffers.get(key)
        if buf is None or buf.size < size:
            buf = self._buffers[key] = np.empty(size, dtype)
        return buf[:size].reshape(shape)


@dataclass(frozen=True)
class Block:
    """Kernel values of a chunk of points against every atom of one law: φ(y_j − x_i) = E_ji e^{top_j}."""

    top: np.ndarray  # (m,) float64, log scale of each row (normalising constant included)
    e: np.ndarray  # (m, n) float32, in [0, 1]

    @classmethod
    def of(cls, y: np.ndarray, atoms: np.ndarray, laplace: bool, scratch: "_Scratch | None" = None) -> "Block":
        """The block of points ``y`` against ``atoms``; with ``scratch`` its kernel values live in the scratch's
        buffer (valid until its next use). Rows are scaled and exponentiated a few at a time, while they are in
        the cache (elementwise: the same values as whole-array operations); Laplace rows are also made there
        (:func:`_laplace_rows` on a few rows: the same arithmetic per value as on the whole array)."""
        if laplace:
            dtype = _kernel_dtype(y, atoms)
            shape = (len(y), len(atoms))
            g = np.empty(shape, dtype) if scratch is None else scratch.array(shape, dtype)
            yy, xx, shift = y.astype(dtype), np.ascontiguousarray(atoms.T, dtype=dtype), np.zeros(len(y))
        else:
            g, shift = _log_kernel(y, atoms, laplace, scratch)
        top = np.empty((g.shape[0], 1), g.dtype)
        step = max(1, CACHE_ELEMENTS // max(g.shape[1], 1))
        tmp = np.empty((min(step, g.shape[0]), g.shape[1]), g.dtype) if laplace else None
        for s in range(0, g.shape[0], step):
            rows = g[s:s + step]
            if laplace:
                _laplace_rows(yy[s:s + step], xx, rows, tmp[:len(rows)])
            np.max(rows, axis=1, keepdims=True, out=top[s:s + step])
            np.subtract(rows, top[s:s + step], out=rows)
            np.exp(rows, out=rows)
        return cls(top[:, 0].astype(np.float64) + shift + _log_norm(atoms.shape[1], laplace), g)

    def log_mix(self, columns: np.ndarray) -> np.ndarray:
        """log Σ_i W_ic φ(y_j − x_i) for every row j and weight column c (one pass over the block)."""
        sums = (self.e @ columns.astype(self.e.dtype)).astype(np.float64)
        with np.errstate(divide="ignore"):
            return self.top[:, None] + np.log(sums)

    def atom_sums(self, v: np.ndarray) -> np.ndarray:
        """Σ_j φ(y_j − x_i) v_j for every atom i."""
        return (self.e.T @ (v * np.exp(self.top)).astype(self.e.dtype)).astype(np.float64)


# -------------------------------------------------------------------------------- estimate
#: Atoms of P_a farthest from P_b's fit (Mahalanobis) that get one proposal point each (stratified).
OUTLYING_ATOMS = 128


@dataclass(frozen=True)
class _Proposal:
    """The points, and what log q needs: the tilted Gaussian, the mixture weights and the outlying atoms."""

    points: np.ndarray
    tilted: "_Fit"
    outliers: np.ndarray  # (m, k) atoms of P_a, one point each
    shares: tuple[float, float, float]  # tilted, released mixture p_a, outlying atoms

    def log_q(self, y: np.ndarray, log_pa: np.ndarray, laplace: bool) -> np.ndarray:
        t, d, o = self.shares
        parts = [math.log(t) + self.tilted.logpdf(y), math.log(d) + log_pa]
        if o > 0:
            blk = Block.of(y, self.outliers, laplace)
            parts.append(math.log(o) + blk.log_mix(np.full((len(self.outliers), 1), 1.0 / len(self.outliers)))[:, 0])
        return np.logaddexp.reduce(np.stack(parts), axis=0)


def _outlying(fr: _Frame) -> np.ndarray:
    """Indices of the atoms of P_a farthest from P_b's atoms (up to :data:`OUTLYING_ATOMS`).

    The distance is Mahalanobis in ``C + (tr C / k)·I`` (noise coordinates: C the covariance of P_b's atoms,
    I the noise's): the noise's shape enters with a weight relative to the atoms' spread, so the ordering
    does not depend on the noise's *scale* — whitening by t·S multiplies both terms by 1/t². Any choice keeps
    the estimator unbiased; this one makes a scale search evaluate the same proposal design at every scale,
    so δ(t) moves smoothly with t instead of jumping where a scale-dependent set would change.
    """
    m = min(OUTLYING_ATOMS, fr.a.shape[0])
    if m == fr.a.shape[0]:
        return np.arange(m)
    mean = fr.wb @ fr.b
    centred = fr.b - mean
    cov = (centred * fr.wb[:, None]).T @ centred
    k = cov.shape[0]
    spread = max(float(np.trace(cov)) / k, np.finfo(float).tiny)
    prec = np.linalg.inv(cov + spread * np.eye(k))
    d = fr.a - mean
    maha = np.einsum("ij,jk,ik->i", d, prec, d)
    return np.sort(np.argpartition(maha, -m)[-m:])


def _draw_points(fr: _Frame, tilted: "_Fit", outliers: np.ndarray, n_points: int, seed: Any) -> _Proposal:
    """Points of the proposal: ``n_points`` from q_λ (70 %) and the released mixture p_a (30 %), then one
    point around each outlying atom of P_a (stratified: a rare value of the query far from P_b, which the
    Gaussian fits do not see, is always visited)."""
    rng = np.random.default_rng(seed)
    k = fr.a.shape[1]
    n_def = int(round(DEFENSIVE_WEIGHT * n_points))
    draw = (lambda size: rng.laplace(size=(size, k))) if fr.laplace else (lambda size: rng.standard_normal((size, k)))
    tilt = tilted.mean + rng.standard_normal((n_points - n_def, k)) @ np.linalg.cholesky(tilted.cov).T
    idx = rng.choice(fr.a.shape[0], size=n_def, p=fr.wa)
    pts = np.vstack([tilt, fr.a[idx] + draw(n_def), fr.a[outliers] + draw(len(outliers))])
    total = len(pts)
    shares = ((n_points - n_def) / total, n_def / total, len(outliers) / total)
    return _Proposal(pts, tilted, fr.a[outliers], shares)


def _fit_delta(fa: _Fit, fb: _Fit, epsilon: float, mass: float = 1.0) -> float:
    """Exact ∫ (m·g_a − e^ε g_b)₊ of the Gaussian fits, one direction (m the mass of P_a's atoms kept)."""
    from .privacy_loss import one_direction_delta

    return mass * one_direction_delta(epsilon - math.log(mass), fa.mean - fb.mean, fa.cov, fb.cov)


@dataclass(frozen=True)
class _Evaluation:
    """Per point: log q and the integrand f (and per half); per atom: P(x + Z ∈ A*)."""

    lq: np.ndarray
    f: np.ndarray
    f_halves: np.ndarray | None
    mass_a: np.ndarray | None
    mass_b: np.ndarray | None


def _hinge(la: np.ndarray, lb: np.ndarray, lq: np.ndarray, epsilon: float) -> np.ndarray:
    """(p_a − e^ε p_b)₊ / q from log densities."""
    return np.clip(np.exp(la - lq) - np.exp(epsilon + lb - lq), 0.0, None)


def _evaluate(prop: _Proposal, fr: _Frame, epsilon: float, *, halves: bool, masses: tuple[bool, bool],
              log_mass: float = 0.0, cells: tuple[CellAtoms | None, CellAtoms | None] = (None, None)
              ) -> _Evaluation:
    """Stage 3: one pass of the kernels over chunks of points, both laws together. ``log_mass``: log of the
    mass of P_a's atoms kept (the rest counted in full elsewhere); q uses the normalised mixture. ``cells``:
    each law's cells for the expansions (:func:`_cells_for`), or None for the direct blocks."""
    y = prop.points
    m, (na, k), nb = len(y), fr.a.shape, fr.b.shape[0]
    lq, f = np.empty(m), np.empty(m)
    f_h = np.empty((2, m)) if halves else None
    mass_a = np.zeros(na) if masses[0] else None
    mass_b = np.zeros(nb) if masses[1] else None
    sums_a = _LawSums.of(fr.a, _weight_columns(fr.wa, halves), fr.laplace, cells[0])
    sums_b = _LawSums.of(fr.b, _weight_columns(fr.wb, halves), fr.laplace, cells[1])
    step = chunk_rows(max(na, nb), k, fr.laplace)
    for s in range(0, m, step):
        rows = slice(s, s + step)
        ba, bb = sums_a.at(y[rows]), sums_b.at(y[rows])
        la, lb = ba.log_mix[:, 0], bb.log_mix[:, 0]
        lq[rows] = prop.log_q(y[rows], la, fr.laplace)
        f[rows] = _hinge(la + log_mass, lb, lq[rows], epsilon)
        if halves:
            for h in range(2):
                f_h[h, rows] = _hinge(ba.log_mix[:, 1 + h] + log_mass, bb.log_mix[:, 1 + h], lq[rows], epsilon)
        if masses[0] or masses[1]:
            inside = (f[rows] > 0) * np.exp(-lq[rows]) / m
            if masses[0]:
                mass_a += ba.atom_sums(inside)
            if masses[1]:
                mass_b += bb.atom_sums(inside)
    return _Evaluation(lq, f, f_h, mass_a, mass_b)


#: Fewest atoms of a two-dimensional law under Gaussian noise whose kernel sums go through cell expansions
#: (:mod:`~bayespriv.privacy.gauss_cells`) — when the expansions cost fewer products per point than there are
#: atoms (a compact law against its noise); below it, and for other laws, the direct blocks.
CELL_MIN_ATOMS = 2048


def _cells_for(atoms: np.ndarray, laplace: bool) -> CellAtoms | None:
    """The atoms' cells when the expansions apply and pay (:data:`CELL_MIN_ATOMS`), else None."""
    if laplace or atoms.shape[1] != 2 or atoms.shape[0] < CELL_MIN_ATOMS:
        return None
    cells = CellAtoms.of(atoms)
    return cells if cells.cost < atoms.shape[0] else None


@dataclass(frozen=True)
class _LawSums:
    """Kernel sums of one law's atoms and weight columns at chunks of points: by cell expansions where they
    are used and their error bound holds (:mod:`~bayespriv.privacy.gauss_cells`), by direct blocks elsewhere."""

    atoms: np.ndarray
    columns: np.ndarray
    laplace: bool
    scratch: "_Scratch"
    cells: CellAtoms | None
    moments: CellMoments | None

    @classmethod
    def of(cls, atoms: np.ndarray, columns: np.ndarray, laplace: bool, cells: CellAtoms | None) -> "_LawSums":
        """The sums of ``atoms`` weighted by ``columns``; through ``cells`` (the atoms' cells) unless None."""
        return cls(atoms, columns, laplace, _Scratch(), cells, None if cells is None else cells.moments(columns))

    def at(self, y: np.ndarray) -> "_ChunkSums":
        """The sums at the points ``y``: the mixtures' log densities now, the per-atom sums on demand."""
        if self.cells is None:
            block = Block.of(y, self.atoms, self.laplace, self.scratch)
            return _ChunkSums(self, y, block.log_mix(self.columns), np.zeros(len(y), dtype=bool), block)
        log_mix, ok = self.cells.log_sums(y, self.moments)
        block = None
        if not ok.all():  # points the expansions do not reach within their tolerance: directly
            block = Block.of(y[~ok], self.atoms, self.laplace, self.scratch)
            log_mix[~ok] = block.log_mix(self.columns)
        return _ChunkSums(self, y, log_mix, ok, block)


@dataclass(frozen=True)
class _ChunkSums:
    """One chunk of points against one law: ``log_mix`` (points × weight columns) and :meth:`atom_sums`."""

    law: _LawSums
    y: np.ndarray
    log_mix: np.ndarray
    expanded: np.ndarray  # per point: its sums came from the cell expansions
    block: "Block | None"  # the direct block of the other points

    def atom_sums(self, v: np.ndarray) -> np.ndarray:
        """Σ_j φ(y_j − x_i) v_j for every atom i (v ≥ 0)."""
        ok = self.expanded
        out = self.block.atom_sums(v[~ok]) if self.block is not None else np.zeros(len(self.law.atoms))
        if ok.any():
            sums, good = self.law.cells.atom_sums(self.y[ok], v[ok])
            if not good.all():  # atoms whose sums the expansions do not bound within their tolerance
                sums[~good] = Block.of(self.y[ok], self.law.atoms[~good], self.law.laplace).atom_sums(v[ok])
            out += sums
        return out


def _weight_columns(w: np.ndarray, halves: bool) -> np.ndarray:
    """The mixture's weights as a column, and with ``halves`` each half's renormalised weights as two more."""
    if not halves:
        return w[:, None]
    n = w.size
    h1, h2 = np.zeros(n), np.zeros(n)
    h1[: n // 2] = w[: n // 2] / max(w[: n // 2].sum(), 1e-300)
    h2[n // 2 :] = w[n // 2 :] / max(w[n // 2 :].sum(), 1e-300)
    return np.column_stack([w, h1, h2])


#: An atom of P_a whose kernel peak exceeds e^ε p_b at it by more than 1/FAR_SHARE is counted in full:
#: its weight is added to H as if its whole kernel lay in the optimal set (an upper bound, tight for such
#: atoms), instead of being probed by importance sampling.
FAR_SHARE = 1e-3


def _peak_ratios(fr: _Frame, idx: np.ndarray, epsilon: float, n_a: int, cells_b: CellAtoms | None = None
                 ) -> np.ndarray:
    """``n_a · e^ε p̂_b(x) / φ(0)`` at the atoms ``idx`` of P_a (:class:`DrawContributions`); ``cells_b``: P_b's
    cells for the expansions, or None."""
    if idx.size == 0:
        return np.zeros(0)
    log_pb = _LawSums.of(fr.b, fr.wb[:, None], fr.laplace, cells_b).at(fr.a[idx]).log_mix[:, 0]
    return n_a * np.exp(epsilon + log_pb - _log_norm(fr.a.shape[1], fr.laplace))


@dataclass(frozen=True)
class _Split:
    """P_a's atoms split into those counted in full (far from every atom of P_b) and the rest."""

    frame: _Frame  # the rest, weights renormalised (far atoms at weight 0)
    mass: float  # weight of the rest
    far: np.ndarray  # indices of the far atoms
    outliers: np.ndarray  # outlying atoms of the rest (the proposal's stratified points)
    ratios: np.ndarray  # peak ratio per atom of P_a (inf where not computed)


def _split_far(fr: _Frame, epsilon: float, n_a: int, cells_b: CellAtoms | None = None) -> _Split:
    """Stage 2: peak ratios of the outlying atoms; those far from P_b leave the mixture and count in full."""
    out = _outlying(fr)
    ratio = _peak_ratios(fr, out, epsilon, n_a, cells_b)
    ratios = np.full(fr.a.shape[0], np.inf)
    ratios[out] = ratio
    far = out[ratio < FAR_SHARE * fr.wa[out] * n_a]
    w_far = float(fr.wa[far].sum())
    if far.size == 0 or w_far >= 1.0 - 1e-12:  # nothing far, or everything: importance sampling as it is
        return _Split(fr, 1.0, far[:0], out, ratios)
    wa = fr.wa.copy()
    wa[far] = 0.0
    rest = _Frame(fr.a, fr.b, wa / (1.0 - w_far), fr.wb, fr.laplace)
    return _Split(rest, 1.0 - w_far, far, np.setdiff1d(out, far), ratios)


def _contributions(ev: _Evaluation, split: _Split, fr: _Frame, weights_a: np.ndarray,
                   sampled: tuple[bool, bool]) -> DrawContributions | None:
    """Per-atom probabilities of the optimal set (far atoms: 1), with the draws at each atom."""
    if not (sampled[0] or sampled[1]):
        return None
    na, nb = fr.a.shape[0], fr.b.shape[0]
    va = ca = ra = vb = cb = None
    if sampled[0]:
        va = np.clip(ev.mass_a, 0.0, 1.0)
        va[split.far] = 1.0
        ca, ra = atom_counts(weights_a, na), split.ratios
    if sampled[1]:
        vb, cb = np.clip(ev.mass_b, 0.0, 1.0), atom_counts(fr.wb, nb)
    return DrawContributions(va, ca, na, ra, vb, cb, nb)


def sampled_pair(sampled: Any) -> tuple[bool, bool]:
    """``sampled`` as (P_a drawn, P_b drawn): a bool applies to both."""
    return (bool(sampled[0]), bool(sampled[1])) if isinstance(sampled, tuple) else (bool(sampled), bool(sampled))


#: The deprecated spelling of :func:`mixture_hockey`'s arguments, all by position.
_OLD_SPELLING = ("atoms_a", "weights_a", "atoms_b", "weights_b", "noise", "epsilon")


def _old_spelling(args: tuple[Any, ...]) -> tuple[WeightedAtoms, WeightedAtoms, Any, Any]:
    """``(law_a, law_b, noise, epsilon)`` from the deprecated call ``mixture_hockey(atoms_a, weights_a,
    atoms_b, weights_b, noise, epsilon)``; warns with :class:`~bayespriv.errors.BayesPrivDeprecationWarning`, in
    the words of :mod:`bayespriv._deprecation` (whose helpers word keyword spellings, not arrays by position)."""
    if len(args) != len(_OLD_SPELLING):
        raise TypeError(f"mixture_hockey() takes {len(_OLD_SPELLING)} positional arguments in its deprecated "
                        f"spelling ({', '.join(_OLD_SPELLING)}) but {len(args)} were given")
    atoms_a, weights_a, atoms_b, weights_b, noise, epsilon = args
    warn(f"mixture_hockey({', '.join(_OLD_SPELLING)}) is deprecated and will be removed in the next release: use "
         "mixture_hockey(WeightedAtoms(atoms_a, weights_a), WeightedAtoms(atoms_b, weights_b), noise, epsilon)",
         BayesPrivDeprecationWarning)
    return WeightedAtoms(atoms_a, weights_a), WeightedAtoms(atoms_b, weights_b), noise, epsilon


def _checked_laws(law_a: Any, law_b: Any, noise: Any, epsilon: Any,
                  extra: tuple[Any, ...]) -> tuple[WeightedAtoms, WeightedAtoms, Any, Any]:
    """The arguments of :func:`mixture_hockey` in its spelling, from either spelling."""
    if not isinstance(law_a, WeightedAtoms):
        return _old_spelling((law_a, law_b, noise, epsilon, *extra))
    if extra:
        raise TypeError(f"mixture_hockey() takes 4 positional arguments but {4 + len(extra)} were given")
    if not isinstance(law_b, WeightedAtoms):
        raise ParameterTypeError(f"law_b must be a bayespriv WeightedAtoms; got {law_b!r:.80} of type "
                                 f"{type(law_b).__name__}")
    return law_a, law_b, noise, epsilon


def mixture_hockey(law_a: WeightedAtoms, law_b: WeightedAtoms, noise: Any, epsilon: float, *deprecated: Any,
                   n_points: int = 512, seed: Any = 0, sampled: Any = True, halves: bool = True) -> MixtureEstimate:
    """Estimate H_ε(P_a‖P_b) for P_s = (Σ_i w_i δ_{x_i}) ∗ Z (module docstring).

    Parameters
    ----------
    law_a, law_b : WeightedAtoms
        The law of F under each secret: draws (weights 1/n) or support points (:class:`WeightedAtoms`).
        The four arrays by position, ``mixture_hockey(atoms_a, weights_a, atoms_b, weights_b, noise, epsilon)``,
        are the deprecated spelling, kept for one release (they warn and give the identical estimate).
    noise : object
        With ``kind`` ``"gaussian"`` and ``cov (k, k)`` (full rank), or
        ``"laplace"`` and ``scale (k,)``, ``basis (k, k)`` (invertible).
    epsilon : float > 0
    n_points : int
        Points of the importance sample.
    seed : int or sequence
        Seed of the points (the estimate is a deterministic function of it).
    sampled : bool or (bool, bool)
        Whether the atoms of P_a (and of P_b) are independent draws standing for the law: their per-draw
        probabilities of the optimal set (and, with ``halves``, the split halves) are computed.
    halves : bool
        Compute the split-half diagnostic (sampled laws only).

    Returns
    -------
    MixtureEstimate
    """
    law_a, law_b, noise, epsilon = _checked_laws(law_a, law_b, noise, epsilon, deprecated)
    if not epsilon > 0:
        raise fail("epsilon", "a finite number > 0", epsilon)
    drawn = sampled_pair(sampled)
    wa, wb = law_a.weights, law_b.weights
    full = _frame(law_a.atoms, wa, law_b.atoms, wb, noise)
    cells = (_cells_for(full.a, full.laplace), _cells_for(full.b, full.laplace))  # the frames keep the atoms
    split = _split_far(full, epsilon, full.a.shape[0], cells[1])
    fr, log_mass = split.frame, math.log(split.mass)
    noise_var = 2.0 if fr.laplace else 1.0
    fa, fb = _Fit.of(fr.a, fr.wa, noise_var), _Fit.of(fr.b, wb, noise_var)
    q_mean, q_cov = _tilt(fa, fb, epsilon)
    q_fit = _Fit(q_mean, q_cov, np.linalg.inv(q_cov), float(np.linalg.slogdet(q_cov)[1]))
    prop = _draw_points(fr, q_fit, split.outliers, n_points, seed)
    y = prop.points
    halves = halves and any(drawn) and min(fr.a.shape[0], fr.b.shape[0]) >= 4
    ev = _evaluate(prop, fr, epsilon, halves=halves, masses=drawn, log_mass=log_mass, cells=cells)
    if fr.laplace:  # no closed-form control variate
        base, fit, h = 0.0, math.nan, 0.0
    else:
        fit = _fit_delta(fa, fb, epsilon, split.mass)
        base, h = fit, _hinge(fa.logpdf(y) + log_mass, fb.logpdf(y), ev.lq, epsilon)
    terms = ev.f - h
    far_mass = 1.0 - split.mass
    value = max(0.0, base + float(terms.mean())) + far_mass
    se_mc = float(terms.std(ddof=1)) / math.sqrt(len(y))
    split_h = (tuple(max(0.0, base + float((ev.f_halves[i] - h).mean())) + far_mass for i in range(2))
               if halves else None)
    return MixtureEstimate(min(value, 1.0), se_mc, split_h, fit, len(y), _contributions(ev, split, full, wa, drawn),
                           far_mass)
