"""Privacy accounting on the law actually released.

A mechanism with additive noise Z releases, under secret s (and θ), the law
``P_s = μ_s ∗ Z`` where μ_s is the law of the query F(X). Its privacy profile
for one (θ, pair) condition is

    δ(ε) = max(H_ε(P_a‖P_b), H_ε(P_b‖P_a)),   H_ε(P‖Q) = sup_E P(E) − e^ε Q(E),

and the mechanism is (ε, δ)-Pufferfish private exactly when δ(ε) ≤ δ for every
condition (Kifer & Machanavajjhala 2014, Definition 3.4; the hockey-stick form
is Balle, Barthe & Gaboardi 2018, Theorem 1). This module computes that
profile from the law of F as the calibration knows it
(:mod:`bayespriv.calibration.laws`), with no Gaussian approximation:

========================  =========================================  ==========================
law of F                  how δ(ε) is computed                       what the guarantee rests on
========================  =========================================  ==========================
Gaussian (moments only)   exact curve of two Gaussians               ``gaussian_query`` (given)
                          (:mod:`~bayespriv.mechanisms.privacy_loss`)
finite, one dimension     exact (:mod:`~bayespriv.mechanisms.finite_exact`)   nothing (confidence 1)
finite, k dimensions      importance sampling, upper confidence      ``monte_carlo_clt``
                          bound (:mod:`~bayespriv.mechanisms.mixture_mc`)
sampled (draws)           importance sampling of the empirical       ``sampled_law``,
                          mixtures, upper confidence bound covering  ``monte_carlo_clt``
                          the Monte-Carlo error and the draws' error
========================  =========================================  ==========================

Upper confidence bound (sampled and finite k-D laws): ``value + z·se`` with
``se = √(se_mc² + se_draws²)`` and z the normal quantile at the level
``confidence`` split (Bonferroni) over every estimated direction of every
condition, so that all the bounds hold together with probability
``confidence`` under the normal approximation. For draws, the plug-in value is
itself biased upward in expectation (joint convexity of H_ε, see
:mod:`~bayespriv.mechanisms.mixture_mc`), and both its bias and its error
shrink with more draws — more draws never make the accounted δ worse, up to
Monte-Carlo error. A plug-in calibration (``confidence=None``, the papers'
setting) uses the point estimate.

The Monte-Carlo points are seeded by a constant per condition and direction
(:data:`ACCOUNTANT_SEED`): accounting is a deterministic function of the
calibration and the noise, so a mechanism rebuilt from a saved calibration has
the same noise and guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from .._validation import check_delta, check_epsilon, described, fail
from ..calibration.laws import SAMPLED_LAW, Condition, SampledLaw
from ..errors import ValidationError
from .finite_exact import finite_hockey
from .mixture_1d import grid_hockey, grid_hockey_both
from .mixture_mc import mixture_hockey
from .privacy_loss import one_direction_delta

__all__ = [
    "GaussianNoise",
    "LaplaceNoise",
    "DirectionBound",
    "PrivacyAccount",
    "account",
    "scale_to_delta",
    "ACCOUNTANT_SEED",
    "ESTIMATED_FRACTION",
]

#: Seed of the accountant's Monte-Carlo points (with the condition's index and the direction).
ACCOUNTANT_SEED = 20231101
#: Relative precision of the scale search (in noise standard deviation).
SCALE_RTOL = 4e-3
#: Share of δ the confidence margin may take before the account says more draws would help.
ESTIMATED_FRACTION = 0.2
#: Points of the importance sample: with the control variate (Gaussian noise) and without (Laplace).
POINTS_GAUSSIAN = 512
POINTS_LAPLACE = 2048


# --------------------------------------------------------------------------------------- noise
@dataclass(frozen=True, eq=False)
class GaussianNoise:
    """Additive N(0, cov) noise."""

    cov: np.ndarray
    kind: str = field(default="gaussian", init=False)

    def __post_init__(self) -> None:
        c = np.array(self.cov, dtype=float)
        c.setflags(write=False)
        object.__setattr__(self, "cov", c)

    def scaled(self, t: float) -> "GaussianNoise":
        """The noise with every standard deviation multiplied by t."""
        return GaussianNoise(self.cov * t * t)

    @property
    def full_rank(self) -> bool:
        w = np.linalg.eigvalsh(self.cov)
        return bool(w[0] > 1e-10 * max(float(w[-1]), 1e-300))


@dataclass(frozen=True, eq=False)
class LaplaceNoise:
    """Additive noise Σ_c basis[:, c] · Lap(scale_c)."""

    scale: np.ndarray
    basis: np.ndarray
    kind: str = field(default="laplace", init=False)

    def __post_init__(self) -> None:
        s = np.array(self.scale, dtype=float).reshape(-1)
        b = np.array(self.basis, dtype=float).reshape(-1, s.size)
        s.setflags(write=False)
        b.setflags(write=False)
        object.__setattr__(self, "scale", s)
        object.__setattr__(self, "basis", b)

    def scaled(self, t: float) -> "LaplaceNoise":
        return LaplaceNoise(self.scale * t, self.basis)

    @property
    def cov(self) -> np.ndarray:
        return 2.0 * (self.basis * self.scale**2) @ self.basis.T

    @property
    def full_rank(self) -> bool:
        b = self.basis
        return bool(b.shape[0] == b.shape[1] and np.linalg.matrix_rank(b) == b.shape[0] and np.all(self.scale > 0))


Noise = GaussianNoise | LaplaceNoise


# --------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class DirectionBound:
    """H_ε in one direction of one condition: the value, its bound, and how it was obtained."""

    label: str
    direction: str
    method: str
    value: float
    upper: float
    se_mc: float = 0.0
    se_draws: float = 0.0
    halves: tuple[float, float] | None = None
    gaussian_fit: float = math.nan

    @property
    def exact(self) -> bool:
        return self.method in ("gaussian_exact", "finite_exact")


@dataclass(frozen=True)
class PrivacyAccount:
    """The privacy profile at one ε of a released law, worst over conditions and directions.

    Attributes
    ----------
    epsilon : float
    delta : float
        The bound that gates the release: the largest ``upper`` over rows.
    estimate : float
        The largest point estimate (equal to ``delta`` when every row is exact).
    confidence : float or None
        Probability, over the calibration's draws and the Monte-Carlo points,
        that every bound holds (1.0 when exact; None for plug-in estimates).
    assumptions : tuple of str
    rows : tuple of DirectionBound
    notes : tuple of str
        Stability diagnostics (split halves, draws needed).
    """

    epsilon: float
    delta: float
    estimate: float
    confidence: float | None
    assumptions: tuple[str, ...]
    rows: tuple[DirectionBound, ...]
    notes: tuple[str, ...] = ()

    @property
    def worst(self) -> DirectionBound:
        return max(self.rows, key=lambda r: r.upper)

    @property
    def method(self) -> str:
        return ", ".join(dict.fromkeys(r.method for r in self.rows))

    def table(self) -> pd.DataFrame:
        """One row per condition and direction."""
        return pd.DataFrame([{"condition": r.label, "direction": r.direction, "method": r.method, "delta": r.value,
                              "delta_upper": r.upper, "se_mc": r.se_mc, "se_draws": r.se_draws,
                              "half_1": r.halves[0] if r.halves else math.nan,
                              "half_2": r.halves[1] if r.halves else math.nan,
                              "gaussian_fit": r.gaussian_fit} for r in self.rows])


# ------------------------------------------------------------------------------------- one row
def _atoms(law: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(law, SampledLaw):
        return law.draws, np.full(law.n, 1.0 / law.n)
    return law.points, law.weights


def _gaussian_row(cond: Condition, noise: Noise, eps: float, label: str, forward: bool) -> DirectionBound:
    a, b = (cond.law_a, cond.law_b) if forward else (cond.law_b, cond.law_a)
    if noise.kind != "gaussian":
        raise ValidationError("a law given by its moments only (taken as Gaussian) can be accounted with Gaussian "
                              "noise only; Laplace noise on such a calibration rests on its theorem's premise")
    v = one_direction_delta(eps, a.mean - b.mean, a.cov + noise.cov, b.cov + noise.cov)
    return DirectionBound(label, _dir(forward), "gaussian_exact", v, v)


def _finite_1d_row(cond: Condition, noise: Noise | None, eps: float, label: str, forward: bool) -> DirectionBound:
    a, b = (cond.law_a, cond.law_b) if forward else (cond.law_b, cond.law_a)
    sigma = lap = 0.0
    if noise is not None and noise.kind == "gaussian":
        sigma = math.sqrt(max(float(noise.cov[0, 0]), 0.0))
    elif noise is not None:
        lap = float(abs(noise.basis[0, 0]) * noise.scale[0])
    r = finite_hockey(a.points[:, 0], a.weights, b.points[:, 0], b.weights, eps, sigma=sigma, laplace_scale=lap)
    upper = r.value * (1.0 + 1e-12) + 1e-15 if r.complete else 1.0
    return DirectionBound(label, _dir(forward), "finite_exact", r.value, upper)


def _mixture_row(cond: Condition, noise: Noise, eps: float, label: str, forward: bool, index: int,
                 z: float | None, halves: bool = True, est: Any = None) -> DirectionBound:
    """One direction of a condition known through draws or atoms: by quadrature in one dimension (or
    ``est``, already computed so), else by Monte Carlo over the released mixture."""
    a, b = (cond.law_a, cond.law_b) if forward else (cond.law_b, cond.law_a)
    (xa, wa), (xb, wb) = _atoms(a), _atoms(b)
    sampled = isinstance(a, SampledLaw) or isinstance(b, SampledLaw)
    if est is None and cond.k == 1:
        est = grid_hockey(xa, wa, xb, wb, noise, eps, sampled=sampled, halves=halves)
    quadrature = est is not None
    if est is None:
        points = POINTS_GAUSSIAN if noise.kind == "gaussian" else POINTS_LAPLACE
        est = mixture_hockey(xa, wa, xb, wb, noise, eps, n_points=points,
                             seed=[ACCOUNTANT_SEED, index, int(forward)], sampled=sampled, halves=halves)
    upper = est.value if z is None else min(1.0, est.value + z * _skew_safe_se(est, eps, z))
    method = ("sampled" if sampled else "finite") + ("_quadrature" if quadrature else "_mixture")
    return DirectionBound(label, _dir(forward), method, est.value, upper, est.se_mc, est.se_draws, est.halves,
                          est.gaussian_fit)


def _quadrature_pair(cond: Condition, noise: Noise | None, eps: float, index: int, z: float | None,
                     halves: bool) -> dict[tuple[int, bool], DirectionBound]:
    """Both directions of a one-dimensional condition known through draws or atoms, from one evaluation of
    the two densities; empty when the condition takes another route (:func:`_row`)."""
    if cond.k != 1 or cond.kind != "sampled" or _is_noiseless(noise) or not noise.full_rank:
        return {}
    (xa, wa), (xb, wb) = _atoms(cond.law_a), _atoms(cond.law_b)
    sampled = isinstance(cond.law_a, SampledLaw) or isinstance(cond.law_b, SampledLaw)
    both = grid_hockey_both(xa, wa, xb, wb, noise, eps, sampled=sampled, halves=halves)
    if both is None:
        return {}
    return {(index, fwd): _mixture_row(cond, noise, eps, cond.label, fwd, index, z, halves, est)
            for fwd, est in zip((True, False), both)}


#: Below this effective number of draws carrying P̂(A*), the draws' term is bounded as a Poisson count.
SKEW_DRAWS = 50.0


def _skew_safe_se(est: Any, eps: float, z: float) -> float:
    """The standard error behind the upper bound, robust to a divergence carried by few draws.

    The delta method's normal approximation undercovers a sum carried by a few draws (a rare value of
    the query, far from the other law): when the fewest draws carrying half of P̂(A*) are K < 50, their
    part of P̂(A*) is treated as K × (their mean share) with K a Poisson count, whose exact upper bound
    at the same level, χ²_{1−α}(2(K+1))/2 (Garwood 1936), gives the draws' term. The larger of the two
    is used.
    """
    if est.draw_terms is None or z <= 0:
        return est.se
    from scipy.special import ndtr
    from scipy.stats import chi2

    alpha = float(ndtr(-z))
    parts = []
    for (mass, neff), weight in zip(est.draw_terms, (1.0, math.exp(eps))):
        if 0 < neff < SKEW_DRAWS:
            ucb = float(chi2.ppf(1.0 - alpha, 2.0 * (neff + 1.0))) / 2.0
            parts.append(weight * mass * (ucb / neff - 1.0) / z)
        else:
            parts.append(0.0)
    poisson = math.hypot(*parts)
    return math.hypot(est.se_mc, max(est.se_draws, poisson))


def _dir(forward: bool) -> str:
    return "a‖b" if forward else "b‖a"


def _is_noiseless(noise: Noise | None) -> bool:
    return noise is None or not np.any(noise.cov)


def _row(cond: Condition, noise: Noise | None, eps: float, index: int, forward: bool, z: float | None, *,
         halves: bool = True) -> DirectionBound:
    """H_ε for one direction of one condition, by the method its laws allow (module docstring)."""
    kind = cond.kind
    if kind == "gaussian":
        return _gaussian_row(cond, noise if noise is not None else GaussianNoise(np.zeros((cond.k, cond.k))),
                             eps, cond.label, forward)
    if kind == "finite" and cond.k == 1:
        return _finite_1d_row(cond, None if _is_noiseless(noise) else noise, eps, cond.label, forward)
    if kind == "mixed":
        raise ValidationError(f"condition {cond.label!r} mixes a Gaussian law with a finite or sampled one; "
                              "calibrate both secrets the same way")
    if _is_noiseless(noise) or not noise.full_rank:
        return DirectionBound(cond.label, _dir(forward), "not_accountable", 1.0, 1.0)
    return _mixture_row(cond, noise, eps, cond.label, forward, index, z, halves)


# -------------------------------------------------------------------------------------- account
def _one_blas_thread() -> Any:
    """BLAS pools limited to one thread for the kernel products (a no-op without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a declared dependency
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _z(conditions: tuple[Condition, ...], confidence: float | None) -> float | None:
    """Normal quantile of the upper bounds, Bonferroni over every estimated direction."""
    if confidence is None:
        return None
    estimated = sum(2 for c in conditions if not (c.kind == "gaussian" or (c.kind == "finite" and c.k == 1)))
    if estimated == 0:
        return 0.0
    return float(ndtri(1.0 - (1.0 - confidence) / estimated))


def _assumptions(conditions: tuple[Condition, ...], rows: tuple[DirectionBound, ...]) -> tuple[str, ...]:
    out: list[str] = []
    kinds = {c.kind for c in conditions}
    if "gaussian" in kinds:
        out.append("gaussian_query")
    if "sampled" in kinds:
        out.append(SAMPLED_LAW)
    if any(r.method.endswith("_mixture") for r in rows) or any(r.se_draws > 0 for r in rows):
        out.append("monte_carlo_clt")
    return tuple(out)


def _notes(rows: tuple[DirectionBound, ...], target: float | None) -> tuple[str, ...]:
    """Stability diagnostics of the sampled rows: split halves and the draws' share of the margin."""
    out = []
    for r in rows:
        if r.method == "not_accountable":
            out.append(f"{r.label} ({r.direction}): no noise in some direction; a law known through draws (or a "
                       "finite law in k > 1 dimensions) cannot be accounted there, so δ is taken as 1")
            continue
        if r.halves is None:
            continue
        gap = abs(r.halves[0] - r.halves[1])
        if gap > 3.0 * max(2.0 * r.se_draws, r.se_mc, 1e-300):
            out.append(f"{r.label} ({r.direction}): the two halves of the draws disagree ({r.halves[0]:.3g} vs "
                       f"{r.halves[1]:.3g}, more than 3 standard errors): the draws do not resolve the released law; "
                       "draw more")
        ref = target if target is not None else r.upper
        margin = r.upper - r.value
        if ref > 0 and margin > ESTIMATED_FRACTION * ref and r.se_draws > r.se_mc:
            share = (r.se_draws / max(r.se_mc, r.se_draws)) ** 2
            factor = (margin / (ESTIMATED_FRACTION * ref)) ** 2 * share
            out.append(f"{r.label} ({r.direction}): the confidence margin {margin:.3g} is {margin / ref:.0%} of δ; "
                       f"about {factor:.3g}× the draws would bring it within {ESTIMATED_FRACTION:.0%}")
    return tuple(out)


def _rows(conds: tuple[Condition, ...], noise: Noise | None, eps: float, which: list[tuple[int, bool]],
          z: float | None, halves: bool) -> tuple[DirectionBound, ...]:
    """The requested directions; a one-dimensional condition asked in both directions shares its densities."""
    shared: dict[tuple[int, bool], DirectionBound] = {}
    for i in sorted({i for i, fwd in which if (i, not fwd) in which}):
        shared.update(_quadrature_pair(conds[i], noise, eps, i, z, halves))
    return tuple(shared.get((i, fwd)) or _row(conds[i], noise, eps, i, fwd, z, halves=halves) for i, fwd in which)


def account(conditions: Any, noise: Noise | None, epsilon: float, *, confidence: float | None,
            target: float | None = None, rows: Any = None, diagnostics: bool = True) -> PrivacyAccount:
    """The privacy profile δ(ε) of the released law, worst over conditions and both directions.

    Parameters
    ----------
    conditions : sequence of Condition
        From :func:`bayespriv.calibration.laws.conditions_of`.
    noise : GaussianNoise, LaplaceNoise or None
        The mechanism's additive noise (None: released exactly).
    epsilon : float > 0
    confidence : float in (0, 1) or None
        Level of the upper confidence bounds of estimated rows (None: point estimates).
    target : float, optional
        The δ asked for, used by the diagnostics only.
    rows : sequence of (condition index, forward), optional
        Evaluate only these directions (the scale search's active set); the
        confidence level still covers every direction (Bonferroni over all).
    diagnostics : bool
        Compute the split-half diagnostic and the notes (evaluations of every
        direction only; the scale search skips them until its last step).

    Returns
    -------
    PrivacyAccount

    Examples
    --------
    Two Gaussian laws (moments only) with unit variance, means 0 and 1, and noise N(0, 3):

    >>> from bayespriv.calibration.laws import Condition, GaussianLaw
    >>> cond = Condition("a vs b", GaussianLaw([1.0], [[1.0]]), GaussianLaw([0.0], [[1.0]]))
    >>> acc = account([cond], GaussianNoise([[3.0]]), 1.0, confidence=0.95)
    >>> round(acc.delta, 6), acc.assumptions
    (0.00683, ('gaussian_query',))
    """
    eps = check_epsilon(epsilon)
    conds = tuple(conditions)
    if not conds or not all(isinstance(c, Condition) for c in conds):
        raise fail("conditions", "a non-empty sequence of Condition", described(f"{len(conds)} items"))
    z = _z(conds, confidence)
    which = [(i, fwd) for i in range(len(conds)) for fwd in (True, False)] if rows is None else list(rows)
    final = rows is None and diagnostics
    with _one_blas_thread():  # small products over many atoms are memory-bound: one thread is faster, and robust
        out = _rows(conds, noise, eps, which, z, final)
    exact = all(r.exact for r in out)
    conf = 1.0 if exact else confidence
    return PrivacyAccount(eps, max(r.upper for r in out), max(r.value for r in out), conf,
                          _assumptions(conds, out), out, _notes(out, target) if final else ())


# ---------------------------------------------------------------------------------------- scale
def scale_to_delta(conditions: Any, noise: Noise, epsilon: float, delta: float, *, confidence: float | None,
                   start: float | None = None, max_factor: float = 1e6) -> tuple[float, PrivacyAccount]:
    """The smallest t (to :data:`SCALE_RTOL`) such that the noise with standard deviations × t meets δ(ε) ≤ δ.

    δ(ε) of the true released laws is non-increasing in t (more independent
    noise is a post-processing); the accountant's bound is evaluated directly
    at the returned t, for every condition and direction, which is therefore
    checked, not inferred. The search starts where the Gaussian fits of the
    released laws meet δ (exact curve, cheap) and runs a safeguarded secant on
    (u = 1/t², log δ) — near-linear for Gaussian-like tails — that becomes false
    position (Illinois) once the threshold is bracketed. While searching, only
    the directions within a factor :data:`ACTIVE_FACTOR` of the target at the
    last full evaluation are evaluated; the final t is checked on all of them.

    Returns
    -------
    (t, PrivacyAccount at t)

    Raises
    ------
    ValidationError
        When no t up to ``max_factor`` times the start meets δ (the noise
        misses a direction in which the released laws differ, or a law cannot
        be accounted).
    """
    eps, target = check_epsilon(epsilon), check_delta(delta)
    conds = tuple(conditions)
    t0 = _fit_start(conds, noise, eps, target) if start is None else float(start)
    search = _Search(conds, noise, eps, target, confidence, max(t0, 1e-12), max_factor)
    if start is None:  # the second point: where the fits meet δ corrected by the ratio seen at the first
        search.fit_step = lambda ratio: _fit_start(conds, noise, eps, min(0.5, target / ratio))
    return search.run()


#: The scale search's secant sees log(δ/target) clipped to ± this (δ far below or above the target).
SECANT_CLIP = 4.0
#: During the scale search, directions below target/ACTIVE_FACTOR at a full evaluation are skipped.
ACTIVE_FACTOR = 3.0


class _Search:
    """State of :func:`scale_to_delta`: evaluated points, the bracket, and the active directions."""

    def __init__(self, conds: tuple[Condition, ...], noise: Noise, eps: float, target: float, confidence: float | None,
                 t0: float, max_factor: float) -> None:
        self.conds, self.noise, self.eps, self.target, self.confidence = conds, noise, eps, target, confidence
        self.t0, self.max_factor = t0, max_factor
        self.active: tuple[tuple[int, bool], ...] | None = None
        self.lo: tuple[float, float] | None = None  # (t, log(δ/target)) failing
        self.hi: tuple[float, float, PrivacyAccount] | None = None  # passing
        self.full_t = math.inf  # t of the last evaluation of every direction
        self.fit_step: Any = None  # ratio δ/target at the first point -> a second point from the Gaussian fits
        self.sides: list[bool] = []  # per evaluation: failed (True) or passed

    def account(self, t: float, full: bool) -> PrivacyAccount:
        full = full or self.active is None or len(self.active) == 2 * len(self.conds)
        rows = None if full else self.active
        acc = account(self.conds, self.noise.scaled(t), self.eps, confidence=self.confidence, target=self.target,
                      rows=rows)
        if full:
            self.full_t = t
            self.active = tuple((i, r.direction == "a‖b") for i, r in _indexed(self.conds, acc.rows)
                                if r.upper >= self.target / ACTIVE_FACTOR) or None
        return acc

    def step(self, t: float) -> float:
        """Evaluate at t (every direction when t is well below the last full evaluation), update the bracket,
        and return log(δ/target)."""
        full = self.active is None or t < 0.8 * self.full_t
        acc = self.account(t, full)
        f = math.log(max(acc.delta, 1e-300) / self.target)
        if f > 0:
            if self.lo is None or t > self.lo[0]:
                self.lo = (t, f)
        elif self.hi is None or t < self.hi[0]:
            self.hi = (t, f, acc)
        self.sides.append(f > 0)
        return f

    def next_t(self, pts: list[tuple[float, float]]) -> float:
        """Secant on (u, log δ), u = 1/t² for Gaussian noise and 1/t for Laplace (log δ is near-linear in u
        in the tails), with log(δ/target) clipped to ±:data:`SECANT_CLIP` (a δ that underflows to 0 would
        otherwise pin the secant to one end): through the bracket's ends once there is one (kept 5 % away
        from them; a bisection when the same end moved twice in a row); before that through the last two points, always toward it, by a factor between 1.1 and 2."""
        t2, f2 = pts[-1]
        if self.lo is not None and self.hi is not None:
            lo, hi = self.lo[0], self.hi[0]
            if len(self.sides) >= 2 and self.sides[-1] == self.sides[-2]:  # one end stuck: bisect (in log t)
                return math.sqrt(lo * hi)
            t = self._secant(lo, self.lo[1], hi, self.hi[1])
            return min(max(t, lo + 0.05 * (hi - lo)), hi - 0.05 * (hi - lo))
        if len(pts) == 1 and self.fit_step is not None:
            t = self.fit_step(math.exp(f2))
        elif len(pts) >= 2 and pts[-2][1] != f2 and pts[-2][0] != t2:
            t = self._secant(pts[-2][0], pts[-2][1], t2, f2)
        else:
            t = t2 * (1.1 if f2 > 0 else 1.0 / 1.1)
        if f2 > 0:  # no passing point yet: move up, by a factor 2 while δ is saturated (≥ 1/2 or capped at 1)
            return 2.0 * t2 if f2 >= math.log(0.5 / self.target) else min(max(t, 1.1 * t2), 2.0 * t2)
        if f2 <= math.log(1e-2):  # far below the target: halve (δ may stay ~0 until the draws are unresolved)
            return t2 / 2.0
        return min(max(t, t2 / 2.0), t2 / 1.1)  # no failing point yet: move down

    def _secant(self, t1: float, f1: float, t2: float, f2: float) -> float:
        """Where the line through (u(t1), f1) and (u(t2), f2), f clipped, crosses 0 (2·t2 when it does not)."""
        power = 2.0 if self.noise.kind == "gaussian" else 1.0
        f1, f2 = (min(max(f, -SECANT_CLIP), SECANT_CLIP) for f in (f1, f2))
        if f1 == f2:
            return 2.0 * t2 if f2 > 0 else t2 / 2.0
        u1, u2 = t1 ** -power, t2 ** -power
        u = u2 - f2 * (u2 - u1) / (f2 - f1)
        return u ** (-1.0 / power) if u > 0 else 2.0 * t2

    def run(self) -> tuple[float, PrivacyAccount]:
        pts: list[tuple[float, float]] = []
        t = self.t0
        for _ in range(100):
            pts.append((t, self.step(t)))
            if self.lo is not None and self.hi is not None and self.hi[0] - self.lo[0] <= SCALE_RTOL * self.hi[0]:
                done = self.finish()
                if done is not None:
                    return done
                pts.append(self.lo)
            if self.hi is None and t > self.max_factor * self.t0:
                raise self.refusal()
            if self.lo is None and self.hi is not None and self.hi[0] < 1e-9 * self.t0:
                return self.hi[0], self.account(self.hi[0], True)  # (almost) no noise needed
            t = self.next_t(pts)
        raise self.refusal()  # pragma: no cover - the bracket closes within a few dozen steps

    def finish(self) -> tuple[float, PrivacyAccount] | None:
        """Check the passing end on every direction; None (and the bracket moved up) when some direction fails."""
        t = self.hi[0]
        acc = self.hi[2] if self.full_t == t else self.account(t, True)
        if acc.delta <= self.target:
            return t, acc
        self.lo, self.hi = (t, math.log(acc.delta / self.target)), None
        return None

    def refusal(self) -> ValidationError:
        acc = account(self.conds, self.noise.scaled(self.max_factor * self.t0), self.eps, confidence=self.confidence)
        return ValidationError(
            f"no noise scale up to {self.max_factor:g}× the start meets delta={self.target:g} at epsilon={self.eps:g}: "
            f"δ stays at {acc.delta:.3g} ({acc.worst.label}, {acc.worst.method}); the noise misses a direction in which "
            "the released laws differ, or a law cannot be accounted")


def _indexed(conds: tuple[Condition, ...], rows: tuple[DirectionBound, ...]) -> list[tuple[int, DirectionBound]]:
    """Pair each row of a full account with its condition's index (rows come in condition order, two each)."""
    return [(i // 2, r) for i, r in enumerate(rows)]


def _fit_start(conds: tuple[Condition, ...], noise: Noise, eps: float, target: float) -> float:
    """Where the Gaussian fits of the released laws meet δ (1.0 when there are none to fit)."""
    from .privacy_loss import scale_for_delta

    if noise.kind != "gaussian" or not noise.full_rank:
        return 1.0
    pairs = [(c.law_a.mean - c.law_b.mean, c.law_a.cov, c.law_b.cov) for c in conds]
    try:
        c = scale_for_delta(eps, target, noise.cov, pairs)
    except ValidationError:
        return 1.0
    return math.sqrt(c) if c > 0 else 1.0
