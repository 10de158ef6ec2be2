"""Gaussian approximations of the relaxed guarantees, and estimates of what those guarantees need.

When an assumption fails, two fallbacks of Chen & Ohrimenko (AISTATS 2023,
§4.4) bound the privacy loss through Gaussian approximations f̃ of the true
f. For each pair (a, b) (and member θ) we take

    f̃_a = N(μ̂_a, C_ab),  f̃_b = N(μ̂_b, C_ab),  C_ab = (Σ̂_a + Σ̂_b) / 2,

which are Gaussian, translations of each other and of equal covariance, so
every assumption checked by :mod:`~bayespriv.calibration.assumptions`
(``gaussian_query``, ``equal_covariance``, ``translation``) holds for them.
Every mechanism of bayespriv whose guarantee rests on these assumptions
(APGM, ExpM, DirM, EigM, DauM,
OptimalGaussian, Noiseless) is (ε, δ)-private for them *deterministically*:
its noise covers every mean difference in the calibration's confidence box
(whose centre is μ̂_a − μ̂_b; the conditions are convex in the difference) and
credits at most a Loewner lower bound of both covariances, and any matrix
below both Σ̂_a and Σ̂_b is below their average C_ab (more covariance only
adds independent Gaussian noise: post-processing).

* Theorem 4.6 needs λ bounding the η-approximate max-divergence
  ``D^η_∞`` between f and f̃ in both directions:
  :func:`approx_max_divergence` / :func:`estimate_lambda_eta`.
* Theorem 4.7 needs the ∞-Wasserstein distance between f and f̃:
  :func:`w_infinity_gaussian` / :func:`estimate_w_infinity`.

See those functions for exactly what is estimated and what is bounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from bayespriv._validation import check_delta, check_positive_int, check_real, fail
from bayespriv.errors import ValidationError
from .result import Calibration
from .views import member_prefix

__all__ = [
    "MIN_CELL_COUNT",
    "GaussianApproximation",
    "gaussian_approximations",
    "RelaxationEstimate",
    "approx_max_divergence",
    "estimate_lambda_eta",
    "w_infinity_gaussian",
    "estimate_w_infinity",
    "default_eta",
]

#: Smallest expected count (under f̃) of a cell of the divergence estimator; the
#: outermost cells, of this size, are charged in full to η (see approx_max_divergence).
MIN_CELL_COUNT = 10


def _check_confidence(confidence: Any) -> float:
    c = check_real("confidence", confidence)
    if not (0.0 < c < 1.0):
        raise fail("confidence", "in the open interval (0, 1)", confidence)
    return c


@dataclass(frozen=True, eq=False)
class GaussianApproximation:
    """f̃ = N(mean, cov) standing for the law of F given one secret of one pair.

    Attributes
    ----------
    label : str
        ``"<pair> | <secret>"``, prefixed by θ for families.
    samples : ndarray (n, k)
        Draws of the true f (from the calibration).
    mean : ndarray (k,)
        μ̂ of the secret.
    cov : ndarray (k, k)
        C_ab = (Σ̂_a + Σ̂_b)/2, common to both secrets of the pair.
    member : int
        Index of the member θ (0 for a single model).
    secret_index : int
        Index of the secret in the member's ``secrets``.
    """

    label: str
    samples: np.ndarray = field(repr=False)
    mean: np.ndarray
    cov: np.ndarray
    member: int
    secret_index: int


def _require_samples(calibration: Calibration, what: str) -> None:
    if any(m.sample_array is None for m in calibration.members):
        raise ValidationError(
            f"calibration must carry samples (built by calibrate) to estimate {what}; got a calibration without "
            "samples (from_moments). Pass the bound yourself (e.g. lambda_eta=...) if you know it."
        )


def gaussian_approximations(calibration: Calibration) -> tuple[GaussianApproximation, ...]:
    """Two approximations per (member, pair): N(μ̂_a, C_ab) and N(μ̂_b, C_ab).

    Each mechanism of bayespriv is (ε, δ)-private for these deterministically
    (see the module docstring), so Theorems 4.6 / 4.7 apply with them.
    """
    _require_samples(calibration, "a Gaussian approximation's divergence")
    out = []
    for mi, m in enumerate(calibration.members):
        prefix = member_prefix(calibration, m)
        for p in m.pairs:
            ia, ib = m.index(p.a), m.index(p.b)
            c = (m.cov_array[ia] + m.cov_array[ib]) / 2.0
            c = (c + c.T) / 2.0
            for i, s in ((ia, p.a), (ib, p.b)):
                out.append(GaussianApproximation(f"{prefix}{p.label} | {s.label}", m.sample_array[i], m.mean_array[i], c, mi, i))
    return tuple(out)


@dataclass(frozen=True)
class RelaxationEstimate:
    """A relaxation quantity (λ_η or W∞) over every Gaussian approximation.

    Attributes
    ----------
    kind : str
        ``"lambda_eta"`` or ``"w_infinity"``.
    value : float
        The maximum over approximations (``inf`` when the draws cannot support
        a finite value at this η).
    eta : float
    confidence : float
        Joint confidence of the margins used.
    per_approximation : tuple of (str, float)
    rigorous : bool
        True when ``value`` is a confidence bound (W∞ for k = 1); False when it
        is an estimate (λ_η always; W∞ for k > 1, which assumes a componentwise coupling).
    detail : str
    """

    kind: str
    value: float
    eta: float
    confidence: float
    per_approximation: tuple[tuple[str, float], ...]
    rigorous: bool
    detail: str = ""

    def table(self) -> pd.Series:
        return pd.Series(dict(self.per_approximation), name=self.kind)


# -- λ_η: η-approximate max-divergence between f and a Gaussian approximation ---------------------------


def _cells(u: np.ndarray, n: int, m: int, min_count: int, two_tailed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts and f̃-probabilities of the cells of a view, and which cells are charged in full.

    ``u`` are the f̃-CDF values of the draws (uniform under f̃). Cells: m equal
    f̃-probability cells, with the outermost one(s) split geometrically down to
    ``min_count / n`` (tail levels L, 2L, 4L, ... ≤ 1/(2m), so that no cell is
    much smaller than its neighbours); the extreme cell(s), of f̃-probability
    ``min_count / n`` (or 1/m when n < 2m·min_count), are charged in full.
    """
    base = min_count / n
    levels = base * 2.0 ** np.arange(64)
    levels = levels[levels <= 0.5 / m]
    inner = np.arange(1, m) / m
    parts = [inner, 1.0 - levels]
    if two_tailed:
        parts.append(levels)
    edges = np.unique(np.concatenate(parts))
    q = np.diff(np.concatenate([[0.0], edges, [1.0]]))
    idx = np.searchsorted(edges, u, side="right")
    counts = np.bincount(idx, minlength=q.shape[0])
    charged = np.zeros(q.shape[0], dtype=bool)
    charged[-1] = True
    if two_tailed:
        charged[0] = True
    return counts, q, charged


def _min_t(a: np.ndarray, b: np.ndarray, budget: float) -> float:
    """Smallest t ≥ 1 with Σ (a − t b)₊ ≤ budget (b > 0); the upper end of the bisection bracket."""
    def h(t: float) -> float:
        return float(np.clip(a - t * b, 0.0, None).sum())
    if h(1.0) <= budget:
        return 1.0
    lo, hi = 0.0, 1.0  # in log t
    while h(math.exp(hi)) > budget:
        lo, hi = hi, 2.0 * hi
        if hi > 700:
            return math.inf
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if h(math.exp(mid)) <= budget:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _view_lambda(counts: np.ndarray, q: np.ndarray, charged: np.ndarray, n: int, eta: float, alpha_cell: float) -> float:
    """λ for one view: the smallest λ with both hockey-stick divergences ≤ η for
    every cell probability in its Clopper–Pearson interval (charged cells in full)."""
    lo = np.where(counts > 0, stats.beta.ppf(alpha_cell / 2, counts, n - counts + 1), 0.0)
    hi = np.where(counts < n, stats.beta.ppf(1 - alpha_cell / 2, counts + 1, n - counts), 1.0)
    free = ~charged
    # H(f || f̃) = Σ (p − t q)₊ ≤ Σ_charged p + Σ_free (hi − t q)₊
    c1 = float(hi[charged].sum())
    # H(f̃ || f) = Σ (q − t p)₊ ≤ Σ_charged q + Σ_free (q − t lo)₊ (cells with lo = 0 count in full)
    zero = free & (lo <= 0)
    c2 = float(q[charged].sum() + q[zero].sum())
    if c1 > eta or c2 > eta:
        return math.inf
    t1 = _min_t(hi[free], q[free], eta - c1)
    pos = free & ~zero
    t2 = _min_t(q[pos], lo[pos], eta - c2)
    return math.log(max(t1, t2))


def approx_max_divergence(
    samples: np.ndarray,
    mean: Sequence[float] | np.ndarray,
    cov: Any,
    eta: float,
    *,
    confidence: float = 0.95,
    min_count: int = MIN_CELL_COUNT,
    n_cells: int | None = None,
) -> float:
    """Estimate λ with max(D^η_∞(f ‖ f̃), D^η_∞(f̃ ‖ f)) ≤ λ, from draws of f, for f̃ = N(mean, cov).

    Definition (Chen & Ohrimenko 2023, Def. 4.1): ``D^η_∞(μ ‖ ν) ≤ λ`` iff
    ``μ(S) ≤ e^λ ν(S) + η`` for every S, i.e. iff the hockey-stick divergence
    ``∫ (dμ − e^λ dν)₊ ≤ η``. The returned λ is the smallest λ ≥ 0 for which
    both hockey-stick divergences are ≤ η for the *discretized* f and f̃, with

    * the draws whitened by ``cov`` (z = C^{-1/2}(x − mean), N(0, I) under f̃)
      and discretized into cells of known f̃-probability: each whitened
      coordinate (and, for k > 1, the radius |z|², χ²_k under f̃) cut at the
      f̃-quantiles j/m (m = max(4, round(n^{1/3}))), the outer cells refined at
      the levels L·2^i ≤ 1/(2m), L = ``min_count / n``;
    * each cell's f-probability replaced by the end of its Clopper–Pearson
      interval that is worse for the bound (joint level ``confidence`` by
      Bonferroni over all cells);
    * the outermost cells (f̃-probability ``min_count / n`` each) charged in
      full to η in both directions: nothing is assumed about the tails, where
      the draws say nothing;
    * the maximum over the views (coordinates, radius).

    What is and is not guaranteed: the cell probabilities are bounded with
    probability ``confidence``, but the density ratio *inside* a cell cannot be
    seen from draws — a discretization can only lower a divergence (data
    processing). The value is therefore an **estimate** of λ, not a bound: it
    is close to the truth when f/f̃ is nearly constant inside each cell, and
    for k > 1 it looks only at the coordinates and the radius of the whitened
    draws. Guarantees built on it carry the assumption ``estimated_divergence``.
    It is ``inf`` when η is too small for the draws (below about
    ``2 · min_count / n`` plus the Monte-Carlo margin of the outer cells).

    Parameters
    ----------
    samples : array (n, k) or (n,)
    mean : array (k,)
    cov : array (k, k)
        PSD; directions of zero variance must have zero spread in ``samples``
        too (else λ = inf: f puts mass where f̃ puts none).
    eta : float in (0, 1)
    confidence : float in (0, 1)
    min_count : int
    n_cells : int, optional
        m; default max(4, round(n^{1/3})).

    Returns
    -------
    float
        λ ≥ 0, or ``inf``.
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise fail("samples", "a finite array of shape (n, k)", x.shape)
    n, k = x.shape
    mu = np.asarray(mean, dtype=float).reshape(k)
    c = np.asarray(cov, dtype=float).reshape(k, k)
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    min_count = check_positive_int(min_count, "min_count")
    m = max(4, int(round(n ** (1.0 / 3.0)))) if n_cells is None else check_positive_int(n_cells, "n_cells", minimum=2)
    w, v = np.linalg.eigh((c + c.T) / 2)
    scale = max(float(np.abs(w).max(initial=0.0)), 1e-300)
    pos = w > 1e-12 * scale
    centred = x - mu
    proj = centred @ v
    spread = np.abs(proj[:, ~pos])
    if spread.size and float(spread.max()) > 1e-9 * max(float(np.abs(centred).max(initial=0.0)), 1e-300):
        return math.inf
    z = proj[:, pos] / np.sqrt(w[pos])
    d = z.shape[1]
    if d == 0:
        return 0.0  # f̃ and f are the same point mass
    views = [(special.ndtr(z[:, j]), True) for j in range(d)]
    if d > 1:
        views.append((stats.chi2.cdf((z**2).sum(axis=1), d), False))
    cells = [_cells(u, n, m, min_count, two) for u, two in views]
    n_cells_total = sum(cq[1].shape[0] for cq in cells)
    alpha_cell = (1.0 - confidence) / n_cells_total
    return max(_view_lambda(cnt, q, ch, n, eta, alpha_cell) for cnt, q, ch in cells)


def default_eta(calibration: Calibration, delta: float = 0.0, *, kind: str = "lambda_eta", confidence: float = 0.95) -> float:
    """A default η the draws can support.

    For λ_η: ``max(δ, 500 / n)``, capped at 0.5. The outer cells of
    :func:`approx_max_divergence` take about ``80 / n`` of η; measured on
    Gaussian draws, λ̂ ≈ 0.5 at η = 100/n, 0.25 at 200/n and 0.1 at 500/n,
    whatever n. For W∞: ``max(δ, 4 k ε_n)`` with ε_n the DKW
    half-width (the central quantile range must exceed the band).
    """
    if any(mm.sample_array is None for mm in calibration.members):
        return float(max(delta, 1e-3))
    n = min(int(mm.sample_array.shape[1]) for mm in calibration.members)
    if kind == "w_infinity":
        count = sum(len(mm.secrets) for mm in calibration.members) * calibration.k
        eps_n = math.sqrt(math.log(2.0 * count / (1.0 - confidence)) / (2.0 * n))
        return float(min(0.5, max(delta, 4.0 * calibration.k * eps_n)))
    return float(min(0.5, max(delta, 500.0 / n)))


def estimate_lambda_eta(
    calibration: Calibration,
    eta: float,
    *,
    confidence: float = 0.95,
    min_count: int = MIN_CELL_COUNT,
) -> RelaxationEstimate:
    """λ_η of Theorem 4.6 over every Gaussian approximation of the calibration.

    The maximum of :func:`approx_max_divergence` over
    :func:`gaussian_approximations` (Bonferroni: each gets confidence
    ``1 − (1 − confidence)/count``). An **estimate** (see
    :func:`approx_max_divergence`); ``rigorous=False``.
    """
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    approx = gaussian_approximations(calibration)
    each = 1.0 - (1.0 - confidence) / len(approx)
    vals = tuple((a.label, approx_max_divergence(a.samples, a.mean, a.cov, eta, confidence=each, min_count=min_count))
                 for a in approx)
    value = max(v for _, v in vals)
    return RelaxationEstimate(
        "lambda_eta", float(value), eta, confidence, vals, False,
        "binned hockey-stick divergence with Clopper–Pearson margins, outer cells charged in full "
        "(an estimate: the density ratio inside a cell is not seen)",
    )


# -- W∞ between f and a Gaussian approximation (one-sample, DKW) ------------------------------------


def w_infinity_gaussian(samples: np.ndarray, mean: float, sd: float, eta: float, *, confidence: float = 0.95) -> float:
    """Upper confidence bound on the η-trimmed ∞-Wasserstein distance between a
    1-D law F (from its draws) and N(mean, sd²).

    Quantity bounded: ``w = sup_{u ∈ [η/2, 1 − η/2]} |F⁻¹(u) − G⁻¹(u)|``, G the
    Gaussian CDF. Under the quantile coupling (X, Y) = (F⁻¹(U), G⁻¹(U)),
    P(|X − Y| > w) ≤ η; with η → 0 this is W∞(F, G) (quantile couplings are
    optimal for W∞ on the line). (The untrimmed W∞ between a Gaussian and a
    law with lighter or bounded tails is infinite, hence the trimming.)

    Bound: by the Dvoretzky–Kiefer–Wolfowitz inequality (Massart's constant),
    with probability ≥ ``confidence`` the true CDF lies within
    ε_n = sqrt(ln(2/(1 − confidence)) / (2n)) of the empirical one, so
    x_(⌈n(u − ε_n)⌉) ≤ F⁻¹(u) ≤ x_(⌈n(u + ε_n)⌉) for every u; the bound is the
    supremum of the distance from G⁻¹(u) to that band over the central range
    (exact over the band's steps). ``inf`` when η/2 ≤ ε_n (too few draws).
    This is a rigorous confidence bound (draws i.i.d. from F).
    """
    x = np.sort(np.asarray(samples, dtype=float).reshape(-1))
    n = x.shape[0]
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    sd = float(sd)
    if not np.all(np.isfinite(x)) or n == 0:
        raise fail("samples", "a non-empty finite array", x.shape)
    eps = math.sqrt(math.log(2.0 / (1.0 - confidence)) / (2.0 * n))
    lo_u, hi_u = eta / 2.0, 1.0 - eta / 2.0
    if lo_u - eps <= 0.0 or hi_u + eps >= 1.0:
        return math.inf
    j = np.arange(1, n + 1)

    def g_inv(u: np.ndarray) -> np.ndarray:
        return mean + sd * special.ndtri(u)

    # Upper band R(u) = x_(j) on u ∈ ((j−1)/n − ε, j/n − ε]: sup of R − G⁻¹ at the left end.
    left = np.maximum((j - 1) / n - eps, lo_u)
    right = np.minimum(j / n - eps, hi_u)
    ok = left <= right
    up = float(np.max(x[ok] - g_inv(left[ok]), initial=-math.inf))
    # Lower band L(u) = x_(j) on u ∈ ((j−1)/n + ε, j/n + ε]: sup of G⁻¹ − L at the right end.
    left = np.maximum((j - 1) / n + eps, lo_u)
    right = np.minimum(j / n + eps, hi_u)
    ok = left <= right
    down = float(np.max(g_inv(right[ok]) - x[ok], initial=-math.inf))
    return max(up, down, 0.0)


def estimate_w_infinity(calibration: Calibration, eta: float, *, confidence: float = 0.95) -> RelaxationEstimate:
    """W of Theorem 4.7 (η-trimmed, L1 norm) over every Gaussian approximation.

    Per approximation N(μ̂_s, C_ab) and component c, :func:`w_infinity_gaussian`
    at η/k with marginal N(μ̂_sc, C_ab,cc); DKW events Bonferroni-split over
    (member, secret, component). The value is max over approximations of
    Σ_c W_c: the L1 displacement of the product of the marginal quantile
    couplings, which couples the joint laws only when the components' copulas
    agree (e.g. independent components). For k = 1 the value is a rigorous
    bound with probability ``confidence``; for k > 1 it rests on that
    assumption (``componentwise_coupling``) and ``rigorous=False``.
    """
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    approx = gaussian_approximations(calibration)
    k = calibration.k
    count = sum(len(m.secrets) for m in calibration.members) * k
    each = 1.0 - (1.0 - confidence) / count
    vals = []
    for a in approx:
        sd = np.sqrt(np.clip(np.diag(a.cov), 0.0, None))
        wc = [w_infinity_gaussian(a.samples[:, c], float(a.mean[c]), float(sd[c]), eta / k, confidence=each) for c in range(k)]
        vals.append((a.label, float(sum(wc))))
    value = max(v for _, v in vals)
    return RelaxationEstimate(
        "w_infinity", float(value), eta, confidence, tuple(vals), k == 1,
        "η-trimmed W∞ (L1) by quantile coupling with DKW bands" + ("" if k == 1 else "; sum over components (componentwise coupling)"),
    )
