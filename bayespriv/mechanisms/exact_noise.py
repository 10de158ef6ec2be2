"""Floating-point-safe release noise: exact discrete samplers and grid release plans.

Why
---
Adding NumPy's float Laplace or Gaussian noise to a float answer leaks the answer through the
low-order bits of the sum (Mironov, *On significance of the least significant bits for differential
privacy*, CCS 2012): the set of floats ``a ⊕ x`` reachable from answer ``a`` depends on ``a``. Here
every random decision is made with integers and exact rationals, from random bits that come from
the OS CSPRNG (:meth:`BitSource.system`) unless a seed is given for testing.

Contents
--------
* :class:`BitSource` — random bits (OS CSPRNG, buffered; or a seeded NumPy generator for tests),
  exact :meth:`~BitSource.randbelow` and :meth:`~BitSource.bernoulli`.
* Exact samplers (Canonne, Kamath & Steinke 2020, *The Discrete Gaussian for Differential
  Privacy*, Algorithms 1–3): :func:`bernoulli_exp` (Bernoulli(exp(−γ)), γ ≥ 0 rational),
  :func:`discrete_laplace` (pmf ∝ exp(−|z|/t) on ℤ), :func:`discrete_gaussian`
  (pmf ∝ exp(−z²/(2σ²)) on ℤ), and their vector versions ``sample_*``. Each draw is a rejection
  loop over Python ints, so the vector versions loop over draws (inherent to exact rejection
  sampling; nothing here is vectorizable without giving up exactness).
* Grid release plans, built once per mechanism: :func:`plan_gaussian` → :class:`GaussianGridPlan`
  and :func:`plan_laplace` → :class:`LaplaceGridPlan`, whose ``release(answer, bits)`` returns the
  noisy answer. The release is a fixed float function of an integer vector ``n`` whose law is
  given exactly; the float answer enters only through exact rational arithmetic. The
  privacy cost of the discretization is stated by each plan (``inflation`` for Laplace,
  ``tv_bound`` for Gaussian; see their docstrings for the theorems).
* The reserve rule of Gaussian mechanisms (:func:`discretization_grid_bits`,
  :func:`discretization_reserve`): a mechanism asked for (ε, δ) with k noise coordinates plans
  its noise on a grid of b = min(1000, max(60, ⌈log2(200·(1 + e^ε)·k/δ)⌉)) bits (every σ_c is at
  least 2^b grid steps), reserves 1.001·(1 + e^ε)·k·τ(2^b) ≤ δ/1000 of δ for the grid
  (τ = :func:`gaussian_tv_bound`, ≈ 0.1995·2^-b) and calibrates its continuous noise at
  δ − reserve; the grid release is then (ε, δ)-private with the δ asked for. b = 60 whenever
  ε ≤ 5 and δ ≥ 1e-9 (k ≤ 38,000); ε = 50, δ = 1e-15, k = 64 gives b = 136.
"""

from __future__ import annotations

import itertools
import math
import numbers
import os
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterator

import numpy as np

from .._validation import check_covariance, check_finite_array, check_real, described, fail, sealed
from ..errors import ParameterTypeError, ValidationError
from ..random import RNGLike, as_generator

__all__ = [
    "BitSource",
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_gaussian",
    "sample_bernoulli_exp",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "GaussianGridPlan",
    "LaplaceGridPlan",
    "plan_gaussian",
    "plan_laplace",
    "gaussian_tv_bound",
    "delta_with_discretization",
    "discretization_reserve",
    "discretization_grid_bits",
    "DEFAULT_GRID_BITS",
    "MAX_GRID_BITS",
    "RESERVE_SHARE",
]

#: Bytes fetched from the bit source's backend at a time (one ``os.urandom`` call per block).
BLOCK_BYTES = 4096
#: Whether native 64-bit words are little-endian (then a block is read through a memoryview).
_LITTLE_ENDIAN = sys.byteorder == "little"
#: Bits compared at a time by :meth:`BitSource.bernoulli`.
_CHUNK = 64
#: Default: the grid step g is at most 2^-60 times the smallest noise scale.
DEFAULT_GRID_BITS = 60
#: Finest grid: 2^-1000 times the smallest noise scale (τ(2^1000) ≈ 2e-302 is still a normal float).
MAX_GRID_BITS = 1000
#: Share of δ that a mechanism's grid may cost: (1 + e^ε)·k·τ ≤ RESERVE_SHARE·δ (:func:`discretization_grid_bits`).
RESERVE_SHARE = 1e-3


# -- random bits -----------------------------------------------------------------------------------


class BitSource:
    """Uniform random bits, from the OS CSPRNG or (for tests) from a seeded NumPy generator.

    Bytes are fetched in blocks of :data:`BLOCK_BYTES` (``os.urandom`` for :meth:`system`:
    still OS CSPRNG output, but one system call per block of 512 words rather than one per
    draw) and handed out as 64-bit words: a request for k ≤ 64 bits takes the low k bits of
    the next unused word (the rest of that word is discarded, never reused); k > 64 bits
    concatenate ⌈k/64⌉ words.

    Parameters
    ----------
    fill : callable int -> bytes
        Returns that many fresh uniform random bytes.
    seeded : bool
        Whether the bits are replayable (a seed was given). Seeded sources are for tests only.

    Attributes
    ----------
    seeded : bool
    """

    __slots__ = ("_fill", "_word", "seeded")

    def __init__(self, fill: Callable[[int], bytes], *, seeded: bool) -> None:
        if not callable(fill):
            raise ParameterTypeError(f"fill must be a callable returning bytes; got {type(fill).__name__}")
        self._fill = fill
        # _word() returns the next unused uniform 64-bit word; blocks are fetched lazily, one
        # ``fill(BLOCK_BYTES)`` call per 512 words (a C-level iterator: no Python frame per word).
        self._word = itertools.chain.from_iterable(map(self._block_words, itertools.repeat(None))).__next__
        self.seeded = bool(seeded)

    def _block_words(self, _: Any) -> Iterator[int]:
        """The block's 512 little-endian 64-bit words, converted lazily (a source used for one
        release reads ~100 of them; converting all 512 up front cost ~8 µs of an ~85 µs release)."""
        block = bytes(self._fill(BLOCK_BYTES))
        if len(block) != BLOCK_BYTES:
            raise ValidationError(f"fill must return {BLOCK_BYTES} bytes; got {len(block)}")
        if _LITTLE_ENDIAN:  # native "Q" is "<u8": the same words, in the same order
            return iter(memoryview(block).cast("Q"))
        return iter(np.frombuffer(block, dtype="<u8").tolist())  # pragma: no cover - big-endian hosts

    @classmethod
    def system(cls) -> "BitSource":
        """Bits from the OS CSPRNG (``os.urandom``), buffered in blocks."""
        return cls(os.urandom, seeded=False)

    @classmethod
    def from_rng(cls, rng: RNGLike) -> "BitSource":
        """``None``: :meth:`system`; an int, ``SeedSequence`` or ``Generator``: seeded bits
        from ``Generator.bytes`` (a Generator passed in is advanced). For tests only."""
        if rng is None:
            return cls.system()
        gen = as_generator(rng)
        return cls(gen.bytes, seeded=True)

    def __repr__(self) -> str:
        return f"BitSource(seeded={self.seeded})"

    def getrandbits(self, k: int) -> int:
        """An integer uniform on {0, …, 2^k − 1} (k ≥ 0)."""
        if k <= 64:
            return self._word() & ((1 << k) - 1)
        out, have = 0, 0
        while have < k:
            out |= self._word() << have
            have += 64
        return out & ((1 << k) - 1)

    def randbelow(self, n: int) -> int:
        """An integer exactly uniform on {0, …, n − 1}, for a Python int n ≥ 1 of any size.

        Rejection on ``(n − 1).bit_length()`` random bits: each try is accepted with
        probability n / 2^⌈log2 n⌉ > 1/2.
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise ParameterTypeError(f"n must be an integer >= 1; got {n!r} of type {type(n).__name__}")
        n = int(n)
        if n < 1:
            raise fail("n", "an integer >= 1", n)
        return self._below(n)

    def _below(self, n: int) -> int:
        """:meth:`randbelow` without argument checks (n a Python int ≥ 1)."""
        k = (n - 1).bit_length()
        if k <= 64:
            mask = (1 << k) - 1
            word = self._word
            r = word() & mask
            while r >= n:
                r = word() & mask
            return r
        r = self.getrandbits(k)
        while r >= n:
            r = self.getrandbits(k)
        return r

    def bernoulli(self, num: int, den: int) -> bool:
        """True with probability exactly num/den (0 ≤ num ≤ den, den ≥ 1, Python ints).

        Compares a uniform U ∈ [0, 1), drawn 64 bits at a time, with the binary expansion of
        num/den: at the first 64-bit chunk where they differ, U < num/den iff U's chunk is the
        smaller. Uses 64 bits with probability 1 − 2^-64, never rejects.
        """
        word = self._word
        while True:
            q, num = divmod(num << _CHUNK, den)
            r = word()
            if r != q:
                return r < q


# -- exact rationals -------------------------------------------------------------------------------


def _ratio(value: Any, name: str, *, positive: bool) -> tuple[int, int]:
    """(numerator, denominator) of a finite real ≥ 0 (> 0 if ``positive``), exactly.

    Accepts ints, :class:`fractions.Fraction` and floats (a float is the dyadic rational it
    represents). Rejects bool, NaN, infinities, negatives.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Rational, numbers.Real)):
        raise ParameterTypeError(f"{name} must be a rational or real number; got {value!r} of type {type(value).__name__}")
    if isinstance(value, numbers.Rational):
        frac = Fraction(int(value.numerator), int(value.denominator))
    else:
        x = float(value)
        if not math.isfinite(x):
            raise fail(name, "finite", value)
        frac = Fraction(*x.as_integer_ratio())
    if frac < 0 or (positive and frac == 0):
        raise fail(name, "> 0" if positive else ">= 0", value)
    return frac.numerator, frac.denominator


def _count(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or int(n) < 0:
        raise fail("n", "a non-negative integer", n)
    return int(n)


def _as_array(values: list[int]) -> np.ndarray:
    """int64 when every value fits, else an object array of Python ints."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    if max(values) < 2**63 and min(values) >= -(2**63):
        return np.array(values, dtype=np.int64)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# -- CKS Algorithm 1: Bernoulli(exp(-gamma)) -------------------------------------------------------


def _bern_exp_small(num: int, den: int, bits: BitSource) -> bool:
    """Bernoulli(exp(−num/den)) for 0 ≤ num/den ≤ 1 (CKS 2020, Algorithm 1, first branch).

    Draws A_K ~ Bernoulli(γ/K) for K = 1, 2, … until the first A_K = 0; returns whether that K
    is odd. P(K > k) = γ^k / k!, so P(K odd) = Σ_k (−γ)^k / k! = exp(−γ). Each A_K is
    :meth:`BitSource.bernoulli` (num, den·K), inlined here for speed.
    """
    word = bits._word
    k = 1
    while True:
        d, n = den * k, num
        while True:
            q, n = divmod(n << _CHUNK, d)
            r = word()
            if r != q:
                break
        if r > q:  # A_K = 0
            return k & 1 == 1
        k += 1


def _bern_exp_one(bits: BitSource) -> bool:
    """Bernoulli(exp(−1)): Algorithm 1 with γ = 1 (the K = 1 trial always succeeds)."""
    if bits._word() & 1:  # K = 2: Bernoulli(1/2) failed
        return False
    k = 3
    below = bits._below
    while below(k) == 0:
        k += 1
    return k & 1 == 1


def _bern_exp(num: int, den: int, bits: BitSource) -> bool:
    """Bernoulli(exp(−num/den)) for any num/den ≥ 0 (CKS 2020, Algorithm 1).

    For γ > 1: exp(−γ) = exp(−1)^⌊γ⌋ · exp(−(γ − ⌊γ⌋)), a product of independent trials.
    """
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not _bern_exp_one(bits):
            return False
    return _bern_exp_small(rest, den, bits) if rest else True


def bernoulli_exp(gamma: Any, bits: BitSource) -> bool:
    """One exact draw of Bernoulli(exp(−γ)) for a rational γ ≥ 0 (CKS 2020, Algorithm 1).

    Parameters
    ----------
    gamma : int, Fraction or float ≥ 0 (a float is the exact dyadic rational it represents)
    bits : BitSource
    """
    num, den = _ratio(gamma, "gamma", positive=False)
    return _bern_exp(num, den, _check_bits(bits))


def sample_bernoulli_exp(gamma: Any, n: int, bits: BitSource) -> np.ndarray:
    """``n`` independent exact draws of Bernoulli(exp(−γ)) as a bool array."""
    num, den = _ratio(gamma, "gamma", positive=False)
    bits = _check_bits(bits)
    return np.array([_bern_exp(num, den, bits) for _ in range(_count(n))], dtype=bool)


def _check_bits(bits: Any) -> BitSource:
    if not isinstance(bits, BitSource):
        raise ParameterTypeError(f"bits must be a BitSource; got {type(bits).__name__}")
    return bits


# -- CKS Algorithm 2: discrete Laplace -------------------------------------------------------------


def _dlap(t: int, s: int, bits: BitSource) -> int:
    """Discrete Laplace with pmf ∝ exp(−|z|·s/t) on ℤ, for integers t, s ≥ 1 (CKS 2020, Algorithm 2).

    U uniform on {0..t−1} accepted with probability exp(−U/t) and V geometric with
    P(V ≥ v) = exp(−v) make X = U + tV geometric with P(X = x) ∝ exp(−x/t); Y = ⌊X/s⌋ is then
    geometric with P(Y = y) ∝ exp(−ys/t), i.e. scale t/s; a fair sign is attached, rejecting
    (−, 0) so that 0 is not counted twice.
    """
    below, word = bits._below, bits._word
    while True:
        u = below(t)
        if u and not _bern_exp_small(u, t, bits):
            continue
        v = 0
        while True:  # V: count successes of Bernoulli(exp(−1)) (_bern_exp_one, inlined)
            if word() & 1:  # K = 2 trial failed: even K, the trial is 0
                break
            k = 3
            while below(k) == 0:
                k += 1
            if not k & 1:
                break
            v += 1
        y = (u + t * v) // s
        if word() & 1:
            if y:
                return -y
        else:
            return y


def discrete_laplace(scale: Any, bits: BitSource) -> int:
    """One exact draw of the discrete Laplace law on ℤ, P(Z = z) ∝ exp(−|z|/scale).

    Parameters
    ----------
    scale : int, Fraction or float > 0
        t in CKS 2020's Lap_ℤ(t); a float is the exact dyadic rational it represents.
    bits : BitSource
    """
    num, den = _ratio(scale, "scale", positive=True)
    return _dlap(num, den, _check_bits(bits))


def sample_discrete_laplace(scale: Any, n: int, bits: BitSource) -> np.ndarray:
    """``n`` independent exact discrete Laplace draws (int64, or object if any exceeds int64)."""
    num, den = _ratio(scale, "scale", positive=True)
    bits = _check_bits(bits)
    return _as_array([_dlap(num, den, bits) for _ in range(_count(n))])


# -- CKS Algorithm 3: discrete Gaussian ------------------------------------------------------------


def _dgauss(p: int, q: int, bits: BitSource) -> int:
    """Discrete Gaussian with pmf ∝ exp(−z²/(2σ²)), σ² = p/q (CKS 2020, Algorithm 3).

    Proposal Y ~ Lap_ℤ(t), t = ⌊σ⌋ + 1, accepted with probability
    exp(−(|Y| − σ²/t)²/(2σ²)) = exp(−(|Y|qt − p)² / (2pqt²)): an exact rational exponent.
    ⌊σ⌋ = ⌊√⌊σ²⌋⌋ = isqrt(p // q).
    """
    t = math.isqrt(p // q) + 1
    den = 2 * p * q * t * t
    qt = q * t
    while True:
        y = _dlap(t, 1, bits)
        a = abs(y) * qt - p
        if _bern_exp(a * a, den, bits):
            return y


def discrete_gaussian(sigma2: Any, bits: BitSource) -> int:
    """One exact draw of the discrete Gaussian on ℤ, P(Z = z) ∝ exp(−z²/(2σ²)).

    Parameters
    ----------
    sigma2 : int, Fraction or float > 0
        σ² (the variance parameter, not the variance of Z, which is slightly less).
    bits : BitSource
    """
    p, q = _ratio(sigma2, "sigma2", positive=True)
    return _dgauss(p, q, _check_bits(bits))


def sample_discrete_gaussian(sigma2: Any, n: int, bits: BitSource) -> np.ndarray:
    """``n`` independent exact discrete Gaussian draws (int64, or object if any exceeds int64)."""
    p, q = _ratio(sigma2, "sigma2", positive=True)
    bits = _check_bits(bits)
    return _as_array([_dgauss(p, q, bits) for _ in range(_count(n))])


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
    vec = _scaled_floats([int(v) for v in n], exponent)
    out = vec if matrix is None else matrix @ vec
    out.setflags(write=False)
    return out


def _unless_identity(matrix: np.ndarray) -> np.ndarray | None:
    return None if np.array_equal(matrix, np.eye(matrix.shape[0])) else matrix


def _floor_log2(num: int, den: int) -> int:
    """⌊log2(num/den)⌋ for positive integers, exactly."""
    e = num.bit_length() - den.bit_length()
    return e if (num >= den << e if e >= 0 else num << -e >= den) else e - 1


def _check_grid_bits(grid_bits: Any) -> int:
    if isinstance(grid_bits, bool) or not isinstance(grid_bits, numbers.Integral) or not 8 <= int(grid_bits) <= MAX_GRID_BITS:
        raise fail("grid_bits", f"an integer in [8, {MAX_GRID_BITS}]", grid_bits)
    return int(grid_bits)


# -- Gaussian plan ---------------------------------------------------------------------------------


def gaussian_tv_bound(sigma: float) -> float:
    """An upper bound τ(σ) on the TV distance between ``z₀ + Z`` and ``round(y + σξ)``, σ ≥ 1.

    Here y is any real, z₀ = round(y) (nearest integer), Z the discrete Gaussian with parameter
    σ (pmf p(z) ∝ exp(−z²/(2σ²))) and ξ ~ N(0, 1): both laws live on ℤ (in grid units).

        τ(σ) = [½ + (2x + 3/σ)/(48σ)] / (√(2π)·σ) + 2φ(x)/x + q/(1 − q),
        x = max(10, 2√(ln σ)),   q = exp(−2π²σ²),

    rounded up by a relative 1e-12 (floating-point error); φ is the N(0, 1) density. For
    σ ≥ 2^60: τ(σ)·σ ≤ 0.19948, i.e. τ ≈ 1/(2√(2π)σ) ≈ 0.1995/σ.

    Theorem (proof). Let f = y − z₀ ∈ [−½, ½], r the law of round(σξ) and φ_σ the N(0, σ²)
    density. round(y + σξ) = z₀ + round(f + σξ), so TV ≤ (i) + ½[(ii) + (iii)] with:
    (i) round(f + σξ) and round(σξ) are the same rounding of N(f, σ²) and N(0, σ²), so their
    TV is at most 2Φ(|f|/(2σ)) − 1 ≤ |f|/(σ√(2π)) ≤ 1/(2√(2π)σ) (Φ concave on [0, ∞)).
    (ii) Σ_z |r(z) − φ_σ(z)|: r(z) = ∫_{−½}^{½} φ_σ(z + v) dv, and a second-order Taylor
    expansion (the linear term integrates to 0) with sup|φ_σ''| = φ_σ(0)/σ² gives
    |r(z) − φ_σ(z)| ≤ 1/(24√(2π)σ³) for every z. Take the integer A = ⌈xσ⌉ (any A ≥ 0 is
    allowed): the 2A + 1 ≤ 2xσ + 3 points |z| ≤ A contribute at most (2xσ + 3)/(24√(2π)σ³);
    the tails |z| > A carry at most 2Φ̄((A + ½)/σ) of r and 2Φ̄(A/σ) of φ_σ (φ_σ decreases on
    [0, ∞), so its sum is bounded by its integral), together ≤ 4Φ̄(x) ≤ 4φ(x)/x (Mills).
    (iii) Σ_z |φ_σ(z) − p(z)| = |S/(σ√(2π)) − 1| with S = Σ_z exp(−z²/(2σ²)) =
    σ√(2π) Σ_k exp(−2π²σ²k²) (Poisson summation), which is at most 2q/(1 − q).
    Halving (ii) and (iii) gives the formula. The choice of x keeps every term but the first
    O(√(ln σ)/σ²): for σ ≥ e^25, φ(x) = 1/(√(2π)σ²) exactly (the tails are O(1/σ²), where a
    fixed A = ⌈10σ⌉ left a constant ≈ 1.5e-23 that would dominate any σ > 10^22).

    Monotonicity (used by :func:`discretization_reserve`). τ is non-increasing in σ ≥ 1:
    x is non-decreasing and continuous (the two branches meet at σ = e^25, where φ(10) =
    1/(√(2π)σ²)) and φ(x)/x decreases in x; x/σ² decreases (for σ > e^25 its derivative is
    σ⁻³(1/√(ln σ) − 4√(ln σ)) < 0); 1/σ, 3/σ³ and q decrease. So a coordinate with σ_c ≥ σ₀
    costs at most τ(σ₀).

    Floating point: every term is computed as a product of factors that stay normal floats
    for σ up to 2^1000 (the finest grid, :data:`MAX_GRID_BITS`; τ(2^1000) ≈ 2e-302); for
    σ ≥ 10, q < e^-1974 is dropped, far inside the 1e-12 margin. Tests check the float value
    against 50-digit mpmath evaluations of the un-simplified bound (exact A, exact Φ̄) for σ
    from 1 to 2^1000, and the bound against the exact TV (mpmath sums) for small σ.
    """
    sigma = check_real("sigma", sigma)
    if not (math.isfinite(sigma) and sigma >= 1.0):
        raise fail("sigma", "a finite number >= 1 (grid units)", sigma)
    root = math.sqrt(2.0 * math.pi)
    if sigma <= _TAIL_SWITCH:
        x = 10.0
        tails = 2.0 * math.exp(-50.0) / (root * x)  # 2φ(10)/10
    else:
        x = 2.0 * math.sqrt(math.log(sigma))
        tails = 2.0 / (root * x * sigma) / sigma  # 2φ(x)/x with φ(x) = 1/(√(2π)σ²)
    main = (0.5 + (2.0 * x + 3.0 / sigma) / (48.0 * sigma)) / (root * sigma)
    q = math.exp(-2.0 * math.pi**2 * sigma**2) if sigma < 10.0 else 0.0  # q < e^-1970 beyond: below any float
    poisson = q / (1.0 - q)
    return (main + tails + poisson) * (1.0 + 1e-12)


#: σ = e^25: from here on the tail cut is A = ⌈2√(ln σ)·σ⌉ instead of ⌈10σ⌉ (:func:`gaussian_tv_bound`).
_TAIL_SWITCH = math.exp(25.0)


def discretization_reserve(epsilon: float, k: int, *, grid_bits: int = DEFAULT_GRID_BITS) -> float:
    """The most a k-dimensional :class:`GaussianGridPlan` can add to δ: 1.001·(1 + e^ε)·k·τ(2^grid_bits).

    Every noisy coordinate of a plan has σ_c ≥ 2^grid_bits grid steps and τ(σ) is non-increasing
    in σ (:func:`gaussian_tv_bound`), so ``plan.tv_bound ≤ k·τ(2^grid_bits)`` and, by
    :func:`delta_with_discretization`, the grid release of a mechanism calibrated at δ − reserve
    is (ε, δ)-private. The factor 1.001 is a margin for the rounding of the plans' sums of τ.
    Mechanisms choose ``grid_bits`` with :func:`discretization_grid_bits`, which keeps this
    reserve at most δ/1000.
    """
    tau = gaussian_tv_bound(math.ldexp(1.0, _check_grid_bits(grid_bits)))
    # (1 + e^ε)·(k·τ): k·τ ≤ 1 first, so the product stays finite for every ε ≤ 700
    return (1.0 + math.exp(min(float(epsilon), 700.0))) * (int(k) * tau) * 1.001


def discretization_grid_bits(epsilon: float, delta: float, k: int) -> int:
    """The grid of a mechanism's Gaussian plan: b = max(60, ⌈log2(200·(1 + e^ε)·k/δ)⌉), at most 1000.

    Every noisy coordinate then has σ_c ≥ 2^b grid steps, and the reserve
    :func:`discretization_reserve` (ε, k, grid_bits=b) is at most δ/1000 (:data:`RESERVE_SHARE`):
    for σ ≥ 2^60, 1.001·σ·τ(σ) ≤ 1.001 · 0.19948 < 0.2, so the reserve is below
    (1 + e^ε)·k·0.2·2^-b ≤ δ/1000. The floor 60 (:data:`DEFAULT_GRID_BITS`) is the grid used for
    every ε ≤ 5, δ ≥ 1e-9 and k ≤ 38,000 (there the rule asks for fewer bits), so the common case
    keeps its grid and its speed; extreme requests get a finer grid, e.g. b = 136 at ε = 50,
    δ = 1e-15, k = 64 (the samplers are exact over Python integers at any size). The cap
    :data:`MAX_GRID_BITS` (reached only when ε + ln(1/δ) + ln(200k) > 1000·ln 2 ≈ 693, e.g.
    ε > 649 at δ = 1e-15 and k = 64) leaves a reserve above δ/1000; mechanisms then calibrate
    at δ − reserve if it is positive and refuse otherwise.

    Parameters
    ----------
    epsilon : float ≥ 0
    delta : float in (0, 1)
    k : int ≥ 0
        Number of noise coordinates (the release's dimension).
    """
    eps, d = check_real("epsilon", epsilon), check_real("delta", delta)
    if not (math.isfinite(eps) and eps >= 0):
        raise fail("epsilon", "a finite number >= 0", epsilon)
    if not (0.0 < d < 1.0):
        raise fail("delta", "in the open interval (0, 1)", delta)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) < 0:
        raise fail("k", "a non-negative integer", k)
    if int(k) == 0:
        return DEFAULT_GRID_BITS
    # log2((1 + e^ε)·k·(0.2/RESERVE_SHARE)/δ), in logs so that no e^ε overflows
    log_one_plus = eps + math.log1p(math.exp(-eps))
    need = (log_one_plus + math.log(int(k)) + math.log(0.2 / RESERVE_SHARE) - math.log(d)) / math.log(2.0)
    bits = math.ceil(need * (1.0 + 1e-12))  # a hair up: the float log may round down across an integer
    return min(MAX_GRID_BITS, max(DEFAULT_GRID_BITS, bits))


def delta_with_discretization(epsilon: float, delta: float, tv_bound: float) -> float:
    """δ' = δ + (1 + e^ε)·τ: the δ of a mechanism within TV distance τ of an (ε, δ)-private one.

    Theorem. If for every input a the discrete release M'(a) is within total variation τ of
    K(M(a)), K a fixed (randomized) post-processing and M (ε, δ)-private (in the Pufferfish
    sense: for each secret pair, the laws of M given either secret), then for every set S and
    neighbours a, a′ (or secrets, averaging over the answer's conditional law — TV bounds are
    preserved under mixtures):
    P(M'(a) ∈ S) ≤ P(K(M(a)) ∈ S) + τ ≤ e^ε P(K(M(a′)) ∈ S) + δ + τ
    ≤ e^ε (P(M'(a′) ∈ S) + τ) + δ + τ = e^ε P(M'(a′) ∈ S) + δ + (1 + e^ε) τ.
    The result is rounded up; it is capped at 1.0 (a vacuous δ) when e^ε overflows.
    """
    eps = check_real("epsilon", epsilon)
    d = check_real("delta", delta)
    tau = check_real("tv_bound", tv_bound)
    if not (math.isfinite(eps) and eps >= 0):
        raise fail("epsilon", "a finite number >= 0", epsilon)
    if not (0.0 <= d <= 1.0):
        raise fail("delta", "in [0, 1]", delta)
    if not (math.isfinite(tau) and tau >= 0):
        raise fail("tv_bound", "a finite number >= 0", tv_bound)
    if eps > 700.0:
        return 1.0 if tau > 0 else d
    out = d + (1.0 + math.exp(eps)) * tau
    return min(1.0, math.nextafter(out, math.inf) if tau > 0 else out)


@dataclass(frozen=True, eq=False)
class GaussianGridPlan:
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

    @property
    def k(self) -> int:
        """Dimension of the noise."""
        return len(self._units[0])

    @property
    def grid(self) -> float:
        """The grid step g (a power of two)."""
        return math.ldexp(1.0, self.grid_exponent)

    @property
    def sigma(self) -> np.ndarray:
        """σ_c · g: the noise standard-deviation parameter per coordinate, in answer units."""
        return np.array([math.ldexp(math.sqrt(s), self.grid_exponent) for s in self.sigma2_units])

    def coordinates(self, answer: Any, bits: BitSource) -> tuple[int, ...]:
        """The integer vector n (grid coordinates) of one release."""
        a = _check_answer(answer, self.k)
        bits = _check_bits(bits)
        units, g_exp = self._units
        out = []
        for (num, den), s2 in zip(self._map.grid_fractions(a, g_exp), units):
            c = (2 * num + den) // (2 * den)
            out.append(c + _dgauss(s2, 1, bits) if s2 else c)
        return tuple(out)

    def to_answer_space(self, n: Any) -> np.ndarray:
        """The float release ``V @ (g·n)`` for grid coordinates n (read-only)."""
        return _map_back(self._back, n, self._units[1])

    def release(self, answer: Any, bits: BitSource) -> np.ndarray:
        """One floating-point-safe release of ``answer + noise`` (read-only float64 (k,))."""
        return self.to_answer_space(self.coordinates(answer, bits))


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
    grid_bits = _check_grid_bits(grid_bits)
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
class LaplaceGridPlan:
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

    @property
    def k(self) -> int:
        """Dimension of the noise."""
        return len(self._units[0])

    @property
    def grid(self) -> float:
        """The grid step g (a power of two)."""
        return math.ldexp(1.0, self.grid_exponent)

    def coordinates(self, answer: Any, bits: BitSource) -> tuple[int, ...]:
        """The integer vector n (grid coordinates) of one release."""
        a = _check_answer(answer, self.k)
        bits = _check_bits(bits)
        units, g_exp = self._units
        out = []
        for (num, den), t in zip(self._map.grid_fractions(a, g_exp), units):
            if t:
                q, r = divmod(num, den)
                if r and bits.bernoulli(r, den):
                    q += 1
                out.append(q + _dlap(t, 1, bits))
            else:
                out.append((2 * num + den) // (2 * den))
        return tuple(out)

    def to_answer_space(self, n: Any) -> np.ndarray:
        """The float release ``full_basis @ (g·n)`` for grid coordinates n (read-only)."""
        return _map_back(self._back, n, self._units[1])

    def release(self, answer: Any, bits: BitSource) -> np.ndarray:
        """One floating-point-safe release of ``answer + noise`` (read-only float64 (k,))."""
        return self.to_answer_space(self.coordinates(answer, bits))


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
    grid_bits = _check_grid_bits(grid_bits)
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
