"""Count tables that are ε-private on a subset of the variables (Algorithm 1).

Paper: P. L. Tan, *Privacy on a subset of dataset variables* (papers/privacy-subset-of-variables.md),
Definition 2.2 and §5.2, Algorithm 1 / Proposition 5.1.

A table of counts by a *protected* variable U₁ (e.g. income band) and a *public* variable V₁
(e.g. degree programme) is released so that

1. it is ε-private on U = {U₁} (and on every variable the table does not use),
2. every public margin (the count of each V₁ value) is exact,
3. every cell is an integer, and
4. every cell is unbiased: E g(i, j) = f(i, j).

Construction (Algorithm 1)
--------------------------
Within the row of public value v_i, let n_i be the number of protected categories that row can
take (U_{1,i}). For each of the C(n_i, 2) unordered pairs of categories {j < k} draw an independent
two-sided geometric variable b_{jk} and move it from cell k to cell j:

    g(i, j) = f(i, j) + Σ_{k > j} b_{jk} − Σ_{k < j} b_{kj}        (g = f + b M,  M ∈ M(n_i))

Every pair's noise enters the row once with + and once with −, so the noise of a row sums to zero
(the margin is exact) and is integer; each b has mean 0 (so the cells are unbiased).

Privacy: the tight calibration (default) and the paper's
------------------------------------------------------------
Neighbours. Two neighbours in the sense of Definition 2.2 with U = {U₁} differ in one record's
protected value only, so its public value v_i is the same: one unit moves from cell (i, j) to
(i, k) of one row, with both j and k in the row's domain U_{1,i} (the record's two values are both
possible for v_i), i.e. f(D₂) = f(D₁) + e_k − e_j in row i and every other row is unchanged. For
j < k, e_k − e_j = −m_{jk}, where m_{jk} = e_j − e_k is the row (j, k) of M, and the pair {j, k}
receives noise. Write T(β) = f(D₁) + β M. Then

    g(D₁) = T(b)    and    g(D₂) = f(D₁) − m_{jk} + b M = T(b − e_{jk}),

where e_{jk} is the unit vector of coordinate (j, k) of b: a neighbour shifts exactly one
coordinate of b by one unit.

**Theorem (tight calibration).** With every b_{jk} i.i.d. two-sided geometric of parameter
α = e^{−ε}, P(Z = z) = (1 − α)/(1 + α) · α^{|z|}, the table is ε-private on {U₁}; and this ε is the
smallest that holds for every table with a row of two possible categories.

*Proof.* Let p be the (product) pmf of b. For every β, only the coordinate (j, k) differs between
β and β + e_{jk}, so p(β + e_{jk}) / p(β) = α^{|β_{jk} + 1| − |β_{jk}|} ∈ [α, 1/α] = [e^{−ε}, e^{ε}]
because ||x + 1| − |x|| ≤ 1. For any set S of tables, with B_S = T^{−1}(S) ⊆ ℤ^{C(n_i, 2)} (T need
not be injective: the pushforward of b sums p over the fibres),

    P(g(D₂) ∈ S) = Σ_{β ∈ B_S} p(β + e_{jk}) ≤ e^{ε} Σ_{β ∈ B_S} p(β) = e^{ε} P(g(D₁) ∈ S),

i.e. the pointwise likelihood ratio of the pushforward is bounded by that of b; the same with D₁
and D₂ exchanged. The other rows' noise is independent and identical under D₁ and D₂. So the
release is ε-private on {U₁} (Definition 2.2). Tightness: if n_i = 2, M = (1, −1) is injective
(the row (f_j + b, f_k − b) determines b), so for β ≤ −1 the output x = T(β) has
P(g(D₂) = x) / P(g(D₁) = x) = p(β + 1)/p(β) = α^{−1} = e^{ε} exactly: no ε' < ε holds. ∎

(For n_i ≥ 3, T is not injective — its fibres are infinite — and the pointwise ratio of the
pushforward is below e^{ε}, but it tends to e^{ε} far in the tails: by brute-force enumeration at
n_i = 3, ε = 1, the largest log-ratio over |x| ≤ 12 is 0.999997. So ε is the right figure for
every row with n_i ≥ 2.)

**The paper's calibration** (``geometric_calibration="paper"``) draws b with α = e^{−ε/2},
calibrated to the L1 sensitivity 2 of f (a move touches two cells). By the theorem at ε/2 its loss
is ε/2 (attained with a row of two categories): it is ε-private, as the paper states, with a
factor 2 to spare. Its noise is that of the tight calibration at ε/2 (same α, same variance), so
at equal noise the tight calibration gives half the ε. The guarantee recorded for
``geometric_calibration="paper"`` is the ε the caller asked for (valid,
conservative), so the paper's releases are charged as the paper charges them.

Both calibrations release a table that does not depend on any other variable, so by
Proposition 3.3 it is 0-private on them, and ε-private on {U₁} together with them; it is *not*
private on V₁ (its margins are exact).

The two-sided geometric distribution (and the paper's sign slip)
------------------------------------------------------------------
The paper prints P(Z = z) = (1 − e^{ε/2}) / (1 + e^{ε/2}) · e^{−ε|z|/2}, whose constant is
negative for every ε > 0 (the masses sum to −1). The correct law is

    P(Z = z) = (1 − α) / (1 + α) · α^{|z|},   z ∈ ℤ,

with α = e^{−ε} (tight) or α = e^{−ε/2} (the paper's calibration).
We sample it as the difference of two i.i.d. geometric variables G₁, G₂ on {1, 2, …} with success
probability p = 1 − α (``rng.geometric(1 − α) − rng.geometric(1 − α)``):

    P(G₁ − G₂ = z) = Σ_{g ≥ max(1, 1−z)} p α^{g−1} · p α^{g+z−1} = p² α^{|z|} Σ_{m ≥ 0} α^{2m}
                   = (1 − α)² α^{|z|} / (1 − α²) = (1 − α)/(1 + α) · α^{|z|}.

The noise is an integer drawn independently of the data and added to integer counts; no
floating-point value computed from the data enters the output, so the floating-point attacks on
textbook Laplace samplers (Mironov 2012), whose output's low bits depend on the true value, do not
apply. (NumPy's geometric sampler itself is exact to double precision in its probabilities; the
released tables of :func:`subset_count_table` use the exact integer-arithmetic sampler of
:mod:`bayespriv.mechanisms.exact_noise`.)

Variance (derivation)
---------------------
Var G = α / (1 − α)², so Var Z = 2α / (1 − α)². Cell j of row i receives ±b for each of the
n_i − 1 pairs containing j, all independent, hence

    Var g(i, j) = (n_i − 1) · 2α / (1 − α)²,     Cov(g(i, j), g(i, k)) = −2α / (1 − α)²  (j ≠ k),

i.e. the row's noise covariance is 2α/(1 − α)² · (n_i I − 1 1ᵀ) (the Laplacian of the complete
graph on the n_i categories), which is singular along 1 — the margin carries no noise. Rows are
independent. See :func:`cell_variance`. As ε → 0, 2α/(1 − α)² ≈ 2/ε² (tight) against 8/ε² (paper):
the tight calibration has about 1/4 of the variance at the same ε (at ε = 1: 1.84 against 7.84).

A second slip: the paper's loop adds noise only ``if n_i > 2``; a row with exactly two categories
would then be released exactly, which is not ε-private on U₁ (a move between its two cells is seen).
``M(N)`` is defined for N ≥ 2 and we add noise whenever n_i ≥ 2. A row with n_i = 1 needs no noise:
its only cell equals its public margin.

Non-negative post-processing
----------------------------
``nonnegative=True`` maps each noisy row g (with exact total s ≥ 0) to the non-negative integer row
h with the same total that is nearest to g in L1 distance, breaking ties by the L2 distance. With
N = Σ max(−g_j, 0): every feasible h must raise the negative cells by at least N in total and, the
total being fixed, lower the others by as much, so ‖h − g‖₁ ≥ 2N; clipping the negative cells to 0
and lowering the positive cells by N in total (never below 0; possible since their sum is s + N)
attains 2N. Among these, the reductions are spread as evenly as possible (water-filling:
d_j = min(g_j, λ), the remainder one unit each to the largest cells), which is the L2-nearest. It
is a function of the noisy table and the public margins only, so by post-processing (transformation
invariance, Remark 4.2.1) it keeps the guarantee. It makes the cells biased (small cells upwards).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._validation import (
    check_choice,
    check_columns_present,
    check_epsilon,
    check_finite_array,
    check_frame,
    check_memory,
    check_positive_int,
    check_sequence,
    described,
    fail,
    seal_fields,
)
from ..errors import ParameterTypeError, PrivacyAssumptionWarning, ValidationError, warn
from ..mechanisms.base import Guarantee, LedgerLike
from ..mechanisms.guarantee import AccountingRecord
from ..random import RNGLike, release_generator

__all__ = [
    "subset_count_table",
    "subset_count_array",
    "SubsetCountMechanism",
    "two_sided_geometric",
    "two_sided_geometric_pmf",
    "pair_matrix",
    "cell_variance",
    "nonnegative_rows",
]

THEOREM = "Tan, Privacy on a subset of dataset variables: Algorithm 1, Proposition 5.1"

#: Noise calibrations: ``"tight"`` (α = e^{−ε}, loss exactly ε; the default) and ``"paper"``
#: (α = e^{−ε/2} as printed in Algorithm 1; loss ε/2, recorded as ε). See the module docstring.
CALIBRATIONS = ("tight", "paper")

_THEOREMS = {
    "tight": THEOREM + "; tight calibration α = e^(−ε) (bayespriv.accounting.subset, Theorem)",
    "paper": THEOREM + "; the paper's calibration α = e^(−ε/2) (true loss ε/2, recorded as ε)",
}

#: Largest count accepted: every integer up to 2**53 is exact in float64 (counts arrive as
#: floats from pandas) and the noisy cells stay far inside int64, which wraps silently.
MAX_COUNT = 2**53
#: Smallest ε a noisy count accepts: below it one pair's noise has a standard deviation above 10⁹ counts
#: (the table carries no information), and near 1e-19 a single draw leaves the 64-bit range (sums of
#: draws, which int64 wraps silently, sooner).
MIN_EPSILON = 1e-9


# -- the noise ---------------------------------------------------------------------------------------


def _calibration(calibration: Any) -> str:
    return check_choice(calibration, "geometric_calibration", CALIBRATIONS)


def _check_noise_epsilon(epsilon: Any) -> float:
    """ε for drawing noise: finite, > 0 and at least :data:`MIN_EPSILON`."""
    eps = check_epsilon(epsilon)
    if eps < MIN_EPSILON:
        raise fail("epsilon", f"at least {MIN_EPSILON:g} for noisy counts (below it the noise exceeds 10⁹ counts: the "
                   "table carries no information, and the integer noise leaves the 64-bit range)", epsilon)
    return eps


def _alpha(epsilon: float, calibration: str = "tight") -> float:
    """α = e^{−ε} (tight) or e^{−ε/2} (paper): the noise of the paper at ε is the tight noise at ε/2."""
    return math.exp(-(epsilon if calibration == "tight" else epsilon / 2.0))


def two_sided_geometric_pmf(z: Any, epsilon: float, *, geometric_calibration: str = "tight") -> np.ndarray:
    """P(Z = z) = (1 − α)/(1 + α) · α^{|z|} (the corrected constant).

    α = e^{−ε} for ``geometric_calibration="tight"`` (a unit shift changes the pmf by a factor e^{±ε}), or
    e^{−ε/2} for ``geometric_calibration="paper"`` (a factor e^{±ε/2}).
    """
    eps = check_epsilon(epsilon)
    a = _alpha(eps, _calibration(geometric_calibration))
    z = check_finite_array(z, "z")
    if np.any(z != np.round(z)):
        raise fail("z", "integers (the two-sided geometric law lives on the integers)", z)
    return (1.0 - a) / (1.0 + a) * a ** np.abs(z)


def two_sided_geometric(epsilon: float, size: Any = None, *, rng: RNGLike = None,
                        geometric_calibration: str = "tight") -> np.ndarray:
    """Independent draws of the two-sided geometric law, as int64.

    α = e^{−ε} (``geometric_calibration="tight"``) or e^{−ε/2} (``"paper"``). Drawn as ``G₁ − G₂`` with
    G₁, G₂ i.i.d. ``rng.geometric(1 − α)`` (see the module docstring for why this is exactly the
    two-sided geometric law). ε must be at least :data:`MIN_EPSILON`.
    """
    eps = _check_noise_epsilon(epsilon)
    cal = _calibration(geometric_calibration)
    shape = _check_size(size)
    gen, _ = release_generator(rng)
    return _draw(_alpha(eps, cal), shape, gen)


def _check_size(size: Any, name: str = "size") -> tuple[int, ...] | None:
    """None, a non-negative integer or a tuple of them; the int64 draws must fit in memory."""
    if size is None:
        return None
    dims = (size,) if not isinstance(size, (tuple, list)) else tuple(size)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise fail(name, "None, an integer >= 0 or a tuple of them", size)
    check_memory(16.0 * math.prod(int(d) for d in dims), name, size, "the int64 draws")
    return tuple(int(d) for d in dims)


def _draw(alpha: float, size: Any, gen: np.random.Generator) -> np.ndarray:
    p = 1.0 - alpha
    return np.asarray(gen.geometric(p, size), dtype=np.int64) - np.asarray(gen.geometric(p, size), dtype=np.int64)


def pair_matrix(n: int) -> np.ndarray:
    """A matrix of M(n): C(n, 2) rows, row (j, k) (j < k, lexicographic) is e_j − e_k."""
    n = check_positive_int(n, "n", minimum=0)
    check_memory(8.0 * n * max(n - 1, 0) / 2 * n, "n", n, f"the {n * max(n - 1, 0) // 2} x {n} int64 pair matrix")
    if n < 2:
        return np.zeros((0, max(n, 0)), dtype=np.int64)
    j, k = np.triu_indices(n, 1)
    m = np.zeros((j.size, n), dtype=np.int64)
    rows = np.arange(j.size)
    m[rows, j] = 1
    m[rows, k] = -1
    return m


def cell_variance(n: Any, epsilon: float, *, geometric_calibration: str = "tight") -> np.ndarray:
    """Variance of a cell in a row with ``n`` protected categories: (n − 1)·2α/(1 − α)².

    α = e^{−ε} (``geometric_calibration="tight"``, the default) or e^{−ε/2} (``"paper"``). Ask the cost before
    releasing: this is the exact noise variance of every cell (0 when n ≤ 1).
    """
    eps = check_epsilon(epsilon)
    a = _alpha(eps, _calibration(geometric_calibration))
    n = check_finite_array(n, "n")
    if np.any(n < 0) or np.any(n != np.round(n)):
        raise fail("n", "whole numbers >= 0 (protected categories in a row)", n)
    return np.maximum(n - 1.0, 0.0) * 2.0 * a / (1.0 - a) ** 2


def _check_counts(counts: Any, name: str = "counts") -> np.ndarray:
    arr = np.asarray(counts)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ParameterTypeError(f"{name} must be an integer array; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise fail(name, "a 2-dimensional array (public × protected)", described(f"shape {arr.shape}"))
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise fail(name, "whole numbers", arr)
    if np.any(arr < 0):
        raise fail(name, "non-negative counts", arr)
    _check_total(arr, name)
    return arr.astype(np.int64)


def _check_total(counts: np.ndarray, name: str) -> None:
    """Refuse counts whose total exceeds 2**53 (int64 would wrap them silently)."""
    total = float(np.sum(counts, dtype=float))
    if total > MAX_COUNT or float(np.max(counts, initial=0)) > MAX_COUNT:
        raise fail(name, f"counts totalling at most 2**53 = {MAX_COUNT} (larger counts lose exactness in "
                         "float64 and overflow int64 once noised)", described(f"total {total:.4g}"))


def subset_count_array(counts: Any, epsilon: float, *, domain: Any = None, size: int | None = None,
                       rng: RNGLike = None, geometric_calibration: str = "tight") -> np.ndarray:
    """Algorithm 1 on an array of counts, vectorized over ``size`` independent runs.

    Parameters
    ----------
    counts : array (m, K) of non-negative integers
        f(i, j): row i is the public value v_i, column j a protected category.
    epsilon : float >= MIN_EPSILON (1e-9)
    domain : bool array (m, K), optional
        ``domain[i, j]`` says whether category j is possible with v_i (the paper's U_{1,i});
        default: every category in every row. Cells outside the domain must be 0 and stay 0.
    size : int, optional
        Number of independent runs; the result then has shape (size, m, K).
    rng : None | int | SeedSequence | Generator
    geometric_calibration : {"tight", "paper"}
        α = e^{−ε} (default; loss exactly ε) or the paper's α = e^{−ε/2} (loss ε/2); see the module
        docstring.

    Returns
    -------
    ndarray of int64, shape (m, K) or (size, m, K); each row sums to the row of ``counts``.
    """
    f = _check_counts(counts)
    eps = _check_noise_epsilon(epsilon)
    cal = _calibration(geometric_calibration)
    mask = _check_domain(domain, f)
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1):
        raise fail("size", "None or an integer >= 1", size)
    if size is not None:
        check_memory(8.0 * size * f.size * max(f.shape[1] - 1, 1), "size", size, "the noise of the independent runs")
    gen, _ = release_generator(rng)
    return f + _noise(mask, _alpha(eps, cal), gen, size)


def _check_domain(domain: Any, f: np.ndarray) -> np.ndarray:
    if domain is None:
        return np.ones(f.shape, dtype=bool)
    mask = np.asarray(domain)
    if mask.dtype != bool or mask.shape != f.shape:
        raise fail("domain", f"a boolean array of shape {f.shape}", described(f"{mask.dtype} array of shape {mask.shape}"))
    if np.any(f[~mask] != 0):
        raise ValidationError("counts must be 0 outside the domain (records there are impossible); "
                              f"got non-zero counts at {np.argwhere((f != 0) & ~mask).tolist()!r}")
    return mask


def _exact_pair_draws(epsilon: float, bits: Any, calibration: str = "tight") -> Any:
    """A drawer of exact two-sided geometric noise for the released table.

    The law α^{|z|}(1 − α)/(1 + α) with α = e^{−1/t} is the discrete Laplace law of scale t:
    t = 1/ε for the tight calibration (α = e^{−ε}), t = 2/ε for the paper's (α = e^{−ε/2}). It is
    sampled exactly (Canonne, Kamath & Steinke 2020, integer arithmetic only,
    :func:`~bayespriv.mechanisms.exact_noise.sample_discrete_laplace`) with t the exact rational
    1/ε or 2/ε of the float ε, from the OS CSPRNG unless the caller seeded the release.
    (:func:`two_sided_geometric` and :func:`subset_count_array`, for simulations, draw the same law
    with NumPy's vectorized float-parameter geometric sampler.)
    """
    from fractions import Fraction

    from ..mechanisms.exact_noise import sample_discrete_laplace

    scale = Fraction(1 if _calibration(calibration) == "tight" else 2) / Fraction(epsilon)

    def draw(alpha: float, shape: tuple[int, ...], _gen: Any) -> np.ndarray:
        n = math.prod(shape)
        return np.asarray(sample_discrete_laplace(scale, n, bits), dtype=np.int64).reshape(shape)

    return draw


def _noise(mask: np.ndarray, alpha: float, gen: np.random.Generator, size: int | None, draw: Any = None) -> np.ndarray:
    """b M per row, vectorized: all C(K, 2) pairs drawn, pairs outside a row's domain set to 0."""
    m_rows, k = mask.shape
    mat = pair_matrix(k)  # (P, K)
    if mat.shape[0] == 0:
        shape = (m_rows, k) if size is None else (size, m_rows, k)
        return np.zeros(shape, dtype=np.int64)
    j, l = np.triu_indices(k, 1)
    pair_ok = mask[:, j] & mask[:, l]  # (m, P): both categories possible in the row
    shape = (m_rows, mat.shape[0]) if size is None else (size, m_rows, mat.shape[0])
    b = (draw or _draw)(alpha, shape, gen)
    b *= pair_ok
    return b @ mat  # integer matmul: (…, m, P) @ (P, K)


# -- non-negative post-processing -------------------------------------------------------------------


def nonnegative_rows(table: Any) -> np.ndarray:
    """Nearest non-negative integer rows with the same row sums (L1-minimal, then L2-minimal).

    Works on any array (..., K) of integers whose rows have a non-negative sum; vectorized over the
    leading axes. See the module docstring for why the result is L1-nearest.
    """
    g = np.asarray(table)
    if g.ndim < 1:
        raise fail("table", "an array of rows (at least 1-dimensional)", described(f"shape {g.shape}"))
    if not np.issubdtype(g.dtype, np.integer):
        raise ParameterTypeError(f"table must be an integer array; got dtype {g.dtype}")
    g = g.astype(np.int64)
    if np.any(g.sum(axis=-1) < 0):
        raise fail("table", "rows with a non-negative sum", g)
    pos = np.maximum(g, 0)
    need = np.maximum(-g, 0).sum(axis=-1, keepdims=True)  # N per row
    # Largest integer λ with S(λ) = Σ min(pos, λ) ≤ N, by vectorized bisection on [0, max pos].
    lo = np.zeros_like(need)
    hi = pos.max(axis=-1, keepdims=True)
    while np.any(lo < hi):
        mid = (lo + hi + 1) // 2
        ok = np.minimum(pos, mid).sum(axis=-1, keepdims=True) <= need
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid - 1)
    lam = lo
    d = np.minimum(pos, lam)
    rest = need - d.sum(axis=-1, keepdims=True)  # < #{pos > λ}
    # One more unit from each of the `rest` largest cells (stable: earlier column first on ties).
    order = np.argsort(-pos, axis=-1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(g.shape[-1]), g.shape), axis=-1)
    d = d + (rank < rest)
    return pos - d


# -- the mechanism (for the ledger) and the table-level entry point -------------------------------------


@seal_fields
@dataclass(frozen=True)
class SubsetCountMechanism:
    """Algorithm 1 as a mechanism a ledger can charge: it knows its guarantee before any data.

    ``protected`` is the budget it charges (the protected variable), ``variables`` the columns the
    table depends on. Build it through :func:`subset_count_table` (``ledger=...``) or by hand to ask
    the cost first (:meth:`cell_variance`).

    ``geometric_calibration`` is ``"tight"`` (α = e^{−ε}, the default) or ``"paper"``
    (α = e^{−ε/2}); the guarantee is ε for both (exact for the tight calibration, twice the true
    loss for the paper's), so the ledger charges ε either way.

    Privacy
    -------
    Definition: ε-privacy on {protected} (Tan, Definition 2.2). Theorem: the module docstring's
    theorem (tight calibration; for the paper's, the same theorem at ε/2) — Proposition 5.1 of the
    paper with the corrected two-sided geometric constant. Assumptions: none beyond the declared
    domain of the protected variable (``"domain_from_data"`` is recorded when it was read off the
    data). Exact: the noise law is known in closed form and sampled exactly.
    """

    #: Privacy on a subset of variables composes (Tan, Proposition 3.4): the ledger adds its charges.
    _composition: ClassVar[str] = "subset"
    protected_variable: str
    public_variable: str
    epsilon: float
    assumptions: tuple[str, ...] = ()
    geometric_calibration: str = "tight"

    @property
    def composition(self) -> str:
        """``"subset"``: the ledger adds its charges (Tan, Proposition 3.4)."""
        return type(self)._composition

    def __post_init__(self) -> None:
        _name(self.protected_variable, "protected_variable")
        _name(self.public_variable, "public_variable")
        object.__setattr__(self, "epsilon", _check_noise_epsilon(self.epsilon))
        _calibration(self.geometric_calibration)
        guarantee = Guarantee(self.epsilon, 0.0, 1.0, self.assumptions, _THEOREMS[self.geometric_calibration])
        object.__setattr__(self, "assumptions", guarantee.assumptions)
        # What the ledger charges and reads, fixed here as tuples: a field edited later with
        # object.__setattr__ changes neither the charge nor the budgets charged.
        object.__setattr__(self, "_record", AccountingRecord.of(guarantee))
        object.__setattr__(self, "_fixed", (self.protected_variable, self.public_variable, self.epsilon,
                                            self.geometric_calibration))

    @property
    def alpha(self) -> float:
        """The two-sided geometric parameter of every pair: e^{−ε} (tight) or e^{−ε/2} (paper)."""
        return _alpha(self._fixed[2], self._fixed[3])

    @property
    def guarantee(self) -> Guarantee:
        """ε-privacy of the protected variable (δ = 0, exact: no estimated quantity), Algorithm 1 of Tan.
        A new Guarantee at each access, equal to :attr:`accounting_record`."""
        return self._record.guarantee()

    @property
    def accounting_record(self) -> AccountingRecord:
        """What a ledger charges, fixed at construction (a tuple)."""
        return self._record

    @property
    def protected(self) -> tuple[str, ...]:
        """The protected variable (the ledger charges its budget)."""
        return (self._fixed[0],)

    @property
    def variables(self) -> tuple[str, ...]:
        """Columns the table depends on: the protected then the public variable."""
        return (self._fixed[0], self._fixed[1])

    @property
    def public(self) -> tuple[str, ...]:
        """Variables released exactly (no privacy on them): the public margins."""
        return (self._fixed[1],)

    @property
    def query_name(self) -> str:
        """Name of the released table, e.g. ``"count by age × sex"``."""
        return f"count by {self._fixed[1]} × {self._fixed[0]}"

    def fingerprint(self) -> str:
        """What the ledger records in place of a calibration hash.

        The paper's calibration keeps the text hashed before the tight calibration existed (so its
        fingerprints are unchanged); the tight one appends ``|tight``.
        """
        protected, public, epsilon, calibration = self._fixed
        text = f"{THEOREM}|{protected}|{public}|{epsilon!r}"
        if calibration != "paper":
            text += f"|{calibration}"
        return hashlib.sha256(text.encode()).hexdigest()

    def cell_variance(self, n: Any) -> np.ndarray:
        """Exact noise variance of a cell in a row with ``n`` protected categories, at this ε (:func:`cell_variance`)."""
        return cell_variance(n, self._fixed[2], geometric_calibration=self._fixed[3])


def _name(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ParameterTypeError(f"{name} must be a column name (non-empty string); got {value!r}")
    return value


def _categories(series: pd.Series, given: Any, name: str) -> tuple[list, bool]:
    """Domain of a column: given, or the categories of a Categorical, or (last resort) the data."""
    if given is not None:
        values = _hashable(list(check_sequence(given, name)), name, given)
        if len(set(values)) != len(values):
            raise fail(name, "distinct values", given)
        if not values:
            raise fail(name, "non-empty", given)
        return values, False
    if isinstance(series.dtype, pd.CategoricalDtype):
        return list(series.cat.categories), False
    return sorted(series.dropna().unique().tolist(), key=lambda v: (str(type(v)), v)), True


def _hashable(values: list, name: str, given: Any) -> list:
    """``values``, each of which must be hashable (categories are looked up by hash)."""
    for v in values:
        try:
            hash(v)
        except TypeError:
            raise fail(name, "hashable values (categories such as strings or numbers)",
                       described(f"{type(v).__name__} {v!r:.40} in {given!r:.60}")) from None
    return values


def _check_cells(series: pd.Series, column: str) -> None:
    """The cells of a category column must be hashable (a list or an array in a cell is not a category)."""
    if series.dtype != object:
        return
    try:
        pd.unique(series.to_numpy())
    except TypeError:
        for label, v in series.items():
            try:
                hash(v)
            except TypeError:
                raise fail(f"table[{column!r}]", "a column of hashable categories (strings, numbers, ...)",
                           described(f"{type(v).__name__} {v!r:.40} at row {label!r}")) from None
        raise  # pragma: no cover - every value hashed: the TypeError came from elsewhere


@dataclass(frozen=True)
class _CountInputs:
    """Checked arguments of a count table: the needed columns, their names, ε, calibration, weights."""

    data: pd.DataFrame
    protected: str
    public: str
    epsilon: float
    calibration: str
    weights: np.ndarray


@dataclass(frozen=True)
class _CountDomain:
    """Rows (public values), columns (protected values), allowed cells and the assumptions they imply."""

    rows: list
    cols: list
    mask: np.ndarray
    assumptions: tuple[str, ...]


def _validate_count_request(table: Any, *, protected: Any, public: Any, epsilon: Any, nonnegative: Any, count: Any,
                            ledger: Any, geometric_calibration: Any) -> _CountInputs:
    """Check the table and the scalar arguments, in order, and keep the columns the table needs."""
    check_frame(table, "table")
    protected = _name(protected, "protected")
    public = _name(public, "public")
    if protected == public:
        raise fail("protected", f"a different column from public ({public!r})", protected)
    eps = _check_noise_epsilon(epsilon)
    cal = _calibration(geometric_calibration)
    if not isinstance(nonnegative, bool):
        raise ParameterTypeError(f"nonnegative must be True or False; got {nonnegative!r}")
    if ledger is not None and not callable(getattr(ledger, "charge", None)):
        raise ParameterTypeError(f"ledger must be None or a bayespriv Ledger; got {type(ledger).__name__}")
    needed = [protected, public] + ([_name(count, "count")] if count is not None else [])
    check_columns_present(needed, table.columns, "protected, public and count")
    data = table[needed]
    if data[[protected, public]].isna().any().any():
        raise ValidationError(f"table must have no missing values in {protected!r} and {public!r}; "
                              f"got {int(data[[protected, public]].isna().sum().sum())} missing")
    _check_cells(data[protected], protected)
    _check_cells(data[public], public)
    return _CountInputs(data=data, protected=protected, public=public, epsilon=eps, calibration=cal,
                        weights=_record_weights(data, count))


def _record_weights(data: pd.DataFrame, count: str | None) -> np.ndarray:
    """Multiplicity of each row: the ``count`` column (checked non-negative whole numbers), else ones."""
    if count is None:
        return np.ones(len(data), dtype=np.int64)
    w = data[count].to_numpy()
    if not np.issubdtype(w.dtype, np.number) or np.any(~np.isfinite(w.astype(float))) \
            or np.any(w < 0) or np.any(w != np.round(w)):
        raise fail("count", "a column of non-negative whole numbers", data[count].head().tolist())
    _check_total(w, "count")
    return w.astype(np.int64)


def _count_domain(inputs: _CountInputs, *, protected_values: Any, public_values: Any) -> _CountDomain:
    """Rows and columns of the table and which cells may hold records; warns when read off the data."""
    data, protected = inputs.data, inputs.protected
    rows, _ = _categories(data[inputs.public], public_values, "public_values")
    assumptions: tuple[str, ...] = ()
    if isinstance(protected_values, Mapping):
        per_row = {k: _hashable(list(check_sequence(v, f"protected_values[{k!r}]")), f"protected_values[{k!r}]", v)
                   for k, v in protected_values.items()}
        missing = [r for r in rows if r not in per_row]
        if missing:
            raise ValidationError(f"protected_values must give the possible values for every public value; missing {missing!r}")
        cols = list(dict.fromkeys(v for r in rows for v in per_row[r]))
        mask = np.array([[c in set(per_row[r]) for c in cols] for r in rows], dtype=bool)
    else:
        cols, from_data = _categories(data[protected], protected_values, "protected_values")
        mask = np.ones((len(rows), len(cols)), dtype=bool)
        if from_data:
            assumptions = ("domain_from_data",)
            warn(f"protected_values not given and {protected!r} is not Categorical: the protected categories are "
                 "read off the data, which reveals which of them occur. Pass protected_values= (the possible "
                 "values, decided without looking at the data) for the stated guarantee.", PrivacyAssumptionWarning)
    return _CountDomain(rows=rows, cols=cols, mask=mask, assumptions=assumptions)


def _exact_counts(inputs: _CountInputs, domain: _CountDomain) -> np.ndarray:
    """Weighted counts (rows × cols); every record must fall in an allowed cell of the domain."""
    data, protected, public = inputs.data, inputs.protected, inputs.public
    rows, cols = domain.rows, domain.cols
    ri = pd.Index(rows).get_indexer(data[public])
    ci = pd.Index(cols).get_indexer(data[protected])
    if np.any(ri < 0):
        raise ValidationError(f"public_values must contain every value of {public!r} in the data; "
                              f"got {sorted(set(data[public][ri < 0].tolist()), key=str)!r} outside them")
    if np.any(ci < 0):
        raise ValidationError(f"protected_values must contain every value of {protected!r} in the data; "
                              f"got {sorted(set(data[protected][ci < 0].tolist()), key=str)!r} outside them")
    f = np.zeros((len(rows), len(cols)), dtype=np.int64)
    np.add.at(f, (ri, ci), inputs.weights)
    if np.any(f[~domain.mask] != 0):
        bad = [(rows[i], cols[j]) for i, j in np.argwhere((f != 0) & ~domain.mask)]
        raise ValidationError(f"protected_values must allow every (public, protected) pair in the data; got records at {bad!r}")
    return f


def _charge_ledger(ledger: Any, mech: SubsetCountMechanism, *, seeded: bool) -> None:
    """Spend the release's budget on the ledger (a bayespriv Ledger also records whether it was seeded)."""
    from .ledger import Ledger

    if isinstance(ledger, Ledger):
        ledger.charge(mech, seeded=seeded)
    else:
        ledger.charge(mech)


def subset_count_table(
    table: pd.DataFrame,
    *,
    protected: str,
    public: str,
    epsilon: float,
    rng: RNGLike = None,
    nonnegative: bool = False,
    protected_values: Sequence | Mapping[Any, Sequence] | None = None,
    public_values: Sequence | None = None,
    count: str | None = None,
    ledger: LedgerLike | None = None,
    geometric_calibration: str = "tight",
) -> pd.DataFrame:
    """Counts by ``public`` × ``protected``, ε-private on {protected}, with exact public margins.

    Algorithm 1 of Tan, *Privacy on a subset of dataset variables* (§5.2), with the corrected
    two-sided geometric law (see the module docstring for the construction, the privacy proof and
    the variance (n_i − 1)·2α/(1 − α)², α = e^{−ε} by default).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per record (or per group of identical records, with ``count``).
    protected, public : str
        Columns of ``table``: U₁ (whose values are protected) and V₁ (whose margins are public and
        released exactly).
    epsilon : float >= MIN_EPSILON (1e-9)
    rng : None | int | SeedSequence | Generator
        Release noise; ``None`` (the default) draws fresh OS entropy. A seeded release is for tests.
    nonnegative : bool
        Post-process each row to the L1-nearest non-negative integer row with the same total
        (keeps the guarantee; biases small cells upwards).
    protected_values : sequence, or mapping public value → sequence, optional
        The possible protected values (the paper's U_{1,i}, possibly per public value). Must not be
        read off the data: if a category is absent from the data its column (or its absence) would
        reveal it. Default: the categories of a ``Categorical`` column; otherwise the values in
        the data, with a :class:`~bayespriv.PrivacyAssumptionWarning` and the assumption
        ``"domain_from_data"`` in the guarantee.
    public_values : sequence, optional
        Rows of the result (default: Categorical categories or the values present; public anyway).
    count : str, optional
        Column of non-negative integer record multiplicities, to pass a table of counts.
    ledger : Ledger, optional
        Charged (budget ``protected``) before any noise is drawn.
    geometric_calibration : {"tight", "paper"}
        ``"tight"`` (default): α = e^{−ε}, whose privacy loss is exactly ε (proof in the module
        docstring). ``"paper"``: the paper's α = e^{−ε/2} (calibrated to L1 sensitivity 2), whose
        true loss is ε/2 — about 4 times the variance at small ε; the guarantee recorded is still
        ε. To reproduce the paper's numbers at ε, pass ``geometric_calibration="paper"``, or
        equivalently the tight calibration at ε/2 (the same noise, recorded as ε/2).

    Returns
    -------
    pandas.DataFrame of int64
        Indexed by the public values, one column per protected value. ``attrs["guarantee"]`` is the
        :class:`~bayespriv.Guarantee`, ``attrs["variables"]`` the columns it depends on,
        ``attrs["protected"]`` / ``attrs["public"]`` the protected and exactly-released variables,
        ``attrs["mechanism"]`` the :class:`SubsetCountMechanism` and ``attrs["seeded"]``.

    Privacy
    -------
    ε-privacy on {protected} (Definition 2.2; Proposition 5.1, exact — the noise law is known in
    closed form; tight for ``geometric_calibration="tight"``: attained by a row of two categories);
    0-private on every other variable except ``public``, whose margins are exact.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> people = pd.DataFrame({"age": ["young"] * 6 + ["old"] * 4,
    ...                        "sex": ["F", "M", "F", "F", "M", "M", "F", "M", "M", "F"]})
    >>> table = bp.subset_count_table(people, protected="sex", public="age", epsilon=1.0,
    ...                               protected_values=["F", "M"])
    >>> table.sum(axis=1).to_dict()          # the public margins are exact
    {'old': 4, 'young': 6}
    >>> table.attrs["guarantee"].epsilon, table.attrs["guarantee"].delta
    (1.0, 0.0)
    """
    inputs = _validate_count_request(table, protected=protected, public=public, epsilon=epsilon,
                                     nonnegative=nonnegative, count=count, ledger=ledger,
                                     geometric_calibration=geometric_calibration)
    domain = _count_domain(inputs, protected_values=protected_values, public_values=public_values)
    f = _exact_counts(inputs, domain)
    mech = SubsetCountMechanism(inputs.protected, inputs.public, inputs.epsilon, domain.assumptions,
                                inputs.calibration)
    if ledger is not None:  # raises before any noise is drawn
        _charge_ledger(ledger, mech, seeded=rng is not None)
    from ..mechanisms.exact_noise import BitSource

    bits = BitSource.from_rng(rng)  # None: the OS CSPRNG
    g = f + _noise(domain.mask, mech.alpha, None, None, _exact_pair_draws(inputs.epsilon, bits, inputs.calibration))
    seeded = bits.seeded
    if nonnegative:
        g = nonnegative_rows(g)
    out = pd.DataFrame(g, index=pd.Index(domain.rows, name=inputs.public),
                       columns=pd.Index(domain.cols, name=inputs.protected))
    out.attrs.update(guarantee=mech.guarantee, variables=mech.variables, protected=mech.protected,
                     public=mech.public, mechanism=mech, seeded=seeded, name=mech.query_name)
    return out
