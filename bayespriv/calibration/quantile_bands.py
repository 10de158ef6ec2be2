"""Confidence bands for the quantile function of i.i.d. draws, and the W∞ (or δ-trimmed W∞) of
two one-dimensional laws that they bound.

What :func:`~bayespriv.calibration.w_distances.wasserstein_bounds` uses for a one-dimensional F:
:func:`quantile_band` (DKW, or order statistics ∩ DKW) and :func:`w_infinity_samples`.

One dimension: the quantile coupling and the DKW band
-----------------------------------------------------
For distributions μ, ν on ℝ with quantile functions ``Q(u) = inf{x : F(x) ≥ u}``
(left-continuous), the monotone coupling ``(Q_μ(U), Q_ν(U))``, U ~ U(0, 1), is
optimal for every W_p, p = ∞ included, so

``W∞(μ, ν) = sup_{u ∈ (0,1)} |Q_μ(u) − Q_ν(u)|``

(the supremum equals the essential supremum because the difference of two
left-continuous functions is left-continuous).

*DKW band.* Let X_(1) ≤ … ≤ X_(n) be i.i.d. draws of F with empirical CDF F̂ and
empirical quantile ``Q̂(v) = X_(⌈nv⌉)`` for v ∈ (0, 1]. The
Dvoretzky–Kiefer–Wolfowitz inequality with Massart's constant,
``P(sup_x |F̂(x) − F(x)| > η) ≤ 2 exp(−2nη²)``, holds for every F (continuous or
not) and every η with 2exp(−2nη²) ≤ 1. With ``η = ε_n = sqrt(ln(2/α) / (2n))``
the event ``E = {sup |F̂ − F| ≤ ε_n}`` has probability ≥ 1 − α. Extend Q̂ by
``Q̂(v) = lo`` for v ≤ 0 and ``Q̂(v) = hi`` for v > 1, where [lo, hi] is a declared
support of F (``P(lo ≤ F ≤ hi) = 1``; ±∞ when unknown). On E, for every
u ∈ (0, 1):

    Q̂(u − ε_n) ≤ Q(u) ≤ Q̂(u + ε_n).

*Proof.* Upper: if u + ε ≤ 1, put x = Q̂(u + ε); then F̂(x) ≥ u + ε, so
F(x) ≥ F̂(x) − ε ≥ u and Q(u) ≤ x. If u + ε > 1, Q(u) ≤ hi because F(hi) = 1 ≥ u.
Lower: if u − ε > 0 and x < Q̂(u − ε), then F̂(x) < u − ε, so
F(x) ≤ F̂(x) + ε < u, hence x < Q(u); every x below Q̂(u − ε) is below Q(u),
so Q̂(u − ε) ≤ Q(u). If u − ε ≤ 0, Q(u) ≥ lo because F(x) = 0 < u for x < lo. ∎

In terms of levels: Q(u) ≤ X_(j) for u ≤ l_j := j/n − ε and Q(u) ≥ X_(j) for
u > h_j := (j − 1)/n + ε. Its width ε is the same at every level, though an
order statistic near the tails fluctuates far less (standard deviation
sqrt(u(1 − u)/n)): DKW is loose exactly where W∞ and trimmed W∞ are decided.

*Order-statistic band (the default, ``band="order"``).* Any i.i.d. sample of F
has the law of (Q(V_1), …, Q(V_n)) with V_i i.i.d. uniform on (0, 1), and
X_(j) = Q(V_(j)) (Q is non-decreasing), V_(j) ~ Beta(j, n − j + 1) — for every
F, continuous or not. For levels l_j ≤ h_j, on the event
E = {l_j ≤ V_(j) ≤ h_j for every constrained j}:

    u ≤ l_j ⇒ u ≤ V_(j) ⇒ Q(u) ≤ Q(V_(j)) = X_(j);
    u > h_j ⇒ V_(j) < u ⇒ Q(u) ≥ X_(j),

and the bounds extend to unconstrained j by monotonicity (X_(j) ≤ X_(j') for
j ≤ j'), i.e. l_j := max of the l_j' with j' ≤ j, h_j := min of the h_j' with
j' ≥ j. We constrain the order statistics J (every j within 30 of either end,
and in between one in ⌊0.5·sqrt(j(n − j + 1)/n)⌋, half a standard deviation
of V_(j) in units of 1/n: about 2π·sqrt(n) + 60 of them) at the Beta quantiles
l_j = B_j⁻¹(η), h_j = B_j⁻¹(1 − η), η = α′/(2|J|), so P(E) ≥ 1 − α′ by the
union bound (no asymptotics, exact Beta quantiles; widened by a relative
1e-9 against rounding). The band used is the intersection of this one at
α′ = α/2 and the DKW band at α/2: on both events (probability ≥ 1 − α) both
sets of inequalities hold, so l_j is the larger and h_j the smaller of the
two. It is DKW in the middle and much narrower in the tails (at n = 10⁴,
α = 0.0125: a level shift of about 0.007 instead of 0.017 at level 0.025;
see benchmarks/RESULTS_utility.md).

What draws cannot bound. The band reaches lo on (0, h_1] and hi on (l_n, 1),
levels of measure about ln(2|J|/α)/n at each end (ε_n for DKW): no finite
sample excludes that F puts this much mass arbitrarily far out (a mass p is
unseen in n draws with probability (1 − p)^n). Hence

* without a declared (or query-proven) support the W∞ bound is +∞ — any
  finite bound would rest on an assumption about the tails, which is not made
  silently;
* with a support it is finite but dominated by the support's ends: about
  max(Q_b(c/n) − lo, hi − Q_a(1 − c/n)) with c of the order of ln(2|J|/α),
  e.g. ≈ 4× the true W∞ for two Binomial(100, ·) counts, however many draws;
* with δ > 0 trimmed (ApproxWasserstein) those levels can be dropped: the
  bound is finite as soon as δ exceeds the unbounded mass h_1 + 1 − l_n
  (:attr:`QuantileBand.unbounded_mass`), and tends to the true δ-trimmed W∞
  as n grows. This is the honest route to a tight figure without a support.

Hence, on E_a ∩ E_b (probability ≥ 1 − α_a − α_b, union bound), for every u,

    |Q_a(u) − Q_b(u)| ≤ D(u) := max(U_a(u) − L_b(u), U_b(u) − L_a(u)),
    U(u) = X_(j) for the first j with u ≤ l_j (hi if none; = Q̂(u + ε) for DKW),
    L(u) = X_(j) for the last j with h_j < u (lo if none; = Q̂(u − ε) for DKW),

and ``W∞(f_a, f_b) ≤ sup_{u ∈ (0,1)} D(u)``. D is a step function: U_a and L_b
are non-decreasing, left-continuous and constant between the *cut points*
l_j (U) and h_j (L). On each interval (p_i, p_{i+1}] between
consecutive cut points every term is constant and equals its value at the
right end p_{i+1} (at the last interval, the left limit at 1). We evaluate D
there, so the supremum is computed exactly (no grid), in O(n log n).
With ε = 0 (l_j = j/n, h_j = (j − 1)/n) the same computation gives the plug-in estimate
``sup_u |Q̂_a(u) − Q̂_b(u)|``, the W∞ of the two empirical distributions.
If the support is unknown (lo = −∞ or hi = +∞) the bound is +∞: no finite
sample can exclude a far-away tail, and the Wasserstein mechanism refuses.

One dimension: (W, δ)-closeness of the quantile coupling
--------------------------------------------------------
Definition 3.2 asks for a coupling γ and a set R of pairs with γ(R) ≥ 1 − δ and
‖x − y‖₁ ≤ W on R. Take the quantile coupling and
R = {(Q_a(u), Q_b(u)) : |Q_a(u) − Q_b(u)| ≤ W}: then γ(R) = 1 − Leb{u : |Q_a(u) −
Q_b(u)| > W}. So f_a and f_b are (W, δ)-close as soon as the set of levels u
where the coupling moves mass farther than W has Lebesgue measure ≤ δ; the
smallest such W is the *δ-trimmed W∞*

    W_δ = inf{W : Leb{u ∈ (0,1) : |Q_a(u) − Q_b(u)| > W} ≤ δ}.

Trimming a fixed δ/2 at each end (levels restricted to [δ/2, 1 − δ/2]) is one
admissible choice; W_δ is never larger and is what the paper's Figure 1 uses
(the far move 100 → 3 sits at levels (0.8, 0.9], in the middle, and W_0.1 = 1).
On E_a ∩ E_b, {|Q_a − Q_b| > W} ⊆ {D > W}, so the δ-trimmed value of the step
function D bounds W_δ; we compute it exactly from the pieces of D (sort them by
value, accumulate their lengths). Its tails are infinite only on levels within
max(ε_a, ε_b) of 0 or 1 when the support is unknown, so it is finite as soon as
δ > 2·max(ε_a, ε_b), or the support is declared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .._validation import check_choice, check_confidence, check_delta, check_finite_array, fail
from ..errors import ParameterTypeError

__all__ = ["BANDS", "dkw_epsilon", "QuantileBand", "quantile_band", "w_infinity_samples"]

#: Confidence bands for the quantile functions: order statistics ∩ DKW (default), or DKW alone.
BANDS = ("order", "dkw")

#: Order band: every order statistic within this many of either end is constrained ...
_ORDER_TAIL = 30
#: ... and in between one in ⌊κ·sd⌋ (κ = this), see :func:`_order_indices`.
_ORDER_STEP = 0.5
#: Relative widening of the Beta quantiles (scipy's inverse incomplete Beta is accurate to ~1e-15).
_LEVEL_SLACK = 1e-9

#: DKW half-widths are widened by this relative amount so that the rounding of
#: the cut points j/n ± ε (~1e-16) can only make the bound larger.
_EPS_INFLATION = 1e-12

#: Tie tolerance of the trimmed value: conservative bounds accept slightly
#: *less* trimming than δ; the exact helpers accept ties at δ (decimal levels).
_TRIM_TOL_BOUND = -1e-12
_TRIM_TOL_EXACT = 1e-12


# -- DKW and the step function D ------------------------------------------------------------------


def dkw_epsilon(n: int, alpha: float) -> float:
    """Half-width ε = sqrt(ln(2/α) / (2n)) of the DKW band (Massart's constant).

    ``P(sup_x |F̂_n(x) − F(x)| > ε) ≤ α`` for n i.i.d. draws of any F.
    ``alpha = 0`` gives ``inf``.
    """
    if n < 1:
        raise fail("n", "an integer >= 1", n)
    if not (0.0 <= alpha <= 1.0):
        raise fail("alpha", "in [0, 1]", alpha)
    if alpha == 0.0:
        return math.inf
    return math.sqrt(math.log(2.0 / alpha) / (2.0 * n))


@dataclass(frozen=True)
class QuantileBand:
    """Levels of a confidence band for the quantile function of n i.i.d. draws.

    With X_(1) ≤ … ≤ X_(n) the sorted draws, the band says: for every u in (0, 1),

    * ``Q(u) ≤ X_(j)`` whenever ``u ≤ upper_levels[j-1]`` (and ``Q(u) ≤ hi`` always), and
    * ``Q(u) ≥ X_(j)`` whenever ``u > lower_levels[j-1]`` (and ``Q(u) ≥ lo`` always),

    simultaneously, with probability ≥ 1 − ``alpha`` (0 for a plug-in "band", whose levels are
    j/n and (j − 1)/n: the empirical quantile function itself). Both arrays are non-decreasing.

    Attributes
    ----------
    upper_levels, lower_levels : ndarray (n,)
        l_j and h_j of the module docstring (``-inf`` / ``inf`` where nothing is claimed).
    alpha : float
        Failure probability (0 for a plug-in band, which claims no probability).
    kind : {"order", "dkw", "plug-in"}
    """

    upper_levels: np.ndarray
    lower_levels: np.ndarray
    alpha: float
    kind: str

    @property
    def n(self) -> int:
        """Number of draws the band is for."""
        return int(self.upper_levels.shape[0])

    @property
    def unbounded_mass(self) -> float:
        """h_1 + (1 − l_n): the measure of the levels (0, h_1] and (l_n, 1) where the band reaches
        the support's ends (infinite without a declared support). A δ-trimmed bound of two draws
        of the same size is finite without a support only if δ exceeds it."""
        return float(min(max(self.lower_levels[0], 0.0), 1.0) + min(max(1.0 - self.upper_levels[-1], 0.0), 1.0))


def _order_indices(n: int) -> np.ndarray:
    """The order statistics the order band constrains (1-based): every j within
    :data:`_ORDER_TAIL` of either end, and in between steps of ⌊κ·sd_j⌋ (at least 1), where
    sd_j = sqrt(j(n − j + 1)/n) is n times the standard deviation of the j-th uniform order
    statistic and κ = :data:`_ORDER_STEP` — dense where the quantile function is resolved finely
    (the tails), sparse where neighbouring order statistics carry the same information."""
    j = np.arange(1, n + 1)
    sd = np.sqrt(j * (n - j + 1.0) / n)
    step = np.maximum(1, np.floor(_ORDER_STEP * sd)).astype(np.int64)
    step[(j <= _ORDER_TAIL) | (j > n - _ORDER_TAIL)] = 1
    out, k = [], 1
    # a short loop over the selected indices (about 2·sqrt(n)/κ·π/2 + 2·tail of them), not over draws
    while k <= n:
        out.append(k)
        k += int(step[k - 1])
    tails = j[(j <= _ORDER_TAIL) | (j > n - _ORDER_TAIL)]  # a step may have jumped into the upper tail
    return np.union1d(np.asarray(out, dtype=np.int64), tails)


def quantile_band(n: int, alpha: float, *, band: str = "order") -> QuantileBand:
    """A simultaneous confidence band for the quantile function of ``n`` i.i.d. draws.

    Parameters
    ----------
    n : int >= 1
    alpha : float in [0, 1)
        Failure probability; 0 gives the plug-in levels (no band).
    band : {"order", "dkw"}
        ``"dkw"``: the DKW band, l_j = j/n − ε, h_j = (j − 1)/n + ε with ε =
        :func:`dkw_epsilon` (n, α). ``"order"`` (default): the intersection of the DKW band at α/2
        and a Bonferroni band of Beta order-statistic quantiles at α/2 (see the module
        docstring), which is much narrower in the tails.

    Returns
    -------
    QuantileBand
    """
    band = check_choice(band, "band", BANDS)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise fail("n", "an integer >= 1", n)
    if not (0.0 <= alpha < 1.0):
        raise fail("alpha", "in [0, 1)", alpha)
    j = np.arange(1, n + 1)
    if alpha == 0.0:
        return QuantileBand(j / n, (j - 1) / n, 0.0, "plug-in")
    if band == "dkw":
        eps = dkw_epsilon(n, alpha) * (1 + _EPS_INFLATION)
        return QuantileBand(j / n - eps, (j - 1) / n + eps, float(alpha), "dkw")
    eps = dkw_epsilon(n, alpha / 2.0) * (1 + _EPS_INFLATION)
    up_beta, low_beta = _beta_levels(n, alpha / 2.0)
    upper = np.maximum(j / n - eps, up_beta)
    lower = np.minimum((j - 1) / n + eps, low_beta)
    return QuantileBand(upper, lower, float(alpha), "order")


def _beta_levels(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Bonferroni band of the uniform order statistics V_(j), j in :func:`_order_indices`:
    P(V_(j) < l_j) = P(V_(j) > h_j) = η = α/(2m) (V_(j) ~ Beta(j, n − j + 1)), widened by a relative
    :data:`_LEVEL_SLACK` against the inverse Beta's rounding; then extended to every j by
    monotonicity (l_j = the largest l_{j'} with j' ≤ j, h_j = the smallest h_{j'} with j' ≥ j)."""
    idx = _order_indices(n)
    eta = alpha / (2.0 * idx.size)
    lo_q = stats.beta.ppf(eta, idx, n - idx + 1) * (1.0 - _LEVEL_SLACK)
    hi_q = 1.0 - (1.0 - stats.beta.isf(eta, idx, n - idx + 1)) * (1.0 - _LEVEL_SLACK)
    up = np.full(n, -np.inf)
    low = np.full(n, np.inf)
    up[idx - 1] = lo_q
    low[idx - 1] = hi_q
    return np.maximum.accumulate(up), np.minimum.accumulate(low[::-1])[::-1]


def _upper(sorted_x: np.ndarray, levels: np.ndarray, u: np.ndarray, hi: float) -> np.ndarray:
    """U(u): X_(j) for the first j with u ≤ l_j (``levels[j-1]``), hi if there is none."""
    j = np.searchsorted(levels, u, side="left")
    padded = np.append(sorted_x, hi)
    return np.minimum(padded[j], hi)


def _lower(sorted_x: np.ndarray, levels: np.ndarray, u: np.ndarray, lo: float) -> np.ndarray:
    """L(u): X_(j) for the last j with h_j < u (``levels[j-1]``), lo if there is none."""
    j = np.searchsorted(levels, u, side="left")  # number of levels < u
    padded = np.concatenate([[lo], sorted_x])
    return np.maximum(padded[j], lo)


def _band_pieces(a: np.ndarray, b: np.ndarray, band_a: QuantileBand, band_b: QuantileBand, lo: float, hi: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Pieces of D(u) = max(U_a − L_b, U_b − L_a) on (0, 1): (lengths, values).

    ``a`` and ``b`` are sorted 1-D samples. Exact: every term is constant on
    each interval between consecutive cut points (the band's levels) and
    left-continuous, so its value at the interval's right end is its value on
    the interval.
    """
    cuts = np.concatenate([band_a.upper_levels, band_b.upper_levels, band_a.lower_levels, band_b.lower_levels])
    cuts = np.unique(cuts[(cuts > 0.0) & (cuts < 1.0)])
    right = np.append(cuts, 1.0)
    lengths = np.diff(right, prepend=0.0)
    with np.errstate(invalid="ignore"):
        d1 = _upper(a, band_a.upper_levels, right, hi) - _lower(b, band_b.lower_levels, right, lo)
        d2 = _upper(b, band_b.upper_levels, right, hi) - _lower(a, band_a.lower_levels, right, lo)
    values = np.fmax(d1, d2)
    return lengths, values


def _trimmed(lengths: np.ndarray, values: np.ndarray, delta: float, tol: float) -> float:
    """inf{W ≥ 0 : Σ_{values > W} lengths ≤ δ} for a step function given by pieces."""
    if delta <= 0.0:
        return max(0.0, float(values.max()))
    order = np.argsort(-values, kind="stable")
    cum = np.cumsum(lengths[order])
    m = int(np.searchsorted(cum, delta + tol, side="right"))  # leading pieces that may be dropped
    if m >= values.shape[0]:
        return 0.0
    return max(0.0, float(values[order[m]]))


def _pair_quantile(a: np.ndarray, b: np.ndarray, band_a: QuantileBand, band_b: QuantileBand, lo: float, hi: float,
                   delta: float, tol: float) -> float:
    lengths, values = _band_pieces(a, b, band_a, band_b, lo, hi)
    return _trimmed(lengths, values, delta, tol)


def w_infinity_samples(
    a: Any,
    b: Any,
    *,
    confidence: float | None = 0.95,
    support: tuple[float, float] = (-math.inf, math.inf),
    delta: float = 0.0,
    band: str = "order",
) -> float:
    """Bound on W∞ (or the δ-trimmed W∞) of two 1-D distributions from i.i.d. draws.

    Parameters
    ----------
    a, b : array-like, 1-D
        Draws of the two distributions.
    confidence : float in (0, 1) or None, default 0.95
        Probability that the bound holds (bands for a and b, each at
        failure probability (1 − confidence)/2). ``None`` returns the plug-in
        value of the two empirical distributions.
    support : (lo, hi)
        Declared support of both distributions (±inf when unknown, which makes
        the untrimmed bound infinite).
    delta : float in [0, 1)
        Trimmed mass: 0 for W∞, otherwise W such that the quantile coupling is
        (W, δ)-close (Definition 3.2).
    band : {"order", "dkw"}
        The quantile bands (:func:`quantile_band`): order statistics ∩ DKW
        (default; narrower in the tails) or DKW alone.

    Returns
    -------
    float
        See the module docstring for the derivation; exact (no grid).
    """
    x = np.sort(check_finite_array(a, "a", ndim=1))
    y = np.sort(check_finite_array(b, "b", ndim=1))
    if x.size == 0 or y.size == 0:
        raise fail("a and b", "non-empty", (x.size, y.size))
    lo, hi = _check_scalar_support(support)
    if x[0] < lo or y[0] < lo or x[-1] > hi or y[-1] > hi:
        raise fail("support", "an interval containing every draw", support)
    confidence = check_confidence(confidence)
    delta = check_delta(delta, allow_zero=True)
    band = check_choice(band, "band", BANDS)
    alpha = 0.0 if confidence is None else (1.0 - confidence) / 2.0
    tol = _TRIM_TOL_EXACT if confidence is None else _TRIM_TOL_BOUND
    return _pair_quantile(x, y, quantile_band(x.size, alpha, band=band), quantile_band(y.size, alpha, band=band),
                          lo, hi, delta, tol)


def _check_scalar_support(support: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in support)
    except (TypeError, ValueError):
        raise ParameterTypeError(f"support must be a pair (lo, hi) of numbers; got {support!r}") from None
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise fail("support", "(lo, hi) with lo <= hi and no NaN", support)
    return lo, hi
