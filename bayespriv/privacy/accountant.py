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
                          (:mod:`~bayespriv.privacy.privacy_loss`)
finite, one dimension     exact (:mod:`~bayespriv.privacy.finite_exact`)   nothing (confidence 1)
finite, k dimensions      importance sampling, upper confidence      ``monte_carlo_clt``
                          bound (:mod:`~bayespriv.privacy.mixture_mc`)
sampled (draws)           the empirical mixtures' divergence (grid   ``sampled_law`` (and
                          in 1-D, importance sampling above) plus    ``monte_carlo_clt`` above
                          the draws' betting margins, refused below  one dimension)
                          the floor the draws can certify
sampled, certified        joint convexity over matched blocks of     ``independent_draws``
                          draws, betting bound                       (``accountant="certified"``,
                          (:mod:`~bayespriv.privacy.certified`)   or stated by ``"auto"`` when
                                                                     it holds at its noise)
========================  =========================================  ==========================

Upper confidence bound of a law known through draws (docs/design.rst, "The confidence statement").
The plug-in Ĥ of the empirical mixtures is at least the empirical difference at the *true* optimal
set A*, whose expectation is the true δ; so δ ≤ Ĥ + (U_a − ḡ_a) + e^ε (ḡ_b − L_b), with ḡ the
draws' mean probability of the optimal set and U_a, L_b betting confidence bounds on its
expectation (:mod:`~bayespriv.privacy.draw_bounds`: valid for every law of [0, 1]-valued draws
at any n), plus the Monte-Carlo or quadrature error. The level 1 − confidence is split
(Bonferroni) over every estimated direction of every condition, and within a direction by
:data:`LEVEL_SHARES`. The margins use the plug-in's optimal set for the true one (the assumption
the coverage harness measures), with every atom a plausible true weight would put in the
privacy-loss tail taken at probability 1 (Garwood's bound on its count). A request below the
floor the draws can certify at all — about ln(1/α)/n — is refused before any search, naming the
draws that would do (:func:`check_draws`). A plug-in calibration (``confidence=None``, the papers'
setting) uses the point estimate.

The Monte-Carlo points are seeded by a constant per condition and direction
(:data:`ACCOUNTANT_SEED`): accounting is a deterministic function of the
calibration and the noise, so a mechanism rebuilt from a saved calibration has
the same noise and guarantee.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.special import gammaincinv, ndtri

from bayespriv._validation import check_delta, check_epsilon, described, fail
from bayespriv.calibration.laws import SAMPLED_LAW, Condition, SampledLaw
from bayespriv.errors import DrawsNeededError, ValidationError
from .finite_exact import finite_hockey
from .mixture_1d import atoms_of, grid_densities, grid_hockey, hockey_on_grid
from .certified import BLOCK_SIZES, certified_bound, coupling_plan, noise_transform, usable_block_sizes
from .draw_bounds import draws_for_floor, mean_lower, mean_upper, upper_floor
from .mixture_mc import WeightedAtoms, mixture_hockey
from .privacy_loss import one_direction_delta

if TYPE_CHECKING:
    from collections.abc import Sequence
    from bayespriv.calibration.laws import FiniteLaw

__all__ = [
    "GaussianNoise",
    "LaplaceNoise",
    "DirectionBound",
    "PrivacyAccount",
    "account",
    "PrivacyProfile",
    "scale_to_delta",
    "check_draws",
    "certified_account",
    "certified_scale",
    "ACCOUNTANT_SEED",
    "ESTIMATED_FRACTION",
    "Levels",
    "LEVEL_SHARES",
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
    """H_ε in one direction of one condition: the value, its bound, and how it was obtained.

    ``upper = value + (Monte-Carlo margin) + margin_a + margin_b`` (clipped at 1) for a law known
    through draws: the error of the computation (quadrature error, or z·se_mc for importance
    sampling), the first law's draws' margin, and the second law's times e^ε (module docstring).
    ``floor`` is the smallest margin_a the first law's draws could give (:func:`upper_floor`).
    """

    label: str
    direction: str
    method: str
    value: float
    upper: float
    se_mc: float = 0.0
    margin_a: float = 0.0
    margin_b: float = 0.0
    halves: tuple[float, float] | None = None
    gaussian_fit: float = math.nan
    floor: float = 0.0

    @property
    def exact(self) -> bool:
        return self.method in ("gaussian_exact", "finite_exact")

    @property
    def draws_margin(self) -> float:
        """What the draws add to the bound: the first law's margin plus e^ε times the second's."""
        return self.margin_a + self.margin_b


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
                              "delta_upper": r.upper, "se_mc": r.se_mc, "margin_a": r.margin_a,
                              "margin_b": r.margin_b, "floor": r.floor,
                              "half_1": r.halves[0] if r.halves else math.nan,
                              "half_2": r.halves[1] if r.halves else math.nan,
                              "gaussian_fit": r.gaussian_fit} for r in self.rows])


# ------------------------------------------------------------------------------------- one row
def _atoms(law: FiniteLaw | SampledLaw) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(law, SampledLaw):
        weights = np.full(law.n, 1.0 / law.n)
        weights.setflags(write=False)  # a private array: WeightedAtoms keeps it without a copy
        return law.draws, weights
    return law.points, law.weights


#: Laws as :class:`~bayespriv.privacy.mixture_mc.WeightedAtoms`, built (and checked) once per law object.
_WEIGHTED: "weakref.WeakKeyDictionary[Any, WeightedAtoms]" = weakref.WeakKeyDictionary()


def _weighted_atoms(law: FiniteLaw | SampledLaw) -> WeightedAtoms:
    """The law as the Monte-Carlo estimator takes it (cached per law object; laws are immutable)."""
    cached = _WEIGHTED.get(law)
    if cached is None:
        cached = _WEIGHTED[law] = WeightedAtoms(*_atoms(law))
    return cached


#: One-dimensional laws' distinct atoms, computed once per law object (a scale search accounts the same
#: laws at many noise scales).
_ATOMS_1D: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _atoms_1d(law: Any) -> Any:
    """:class:`~bayespriv.privacy.mixture_1d.Atoms` of a one-dimensional law (cached per law object;
    laws are immutable)."""
    cached = _ATOMS_1D.get(law)
    if cached is None:
        cached = _ATOMS_1D[law] = atoms_of(*_atoms(law))
    return cached


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


@dataclass(frozen=True)
class Levels:
    """Error probabilities of one estimated direction (a Bonferroni share of 1 − confidence).

    Attributes
    ----------
    alpha_a : float
        Of the first law's draws' margin (an upper bound on P_a(A)).
    alpha_b : float
        Of the second law's draws' margin (a lower bound on P_b(A)).
    z_mc : float
        Normal quantile of the importance sampler's Monte-Carlo margin.
    """

    alpha_a: float
    alpha_b: float
    z_mc: float


#: Shares of one direction's error probability: the first law's margin, the second's, the Monte-Carlo error.
LEVEL_SHARES = (0.5, 0.25, 0.25)


def _levels(conditions: tuple[Condition, ...], confidence: float | None) -> Levels | None:
    """Each estimated direction's share of 1 − confidence (Bonferroni over every estimated direction of every
    condition); None for a plug-in account (point estimates)."""
    if confidence is None:
        return None
    estimated = sum(2 for c in conditions if not (c.kind == "gaussian" or (c.kind == "finite" and c.k == 1)))
    alpha = (1.0 - confidence) / max(estimated, 1)
    share_a, share_b, share_mc = LEVEL_SHARES
    return Levels(alpha * share_a, alpha * share_b, float(ndtri(1.0 - alpha * share_mc)))


def _garwood(counts: np.ndarray, alpha: float) -> np.ndarray:
    """Exact upper confidence bound on a Poisson mean seen as ``counts`` (Garwood 1936): χ²_{1−α}(2(c+1))/2,
    computed once per distinct count as the regularised incomplete gamma's inverse at c + 1 (SciPy's χ²
    quantile is twice that: the same numbers, without ``scipy.stats``' per-call argument handling). Counts
    are whole numbers of draws: the distinct ones are read off a table of them (no sort); rounded, never
    truncated (a count one ulp below an integer would otherwise lose a draw and shrink its bound)."""
    whole = np.rint(np.asarray(counts, float)).astype(np.int64)
    if whole.size == 0:
        return np.zeros(0)
    seen = np.flatnonzero(np.bincount(whole))
    table = np.zeros(seen[-1] + 1)
    table[seen] = gammaincinv(seen + 1.0, 1.0 - alpha)
    return table[whole]


def _first_law_values(c: Any, alpha: float) -> np.ndarray:
    """P(x + Z ∈ A) per atom of the first law, with every *isolated* atom taken as 1.

    An atom seen c times stands for a region the true law may weigh up to G(c) draws' worth (Garwood's bound);
    where that much weight would put the region's peak above e^ε·p_b (``peak_ratio_a``), the true law's
    optimal set can hold the whole kernel around the atom, larger than the empirical optimal set: its
    probability is taken as 1 (an upper bound), so the margin counts the region as it may truly be."""
    values = np.array(c.values_a, float)
    ratio = c.peak_ratio_a
    if ratio is not None:
        values[_garwood(c.counts_a, alpha) > ratio] = 1.0
    return values


def _draws_margins(est: Any, eps: float, levels: Levels) -> tuple[float, float, float]:
    """(first law's margin, e^ε × second law's margin, the first law's floor) from the per-draw probabilities
    of the optimal set (:mod:`~bayespriv.privacy.draw_bounds`)."""
    c = est.contributions
    if c is None:
        return 0.0, 0.0, 0.0
    margin_a = margin_b = floor = 0.0
    if c.values_a is not None:
        values = _first_law_values(c, levels.alpha_a)
        mean = float(c.counts_a @ values) / float(c.counts_a.sum())
        margin_a = mean_upper(values, c.counts_a, alpha=levels.alpha_a) - mean
        floor = upper_floor(c.draws_a, levels.alpha_a)
    if c.values_b is not None:
        mean = float(c.counts_b @ c.values_b) / float(c.counts_b.sum())
        margin_b = math.exp(eps) * (mean - mean_lower(c.values_b, c.counts_b, alpha=levels.alpha_b))
    return margin_a, margin_b, floor


def _mixture_row(cond: Condition, noise: Noise, eps: float, label: str, forward: bool, index: int,
                 levels: Levels | None, halves: bool = True, est: Any = None) -> DirectionBound:
    """One direction of a condition known through draws or atoms: by quadrature in one dimension (or
    ``est``, already computed so), else by Monte Carlo over the released mixture."""
    a, b = (cond.law_a, cond.law_b) if forward else (cond.law_b, cond.law_a)
    sampled = (isinstance(a, SampledLaw), isinstance(b, SampledLaw))
    if est is None and cond.k == 1:
        est = grid_hockey(_atoms_1d(a), None, _atoms_1d(b), None, noise, eps, sampled=sampled, halves=halves)
    quadrature = est is not None
    if est is None:
        points = POINTS_GAUSSIAN if noise.kind == "gaussian" else POINTS_LAPLACE
        est = mixture_hockey(_weighted_atoms(a), _weighted_atoms(b), noise, eps, n_points=points,
                             seed=[ACCOUNTANT_SEED, index, int(forward)], sampled=sampled, halves=halves)
    method = ("sampled" if any(sampled) else "finite") + ("_quadrature" if quadrature else "_mixture")
    if levels is None:
        return DirectionBound(label, _dir(forward), method, est.value, est.value, est.se_mc, halves=est.halves,
                              gaussian_fit=est.gaussian_fit)
    mc = est.se_mc if quadrature else levels.z_mc * est.se_mc  # the grid's error is a bound, not a deviation
    margin_a, margin_b, floor = _draws_margins(est, eps, levels)
    upper = min(1.0, est.value + mc + margin_a + margin_b)
    return DirectionBound(label, _dir(forward), method, est.value, upper, est.se_mc, margin_a, margin_b, est.halves,
                          est.gaussian_fit, floor)


def _quadrature_pair(cond: Condition, noise: Noise | None, eps: float, index: int, levels: Levels | None,
                     halves: bool, grids: dict) -> dict[tuple[int, bool], DirectionBound]:
    """Both directions of a one-dimensional condition known through draws or atoms, from one evaluation of
    the two densities (kept in ``grids`` for the next ε); empty when the condition takes another route
    (:func:`_row`)."""
    if cond.k != 1 or cond.kind != "sampled" or _is_noiseless(noise) or not noise.full_rank:
        return {}
    sampled = (isinstance(cond.law_a, SampledLaw), isinstance(cond.law_b, SampledLaw))
    key = (index, halves)
    if key not in grids:
        grids[key] = grid_densities(_atoms_1d(cond.law_a), None, _atoms_1d(cond.law_b), None, noise,
                                    sampled=sampled, halves=halves)
    grid = grids[key]
    if grid is None:  # too fine for the atoms' spread: the Monte-Carlo route
        return {}
    return {(index, fwd): _mixture_row(cond, noise, eps, cond.label, fwd, index, levels, halves, est)
            for fwd, est in zip((True, False), hockey_on_grid(grid, eps, sampled=sampled))}


def _dir(forward: bool) -> str:
    return "a‖b" if forward else "b‖a"


def _is_noiseless(noise: Noise | None) -> bool:
    return noise is None or not np.any(noise.cov)


def _row(cond: Condition, noise: Noise | None, eps: float, index: int, forward: bool, levels: Levels | None, *,
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
    return _mixture_row(cond, noise, eps, cond.label, forward, index, levels, halves)


# -------------------------------------------------------------------------------------- account
def _one_blas_thread() -> Any:
    """BLAS pools limited to one thread for the kernel products (a no-op without threadpoolctl).

    The libraries are scanned once per process (``threadpoolctl.ThreadpoolController``; a scan per
    call cost ~1.2 ms, most of an account of Gaussian laws): NumPy's and SciPy's BLAS are loaded when
    they are imported, before any account.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a declared dependency
            import contextlib

            return contextlib.nullcontext()
        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


#: The process's threadpoolctl controller (:func:`_one_blas_thread`), made at the first account.
_BLAS_CONTROLLER: Any = None


def _assumptions(conditions: tuple[Condition, ...], rows: tuple[DirectionBound, ...]) -> tuple[str, ...]:
    out: list[str] = []
    kinds = {c.kind for c in conditions}
    if "gaussian" in kinds:
        out.append("gaussian_query")
    if "sampled" in kinds:
        out.append(SAMPLED_LAW)
    if any(r.method.endswith("_mixture") for r in rows):
        out.append("monte_carlo_clt")
    return tuple(out)


def _notes(rows: tuple[DirectionBound, ...], target: float | None) -> tuple[str, ...]:
    """Stability diagnostics of the sampled rows: split halves and the draws' share of the bound."""
    out = []
    for r in rows:
        if r.method == "not_accountable":
            out.append(f"{r.label} ({r.direction}): no noise in some direction; a law known through draws (or a "
                       "finite law in k > 1 dimensions) cannot be accounted there, so δ is taken as 1")
            continue
        if r.halves is not None and abs(r.halves[0] - r.halves[1]) > 2.0 * max(r.draws_margin, r.se_mc, 1e-300):
            out.append(f"{r.label} ({r.direction}): the two halves of the draws disagree ({r.halves[0]:.3g} vs "
                       f"{r.halves[1]:.3g}, more than twice the draws' margin): the draws do not resolve the "
                       "released law; draw more")
        ref = target if target is not None else r.upper
        if ref > 0 and r.draws_margin > ESTIMATED_FRACTION * ref:
            factor = r.draws_margin / (ESTIMATED_FRACTION * ref)
            out.append(f"{r.label} ({r.direction}): the draws' margin {r.draws_margin:.3g} is "
                       f"{r.draws_margin / ref:.0%} of δ (of which {r.floor:.3g} no number of these draws can "
                       f"remove); about {factor:.3g}× the draws would bring it within {ESTIMATED_FRACTION:.0%}")
    return tuple(out)


def _rows(conds: tuple[Condition, ...], noise: Noise | None, eps: float, which: list[tuple[int, bool]],
          levels: Levels | None, halves: bool, grids: dict) -> tuple[DirectionBound, ...]:
    """The requested directions; a one-dimensional condition asked in both directions shares its densities
    (``grids``: those densities by (condition, halves), kept by :class:`PrivacyProfile` across ε)."""
    shared: dict[tuple[int, bool], DirectionBound] = {}
    for i in sorted({i for i, fwd in which if (i, not fwd) in which}):
        shared.update(_quadrature_pair(conds[i], noise, eps, i, levels, halves, grids))
    return tuple(shared.get((i, fwd)) or _row(conds[i], noise, eps, i, fwd, levels, halves=halves)
                 for i, fwd in which)


def account(conditions: Sequence[Condition], noise: Noise | None, epsilon: float, *, confidence: float | None,
            target: float | None = None, rows: Sequence[tuple[int, bool]] | None = None,
            diagnostics: bool = True) -> PrivacyAccount:
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
    return PrivacyProfile(conditions, noise, confidence=confidence).at(eps, target=target, rows=rows,
                                                                      diagnostics=diagnostics)


@dataclass(frozen=True, eq=False)
class PrivacyProfile:
    """:func:`account` at any number of ε for one released law: fixed conditions, noise and confidence.

    What does not depend on ε is made at the first ε that needs it and kept: the densities of the
    one-dimensional laws known through draws or atoms on their grid
    (:func:`~bayespriv.privacy.mixture_1d.grid_densities`, read-only arrays). Every :meth:`at` returns what
    :func:`account` returns at the same ε, bit for bit: the same arithmetic on the same arrays (the
    Monte-Carlo rows of k > 1 dimensions draw their points for each ε, as :func:`account` does). Used where
    the ε varies and the noise does not: the ledger's smallest joint ε, the privacy curves. What the kept
    densities were made from cannot change: the profile is frozen, its conditions a tuple of immutable laws,
    its noise a frozen value with read-only arrays.

    Parameters
    ----------
    conditions, noise, confidence :
        As :func:`account`.

    Examples
    --------
    >>> from bayespriv.calibration.laws import Condition, GaussianLaw
    >>> cond = Condition("a vs b", GaussianLaw([1.0], [[1.0]]), GaussianLaw([0.0], [[1.0]]))
    >>> profile = PrivacyProfile([cond], GaussianNoise([[3.0]]), confidence=0.95)
    >>> round(profile.at(1.0).delta, 6), profile.curve([1.0, 2.0]).round(6).tolist()
    (0.00683, [0.00683, 9e-06])
    """

    conditions: tuple[Condition, ...]
    noise: Noise | None
    confidence: float | None = field(kw_only=True)
    _levels: Levels | None = field(init=False, repr=False)
    _grids: dict = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        conds = tuple(self.conditions)
        if not conds or not all(isinstance(c, Condition) for c in conds):
            raise fail("conditions", "a non-empty sequence of Condition", described(f"{len(conds)} items"))
        object.__setattr__(self, "conditions", conds)
        object.__setattr__(self, "_levels", _levels(conds, self.confidence))

    def at(self, epsilon: float, *, target: float | None = None, rows: Sequence[tuple[int, bool]] | None = None,
           diagnostics: bool = True) -> PrivacyAccount:
        """The account at ``epsilon`` (arguments and result as :func:`account`)."""
        eps, conds = check_epsilon(epsilon), self.conditions
        which = [(i, fwd) for i in range(len(conds)) for fwd in (True, False)] if rows is None else list(rows)
        final = rows is None and diagnostics
        with _one_blas_thread():  # small products over many atoms are memory-bound: one thread is faster, and robust
            out = _rows(conds, self.noise, eps, which, self._levels, final, self._grids)
        conf = 1.0 if all(r.exact for r in out) else self.confidence
        return PrivacyAccount(eps, max(r.upper for r in out), max(r.value for r in out), conf,
                              _assumptions(conds, out), out, _notes(out, target) if final else ())

    def curve(self, epsilons: Any) -> np.ndarray:
        """The accounted δ (upper bounds) at each of ``epsilons``."""
        return np.array([self.at(float(e)).delta for e in np.atleast_1d(np.asarray(epsilons, dtype=float))])


# ---------------------------------------------------------------------------------------- scale
def scale_to_delta(conditions: Sequence[Condition], noise: Noise, epsilon: float, delta: float, *,
                   confidence: float | None, start: float | None = None,
                   max_factor: float = 1e6) -> tuple[float, PrivacyAccount]:
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
    DrawsNeededError
        When the draws cannot certify δ whatever the noise (:func:`check_draws`),
        or when at the largest scale tried the draws' margins still hold the
        bound above δ; it names the draws per secret that would do.
    ValidationError
        When no t up to ``max_factor`` times the start meets δ (the noise
        misses a direction in which the released laws differ, or a law cannot
        be accounted).
    """
    eps, target = check_epsilon(epsilon), check_delta(delta)
    conds = tuple(conditions)
    check_draws(conds, target, confidence)
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
                      rows=rows, diagnostics=False)
        if full:
            self.track(t, acc)
        return acc

    def track(self, t: float, acc: PrivacyAccount) -> None:
        """Remember a full evaluation: its scale and the directions to evaluate until the next one. The draws'
        floor does not move with the noise: a direction is active when what does move is within a factor
        :data:`ACTIVE_FACTOR` of the room the floor leaves."""
        self.full_t = t
        self.active = tuple((i, r.direction == "a‖b") for i, r in _indexed(self.conds, acc.rows)
                            if r.upper - r.floor >= (self.target - r.floor) / ACTIVE_FACTOR) or None

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
                return self.hi[0], self.diagnosed(self.hi[0])  # (almost) no noise needed
            t = self.next_t(pts)
        raise self.refusal()  # pragma: no cover - the bracket closes within a few dozen steps

    def finish(self) -> tuple[float, PrivacyAccount] | None:
        """Check the passing end on every direction; None (and the bracket moved up) when some direction fails."""
        t = self.hi[0]
        acc = self.diagnosed(t)  # every direction, with the diagnostics (the same δ as without them)
        if acc.delta <= self.target:
            return t, acc
        self.track(t, acc)
        self.lo, self.hi = (t, math.log(acc.delta / self.target)), None
        return None

    def diagnosed(self, t: float) -> PrivacyAccount:
        """The full account at t with its stability diagnostics (split halves, notes), which the search skips."""
        return account(self.conds, self.noise.scaled(t), self.eps, confidence=self.confidence, target=self.target)

    def refusal(self) -> ValidationError:
        acc = account(self.conds, self.noise.scaled(self.max_factor * self.t0), self.eps, confidence=self.confidence)
        worst = acc.worst
        if worst.draws_margin >= 0.5 * self.target:  # the draws, not the noise, hold the bound up
            n = _draws_of(self.conds)
            ask = int(math.ceil(n * worst.draws_margin / (ASK_FLOOR_SHARE * self.target)))
            return DrawsNeededError(
                f"no noise scale meets delta={self.target:g} at epsilon={self.eps:g} with {n} draws per secret: "
                f"however large the noise, the draws' margin stays at {worst.draws_margin:.3g} ({worst.label}, "
                f"{worst.direction}) — what {n} draws cannot rule out. About {ask} draws per secret would leave "
                f"two thirds of delta for the noise; or ask a larger delta", draws_needed=ask, draws=n)
        return ValidationError(
            f"no noise scale up to {self.max_factor:g}× the start meets delta={self.target:g} at epsilon={self.eps:g}: "
            f"δ stays at {acc.delta:.3g} ({worst.label}, {worst.method}); the noise misses a direction in which "
            "the released laws differ, or a law cannot be accounted")


#: A refusal for lack of draws asks for enough that the draws' margin takes at most this share of δ.
ASK_FLOOR_SHARE = 1.0 / 3.0


def _draws_of(conds: tuple[Condition, ...]) -> int:
    """The fewest draws of any law known through draws (0 when none is)."""
    sizes = [law.n for c in conds for law in (c.law_a, c.law_b) if isinstance(law, SampledLaw)]
    return min(sizes) if sizes else 0


def check_draws(conditions: Sequence[Condition], delta: float, confidence: float | None) -> None:
    """Refuse a request that the draws cannot certify whatever the noise.

    A law known through n draws may hold a region of mass up to the floor
    :func:`~bayespriv.privacy.draw_bounds.upper_floor` (n, α) that no draw
    hit (α this direction's share of 1 − confidence); the bound on δ(ε) of any
    released law can never go below it. With ``confidence=None`` (plug-in) nothing
    is checked.

    Raises
    ------
    DrawsNeededError
        When the floor of some law reaches ``delta``: names the draws per secret
        whose floor leaves two thirds of δ for the noise (:data:`ASK_FLOOR_SHARE`).
    """
    conds = tuple(conditions)
    levels = _levels(conds, confidence)
    n = _draws_of(conds)
    if levels is None or n == 0:
        return
    floor = upper_floor(n, levels.alpha_a)
    if floor < delta:
        return
    need = draws_for_floor(delta, levels.alpha_a)
    ask = draws_for_floor(ASK_FLOOR_SHARE * delta, levels.alpha_a)
    raise DrawsNeededError(
        f"certifying delta={delta:g} from draws needs more than {need} draws per secret; got {n}. With {n} draws a "
        f"region of mass up to {floor:.3g} may hold none of them (at confidence {confidence:g}, its share "
        f"{levels.alpha_a:.2g} for this direction), so no noise can bring the bound on delta below that. About {ask} "
        f"draws per secret leave two thirds of delta for the noise (n_draws={ask}); or ask a larger delta",
        draws_needed=ask, draws=n)


# ------------------------------------------------------------------------------- certified route
def certified_account(conditions: Sequence[Condition], noise: Noise, epsilon: float, *, confidence: float,
                      plans: Any = None, target: float | None = None) -> PrivacyAccount | None:
    """The distribution-free bound of :mod:`~bayespriv.privacy.certified` at this noise: every condition
    known through draws bounded by joint convexity over matched blocks (both directions at once), every
    exact condition computed exactly; None when some condition cannot take this route (a law known
    through draws paired with one that is not, or a noise the closed forms do not cover).

    ``plans``: the conditions' coupling plans in this noise's metric at scale 1 (from
    :func:`certified_plans`), reused across the scales of a search. ``target``: only a δ to compare with —
    block sizes too few to certify it are not matched (the bound is then that of the remaining sizes).
    """
    conds = tuple(conditions)
    eps = check_epsilon(epsilon)
    alpha = (1.0 - confidence) / max(sum(c.kind == "sampled" for c in conds), 1)
    plans = certified_plans(conds, noise, alpha=alpha, target=target) if plans is None else plans
    if plans is None:
        return None
    laplace = noise.kind == "laplace"
    rows: list[DirectionBound] = []
    for i, (cond, plan) in enumerate(zip(conds, plans)):
        if plan is None:
            rows.extend(_row(cond, noise, eps, i, fwd, None) for fwd in (True, False))
            continue
        b = certified_bound(plan, 1.0, eps, alpha, laplace=laplace)
        rows.append(DirectionBound(cond.label, "both", "certified_coupling", b.mean, b.upper,
                                   margin_a=b.upper - b.mean))
    out = tuple(rows)
    sampled = any(p is not None for p in plans)
    return PrivacyAccount(eps, max(r.upper for r in out), max(r.value for r in out), confidence,
                          ("independent_draws",) if sampled else (), out)


def certified_plans(conditions: Sequence[Condition], noise: Noise, *, alpha: float | None = None,
                    target: float | None = None) -> tuple[Any, ...] | None:
    """Coupling plans (:func:`~bayespriv.privacy.certified.coupling_plan`) of every condition in the
    metric of ``noise`` (None for exact conditions); None when the route does not apply. With ``alpha`` and
    ``target``, block sizes whose blocks are too few to certify ``target`` at all (the bound's floor reaches it)
    are left out, so no block is matched in vain."""
    frame = noise_transform(noise)
    if frame is None:
        return None
    transform, _ = frame
    plans = []
    for cond in conditions:
        if cond.kind in ("gaussian", "finite"):
            plans.append(None)
            continue
        sizes = BLOCK_SIZES if alpha is None or target is None else usable_block_sizes(
            _draws_of((cond,)), alpha, target)
        plan = coupling_plan(cond, transform, sizes) if sizes else None
        if plan is None or not plan.distances:  # not both laws drawn, or no block size could certify the target
            return None
        plans.append(plan)
    return tuple(plans)


def certified_scale(conditions: Sequence[Condition], noise: Noise, epsilon: float, delta: float, *, confidence: float,
                    max_factor: float = 1e6) -> tuple[float, PrivacyAccount] | None:
    """The smallest t (to :data:`SCALE_RTOL`) at which :func:`certified_account` meets δ, by bisection in
    log t (the bound is monotone in t); None when the route does not apply or no t up to ``max_factor``
    meets δ."""
    conds = tuple(conditions)
    eps, target = check_epsilon(epsilon), check_delta(delta)
    plans = certified_plans(conds, noise)
    if plans is None:
        return None

    def acc_at(t: float) -> PrivacyAccount:
        return certified_account(conds, noise.scaled(t), eps, confidence=confidence,
                                 plans=tuple(None if p is None else _rescaled(p, t) for p in plans))

    lo, hi = 1e-6, 1.0
    while acc_at(hi).delta > target:
        lo, hi = hi, hi * 4.0
        if hi > max_factor:
            return None
    while acc_at(lo).delta <= target and lo > 1e-12:
        hi, lo = lo, lo / 4.0
    while hi - lo > SCALE_RTOL * hi:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if acc_at(mid).delta <= target else (mid, hi)
    return hi, acc_at(hi)


def _rescaled(plan: Any, t: float) -> Any:
    """The plan at noise scale t: every distance divided by t."""
    from .certified import CouplingPlan

    return CouplingPlan(plan.label, plan.draws, {m: d / t for m, d in plan.distances.items()})


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
