"""∞-Wasserstein distances and (W, δ)-closeness of F(X) | secret, with conservative bounds.

What the Wasserstein mechanisms of Chen & Ohrimenko (AISTATS 2023, §3) need:

* Δ_W = sup over pairs (and over θ of a family) of W∞(f_a, f_b), the
  ∞-Wasserstein distance (Definition 3.1, L1 ground norm) between the
  distributions of F(X) under the two secrets of a pair (Theorem 3.1);
* a W such that every pair is (W, δ)-close (Definition 3.2; Theorem 3.2),
  either through the trimmed quantile coupling (one-dimensional F) or through
  Theorem 3.3: W = Δ_E + 2c when ‖F − E F‖₁ ≤ c with probability ≥ 1 − δ/2.

Everything here is estimated from the calibration's draws and comes with a
bound that holds, for *all* pairs and members at once, with the stated
``confidence`` over the calibration's own randomness — except for a
calibration that holds the exact laws of a one-dimensional F
(:attr:`~bayespriv.Calibration.finite_laws`): there W∞ and the δ-trimmed W∞
are computed exactly from the laws' quantile functions
(:func:`w_infinity_finite`), with confidence 1 and no assumption, whatever
``confidence`` asks.

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

Several dimensions: Theorem 3.3
-------------------------------
For k > 1 the marginal W∞ do **not** bound the joint W∞ (X = (U, U) and
Y = (U, 1 − U) have equal marginals but differ), so no bound on Δ_W for k > 1 is
offered (it would have to be the support's L1 diameter, which ignores the
model). The (W, δ)-closeness route of Theorem 3.3 is: for each distribution
f_θ let c_θ satisfy P(‖F − E F‖₁ ≤ c_θ) ≥ 1 − δ/2; then for every pair,
by the triangle inequality and the union bound (appendix B.1),
f_a and f_b are (‖E f_a − E f_b‖₁ + c_a + c_b, δ)-close. (The paper states it
with one c for all θ, i.e. Δ_E + 2c; the per-distribution form has the same
proof and is never larger.) Conservatively, per distribution:

* mean: ``|μ̂_c − μ_c| ≤ h_c = z·se_c`` for every component c (CLT normal
  interval, assumption ``monte_carlo_clt``), so ‖μ_a − μ_b‖₁ ≤ ‖|μ̂_a − μ̂_b|‖₁ +
  ‖h_a‖₁ + ‖h_b‖₁;
* deviation: with Ŷ_i = ‖X_i − μ̂‖₁ and H = ‖h‖₁, on the mean event
  Y_i := ‖X_i − μ‖₁ ≤ Ŷ_i + H, hence Y_(r) ≤ Ŷ_(r) + H for every order
  statistic. For q = 1 − δ/2 and ξ_q the q-quantile of Y, the number of draws
  with Y_i < ξ_q is Binomial(n, p) with p ≤ q, so P(Y_(r) < ξ_q) ≤
  P(Bin(n, q) ≥ r). Taking the smallest r with P(Bin(n, q) ≥ r) ≤ α' gives
  c = Ŷ_(r) + H ≥ ξ_q with probability ≥ 1 − α', and then
  P(Y ≤ c) ≥ F_Y(ξ_q) ≥ q. If no such r ≤ n exists (too few draws for this δ),
  c = ∞ unless a support is declared, when ‖F − μ‖₁ ≤ Σ_c max(hi_c − μ_c, μ_c − lo_c).

Every bound is also capped by the L1 diameter Σ_c (hi_c − lo_c) of a declared
support, which bounds W∞ itself.

Union bound
-----------
All bounds must hold together: the failure probability 1 − confidence is
split equally over every (member, secret) distribution that is bounded
(Bonferroni), and within a distribution over its events (one DKW event; or
k mean intervals and one order-statistic event). The result's ``confidence``
is the probability that every bound of every pair and member holds at once.
For a plug-in calibration (``confidence=None``) the bounds are the estimates
and carry the assumption ``estimated_moments``.

Families: a calibration with ``members`` (one Calibration per θ) is handled by
taking the supremum over members for each pair; members without the attribute
count as one member.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import ndtri

from .._validation import check_choice, check_confidence, check_delta, check_finite_array, described, fail, sealed
from ..errors import ParameterTypeError, ValidationError
from ..queries import Query, _Clipped, _Indicator
from ..secrets import SecretPair
from .result import Calibration
from .signing import UNVERIFIED
from ._hooks import register

__all__ = [
    "PairWasserstein",
    "WassersteinBounds",
    "wasserstein_bounds",
    "dkw_epsilon",
    "quantile_band",
    "QuantileBand",
    "w_infinity_samples",
    "w_infinity_from_quantiles",
    "w_infinity_discrete",
    "w_infinity_finite",
    "query_support",
    "resolve_support",
    "METHODS",
    "BANDS",
]

#: Ways to bound (W, δ)-closeness: the quantile coupling (k = 1) or Theorem 3.3.
METHODS = ("auto", "quantile", "mean_deviation")

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


# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairWasserstein:
    """W∞ (δ = 0) or a (W, δ)-closeness value for one secret pair.

    Attributes
    ----------
    pair : SecretPair
    estimate : float
        Plug-in value from the draws (empirical quantile coupling, or
        ‖μ̂_a − μ̂_b‖₁ + ĉ_a + ĉ_b), supremum over members.
    bound : float
        Conservative upper bound (``inf`` when not provable from the draws),
        supremum over members; equals ``estimate`` for plug-in results.
    delta : float
        0 for W∞; the trimmed mass δ of (W, δ)-closeness otherwise.
    confidence : float or None
        Probability that every bound of the computation holds at once
        (None: plug-in, no probability claimed).
    method : {"quantile", "mean_deviation"}
    assumptions : tuple of str
    worst_member : int
        Index of the member (θ of a family) attaining ``bound``.
    mean_term, deviation_term : float or None
        For ``mean_deviation``: the bound's ‖μ_a − μ_b‖₁ part and c_a + c_b
        part at the worst member.
    """

    pair: SecretPair
    estimate: float
    bound: float
    delta: float
    confidence: float | None
    method: str
    assumptions: tuple[str, ...] = ()
    worst_member: int = 0
    mean_term: float | None = None
    deviation_term: float | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS[1:]:
            raise fail("method", f"one of {METHODS[1:]!r}", self.method)
        if not (self.bound >= 0) or not (self.estimate >= 0):
            raise fail("bound and estimate", ">= 0", (self.estimate, self.bound))

    @property
    def finite(self) -> bool:
        """Whether the bound is finite (an infinite one cannot calibrate noise)."""
        return math.isfinite(self.bound)


@dataclass(frozen=True)
class WassersteinBounds:
    """Per-pair results of :func:`wasserstein_bounds` and what they share.

    Attributes
    ----------
    pairs : tuple of PairWasserstein
    delta : float
    confidence : float or None
    method : str
    support : tuple of ndarray
        ``(lo, hi)``, each ``(k,)``, the support used (±inf where unknown).
    n_distributions : int
        Number of (member, secret) distributions the failure probability was
        split over.
    assumptions : tuple of str
    band : {"order", "dkw"} or None
        The quantile bands used (``method="quantile"``), None otherwise.
    """

    pairs: tuple[PairWasserstein, ...]
    delta: float
    confidence: float | None
    method: str
    support: tuple[np.ndarray, np.ndarray]
    n_distributions: int
    assumptions: tuple[str, ...] = ()
    band: str | None = None

    @property
    def bound(self) -> float:
        """Largest bound over pairs (Δ_W, or the W of (W, δ)-closeness)."""
        return max(p.bound for p in self.pairs)

    @property
    def estimate(self) -> float:
        """Largest plug-in estimate over the pairs (not a bound)."""
        return max(p.estimate for p in self.pairs)

    @property
    def worst(self) -> PairWasserstein:
        """The pair with the largest bound (the one the mechanism's noise covers)."""
        return max(self.pairs, key=lambda p: p.bound)

    def table(self) -> pd.DataFrame:
        """One row per pair: estimate, bound, δ, method, worst member, and the
        mean / deviation terms of Theorem 3.3 (NaN for the quantile method)."""
        rows = [{
            "pair": p.pair.label, "estimate": p.estimate, "bound": p.bound, "delta": p.delta, "method": p.method,
            "worst member": p.worst_member,
            "mean term": np.nan if p.mean_term is None else p.mean_term,
            "deviation term": np.nan if p.deviation_term is None else p.deviation_term,
        } for p in self.pairs]
        return pd.DataFrame(rows).set_index("pair")


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


# -- exact helpers from quantile functions ---------------------------------------------------------------


def w_infinity_from_quantiles(
    ppf_a: Callable[[np.ndarray], np.ndarray],
    ppf_b: Callable[[np.ndarray], np.ndarray],
    *,
    jumps: Any = None,
    delta: float = 0.0,
    n_grid: int = 200_000,
) -> float:
    """W∞ (δ = 0) or δ-trimmed W∞ of the quantile coupling of two 1-D distributions.

    ``sup_u |Q_a(u) − Q_b(u)|``, or ``inf{W : Leb{u : |Q_a(u) − Q_b(u)| > W} ≤ δ}``
    (the smallest W for which the quantile coupling is (W, δ)-close).

    Parameters
    ----------
    ppf_a, ppf_b : callable
        Quantile functions (e.g. a frozen scipy distribution's ``ppf``),
        vectorized over an array of levels in (0, 1).
    jumps : array-like, optional
        Every level in (0, 1) where either quantile function jumps (for
        discrete distributions: their CDF values at the support points). Then
        both are constant on each interval between consecutive levels and the
        result is **exact**: they are evaluated at interval midpoints and the
        pieces' lengths are exact. Levels closer than 1e-12 to δ in
        accumulated length count as equal (decimal levels like 0.1).
    delta : float in [0, 1)
    n_grid : int
        Without ``jumps``: number of equal cells of (0, 1), evaluated at their
        midpoints, plus the end limits ppf(0), ppf(1) for δ = 0 when their
        difference is defined. An approximation for continuous quantile
        functions (error ≤ the oscillation of |Q_a − Q_b| over one cell).
    """
    delta = check_delta(delta, allow_zero=True)
    if not callable(ppf_a) or not callable(ppf_b):
        raise ParameterTypeError("ppf_a and ppf_b must be callables mapping levels in (0, 1) to quantiles")
    if jumps is not None:
        levels = check_finite_array(jumps, "jumps").reshape(-1)
        levels = np.unique(levels[(levels > 0.0) & (levels < 1.0)])
        right = np.append(levels, 1.0)
        left = np.concatenate([[0.0], levels])
        mid = 0.5 * (left + right)
        lengths = right - left
    else:
        if isinstance(n_grid, bool) or not isinstance(n_grid, int) or n_grid < 1:
            raise fail("n_grid", "an integer >= 1", n_grid)
        mid = (np.arange(n_grid) + 0.5) / n_grid
        lengths = np.full(n_grid, 1.0 / n_grid)
    values = np.abs(np.asarray(ppf_a(mid), dtype=float) - np.asarray(ppf_b(mid), dtype=float))
    if np.isnan(values).any():
        raise ValidationError("ppf_a and ppf_b must return numbers at every level in (0, 1); got NaN")
    result = _trimmed(lengths, values, delta, _TRIM_TOL_EXACT)
    if jumps is None and delta == 0.0:
        with np.errstate(invalid="ignore"):
            ends = np.abs(np.asarray(ppf_a(np.array([0.0, 1.0])), float) - np.asarray(ppf_b(np.array([0.0, 1.0])), float))
        ends = ends[~np.isnan(ends)]
        if ends.size:
            result = max(result, float(ends.max()))
    return result


def w_infinity_discrete(dist_a: Any, dist_b: Any, *, delta: float = 0.0) -> float:
    """Exact W∞ (or δ-trimmed W∞) of two frozen scipy discrete distributions
    with finite integer support (e.g. ``scipy.stats.betabinom(n, a, b)``).

    The jump levels are the CDF values at every support point of either
    distribution; see :func:`w_infinity_from_quantiles`.
    """
    points = []
    for name, d in (("dist_a", dist_a), ("dist_b", dist_b)):
        if not all(hasattr(d, attr) for attr in ("ppf", "cdf", "support")):
            raise ParameterTypeError(f"{name} must be a frozen scipy discrete distribution; got {type(d).__name__}")
        lo, hi = d.support()
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise fail(f"{name} support", "finite", (lo, hi))
        points.append(np.arange(int(lo), int(hi) + 1))
    jumps = np.concatenate([dist_a.cdf(points[0]), dist_a.cdf(points[1]), dist_b.cdf(points[0]), dist_b.cdf(points[1])])
    return w_infinity_from_quantiles(dist_a.ppf, dist_b.ppf, jumps=jumps, delta=delta)


def w_infinity_finite(law_a: Any, law_b: Any, *, delta: float = 0.0) -> float:
    """Exact W∞ (or δ-trimmed W∞) of two one-dimensional finite laws
    (:class:`~bayespriv.calibration.laws.FiniteLaw`).

    The quantile function of a law with sorted values x_1 < … < x_m and
    cumulative probabilities c_1 < … < c_m = 1 is Q(u) = x_j for
    c_{j−1} < u ≤ c_j; both Q_a and Q_b are constant between consecutive jump
    levels of either law, so :func:`w_infinity_from_quantiles` evaluates them
    there and the result is exact up to the rounding of the cumulative sums.

    Examples
    --------
    >>> from bayespriv.calibration.laws import FiniteLaw
    >>> w_infinity_finite(FiniteLaw([0, 1, 2], [0.25, 0.5, 0.25]), FiniteLaw([1, 2, 3], [0.25, 0.5, 0.25]))
    1.0
    """
    quantiles = []
    for name, law in (("law_a", law_a), ("law_b", law_b)):
        if not hasattr(law, "points") or not hasattr(law, "weights") or np.shape(law.points)[1:] != (1,):
            raise ParameterTypeError(f"{name} must be a one-dimensional FiniteLaw; got {type(law).__name__}")
        order = np.argsort(law.points[:, 0], kind="stable")
        x, c = law.points[order, 0], np.cumsum(law.weights[order])
        quantiles.append((x, c))

    def ppf(x: np.ndarray, c: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        return lambda u: x[np.minimum(np.searchsorted(c, u, side="left"), x.size - 1)]

    (xa, ca), (xb, cb) = quantiles
    return w_infinity_from_quantiles(ppf(xa, ca), ppf(xb, cb), jumps=np.concatenate([ca, cb]), delta=delta)


def _exact_bounds(calibration: Calibration, members: tuple[Calibration, ...], delta: float, support: Any,
                  method: str) -> WassersteinBounds | None:
    """The bounds of a calibration whose members all hold exact 1-D laws (quantile method): exact W∞ or
    δ-trimmed W∞ per pair, supremum over members, confidence 1; None for any other calibration."""
    if method != "quantile" or not all(m.finite_laws and m.k == 1 for m in members):
        return None
    lo, hi = resolve_support(calibration, support)
    for m in members:
        for label, law in m.finite_laws.items():
            if law.points.min() < lo[0] or law.points.max() > hi[0]:
                raise ValidationError(f"support must contain every value of the exact law of F; got [{lo[0]:g}, "
                                      f"{hi[0]:g}], but the law under {label!r} takes values in "
                                      f"[{law.points.min():g}, {law.points.max():g}]")
    assumptions = (UNVERIFIED,) if UNVERIFIED in calibration.assumptions else ()
    results = []
    for pair in calibration.pairs:
        values = [w_infinity_finite(m.finite_laws[pair.a.label], m.finite_laws[pair.b.label], delta=delta)
                  for m in members]
        worst = int(np.argmax(values))
        results.append(PairWasserstein(pair, values[worst], values[worst], delta, 1.0, method, assumptions, worst))
    return WassersteinBounds(tuple(results), delta, 1.0, method, (lo, hi), len(members) * len(calibration.secrets),
                             assumptions, None)


# -- support of F --------------------------------------------------------------------------------------


@register  # Calibration's convenience method calls it by name (_hooks)
def query_support(query: Query | None, k: int, n_records: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Support ``(lo, hi)`` of F that the query proves, ±inf where it proves none.

    Provable only for ready-made additive components whose per-record term is
    known to be bounded: ``count`` / ``proportion`` (indicator: h ∈ {0, 1}) and
    ``mean(column, bounds=(low, high))`` (clipped: h ∈ [low, high]). A mean or
    share lies in the range of h; a sum over n records in n times it (needs
    ``n_records``). ``record_range`` alone (h's width) does not locate F.
    """
    lo = np.full(k, -math.inf)
    hi = np.full(k, math.inf)
    if query is None or not query.components or len(query.components) != k:
        return lo, hi
    for c, comp in enumerate(query.components):
        if isinstance(comp.h, _Indicator):
            h_lo, h_hi = 0.0, 1.0
        elif isinstance(comp.h, _Clipped):
            h_lo, h_hi = float(comp.h.low), float(comp.h.high)
        else:
            continue
        if comp.per_mean:
            lo[c], hi[c] = h_lo, h_hi
        elif n_records is not None:
            lo[c], hi[c] = n_records * h_lo, n_records * h_hi
    return lo, hi


def resolve_support(calibration: Calibration, support: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The support used for F: the query's provable support intersected with
    the user's declaration ``support=(lo, hi)`` (scalars or arrays ``(k,)``).

    Every draw of every member must lie in it (otherwise the declaration is
    wrong and a ``ValidationError`` says which component).
    """
    k = calibration.k
    lo, hi = query_support(calibration.query, k, calibration.n_records)
    if support is not None:
        if not isinstance(support, (tuple, list)) or len(support) != 2:
            raise fail("support", f"a pair (lo, hi) of scalars or arrays of shape ({k},)", support)
        parts = []
        for name, value in (("support[0] (lo)", support[0]), ("support[1] (hi)", support[1])):
            try:
                arr = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                raise ParameterTypeError(f"{name} must be numeric; got {value!r}") from None
            if arr.ndim == 0:
                arr = np.full(k, float(arr))
            if arr.shape != (k,):
                raise fail(name, f"a scalar or an array of shape ({k},)", described(f"shape {arr.shape}"))
            if np.isnan(arr).any():
                raise fail(name, "free of NaN", value)
            parts.append(arr)
        user_lo, user_hi = parts
        if np.any(user_lo > user_hi):
            raise fail("support", "(lo, hi) with lo <= hi in every component", support)
        lo, hi = np.maximum(lo, user_lo), np.minimum(hi, user_hi)
    for m in _members(calibration):
        if m.sample_array is None:
            continue
        mins = m.sample_array.min(axis=(0, 1))
        maxs = m.sample_array.max(axis=(0, 1))
        bad = np.nonzero((mins < lo) | (maxs > hi))[0]
        if bad.size:
            c = int(bad[0])
            raise ValidationError(
                f"support must contain every calibration draw of F; got [{lo[c]:g}, {hi[c]:g}] for component "
                f"{calibration.component_names[c]!r}, whose draws range over [{mins[c]:g}, {maxs[c]:g}]"
            )
    return sealed(lo), sealed(hi)


# -- Theorem 3.3: deviation radius ----------------------------------------------------------------------


def _order_statistic_rank(n: int, q: float, alpha: float) -> int | None:
    """Smallest r (1-based) with P(Binomial(n, q) ≥ r) ≤ α, or None if r > n."""
    r = np.arange(1, n + 1)
    tail = stats.binom.sf(r - 1, n, q)  # P(Bin ≥ r)
    ok = np.nonzero(tail <= alpha)[0]
    return int(r[ok[0]]) if ok.size else None


def _deviation(samples: np.ndarray, delta: float, alpha: float | None, lo: np.ndarray, hi: np.ndarray
               ) -> tuple[np.ndarray, float, np.ndarray, float]:
    """For one distribution (n, k): (μ̂, ĉ, h, c).

    ĉ: plug-in (1 − δ/2)-quantile of ‖X − μ̂‖₁. With ``alpha`` (failure
    probability of this distribution): h (k,) bounds |μ̂ − μ| (CLT, split over
    k + 1 events) and c ≥ the true (1 − δ/2)-quantile of ‖F − μ‖₁ on the events.
    """
    n, k = samples.shape
    mu = samples.mean(axis=0)
    dev = np.sort(np.abs(samples - mu).sum(axis=1))
    q = 1.0 - delta / 2.0
    c_hat = float(dev[min(n, max(1, math.ceil(n * q - 1e-9))) - 1])
    if alpha is None:
        return mu, c_hat, np.zeros(k), c_hat
    alpha_event = alpha / (k + 1)
    se = samples.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.full(k, math.inf)
    z = float(-ndtri(alpha_event / 2.0))
    h = z * se
    r = _order_statistic_rank(n, q, alpha_event)
    c = math.inf if r is None else float(dev[r - 1]) + float(h.sum())
    with np.errstate(invalid="ignore"):
        radius = float(np.sum(np.maximum(hi - (mu - h), (mu + h) - lo)))
    if not math.isnan(radius):
        c = min(c, radius)
    return mu, c_hat, h, c


# -- per pair, per member ---------------------------------------------------------------------------------


def _members(calibration: Calibration) -> tuple[Calibration, ...]:
    members = tuple(getattr(calibration, "members", None) or (calibration,))
    for m in members:
        if not isinstance(m, Calibration):
            raise ParameterTypeError(f"calibration.members must hold Calibration objects; got {type(m).__name__}")
    return members


def _resolve_confidence(calibration: Calibration, confidence: Any) -> float | None:
    if isinstance(confidence, str):
        if confidence != "calibration":
            raise fail("confidence", "'calibration', None or a probability in (0, 1)", confidence)
        confidence = calibration.confidence
        if confidence is not None and confidence >= 1.0:
            raise ValidationError(
                "confidence must be given (a probability in (0, 1)) when the calibration claims confidence 1.0; "
                f"got confidence='calibration' with calibration.confidence={confidence}"
            )
    return check_confidence(confidence)


def _resolve_method(method: Any, k: int, delta: float) -> str:
    method = check_choice(method, "method", METHODS)
    if method == "auto":
        method = "quantile" if k == 1 else "mean_deviation"
    if method == "quantile" and k != 1:
        raise ValidationError(
            f"method='quantile' needs a one-dimensional query (the quantile coupling is 1-D, and marginal W∞ do not "
            f"bound the joint W∞); got k={k}. Use method='mean_deviation' (Theorem 3.3) with delta > 0, i.e. "
            "ApproxWasserstein"
        )
    if method == "mean_deviation" and delta <= 0.0:
        raise fail("delta", "> 0 for method='mean_deviation' (Theorem 3.3 trims mass δ)", delta)
    return method


@register  # Calibration's convenience method calls it by name (_hooks)
def wasserstein_bounds(
    calibration: Calibration,
    *,
    delta: float = 0.0,
    support: Any = None,
    confidence: float | None | str = "calibration",
    method: str = "auto",
    band: str = "order",
) -> WassersteinBounds:
    """W∞ (δ = 0) or (W, δ)-closeness of every secret pair, estimated and bounded.

    Parameters
    ----------
    calibration : Calibration
        Must hold draws (``sample_array`` of shape (S, n_draws, k)) or, for
        the quantile method, exact laws (:meth:`Calibration.from_laws`); a
        calibration from :meth:`Calibration.from_moments` is refused. For a
        family, ``calibration.members`` (one Calibration per θ) is used and the
        supremum over members taken per pair.
    delta : float in [0, 1), default 0
        0: bound W∞ (Theorem 3.1; k = 1 only). > 0: bound the W of
        (W, δ)-closeness (Definition 3.2, Theorem 3.2).
    support : (lo, hi), optional
        Declared support of F (scalars or arrays (k,); ±inf allowed). It is
        intersected with what the query proves (:func:`query_support`). An
        unknown support makes the W∞ bound infinite.
    confidence : "calibration", None or float in (0, 1)
        Probability that all bounds hold at once; "calibration" uses the
        calibration's. None: plug-in (bound = estimate, assumption
        ``estimated_moments``). Not used when every member holds exact laws
        of a one-dimensional F (:attr:`Calibration.finite_laws`) and the method
        is ``quantile``: the bounds are then exact (confidence 1).
    method : {"auto", "quantile", "mean_deviation"}
        ``quantile``: DKW band on the quantile coupling (k = 1; distribution
        free). ``mean_deviation``: Theorem 3.3 with per-distribution c (needs
        δ > 0; CLT mean intervals, assumption ``monte_carlo_clt``). ``auto``:
        quantile for k = 1, mean_deviation otherwise.
    band : {"order", "dkw"}
        For ``method="quantile"``: the confidence bands of the quantile
        functions (:func:`quantile_band`). ``"order"`` (default): Beta
        order-statistic band ∩ DKW, each at half the failure probability —
        narrower in the tails, where W∞ and trimmed W∞ are decided. ``"dkw"``:
        the DKW band alone (the previous default).

    Returns
    -------
    WassersteinBounds

    Notes
    -----
    The derivations (DKW band, trimming, Theorem 3.3 with order statistics)
    and the union bound are in the module docstring.
    """
    if not isinstance(calibration, Calibration):
        raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
    delta = check_delta(delta, allow_zero=True)
    members = _members(calibration)
    k = calibration.k
    method = _resolve_method(method, k, delta)
    exact = _exact_bounds(calibration, members, delta, support, method)
    if exact is not None:
        return exact
    _check_member_draws(calibration, members)
    settings = _bound_settings(calibration, members, delta=delta, support=support, confidence=confidence,
                               method=method, band=band)
    pair_rows = _quantile_rows if method == "quantile" else _deviation_rows
    per_member = [pair_rows(calibration, m, settings) for m in members]
    results = _worst_over_members(calibration, per_member, settings)
    return WassersteinBounds(results, delta, settings.confidence, method, (settings.lo, settings.hi),
                             settings.n_dist, settings.assumptions, settings.band if method == "quantile" else None)


@dataclass(frozen=True)
class _BoundSettings:
    """What every pair's bound shares: δ, method, band, level, support, union-bound split and assumptions."""

    delta: float
    method: str
    band: str
    confidence: float | None
    lo: np.ndarray
    hi: np.ndarray
    n_dist: int
    alpha: float | None
    assumptions: tuple[str, ...]
    diameter: float


def _check_member_draws(calibration: Calibration, members: tuple[Calibration, ...]) -> None:
    """Every member holds draws of F(X) | secret, with the calibration's number of components."""
    for m in members:
        if m.sample_array is None:
            raise ValidationError(
                "the Wasserstein mechanisms need draws of F(X) | secret (a calibration from bayespriv.calibrate or "
                "calibration_from_samples); got a calibration without samples (built with Calibration.from_moments), "
                "whose moments do not determine W∞ or (W, δ)-closeness"
            )
        if m.k != calibration.k:
            raise ValidationError(f"every member must have k={calibration.k} components; got a member with k={m.k}")


def _bound_settings(calibration: Calibration, members: tuple[Calibration, ...], *, delta: float, support: Any,
                    confidence: float | None | str, method: str, band: str) -> _BoundSettings:
    """Resolve level, band and support; split the failure probability over every (member, secret) law."""
    confidence = _resolve_confidence(calibration, confidence)
    band = check_choice(band, "band", BANDS)
    lo, hi = resolve_support(calibration, support)
    n_dist = len(members) * len(calibration.secrets)
    alpha = None if confidence is None else (1.0 - confidence) / n_dist
    if confidence is None:
        assumptions: tuple[str, ...] = ("estimated_moments",)
    else:
        assumptions = ("monte_carlo_clt",) if method == "mean_deviation" else ()
    if UNVERIFIED in calibration.assumptions:  # draws from a file that did not verify: nothing vouches for them
        assumptions += (UNVERIFIED,)
    return _BoundSettings(delta=delta, method=method, band=band, confidence=confidence, lo=lo, hi=hi, n_dist=n_dist,
                          alpha=alpha, assumptions=assumptions, diameter=float(np.sum(hi - lo)))


def _quantile_rows(calibration: Calibration, member: Calibration, settings: _BoundSettings) -> dict:
    """{pair index: (estimate, bound, None, None)} of one member by the quantile coupling (k = 1)."""
    idx = {s: member.index(s) for s in calibration.secrets}
    lo, hi, delta = settings.lo, settings.hi, settings.delta
    sorted_s = np.sort(member.sample_array[:, :, 0], axis=1)
    n = sorted_s.shape[1]
    plug_in = quantile_band(n, 0.0)
    bnd_band = None if settings.alpha is None else quantile_band(n, settings.alpha, band=settings.band)
    rows = {}
    for i, pair in enumerate(calibration.pairs):
        a, b = sorted_s[idx[pair.a]], sorted_s[idx[pair.b]]
        est = _pair_quantile(a, b, plug_in, plug_in, lo[0], hi[0], delta, _TRIM_TOL_EXACT)
        bnd = est if bnd_band is None else _pair_quantile(a, b, bnd_band, bnd_band, lo[0], hi[0], delta,
                                                          _TRIM_TOL_BOUND)
        rows[i] = (est, bnd, None, None)
    return rows


def _deviation_rows(calibration: Calibration, member: Calibration, settings: _BoundSettings) -> dict:
    """{pair index: (estimate, bound, mean_term, dev_term)} of one member by Theorem 3.3."""
    idx = {s: member.index(s) for s in calibration.secrets}
    stats_s = {s: _deviation(member.sample_array[idx[s]], settings.delta, settings.alpha, settings.lo, settings.hi)
               for s in calibration.secrets}
    rows = {}
    for i, pair in enumerate(calibration.pairs):
        mu_a, chat_a, h_a, c_a = stats_s[pair.a]
        mu_b, chat_b, h_b, c_b = stats_s[pair.b]
        d = float(np.abs(mu_a - mu_b).sum())
        est = min(d + chat_a + chat_b, settings.diameter)
        mean_term = d + float(h_a.sum() + h_b.sum())
        dev_term = c_a + c_b
        bnd = min(mean_term + dev_term, settings.diameter)
        rows[i] = (est, bnd, mean_term, dev_term)
    return rows


def _worst_over_members(calibration: Calibration, per_member: list[dict],
                        settings: _BoundSettings) -> tuple[PairWasserstein, ...]:
    """Per pair: the largest estimate and the bound of the member with the largest bound."""
    results = []
    for i, pair in enumerate(calibration.pairs):
        bounds = [pm[i][1] for pm in per_member]
        worst = int(np.argmax(bounds))
        est = max(pm[i][0] for pm in per_member)
        _, bnd, mean_term, dev_term = per_member[worst][i]
        results.append(PairWasserstein(pair, float(est), float(bnd), settings.delta, settings.confidence,
                                       settings.method, settings.assumptions, worst, mean_term, dev_term))
    return tuple(results)
