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

One dimension
-------------
For k = 1 the bounds are those of the quantile coupling: W∞ and the δ-trimmed W∞
bounded from the draws through confidence bands of the two quantile functions
(DKW, or order statistics ∩ DKW), derived in :mod:`bayespriv.calibration.quantile_bands`;
or computed exactly from exact laws (:mod:`bayespriv.calibration.exact_w_infinity`).

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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import ndtri

from bayespriv._validation import check_choice, check_confidence, check_delta, described, fail, sealed
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.queries import Query
from bayespriv.queries.components import ClippedColumn, IndicatorOf
from bayespriv.secrets import SecretPair
from .exact_w_infinity import w_infinity_discrete, w_infinity_finite, w_infinity_from_quantiles
from .quantile_bands import (
    _TRIM_TOL_BOUND,
    _TRIM_TOL_EXACT,
    BANDS,
    QuantileBand,
    _pair_quantile,
    dkw_epsilon,
    quantile_band,
    w_infinity_samples,
)
from .result import Calibration
from bayespriv.calibration.provenance import UNVERIFIED

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
        if isinstance(comp.h, IndicatorOf):
            h_lo, h_hi = 0.0, 1.0
        elif isinstance(comp.h, ClippedColumn):
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
    The derivations of the one-dimensional bands and of trimming are in
    :mod:`bayespriv.calibration.quantile_bands`; Theorem 3.3 with order
    statistics and the union bound in the module docstring.
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
