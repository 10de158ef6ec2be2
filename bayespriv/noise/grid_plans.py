"""Grid release plans, built once per mechanism: :func:`plan_gaussian` → :class:`GaussianGridPlan`
and :func:`plan_laplace` → :class:`LaplaceGridPlan`.

A plan's ``release(answer, bits)`` is a fixed float function of an integer vector whose law is
given exactly; the float answer enters only through exact rational arithmetic (the exact linear
maps on float answers below). The privacy cost of the discretization is stated by each plan
(``inflation`` for Laplace, ``tv_bound`` for Gaussian; see their docstrings for the theorems).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from bayespriv._validation import check_covariance, check_finite_array, described, fail, sealed
from bayespriv.errors import ParameterTypeError
from .bits import BitSource
from .reserve import DEFAULT_GRID_BITS, MAX_GRID_BITS, check_grid_bits, gaussian_tv_bound
from .samplers import check_bits, dgauss_with, dlap, gauss_constants

# -- exact linear maps on float answers ------------------------------------------------------------


def _float_ints(values: np.ndarray) -> tuple[list[int], int]:
    """Integers A and an exponent e with values == A · 2^e exactly (finite float64 input).

    ``float.as_integer_ratio`` (denominators are powers of two) or, for long vectors, ``frexp``: values = m · 2^x with |m| ∈ [1/2, 1); m · 2^53 is an integer (exact in
    float64), so every value is an integer times 2^(x − 53); all are put over the smallest
    exponent.
    """
    if values.size <= 32:  # small vectors: exact Python conversion is faster than NumPy here
        ratios = [v.as_integer_ratio() for v in values.tolist()]
        den = max((d for _, d in ratios), default=1)  # powers of two: the largest is their lcm
        return [n * (den // d) for n, d in ratios], 1 - den.bit_length()
    mant, expo = np.frexp(values)
    ints = (mant * 2.0**53).astype(np.int64).tolist()
    expo = (expo.astype(np.int64) - 53).tolist()
    e0 = min(expo) if expo else 0
    return [m << (x - e0) for m, x in zip(ints, expo)], e0


def _matrix_ints(matrix: np.ndarray) -> tuple[list[list[int]], int]:
    """Integer rows R and exponent e with matrix == R · 2^e exactly."""
    flat, e0 = _float_ints(np.asarray(matrix, dtype=float).reshape(-1))
    cols = matrix.shape[1]
    return [flat[i:i + cols] for i in range(0, len(flat), cols)], e0


def _check_answer(answer: Any, k: int) -> np.ndarray:
    try:
        arr = np.asarray(answer, dtype=float).reshape(-1) if np.ndim(answer) <= 1 else None
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(f"answer must be a numeric array of shape ({k},); got {answer!r}") from exc
    if arr is None or arr.shape != (k,):
        raise fail("answer", f"of shape ({k},)", described(f"shape {np.shape(answer)}"))
    if not np.all(np.isfinite(arr)):
        raise fail("answer", "finite (no NaN or infinity)", arr)
    return arr


@dataclass(frozen=True, eq=False)
class _ExactRows:
    """A k × k matrix of exact rationals: row c is ``rows[c] / dens[c]`` (Python ints)."""

    rows: tuple[tuple[int, ...], ...]
    dens: tuple[int, ...]

    def __post_init__(self) -> None:
        # the non-zero entries of each row (a diagonal map costs one product per coordinate)
        terms = tuple(tuple((j, v) for j, v in enumerate(row) if v) for row in self.rows)
        object.__setattr__(self, "_terms", terms)

    def grid_fractions(self, answer: np.ndarray, grid_exponent: int) -> list[tuple[int, int]]:
        """(N_c, D_c) with N_c / D_c = (row_c · answer) / 2^grid_exponent exactly, D_c > 0."""
        ints, e0 = _float_ints(answer)
        shift = e0 - grid_exponent
        out = []
        for terms, den in zip(self._terms, self.dens):
            num = sum([v * ints[j] for j, v in terms])
            if shift >= 0:
                out.append((num << shift, den))
            else:
                out.append((num, den << -shift))
        return out


def _scaled_floats(n: list[int], exponent: int) -> np.ndarray:
    """float64 values close to n_c · 2^exponent (a fixed function of the integers n)."""
    out = np.empty(len(n))
    for c, v in enumerate(n):
        sh = max(v.bit_length() - 64, 0)
        try:
            out[c] = math.ldexp(float(v >> sh), exponent + sh)
        except OverflowError:  # beyond the float range: ±inf (callers refuse non-finite releases)
            out[c] = math.inf if v > 0 else -math.inf
    return out


def _map_back(matrix: np.ndarray | None, n: Any, exponent: int) -> np.ndarray:
    """``matrix @ (2^exponent · n)`` in float; ``None`` stands for the identity (skipped)."""
    return _map_back_ints(matrix, [int(v) for v in n], exponent)


def _map_back_ints(matrix: np.ndarray | None, n: Any, exponent: int) -> np.ndarray:
    """:func:`_map_back` of Python ints (a plan's own coordinates: no conversion)."""
    vec = _scaled_floats(n, exponent)
    out = vec if matrix is None else matrix @ vec
    out.setflags(write=False)
    return out


def _unless_identity(matrix: np.ndarray) -> np.ndarray | None:
    return None if np.array_equal(matrix, np.eye(matrix.shape[0])) else matrix


def _floor_log2(num: int, den: int) -> int:
    """⌊log2(num/den)⌋ for positive integers, exactly."""
    e = num.bit_length() - den.bit_length()
    return e if (num >= den << e if e >= 0 else num << -e >= den) else e - 1


class _GridPlan:
    """What both grid plans read the same way: ``_units`` = (units per coordinate, grid exponent), fixed in
    ``__post_init__`` so that a field edited later changes no release."""

    grid_exponent: int
    _units: tuple[tuple[int, ...], int]

    @property
    def k(self) -> int:
        """Dimension of the noise."""
        return len(self._units[0])

    @property
    def grid(self) -> float:
        """The grid step g (a power of two)."""
        return math.ldexp(1.0, self.grid_exponent)


@dataclass(frozen=True, eq=False)
class GaussianGridPlan(_GridPlan):
    """Floating-point-safe release of ``answer + N(0, cov)``, built by :func:`plan_gaussian`.

    Release. With L = Vᵀ (V the float eigenvectors of ``cov``, read as exact rationals),
    y = L·answer is computed exactly; in each coordinate c,
    n_c = round(y_c / g) + Z_c with Z_c an exact discrete Gaussian of parameter σ_c² =
    ``sigma2_units[c]`` (grid units; 0: no noise), and the release is ``V @ (g·n)`` in float —
    a fixed function of the integer vector n, so the answer's float bits reach the output only
    through n, whose law is stated exactly here.

    Privacy (how the guarantee of the continuous mechanism carries over). Let
    M(a) = a + N(0, cov) be (ε, δ)-private. (1) ``realized_cov`` = L⁻¹ diag(g² σ²) L⁻ᵀ ⪰ cov
    exactly: σ² dominates the exact rational matrix L·cov·Lᵀ by Gershgorin's theorem
    (σ_c² g² ≥ (LcovLᵀ)_cc + Σ_{j≠c} |(LcovLᵀ)_cj|, computed in integers), so
    a + N(0, realized_cov) = M(a) + independent Gaussian noise is a post-processing of M, and so
    is K(M) = round(L·(a + N(0, realized_cov)) / g), coordinate by coordinate. (2) For every
    answer a, the TV distance between n and K(M(a)) is at most ``tv_bound`` = Σ_c τ(σ_c)
    (:func:`gaussian_tv_bound`, each σ_c ≥ 2^grid_bits). (3) Hence the release is
    (ε, δ + (1 + e^ε)·tv_bound)-private (:func:`delta_with_discretization`). Coordinates with
    σ_c = 0 are exact null directions of cov (the row of L·cov·Lᵀ is exactly 0): there, as in
    M, the answer is released without noise (rounded to the grid); the original mechanism's
    proof must already assume that answer differences have no component there.

    Attributes
    ----------
    cov : ndarray (k, k)
        The requested covariance.
    directions : ndarray (k, k)
        V (columns), the float map back from grid coordinates.
    grid_exponent : int
        g = 2^grid_exponent.
    sigma2_units : tuple of int
        σ_c² / g², the discrete Gaussian parameters per coordinate.
    realized_cov : ndarray (k, k)
        Covariance of the continuous mechanism the release approximates (⪰ cov, see above).
    tv_bound : float
        Upper bound on the TV distance to that mechanism's post-processing, for every answer.
    grid_bits : int
        Every noisy σ_c is at least 2^grid_bits grid steps.
    """

    cov: np.ndarray
    directions: np.ndarray
    grid_exponent: int
    sigma2_units: tuple[int, ...]
    realized_cov: np.ndarray
    tv_bound: float
    grid_bits: int
    _map: _ExactRows

    theorem = "grid Gaussian: TV to a post-processing of the continuous Gaussian mechanism (exact_noise.GaussianGridPlan)"

    def __post_init__(self) -> None:
        # what a release reads, fixed here: a field edited later (object.__setattr__) changes no release
        object.__setattr__(self, "_back", _unless_identity(self.directions))
        object.__setattr__(self, "_units", (tuple(int(v) for v in self.sigma2_units), int(self.grid_exponent)))
        # the discrete Gaussians' constants per coordinate (None: no noise there), computed once
        object.__setattr__(self, "_samplers", tuple(gauss_constants(s2, 1) if s2 else None for s2 in self._units[0]))

    @property
    def sigma(self) -> np.ndarray:
        """σ_c · g: the noise standard-deviation parameter per coordinate, in answer units."""
        return np.array([math.ldexp(math.sqrt(s), self.grid_exponent) for s in self.sigma2_units])

    def coordinates(self, answer: Any, bits: BitSource) -> tuple[int, ...]:
        """The integer vector n (grid coordinates) of one release."""
        return self._coordinates(_check_answer(answer, self.k), check_bits(bits))

    def _coordinates(self, a: np.ndarray, bits: BitSource) -> tuple[int, ...]:
        """:meth:`coordinates` of a checked answer (finite float64 (k,)) and a BitSource."""
        out = []
        for (num, den), constants in zip(self._map.grid_fractions(a, self._units[1]), self._samplers):
            c = (2 * num + den) // (2 * den)
            out.append(c + dgauss_with(constants, bits) if constants else c)
        return tuple(out)

    def to_answer_space(self, n: Any) -> np.ndarray:
        """The float release ``V @ (g·n)`` for grid coordinates n (read-only)."""
        return _map_back(self._back, n, self._units[1])

    def release(self, answer: Any, bits: BitSource) -> np.ndarray:
        """One floating-point-safe release of ``answer + noise`` (read-only float64 (k,))."""
        return self.to_answer_space(self.coordinates(answer, bits))

    def _release(self, a: np.ndarray, bits: BitSource) -> np.ndarray:
        """:meth:`release` of a checked answer: what a mechanism calls, its answer bound already."""
        return _map_back_ints(self._back, self._coordinates(a, bits), self._units[1])


def _dominating_variances(rows: list[list[int]], cov: np.ndarray) -> tuple[list[int], int]:
    """Integers s and exponent e with s_c · 2^e ≥ Gershgorin radius of L·cov·Lᵀ in row c.

    L = rows · 2^eL is exact; M = L·cov·Lᵀ is computed exactly with Python ints
    (object arrays), and s_c = max(0, M_cc + Σ_{j≠c} |M_cj|), so diag(s) − M is diagonally
    dominant with non-negative diagonal, hence PSD.
    """
    c_rows, e_c = _matrix_ints(cov)
    li = np.array(rows, dtype=object)
    m = li.dot(np.array(c_rows, dtype=object)).dot(li.T)
    k = m.shape[0]
    s = []
    for c in range(k):
        off = sum(abs(m[c, j]) for j in range(k) if j != c)
        s.append(max(0, int(m[c, c]) + int(off)))
    return s, e_c


def plan_gaussian(cov: Any, *, grid_bits: int = DEFAULT_GRID_BITS) -> GaussianGridPlan:
    """Plan floating-point-safe releases of ``answer + N(0, cov)`` for a PSD (k, k) ``cov``.

    Stages: eigendecomposition (float) → exact L = Vᵀ and exact dominating variances
    (Gershgorin on L·cov·Lᵀ) → grid g = 2^(⌊log2 s_min⌋ − grid_bits), s_min the smallest
    positive standard deviation (so every noisy σ_c ≥ 2^grid_bits grid steps; a grid much finer
    than the noise makes the TV cost ≈ 0.2·2^-grid_bits per coordinate) → integer σ_c²
    (rounded up) → TV bound. See :class:`GaussianGridPlan` for the privacy theorem.
    """
    grid_bits = check_grid_bits(grid_bits)
    cov = check_covariance(cov, "cov")
    k = cov.shape[0]
    _, vecs = np.linalg.eigh(cov) if k else (None, np.zeros((0, 0)))
    vecs = np.ascontiguousarray(vecs)
    rows, e_l = _matrix_ints(vecs.T) if k else ([], 0)
    s, e_c = _dominating_variances(rows, cov) if k else ([], 0)
    e_s = 2 * e_l + e_c  # true variance of coordinate c is at most s[c] · 2^e_s
    positive = [v for v in s if v > 0]
    if positive:
        j = min(_floor_log2(v, 1) + e_s for v in positive) // 2  # 2^(2j) <= s_min²
        g_exp = j - grid_bits
    else:
        g_exp = -1074
    sigma2 = [_ceil_shift(v, e_s - 2 * g_exp) for v in s]
    tv = sum(gaussian_tv_bound(_sigma_for_bound(v)) for v in sigma2 if v)
    return GaussianGridPlan(
        cov=_readonly(cov),
        directions=_readonly(vecs),
        grid_exponent=g_exp,
        sigma2_units=tuple(sigma2),
        realized_cov=_readonly(_realized(vecs.T, sigma2, g_exp)),
        tv_bound=float(tv),
        grid_bits=grid_bits,
        _map=_dyadic_rows(rows, e_l),
    )


def _sigma_for_bound(sigma2_units: int) -> float:
    """σ in float for :func:`gaussian_tv_bound`: ⌊σ⌋ = isqrt(σ²) (τ is non-increasing, so
    τ(⌊σ⌋) ≥ τ(σ); the float conversion's relative error ≤ 2^-53 is inside τ's 1e-12 margin),
    capped at 2^MAX_GRID_BITS: τ(2^MAX_GRID_BITS) ≥ τ(σ) for larger σ (and σ stays a float)."""
    return float(min(math.isqrt(sigma2_units), 1 << MAX_GRID_BITS))


def _dyadic_rows(rows: list[list[int]], exponent: int) -> _ExactRows:
    """The exact matrix rows · 2^exponent as :class:`_ExactRows`."""
    if exponent >= 0:
        return _ExactRows(tuple(tuple(v << exponent for v in r) for r in rows), tuple(1 for _ in rows))
    return _ExactRows(tuple(tuple(r) for r in rows), tuple(1 << -exponent for _ in rows))


def _ceil_shift(v: int, e: int) -> int:
    """⌈v · 2^e⌉ for an integer v ≥ 0."""
    return v << e if e >= 0 else -((-v) >> -e)


def _realized(lmat: np.ndarray, sigma2: list[int], g_exp: int) -> np.ndarray:
    if not sigma2:
        return np.zeros((0, 0))
    var = _scaled_floats(sigma2, 2 * g_exp)
    inv = np.linalg.inv(lmat)
    return (inv * var) @ inv.T


def _readonly(arr: np.ndarray) -> np.ndarray:
    return sealed(arr, float)  # a release maps back through these: their memory must not be writable


# -- Laplace plan ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LaplaceGridPlan(_GridPlan):
    """Floating-point-safe release of ``answer + basis @ (scale * Lap)``, built by :func:`plan_laplace`.

    Release. B̃ = [basis, C] is the basis completed by a float orthonormal complement C (no
    noise along C); L = B̃⁻¹ is computed EXACTLY in rationals (so L·basis = [I; 0] exactly) and
    u = L·answer exactly. In noisy coordinate c, n_c = ⌊u_c/g⌋ + R_c + Z_c with
    R_c ~ Bernoulli(u_c/g − ⌊u_c/g⌋) (unbiased randomized rounding) and Z_c exact discrete
    Laplace of scale t_c = ``t_units[c]`` grid steps; in the other coordinates
    n_c = round(u_c/g). The release is ``full_basis @ (g·n)`` in float, a fixed function of n.

    Privacy (Laplace-type proofs carry over with the SAME ε). Those proofs rest on the pointwise
    ratio bound p_a(z)/p_a′(z) ≤ exp(Σ_c |Δ_c|/b_c), Δ = coefficients of a − a′ in the basis
    (a − a′ in its span; translations and couplings only ever apply it to pairs of answers).
    Here P(n_c = z) = h_c(z − u_c/g), h_c the piecewise-linear interpolation of the discrete
    Laplace pmf p(j) ∝ exp(−|j|/t_c). Lemma: on [j, j+1], |(log h_c)'| = |p(j+1) − p(j)|/h_c ≤
    (e^{1/t_c} − 1), since neighbouring masses differ by a factor e^{±1/t_c} and h_c ≥ their
    minimum; log h_c is continuous, so it is (e^{1/t_c} − 1)-Lipschitz. With u − u′ = (Δ, 0)
    exactly, the pmf ratio of n is at most exp(Σ_c (e^{1/t_c} − 1)|Δ_c|/g) (the other
    coordinates are equal). We take t_c = ⌈b_c/g⌉ + 1 ≥ b_c/g + ½ ≥ 1/ln(1 + g/b_c)
    (ln(1+x) ≥ 2x/(2+x)), so (e^{1/t_c} − 1)/g ≤ 1/b_c: the ratio bound of the continuous
    mechanism holds verbatim, and so does every theorem proven from it, with its ε unchanged.
    The price is a slightly larger noise: the discrete scale t_c·g is at most
    ``inflation`` ≤ 1 + 2^(1−grid_bits) times b_c.

    Attributes
    ----------
    scale : ndarray (d,)
    basis : ndarray (k, d)
    full_basis : ndarray (k, k)
        [basis, C], the float map back from grid coordinates.
    grid_exponent : int
        g = 2^grid_exponent ≤ 2^-grid_bits · min positive scale.
    t_units : tuple of int
        Discrete Laplace scale per coordinate in grid steps (0: no noise).
    inflation : float
        Upper bound on max_c t_c·g / b_c.
    grid_bits : int
    """

    scale: np.ndarray
    basis: np.ndarray
    full_basis: np.ndarray
    grid_exponent: int
    t_units: tuple[int, ...]
    inflation: float
    grid_bits: int
    _map: _ExactRows

    theorem = "grid Laplace: pointwise ratio bound exp(Σ|Δ_c|/b_c) kept exactly (exact_noise.LaplaceGridPlan)"

    def __post_init__(self) -> None:
        # what a release reads, fixed here: a field edited later (object.__setattr__) changes no release
        object.__setattr__(self, "_back", _unless_identity(self.full_basis))
        object.__setattr__(self, "_units", (tuple(int(v) for v in self.t_units), int(self.grid_exponent)))

    def coordinates(self, answer: Any, bits: BitSource) -> tuple[int, ...]:
        """The integer vector n (grid coordinates) of one release."""
        return self._coordinates(_check_answer(answer, self.k), check_bits(bits))

    def _coordinates(self, a: np.ndarray, bits: BitSource) -> tuple[int, ...]:
        """:meth:`coordinates` of a checked answer (finite float64 (k,)) and a BitSource."""
        units, g_exp = self._units
        out = []
        for (num, den), t in zip(self._map.grid_fractions(a, g_exp), units):
            if t:
                q, r = divmod(num, den)
                if r and bits.bernoulli(r, den):
                    q += 1
                out.append(q + dlap(t, 1, bits))
            else:
                out.append((2 * num + den) // (2 * den))
        return tuple(out)

    def to_answer_space(self, n: Any) -> np.ndarray:
        """The float release ``full_basis @ (g·n)`` for grid coordinates n (read-only)."""
        return _map_back(self._back, n, self._units[1])

    def release(self, answer: Any, bits: BitSource) -> np.ndarray:
        """One floating-point-safe release of ``answer + noise`` (read-only float64 (k,))."""
        return self.to_answer_space(self.coordinates(answer, bits))

    def _release(self, a: np.ndarray, bits: BitSource) -> np.ndarray:
        """:meth:`release` of a checked answer: what a mechanism calls, its answer bound already."""
        return _map_back_ints(self._back, self._coordinates(a, bits), self._units[1])


def _exact_inverse(matrix: np.ndarray) -> _ExactRows:
    """The exact rational inverse of a float matrix (fraction-free Gauss–Jordan, Bareiss).

    The matrix is R · 2^e with R an integer matrix. Fraction-free Gauss–Jordan on [R | I]
    keeps every entry an integer (each is a minor of [R | I], so the divisions by the previous
    pivot are exact — checked) and ends with [d·I | adj-like block] where d = ±det R; so
    R⁻¹ = block / d and the inverse of the float matrix is R⁻¹ · 2^-e.

    Raises ValidationError if the matrix is exactly singular.
    """
    rows, e = _matrix_ints(matrix)
    k = len(rows)
    aug = [list(r) + [int(i == j) for j in range(k)] for i, r in enumerate(rows)]
    prev = 1
    for col in range(k):
        piv_row = next((i for i in range(col, k) if aug[i][col]), None)
        if piv_row is None:
            raise fail("basis", "of full column rank (linearly independent directions)", described("a singular basis"))
        aug[col], aug[piv_row] = aug[piv_row], aug[col]
        pivot_line = aug[col]
        piv = pivot_line[col]
        for i in range(k):
            if i == col:
                continue
            line, f = aug[i], aug[i][col]
            new = []
            for a, b in zip(line, pivot_line):
                q, r = divmod(piv * a - f * b, prev)
                if r:  # pragma: no cover - impossible by Bareiss' theorem
                    raise ArithmeticError("fraction-free elimination lost exactness")
                new.append(q)
            aug[i] = new
        prev = piv
    return _inverse_rows(aug, k, e)


def _inverse_rows(aug: list[list[int]], k: int, e: int) -> _ExactRows:
    """Rows of R⁻¹ · 2^-e from the final [d_i e_i | block] of fraction-free Gauss–Jordan."""
    inv_rows, dens = [], []
    for i, line in enumerate(aug):
        d = line[i]
        part = line[k:]
        if d < 0:
            d, part = -d, [-v for v in part]
        g = math.gcd(d, *part)
        d, part = d // g, [v // g for v in part]
        if e <= 0:
            inv_rows.append(tuple(v << -e for v in part))
            dens.append(d)
        else:
            inv_rows.append(tuple(part))
            dens.append(d << e)
    return _ExactRows(tuple(inv_rows), tuple(dens))


def _check_laplace(scale: Any, basis: Any) -> tuple[np.ndarray, np.ndarray]:
    scale = check_finite_array(scale, "scale").reshape(-1)
    if np.any(scale < 0):
        raise fail("scale", "non-negative", scale)
    basis = check_finite_array(basis, "basis")
    if basis.ndim != 2 or basis.shape[1] != scale.shape[0]:
        raise fail("basis", f"a (k, {scale.shape[0]}) matrix (one column per scale)", described(f"shape {basis.shape}"))
    if basis.shape[1] > basis.shape[0]:
        raise fail("basis", "a (k, d) matrix with d <= k", described(f"shape {basis.shape}"))
    return scale, basis


def _complete(basis: np.ndarray) -> np.ndarray:
    """[basis, C] with C an orthonormal (float) basis of the orthogonal complement."""
    k, d = basis.shape
    if d == k:
        return basis.copy()
    u, _, _ = np.linalg.svd(basis, full_matrices=True) if d else (np.eye(k), None, None)
    return np.hstack([basis, u[:, d:]])


def plan_laplace(scale: Any, basis: Any, *, grid_bits: int = DEFAULT_GRID_BITS) -> LaplaceGridPlan:
    """Plan floating-point-safe releases of ``answer + basis @ (scale * Lap)``.

    Stages: checks (scale (d,) ≥ 0, basis (k, d), d ≤ k) → completion to a square basis →
    exact rational inverse → grid g = 2^(⌊log2 b_min⌋ − grid_bits), b_min the smallest positive
    scale → integer scales t_c = ⌈b_c/g⌉ + 1. See :class:`LaplaceGridPlan` for the theorem.
    """
    grid_bits = check_grid_bits(grid_bits)
    scale, basis = _check_laplace(scale, basis)
    full = _complete(basis)
    inverse = _exact_inverse(full)
    k, d = basis.shape
    b = [Fraction(*float(v).as_integer_ratio()) for v in scale] + [Fraction(0)] * (k - d)
    positive = [v for v in b if v > 0]
    g_exp = (min(_floor_log2(v.numerator, v.denominator) for v in positive) - grid_bits) if positive else -1074
    g = Fraction(2) ** g_exp
    t_units = tuple(math.ceil(v / g) + 1 if v > 0 else 0 for v in b)
    ratios = [Fraction(t) * g / v for t, v in zip(t_units, b) if v > 0]
    inflation = math.nextafter(float(max(ratios)), math.inf) if ratios else 1.0
    return LaplaceGridPlan(
        scale=_readonly(scale),
        basis=_readonly(basis),
        full_basis=_readonly(full),
        grid_exponent=g_exp,
        t_units=t_units,
        inflation=inflation,
        grid_bits=grid_bits,
        _map=inverse,
    )
