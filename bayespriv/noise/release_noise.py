"""The law of the noise a release carries, and what a recipient computes from it.

A :class:`~bayespriv.privacy.guarantee.Release` holds a :class:`ReleaseNoise`: the noise its
mechanism's exact sampler drew from (:mod:`~bayespriv.noise`), in the form

    N = G + B · (b ⊙ L),  G ~ N(0, Σ),  L_j ~ Laplace(0, 1) independent, independent of G,

with Σ (k × k) the Gaussian part and b (d,), B (k × d) the Laplace part (either may be absent).
From it: the covariance of N, the standard deviation of each component, and the half-width h_c of
the symmetric interval with P(|N_c| ≤ h_c) = level — exact in closed form for a Gaussian component
or a single Laplace term, and by numerical inversion of the characteristic function (Gil-Pelaez)
when a component mixes several terms.

Everything here reads only the released value and the public noise law: post-processing, which
costs no privacy (Kifer & Machanavajjhala 2014, Theorem 5.1, for every Pufferfish instantiation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from bayespriv._validation import check_real, fail, seal_fields, sealed

__all__ = ["ReleaseNoise", "check_level", "noise_of_plans"]

#: Relative accuracy of a numerically inverted half-width (characteristic-function route).
_HALF_WIDTH_RTOL = 1e-9


def check_level(level: Any) -> float:
    """``level`` as a float in the open interval (0, 1)."""
    v = check_real("level", level)
    if not (0.0 < v < 1.0):
        raise fail("level", "in the open interval (0, 1) (the probability the interval holds)", level)
    return v


def _matrix(value: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise fail(name, f"a finite array of shape {shape}", value)
    return sealed(arr)


@seal_fields
@dataclass(frozen=True)
class ReleaseNoise:
    """The noise added to a release: Gaussian part Σ and Laplace part (b, B), N = G + B·(b ⊙ L).

    Built by the mechanism from its exact sampler's plans, so it is the law the release was drawn
    from: for Gaussian noise the plan's ``realized_cov`` (⪰ the mechanism's ``noise_cov``, equal to
    it up to floating-point rounding), for Laplace noise the plan's discrete scales t_c·g (≥ the
    mechanism's ``noise_scale``, by at most a factor 1 + 2^(1−grid bits)). The exact sampler's
    grid (2^-60 of the noise scale or finer) is below what any figure here shows.

    Attributes
    ----------
    kind : str
        ``"gaussian"``, ``"laplace"``, ``"gaussian+laplace"`` or ``"none"`` (no noise).
    k : int
        Components of the release.
    gaussian_cov : ndarray (k, k) or None
        Σ, the covariance of the Gaussian part.
    laplace_scale : ndarray (d,) or None
        b, the Laplace scales (E|L_j| b_j = b_j; variance 2 b_j²).
    laplace_basis : ndarray (k, d) or None
        B, the directions (columns) along which the Laplace noise is added.
    """

    kind: str
    k: int
    gaussian_cov: np.ndarray | None = None
    laplace_scale: np.ndarray | None = None
    laplace_basis: np.ndarray | None = None

    def __post_init__(self) -> None:
        k = self.k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise fail("k", "an int >= 1", k)
        object.__setattr__(self, "k", int(k))
        if self.gaussian_cov is not None:
            object.__setattr__(self, "gaussian_cov", _matrix(self.gaussian_cov, "gaussian_cov", (k, k)))
        if (self.laplace_scale is None) != (self.laplace_basis is None):
            raise fail("laplace_basis", "given together with laplace_scale", self.laplace_basis)
        if self.laplace_scale is not None:
            scale = np.asarray(self.laplace_scale, dtype=float).reshape(-1)
            if not np.all(np.isfinite(scale) & (scale >= 0)):
                raise fail("laplace_scale", "finite and >= 0", self.laplace_scale)
            object.__setattr__(self, "laplace_scale", sealed(scale))
            object.__setattr__(self, "laplace_basis", _matrix(self.laplace_basis, "laplace_basis", (k, scale.size)))
        expected = _kind(self.gaussian_cov, self.laplace_scale)
        if self.kind != expected:
            raise fail("kind", f"{expected!r} for these parts", self.kind)

    @classmethod
    def of(cls, k: int, gaussian_cov: np.ndarray | None = None,
           laplace: tuple[np.ndarray, np.ndarray] | None = None) -> "ReleaseNoise":
        """The noise with these parts (either may be None; zero parts are dropped)."""
        cov = None if gaussian_cov is None or not np.any(gaussian_cov) else np.asarray(gaussian_cov, float)
        scale = basis = None
        if laplace is not None and np.any(np.asarray(laplace[0]) > 0):
            scale, basis = (np.asarray(a, float) for a in laplace)
        return cls(_kind(cov, scale), k, cov, scale, basis)

    # -- moments -----------------------------------------------------------------------------------
    @property
    def cov(self) -> np.ndarray:
        """Covariance (k × k) of N: Σ + 2 B diag(b²) Bᵀ."""
        out = np.zeros((self.k, self.k)) if self.gaussian_cov is None else np.array(self.gaussian_cov)
        if self.laplace_scale is not None:
            b, basis = self.laplace_scale, self.laplace_basis
            out = out + 2.0 * (basis * b**2) @ basis.T
        return sealed(out)

    @property
    def sd(self) -> np.ndarray:
        """Standard deviation of each component's noise, sqrt(diag(cov)): the expected error per
        component in the root-mean-square sense (for Laplace noise along a basis, the sd implied by
        all the directions that reach the component)."""
        return sealed(np.sqrt(np.clip(np.diag(self.cov), 0.0, None)))

    # -- intervals ---------------------------------------------------------------------------------
    def half_width(self, level: float) -> np.ndarray:
        """h (k,) with P(|N_c| ≤ h_c) = ``level`` for each component c.

        Exact: a Gaussian component gives σ_c Φ⁻¹((1 + level)/2); a component reached by one
        Laplace direction gives w ln(1/(1 − level)) (w = |B_cj| b_j); no noise gives 0. A component
        reached by several terms is solved numerically from its characteristic function
        (relative accuracy 1e-9).
        """
        level = check_level(level)
        return sealed(np.array([self._component_half_width(c, level) for c in range(self.k)]))

    def component_terms(self, c: int) -> tuple[float, np.ndarray]:
        """(Gaussian variance, Laplace weights w_j ≠ 0) of component c."""
        var = 0.0 if self.gaussian_cov is None else max(float(self.gaussian_cov[c, c]), 0.0)
        if self.laplace_scale is None:
            return var, np.zeros(0)
        w = np.abs(self.laplace_basis[c] * self.laplace_scale)
        return var, w[w > 0]

    def _component_half_width(self, c: int, level: float) -> float:
        from scipy.special import ndtri

        var, w = self.component_terms(c)
        if w.size == 0:
            return math.sqrt(var) * float(ndtri((1.0 + level) / 2.0))
        if var == 0.0 and w.size == 1:
            return float(w[0]) * -math.log1p(-level)
        return _inverted_half_width(var, w, level)

    # -- JSON ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain lists and floats (exact: JSON keeps every float's shortest repr)."""
        def arr(a: np.ndarray | None) -> Any:
            return None if a is None else np.asarray(a, float).tolist()

        return {"kind": self.kind, "k": self.k, "cov": arr(self.cov), "sd": arr(self.sd),
                "gaussian_cov": arr(self.gaussian_cov), "laplace_scale": arr(self.laplace_scale),
                "laplace_basis": arr(self.laplace_basis)}

    @classmethod
    def from_dict(cls, data: Any) -> "ReleaseNoise":
        """Inverse of :meth:`to_dict` (``cov`` and ``sd`` are derived, so not read)."""
        if not isinstance(data, dict):
            raise fail("noise", "a mapping written by ReleaseNoise.to_dict", data)
        try:
            return cls(data["kind"], data["k"], data.get("gaussian_cov"), data.get("laplace_scale"),
                       data.get("laplace_basis"))
        except KeyError as exc:
            raise fail("noise", f"a mapping with the key {exc.args[0]!r}", sorted(data)) from None


def _kind(cov: Any, scale: Any) -> str:
    parts = [name for name, part in (("gaussian", cov), ("laplace", scale)) if part is not None]
    return "+".join(parts) or "none"


def _coverage(h: float, var: float, w: np.ndarray) -> float:
    """P(|G + Σ_j w_j L_j| ≤ h), G ~ N(0, var), by Gil-Pelaez: (2/π) ∫_0^∞ sin(t h) φ(t) / t dt.

    φ(t) = exp(−var t²/2) Π_j 1/(1 + w_j² t²) is real, positive and decreasing; with u = t·h the
    integrand is sinc-like and O(u⁻³) in the tail, integrated period by period up to U and with
    QUADPACK's Fourier rule (QAWF) beyond.
    """
    from scipy.integrate import quad

    def phi(t: float) -> float:
        return math.exp(-0.5 * var * t * t) / float(np.prod(1.0 + (w * t) ** 2))

    def near(u: float) -> float:
        return (math.sin(u) / u if u else 1.0) * phi(u / h)

    cut = 64 * math.pi
    body = sum(quad(near, a, a + math.pi, epsabs=1e-14, epsrel=1e-12)[0]
               for a in np.arange(0.0, cut, math.pi))
    tail = quad(lambda u: phi(u / h) / u, cut, np.inf, weight="sin", wvar=1.0, epsabs=1e-14, limlst=200)[0]
    return min(1.0, max(0.0, 2.0 / math.pi * (body + tail)))


def _inverted_half_width(var: float, w: np.ndarray, level: float) -> float:
    """The h with :func:`_coverage` (h) = level, by bisection (Brent) on [0, Chebyshev's bound]."""
    from scipy.optimize import brentq

    sd = math.sqrt(var + 2.0 * float(np.sum(w**2)))
    upper = sd / math.sqrt(1.0 - level)  # P(|N| > h) ≤ sd²/h² (Chebyshev): coverage ≥ level there
    return float(brentq(lambda h: _coverage(h, var, w) - level, 1e-12 * sd, upper, rtol=_HALF_WIDTH_RTOL,
                        xtol=1e-15 * sd))


def noise_of_plans(k: int, *plans: Any) -> ReleaseNoise:
    """The noise the exact samplers ``plans`` add, one after the other (None: no noise from that plan).

    A :class:`~bayespriv.noise.GaussianGridPlan` adds N(0, ``realized_cov``); a
    :class:`~bayespriv.noise.LaplaceGridPlan` adds discrete Laplace noise of scale
    t_c·g along each column of its basis (randomized rounding adds at most g = 2^-grid_bits of the
    smallest scale, below any figure shown).
    """
    from . import GaussianGridPlan, LaplaceGridPlan

    cov, scales, bases = None, [], []
    for plan in plans:
        if plan is None:
            continue
        if isinstance(plan, GaussianGridPlan):
            part = np.asarray(plan.realized_cov, dtype=float)
            cov = part if cov is None else cov + part
        elif isinstance(plan, LaplaceGridPlan):
            d = plan.basis.shape[1]
            scales.append([math.ldexp(float(t), plan.grid_exponent) for t in plan.t_units[:d]])
            bases.append(np.asarray(plan.basis, dtype=float))
        else:
            raise fail("plans", "exact_noise grid plans (GaussianGridPlan, LaplaceGridPlan) or None",
                       type(plan).__name__)
    laplace = (np.concatenate(scales), np.hstack(bases)) if scales else None
    return ReleaseNoise.of(k, cov, laplace)
