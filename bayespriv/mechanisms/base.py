"""What every mechanism shares: its Guarantee, its noise, and release.

A mechanism is built from a :class:`~bayespriv.calibration.Calibration` and
(ε, δ); it knows its noise and its :class:`Guarantee` before it sees any data
(ask the cost first). ``release`` applies the calibration's query to a dataset;
``release_value`` takes an answer F(X) computed elsewhere. With a ledger, the
budget is checked and spent *before* any noise is drawn.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
import pandas as pd

from .._validation import described, check_choice, check_delta, check_epsilon, check_finite_array, fail
from ..calibration import Calibration
from ..errors import ParameterTypeError, ValidationError
from ..random import RNGLike, release_generator
from .noise import GAUSSIAN_CALIBRATIONS, gaussian_radius, sample_gaussian, sample_laplace

__all__ = ["Guarantee", "Release", "Mechanism", "LedgerLike"]


@dataclass(frozen=True)
class Guarantee:
    """What a mechanism promises.

    Attributes
    ----------
    epsilon, delta : float
        (ε, δ)-Pufferfish privacy for the calibration's secret pairs and Θ.
    confidence : float or None
        Probability over the calibration's own randomness that the guarantee
        holds (1.0: exact; None: plug-in estimates, no probability claimed).
    assumptions : tuple of str
        Named assumptions the proof needs, e.g. ``"gaussian_query"``,
        ``"translation"``, ``"equal_covariance"``, ``"estimated_moments"``,
        ``"monte_carlo_clt"``.
    theorem : str
        Where the proof is.
    """

    epsilon: float
    delta: float
    confidence: float | None
    assumptions: tuple[str, ...] = ()
    theorem: str = ""

    def __str__(self) -> str:
        conf = "plug-in" if self.confidence is None else f"confidence {self.confidence:g}"
        assume = ", ".join(self.assumptions) or "none"
        return f"(ε={self.epsilon:g}, δ={self.delta:g}) [{conf}; assumes: {assume}; {self.theorem}]"


@dataclass(frozen=True)
class Release:
    """A noisy answer with its guarantee. The true answer is never stored.

    Attributes
    ----------
    value : ndarray (k,)
    guarantee : Guarantee
    mechanism : str
    seeded : bool
        True when the caller seeded the noise (replayable: for testing only).
    query : str or None
    component_names : tuple of str
    variables : tuple of str
        Columns the released value depends on (for per-variable ε accounting).
    protected : tuple of str
        Attributes whose secrets the guarantee protects (budget names).
    """

    value: np.ndarray
    guarantee: Guarantee
    mechanism: str
    seeded: bool
    query: str | None = None
    component_names: tuple[str, ...] = field(default=())
    variables: tuple[str, ...] = field(default=())
    protected: tuple[str, ...] = field(default=())

    def to_series(self) -> pd.Series:
        return pd.Series(self.value, index=list(self.component_names) or None, name=self.query)


class LedgerLike(Protocol):
    """What ``release(..., ledger=...)`` needs: ``charge`` checks and spends the
    budget for a mechanism, raising :class:`~bayespriv.BudgetExceededError`
    (and spending nothing) when it would be exceeded."""

    def charge(self, mechanism: "Mechanism", *, seeded: bool | None = None) -> Any: ...


class Mechanism(abc.ABC):
    """Base of every mechanism. Subclasses set the noise in ``__init__``.

    Exposes, before any data: :attr:`guarantee`, :attr:`noise_cov` and, for
    Laplace noise, :attr:`noise_scale` and :attr:`noise_basis`.
    """

    theorem: ClassVar[str] = ""
    #: Assumptions of the mechanism's proof (the calibration's are added).
    proof_assumptions: ClassVar[tuple[str, ...]] = ()

    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float = 0.0) -> None:
        if not isinstance(calibration, Calibration):
            raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
        self.calibration = calibration
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, allow_zero=True)
        self._gaussian_cov: np.ndarray | None = None
        self._laplace: tuple[np.ndarray, np.ndarray] | None = None

    # -- noise (set by subclasses) ------------------------------------------------------
    def _set_gaussian(self, cov: np.ndarray) -> None:
        cov = np.array(cov, dtype=float)
        cov.setflags(write=False)
        self._gaussian_cov = cov

    def _set_laplace(self, scale: np.ndarray, basis: np.ndarray) -> None:
        scale = np.array(scale, dtype=float).reshape(-1)
        basis = np.array(basis, dtype=float).reshape(self.k, scale.shape[0])
        scale.setflags(write=False)
        basis.setflags(write=False)
        self._laplace = (scale, basis)

    def _set_isotropic(self, noise: str, l1: float, l2: float, gaussian_calibration: str) -> None:
        """Laplace noise of scale ``l1/ε`` per component, or N(0, (l2/r*)² I).

        ``l1`` / ``l2`` are the L1 / L2 sensitivities the noise must cover
        (Laplace mechanism: Dwork & Roth 2014, Thm 3.6; Gaussian: r*(ε, δ)).
        Sets ``noise_kind``, ``sensitivity`` and, for Gaussian noise,
        ``radius`` and ``sigma``.
        """
        self.noise_kind = check_noise(noise)
        self.gaussian_calibration = gaussian_calibration
        if self.noise_kind == "laplace":
            self.sensitivity = float(l1)
            self._set_laplace(np.full(self.k, self.sensitivity / self.epsilon), np.eye(self.k))
        else:
            self.radius = check_gaussian_params(self, gaussian_calibration)
            self.sensitivity = float(l2)
            self.sigma = self.sensitivity / self.radius
            self._set_gaussian(self.sigma**2 * np.eye(self.k))

    @property
    def k(self) -> int:
        return self.calibration.k

    @property
    def protected(self) -> tuple[str, ...]:
        """Attributes whose secrets this mechanism protects (a ledger charges these budgets)."""
        return tuple(dict.fromkeys(s.attribute for p in self.calibration.pairs for s in p.secrets))

    @property
    def variables(self) -> tuple[str, ...]:
        """Columns the released value depends on (empty when the query is unknown)."""
        q = self.calibration.query
        return q.columns if q is not None else ()

    @property
    def noise(self) -> str:
        return "laplace" if self._laplace is not None else "gaussian"

    @property
    def noise_cov(self) -> np.ndarray:
        """Covariance (k × k) of the added noise (for Laplace: 2 B diag(b²) Bᵀ)."""
        if self._laplace is not None:
            scale, basis = self._laplace
            return 2.0 * (basis * scale**2) @ basis.T
        return self._gaussian_cov

    @property
    def noise_scale(self) -> np.ndarray | None:
        """Laplace scales b (d,), or None for Gaussian noise."""
        return None if self._laplace is None else self._laplace[0]

    @property
    def noise_basis(self) -> np.ndarray | None:
        """Laplace directions (k × d, columns), or None for Gaussian noise."""
        return None if self._laplace is None else self._laplace[1]

    @property
    def noiseless(self) -> bool:
        return not np.any(self.noise_cov)

    @property
    def expected_abs_error(self) -> np.ndarray:
        """E|noise| per component (exact): σ√(2/π) for Gaussian noise; for
        Laplace noise along the coordinate axes, the scale b."""
        if self._laplace is None:
            return np.sqrt(2.0 / math.pi) * np.sqrt(np.clip(np.diag(self._gaussian_cov), 0, None))
        scale, basis = self._laplace
        if np.all((basis != 0).sum(axis=1) <= 1):
            return np.abs(basis) @ scale
        raise ValidationError("expected_abs_error is exact only for axis-aligned Laplace noise; use noise_cov instead")

    # -- guarantee ---------------------------------------------------------------------
    def _guarantee(self, delta: float | None = None, extra: tuple[str, ...] = ()) -> "Guarantee":
        cal = self.calibration
        assumptions = tuple(dict.fromkeys(self.proof_assumptions + extra + cal.assumptions))
        return Guarantee(self.epsilon, self.delta if delta is None else delta, cal.confidence, assumptions, self.theorem)

    @property
    def guarantee(self) -> Guarantee:
        return self._guarantee()

    # -- release -------------------------------------------------------------------------
    def release(self, dataset: pd.DataFrame, *, rng: RNGLike = None, ledger: LedgerLike | None = None) -> Release:
        """Compute the calibration's query on ``dataset`` and add the noise."""
        query = self.calibration.query
        if query is None:
            raise ValidationError(
                "release needs a calibration with a query; this one has none (built with from_moments(query=None)). "
                "Use release_value(answer) with an answer computed elsewhere."
            )
        return self.release_value(query(dataset), rng=rng, ledger=ledger)

    def release_value(self, answer: Any, *, rng: RNGLike = None, ledger: LedgerLike | None = None) -> Release:
        """Add the noise to an answer F(X) of shape ``(k,)`` computed elsewhere."""
        value = np.atleast_1d(check_finite_array(answer, "answer"))
        if value.shape != (self.k,):
            raise fail("answer", f"of shape ({self.k},) like the calibrated query", described(f"shape {value.shape}"))
        if ledger is not None:
            ledger.charge(self, seeded=rng is not None)  # raises before any noise is drawn
        gen, seeded = release_generator(rng)
        if self._laplace is not None:
            noise = sample_laplace(*self._laplace, gen)
        else:
            noise = sample_gaussian(self._gaussian_cov, gen)
        q = self.calibration.query
        out = value + noise
        out.setflags(write=False)
        return Release(out, self.guarantee, type(self).__name__, seeded, q.name if q else None,
                       self.calibration.component_names, self.variables, self.protected)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, delta={self.delta:g}, noise={self.noise}, k={self.k})"


def check_noise(noise: str) -> str:
    return check_choice(noise, "noise", ("gaussian", "laplace"))


def check_gaussian_params(mech: Mechanism, gaussian_calibration: str) -> float:
    """Validate δ for Gaussian noise and return r*(ε, δ)."""
    check_choice(gaussian_calibration, "gaussian_calibration", GAUSSIAN_CALIBRATIONS)
    check_delta(mech.delta)
    return gaussian_radius(mech.epsilon, mech.delta, gaussian_calibration)
