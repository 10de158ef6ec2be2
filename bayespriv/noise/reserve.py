"""The share of δ that the grid of a Gaussian release costs, and the grid that keeps it small.

:func:`gaussian_tv_bound` (the total-variation bound τ(σ) of the grid Gaussian sampler),
:func:`delta_with_discretization` (the δ of a grid release), the reserve rule of Gaussian
mechanisms (:func:`discretization_grid_bits`, :func:`discretization_reserve`), and the grid sizes
:data:`DEFAULT_GRID_BITS`, :data:`MAX_GRID_BITS`, :data:`RESERVE_SHARE`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from bayespriv._validation import check_real, fail

#: Default: the grid step g is at most 2^-60 times the smallest noise scale.
DEFAULT_GRID_BITS = 60
#: Finest grid: 2^-1000 times the smallest noise scale (τ(2^1000) ≈ 2e-302 is still a normal float).
MAX_GRID_BITS = 1000
#: Share of δ that a mechanism's grid may cost: (1 + e^ε)·k·τ ≤ RESERVE_SHARE·δ (:func:`discretization_grid_bits`).
RESERVE_SHARE = 1e-3


def check_grid_bits(grid_bits: Any) -> int:
    if isinstance(grid_bits, bool) or not isinstance(grid_bits, numbers.Integral) or not 8 <= int(grid_bits) <= MAX_GRID_BITS:
        raise fail("grid_bits", f"an integer in [8, {MAX_GRID_BITS}]", grid_bits)
    return int(grid_bits)


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
    tau = gaussian_tv_bound(math.ldexp(1.0, check_grid_bits(grid_bits)))
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
