"""The Wasserstein and Approximate Wasserstein mechanisms (Chen & Ohrimenko, AISTATS 2023, §3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_delta
from ..calibration import Calibration
from bayespriv.calibration.w_distances import WassersteinBounds, quantile_band, wasserstein_bounds
from ..errors import ValidationError
from .mechanism import Guarantee
from .sampled_moments import SampledMomentMechanism

__all__ = ["Wasserstein", "ApproxWasserstein"]


def _no_draw_hint(calibration: Calibration) -> str:
    n = calibration.n_draws
    return f" (n_draws={n})" if n is not None else ""


class Wasserstein(SampledMomentMechanism):
    """Wasserstein Mechanism: Laplace noise scaled to the largest ∞-Wasserstein
    distance between F(X) | s_a and F(X) | s_b over the secret pairs.

    Adds ``Lap(Δ_W / ε)`` to F(X), where Δ_W is an upper bound of
    ``sup_{pairs, θ} W∞(f_a, f_b)`` computed by
    :func:`~bayespriv.calibration.w_distances.wasserstein_bounds` from the
    calibration's draws: a simultaneous confidence band around each empirical
    quantile function (Beta order-statistic band ∩ DKW by default), extended
    to the support of F at the tails (exact supremum over the band's jump
    points, no grid).

    Parameters
    ----------
    calibration : Calibration
        From :func:`bayespriv.calibrate` (draws are needed; a calibration from
        :meth:`Calibration.from_moments` is refused). One-dimensional query only.
    epsilon : float > 0
    delta : float in [0, 1), default 0
        Accepted for the common mechanism signature; the guarantee is
        (ε, 0) whatever δ is given.
    support : (lo, hi), optional
        Declared support of F (scalars; ±inf when unknown). Intersected with
        what the query proves (``count`` in [0, n], ``proportion`` in [0, 1],
        ``mean(col, bounds=(l, h))`` in [l, h]). Without a finite support the
        W∞ bound is infinite and the mechanism refuses: use
        :class:`ApproxWasserstein`.
    confidence : "calibration", None or float in (0, 1)
        Probability over the calibration's draws that Δ_W holds;
        ``"calibration"`` (default) uses ``calibration.confidence``; None gives
        the plug-in W∞ of the empirical distributions.
    band : {"order", "dkw"}
        Quantile bands (:func:`~bayespriv.calibration.w_distances.quantile_band`):
        order statistics ∩ DKW (default) or DKW alone.

    Attributes
    ----------
    sensitivity : float
        The Δ_W used (bound, or estimate for plug-in).
    bounds : WassersteinBounds
    pair_table : pandas.DataFrame
        One row per pair: estimate, bound, method, worst member.

    Privacy
    -------
    Definition: (ε, 0)-distribution privacy (Pufferfish privacy with the
    calibration's secret pairs and Θ), Chen & Ohrimenko 2023, §2.

    Theorem 3.1 (Chen & Ohrimenko 2023, after Song et al. 2017): F(X) + Z with
    Z ~ Lap(Δ_W/ε)^k is (ε, 0)-private, where W∞ uses the L1 ground norm
    (Definition 3.1): couple f_a and f_b so that |F_a − F_b|₁ ≤ Δ_W, then apply
    the Laplace mechanism to each coupled pair.

    Dimension: only k = 1 is supported. For k > 1 the marginal W∞ do not bound
    the joint W∞ (L1), and the only model-free bound is the L1 diameter of the
    support; use :class:`ApproxWasserstein` (Theorem 3.3) instead.

    Bound: with exact finite laws (``Calibration.finite_laws``, e.g. a count of
    a category, :func:`~bayespriv.calibrate` with ``exact_laws``) W∞ is the
    laws' exact one (confidence 1). It is never known from draws: with
    ``confidence`` c the bound
    holds with probability ≥ c over the calibration (simultaneous quantile
    bands: Beta order-statistic band with Bonferroni over the constrained
    order statistics, intersected with DKW (Massart's constant); Bonferroni
    over every (member, secret) distribution; no distributional assumption,
    only i.i.d. draws). Plug-in (``None``): estimated, assumption
    ``estimated_moments``.

    What draws cannot give: the extreme quantiles. With n draws, a mass of
    about ln(1/α)/n at each end of F is never observed, so the band reaches
    the support's ends there and the bound is at least (roughly) the distance
    from an extreme draw of one secret to the far end of the support of the
    other. Without a declared (or query-proven) support the bound is infinite;
    with one it is finite but can be several times the true W∞ (e.g. ≈4× for
    two Binomial(100, ·) counts). A tighter figure needs δ > 0
    (:class:`ApproxWasserstein`, which trims those levels) — never a support
    guessed from the draws.
    """

    theorem = "Wasserstein mechanism: Chen & Ohrimenko 2023, Theorem 3.1 (after Song et al. 2017)"

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float = 0.0,
        support: Any = None,
        confidence: float | None | str = "calibration",
        band: str = "order",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        self.delta = 0.0  # Theorem 3.1 is pure ε
        if calibration.k != 1:
            raise ValidationError(
                f"Wasserstein needs a one-dimensional query; got k={calibration.k}. Marginal ∞-Wasserstein distances "
                "do not bound the joint one, so no model-based Δ_W is available for k > 1: use ApproxWasserstein "
                "(Theorem 3.3, (Δ_E + 2c, δ)-closeness) instead"
            )
        self.bounds: WassersteinBounds = wasserstein_bounds(
            calibration, delta=0.0, support=support, confidence=confidence, method="quantile", band=band
        )
        worst = self.bounds.worst
        if not worst.finite:
            raise ValidationError(
                f"Wasserstein needs a finite ∞-Wasserstein bound; got inf for pair {worst.pair.label!r}, because the "
                "support of F is unknown (no finite sample bounds a tail). Declare support=(lo, hi) if F is bounded, "
                "or use ApproxWasserstein (Theorem 3.2: (W, δ)-closeness disregards a mass δ)"
            )
        self.sensitivity = float(self.bounds.bound)
        self.pair_table = self.bounds.table()
        self._set_laplace(np.full(self.k, self.sensitivity / self.epsilon), np.eye(self.k))

    def _compute_guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, 0.0, self.bounds.confidence, self.bounds.assumptions, self.theorem)


class ApproxWasserstein(SampledMomentMechanism):
    """Approximate Wasserstein Mechanism: Laplace noise scaled to a W for which
    every pair's F-distributions are (W, δ)-close.

    Adds ``Lap(W / ε)`` to each component of F(X). W comes from
    :func:`~bayespriv.calibration.w_distances.wasserstein_bounds`:

    * ``method="quantile"`` (default for k = 1): the δ-trimmed W∞ of the
      quantile coupling, i.e. the smallest W such that the levels u where
      |Q_a(u) − Q_b(u)| > W have total measure ≤ δ, bounded through
      simultaneous quantile bands (order statistics ∩ DKW by default; finite
      when δ exceeds the band's unbounded tail mass, about 2·ln(2m/α)/n for
      the order band, or when the support is declared);
    * ``method="mean_deviation"`` (default for k > 1): Theorem 3.3,
      W = sup over pairs of ‖E f_a − E f_b‖₁ + c_a + c_b with
      P(‖F − E F‖₁ ≤ c_θ) ≥ 1 − δ/2, bounded with CLT mean intervals and a
      binomial order-statistic bound on the quantile.

    Parameters
    ----------
    calibration : Calibration
        With draws (from :func:`bayespriv.calibrate`).
    epsilon : float > 0
    delta : float in (0, 1)
        Mass that (W, δ)-closeness disregards; the guarantee's δ.
    support : (lo, hi), optional
        Declared support of F (scalars or arrays (k,)); tightens the tails.
    confidence : "calibration", None or float in (0, 1)
    method : {"auto", "quantile", "mean_deviation"}
    band : {"order", "dkw"}
        Quantile bands for ``method="quantile"`` (see :class:`Wasserstein`).

    Attributes
    ----------
    sensitivity : float
        The W used.
    bounds : WassersteinBounds
    pair_table : pandas.DataFrame

    Privacy
    -------
    Definition: (ε, δ)-distribution privacy (Pufferfish) for the calibration's
    pairs and Θ.

    Theorem 3.2 (Chen & Ohrimenko 2023): if every pair is (W, δ)-close
    (Definition 3.2: a coupling γ and a set R with γ(R) ≥ 1 − δ and
    ‖x − y‖₁ ≤ W on R), then F + Lap(W/ε)^k is (ε, δ)-private. Theorem 3.3
    (called Proposition 3.3 in the text; proof in appendix B.1): if
    ‖F − E F‖₁ ≤ c with probability ≥ 1 − δ/2 under every θ, the pairs are
    (Δ_E + 2c, δ)-close; we use the per-distribution form ‖E f_a − E f_b‖₁ +
    c_a + c_b, which has the same proof and is never larger.

    Bound: with ``confidence`` c, W holds for all pairs and members with
    probability ≥ c over the calibration (Bonferroni over distributions and,
    for ``mean_deviation``, over the k mean intervals and the order-statistic
    event). ``quantile`` is distribution-free (order-statistic and DKW
    bands); ``mean_deviation`` uses
    normal intervals for the means (assumption ``monte_carlo_clt``). Plug-in
    (``None``): estimated, assumption ``estimated_moments``.

    Notes
    -----
    Paper: Theorem 3.3 is referred to as "Proposition 3.3" right after its
    statement and in appendix B.1 (same result); the proof in B.1 writes
    "marginals f_θi and f_θi" for f_θi and f_θj (typo, no effect).
    """

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float,
        support: Any = None,
        confidence: float | None | str = "calibration",
        method: str = "auto",
        band: str = "order",
    ) -> None:
        delta = check_delta(delta)
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        self.bounds: WassersteinBounds = wasserstein_bounds(
            calibration, delta=self.delta, support=support, confidence=confidence, method=method, band=band
        )
        self.method = self.bounds.method
        worst = self.bounds.worst
        if not worst.finite:
            hint = ""
            if self.method == "quantile" and self.bounds.confidence is not None:
                n = min(m.sample_array.shape[1] for m in getattr(calibration, "members", None) or (calibration,))
                qb = quantile_band(n, (1 - self.bounds.confidence) / self.bounds.n_distributions, band=self.bounds.band)
                hint = (f"; the {qb.kind} band of {n} draws reaches the unknown support's ends on levels of total "
                        f"measure {qb.unbounded_mass:.3g}, so delta must exceed that")
            elif self.method == "mean_deviation":
                hint = "; the (1 − δ/2)-quantile of ‖F − E F‖₁ cannot be bounded from this many draws"
            raise ValidationError(
                f"ApproxWasserstein could not bound (W, δ)-closeness at delta={self.delta:g}: got W=inf for pair "
                f"{worst.pair.label!r}{hint}{_no_draw_hint(calibration)}. Increase n_draws or delta, or declare "
                "support=(lo, hi)"
            )
        self.sensitivity = float(self.bounds.bound)
        self.pair_table = self.bounds.table()
        self._set_laplace(np.full(self.k, self.sensitivity / self.epsilon), np.eye(self.k))
        if self.method == "quantile":
            self.theorem = ("Approximate Wasserstein mechanism: Chen & Ohrimenko 2023, Theorem 3.2 "
                            "(trimmed quantile coupling, Definition 3.2)")
        else:
            self.theorem = "Approximate Wasserstein mechanism: Chen & Ohrimenko 2023, Theorems 3.2 and 3.3"

    def _compute_guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, self.delta, self.bounds.confidence, self.bounds.assumptions, self.theorem)
