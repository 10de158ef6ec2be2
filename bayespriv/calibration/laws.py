"""The law of the query under each secret, as the privacy accountant sees it.

A Pufferfish guarantee is one condition per θ ∈ Θ and per secret pair (a, b):
the released laws ``P_a = μ_a ∗ Z`` and ``P_b = μ_b ∗ Z`` (μ_s the law of F(X)
given secret s and θ, Z the mechanism's noise) must be (ε, δ)-indistinguishable.
The accountant (:mod:`bayespriv.privacy.accountant`) computes that from μ_a
and μ_b, which a calibration knows in one of three ways:

* :class:`GaussianLaw` — only the moments are known (``Calibration.from_moments``);
  the law is *taken* to be Gaussian (assumption ``gaussian_query``, the user's);
* :class:`FiniteLaw` — the law is known exactly and has finitely many values
  (e.g. a count over a subset drawn without replacement: a hypergeometric law);
* :class:`SampledLaw` — the law is known through independent draws (``calibrate``);
  the empirical law of the draws stands for it (assumption ``sampled_law``).

:func:`conditions_of` lists the conditions of a calibration, one
:class:`Condition` per (θ, pair), in the order of
:meth:`~bayespriv.Calibration.pair_constraints`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .._validation import BUILDING, check_covariance, check_finite_array, described, fail, seal_fields, sealed

__all__ = ["GaussianLaw", "FiniteLaw", "SampledLaw", "Law", "Condition", "conditions_of", "SAMPLED_LAW"]

#: Assumption named by a guarantee accounted on sampled laws.
SAMPLED_LAW = "sampled_law"


def _readonly(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, dtype=float)  # a private copy whose memory nobody else holds
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class GaussianLaw:
    """F | secret ~ N(mean, cov): a law given by its moments and taken to be Gaussian."""

    mean: np.ndarray
    cov: np.ndarray

    def __post_init__(self) -> None:
        mean = np.atleast_1d(check_finite_array(self.mean, "mean"))
        if mean.ndim != 1:
            raise fail("mean", "a vector (k,)", described(f"shape {mean.shape}"))
        object.__setattr__(self, "mean", _readonly(mean))
        object.__setattr__(self, "cov", _readonly(check_covariance(self.cov, "cov", mean.shape[0])))

    @property
    def k(self) -> int:
        return int(self.mean.shape[0])


@seal_fields
@dataclass(frozen=True, eq=False)
class FiniteLaw:
    """A law with finitely many values, known exactly: ``points (m, k)`` with ``weights (m,)`` summing to 1.

    Points of weight 0 are dropped and the weights rescaled to sum to 1 (they
    must already sum to 1 within 1e-9). Immutable: the fields refuse
    assignment and the arrays are sealed (:func:`~bayespriv._validation.sealed`).

    Examples
    --------
    The number of heads in two fair coin tosses:

    >>> law = FiniteLaw([0, 1, 2], [0.25, 0.5, 0.25])
    >>> law.mean, law.cov
    (array([1.]), array([[0.5]]))
    """

    points: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        pts, w = _checked_atoms(self.points, self.weights)
        keep = w > 0
        object.__setattr__(self, "points", sealed(pts[keep], float))
        object.__setattr__(self, "weights", sealed(w[keep] / w[keep].sum(), float))

    def __setstate__(self, state: dict) -> None:  # unpickled arrays own writable memory: seal them again
        self.__dict__.update({k: sealed(v, float) if k in ("points", "weights") else v for k, v in state.items()})

    @classmethod
    def stored(cls, points: Any, weights: Any) -> "FiniteLaw":
        """The law exactly as stored (a calibration file): validated like the constructor, kept bit for bit.

        The constructor rescales the weights to sum to 1, which may change
        their last bits; a law read back must not change. Every weight must
        be positive (a stored law has no zero weights).

        Raises
        ------
        ValidationError
            The arrays could not be a law (shapes, non-finite values, weights
            not positive or not summing to 1 within 1e-9).
        """
        pts, w = _checked_atoms(points, weights)
        if not np.all(w > 0):
            raise fail("weights", "positive (a stored law keeps no point of weight 0)", described(f"minimum {float(w.min())!r}"))
        law = cls.__new__(cls)  # the sealed fields accept values only while the object is being built
        object.__setattr__(law, "points", sealed(pts, float))
        object.__setattr__(law, "weights", sealed(w, float))
        law.__dict__.pop(BUILDING, None)
        return law

    @property
    def k(self) -> int:
        """Dimension of the points."""
        return int(self.points.shape[1])

    @property
    def mean(self) -> np.ndarray:
        """Σ_u w_u z_u, ``(k,)``."""
        return self.weights @ self.points

    @property
    def cov(self) -> np.ndarray:
        """Σ_u w_u (z_u − mean)(z_u − mean)ᵀ, ``(k, k)`` (the law's own covariance, not an estimate)."""
        c = self.points - self.mean
        return (c * self.weights[:, None]).T @ c


def _checked_atoms(points: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
    """Points ``(m, k)`` (a vector is ``(m, 1)``) and weights ``(m,)``: finite, non-negative, summing to 1 within 1e-9."""
    pts = check_finite_array(points, "points")
    pts = pts.reshape(-1, 1) if pts.ndim == 1 else pts
    w = check_finite_array(weights, "weights").reshape(-1)
    if pts.ndim != 2 or pts.shape[0] != w.shape[0] or pts.shape[0] == 0 or pts.shape[1] == 0:
        raise fail("points", "an array (m, k) with one row per weight", described(f"shape {pts.shape}, {w.size} weights"))
    if np.any(w < 0) or not abs(float(w.sum()) - 1.0) <= 1e-9:
        raise fail("weights", "non-negative numbers summing to 1", described(f"sum {float(w.sum())!r}"))
    return pts, w


@dataclass(frozen=True, eq=False)
class SampledLaw:
    """A law known through ``draws (n, k)``, independent draws of F(X) | secret."""

    draws: np.ndarray

    def __post_init__(self) -> None:
        d = check_finite_array(self.draws, "draws")
        d = d.reshape(-1, 1) if d.ndim == 1 else d
        if d.ndim != 2 or d.shape[0] < 2:
            raise fail("draws", "an array (n, k) with at least 2 draws", described(f"shape {d.shape}"))
        object.__setattr__(self, "draws", _readonly(d))

    @property
    def k(self) -> int:
        return int(self.draws.shape[1])

    @property
    def n(self) -> int:
        return int(self.draws.shape[0])

    @functools.cached_property
    def mean(self) -> np.ndarray:
        """The draws' mean (computed once; read-only, as the draws are)."""
        return _readonly(self.draws.mean(axis=0))

    @functools.cached_property
    def cov(self) -> np.ndarray:
        """The draws' covariance, ddof 1 (computed once: a scale search asks for it at every step; read-only)."""
        return _readonly(np.atleast_2d(np.cov(self.draws.T, ddof=1)))


Law = Union[GaussianLaw, FiniteLaw, SampledLaw]


@dataclass(frozen=True, eq=False)
class Condition:
    """One condition of the Pufferfish definition: the laws of F under the two secrets of a pair, at one θ."""

    label: str
    law_a: Law
    law_b: Law
    theta: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("law_a", "law_b"):
            if not isinstance(getattr(self, name), (GaussianLaw, FiniteLaw, SampledLaw)):
                raise fail(name, "a GaussianLaw, FiniteLaw or SampledLaw", getattr(self, name))
        if self.law_a.k != self.law_b.k:
            raise fail("law_b", f"a law of the same dimension as law_a ({self.law_a.k})", described(f"k = {self.law_b.k}"))

    @property
    def k(self) -> int:
        return self.law_a.k

    @property
    def kind(self) -> str:
        """``"gaussian"``, ``"finite"``, ``"sampled"`` or ``"mixed"``."""
        kinds = {type(self.law_a), type(self.law_b)}
        if kinds == {GaussianLaw}:
            return "gaussian"
        if kinds == {FiniteLaw}:
            return "finite"
        if GaussianLaw in kinds:
            return "mixed"
        return "sampled"


def _law(member: Any, index: int) -> Law:
    """The law of F under the secret at ``index`` of a calibration member."""
    finite = getattr(member, "finite_laws", None)
    if finite:
        law = finite.get(member.secrets[index].label)
        if law is not None:
            return law
    if member.sample_array is not None:
        return SampledLaw(member.sample_array[index])
    return GaussianLaw(member.mean_array[index], member.cov_array[index])


def conditions_of(calibration: Any) -> tuple[Condition, ...]:
    """Every (θ, pair) condition of ``calibration`` with its two laws.

    Labels and order follow :meth:`~bayespriv.Calibration.pair_constraints`.
    A member with draws gives :class:`SampledLaw`; with exact finite laws (when
    the calibration holds them) :class:`FiniteLaw`; with moments only
    :class:`GaussianLaw`.
    """
    labels = calibration.pair_constraints().labels
    out = []
    for m in calibration.members:
        for p in m.pairs:
            out.append(Condition(labels[len(out)], _law(m, m.index(p.a)), _law(m, m.index(p.b)), m.theta))
    return tuple(out)
