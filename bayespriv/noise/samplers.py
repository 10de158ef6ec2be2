"""Exact discrete samplers over Python ints (Canonne, Kamath & Steinke 2020, Algorithms 1–3).

:func:`bernoulli_exp` (Bernoulli(exp(−γ)), γ ≥ 0 rational), :func:`discrete_laplace` (pmf ∝
exp(−|z|/t) on ℤ), :func:`discrete_gaussian` (pmf ∝ exp(−z²/(2σ²)) on ℤ), their vector versions
``sample_*``, and the single draws :func:`dlap` and :func:`dgauss` at exact rational parameters
that the grid release plans use. Every random decision takes its bits from a
:class:`~bayespriv.noise.BitSource`.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from bayespriv._validation import fail
from bayespriv.errors import ParameterTypeError
from .bits import CHUNK_BITS, BitSource

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
            q, n = divmod(n << CHUNK_BITS, d)
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
    return _bern_exp(num, den, check_bits(bits))


def sample_bernoulli_exp(gamma: Any, n: int, bits: BitSource) -> np.ndarray:
    """``n`` independent exact draws of Bernoulli(exp(−γ)) as a bool array."""
    num, den = _ratio(gamma, "gamma", positive=False)
    bits = check_bits(bits)
    return np.array([_bern_exp(num, den, bits) for _ in range(_count(n))], dtype=bool)


def check_bits(bits: Any) -> BitSource:
    if not isinstance(bits, BitSource):
        raise ParameterTypeError(f"bits must be a BitSource; got {type(bits).__name__}")
    return bits


# -- CKS Algorithm 2: discrete Laplace -------------------------------------------------------------


def dlap(t: int, s: int, bits: BitSource) -> int:
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
    return dlap(num, den, check_bits(bits))


def sample_discrete_laplace(scale: Any, n: int, bits: BitSource) -> np.ndarray:
    """``n`` independent exact discrete Laplace draws (int64, or object if any exceeds int64)."""
    num, den = _ratio(scale, "scale", positive=True)
    bits = check_bits(bits)
    return _as_array([dlap(num, den, bits) for _ in range(_count(n))])


# -- CKS Algorithm 3: discrete Gaussian ------------------------------------------------------------


def dgauss(p: int, q: int, bits: BitSource) -> int:
    """Discrete Gaussian with pmf ∝ exp(−z²/(2σ²)), σ² = p/q (CKS 2020, Algorithm 3).

    Proposal Y ~ Lap_ℤ(t), t = ⌊σ⌋ + 1, accepted with probability
    exp(−(|Y| − σ²/t)²/(2σ²)) = exp(−(|Y|qt − p)² / (2pqt²)): an exact rational exponent.
    ⌊σ⌋ = ⌊√⌊σ²⌋⌋ = isqrt(p // q).
    """
    return dgauss_with(gauss_constants(p, q), bits)


def gauss_constants(p: int, q: int) -> tuple[int, int, int, int]:
    """What :func:`dgauss` computes from σ² = p/q before its first trial: (p, t, qt, 2pqt²). A caller drawing
    many values of one σ² (a grid plan's coordinate) computes them once."""
    t = math.isqrt(p // q) + 1
    return p, t, q * t, 2 * p * q * t * t


def dgauss_with(constants: tuple[int, int, int, int], bits: BitSource) -> int:
    """:func:`dgauss` from its constants (:func:`gauss_constants`)."""
    p, t, qt, den = constants
    while True:
        y = dlap(t, 1, bits)
        a = abs(y) * qt - p
        gamma_num = a * a
        if gamma_num < den:  # γ < 1 (the common case): Algorithm 1's first branch directly
            if not gamma_num or _bern_exp_small(gamma_num, den, bits):
                return y
        elif _bern_exp(gamma_num, den, bits):
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
    return dgauss(p, q, check_bits(bits))


def sample_discrete_gaussian(sigma2: Any, n: int, bits: BitSource) -> np.ndarray:
    """``n`` independent exact discrete Gaussian draws (int64, or object if any exceeds int64)."""
    p, q = _ratio(sigma2, "sigma2", positive=True)
    bits = check_bits(bits)
    return _as_array([dgauss(p, q, bits) for _ in range(_count(n))])
