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
  exact :meth:`~BitSource.randbelow` and :meth:`~BitSource.bernoulli` (:mod:`.bits`).
* Exact samplers (Canonne, Kamath & Steinke 2020, *The Discrete Gaussian for Differential
  Privacy*, Algorithms 1–3): :func:`bernoulli_exp` (Bernoulli(exp(−γ)), γ ≥ 0 rational),
  :func:`discrete_laplace` (pmf ∝ exp(−|z|/t) on ℤ), :func:`discrete_gaussian`
  (pmf ∝ exp(−z²/(2σ²)) on ℤ), and their vector versions ``sample_*``. Each draw is a rejection
  loop over Python ints, so the vector versions loop over draws: the grid plans' parameters
  (σ² of 121 bits and more) exceed NumPy's 64-bit integers, and the same algorithm over NumPy
  object arrays of Python ints measured no faster (5.4 µs per draw in batches of 10 000 against
  4.4 µs for this loop; ``benchmarks/RESULTS_release.md``) (:mod:`.samplers`).
* Grid release plans, built once per mechanism: :func:`plan_gaussian` → :class:`GaussianGridPlan`
  and :func:`plan_laplace` → :class:`LaplaceGridPlan`, whose ``release(answer, bits)`` returns the
  noisy answer. The release is a fixed float function of an integer vector ``n`` whose law is
  given exactly; the float answer enters only through exact rational arithmetic. The
  privacy cost of the discretization is stated by each plan (``inflation`` for Laplace,
  ``tv_bound`` for Gaussian; see their docstrings for the theorems) (:mod:`.grid_plans`).
* The reserve rule of Gaussian mechanisms (:func:`discretization_grid_bits`,
  :func:`discretization_reserve`): a mechanism asked for (ε, δ) with k noise coordinates plans
  its noise on a grid of b = min(1000, max(60, ⌈log2(200·(1 + e^ε)·k/δ)⌉)) bits (every σ_c is at
  least 2^b grid steps), reserves 1.001·(1 + e^ε)·k·τ(2^b) ≤ δ/1000 of δ for the grid
  (τ = :func:`gaussian_tv_bound`, ≈ 0.1995·2^-b) and calibrates its continuous noise at
  δ − reserve; the grid release is then (ε, δ)-private with the δ asked for. b = 60 whenever
  ε ≤ 5 and δ ≥ 1e-9 (k ≤ 38,000); ε = 50, δ = 1e-15, k = 64 gives b = 136 (:mod:`.reserve`).
"""

from __future__ import annotations

from .bits import BitSource
from .grid_plans import GaussianGridPlan, LaplaceGridPlan, plan_gaussian, plan_laplace
from .reserve import (
    DEFAULT_GRID_BITS,
    MAX_GRID_BITS,
    RESERVE_SHARE,
    delta_with_discretization,
    discretization_grid_bits,
    discretization_reserve,
    gaussian_tv_bound,
)
from .samplers import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    sample_bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

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
