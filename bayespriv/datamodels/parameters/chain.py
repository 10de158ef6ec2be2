"""A finite-state Markov chain as Θ: its initial distribution and transition table.

The Θ side of the chain pipeline (MQM of Song, Wang & Chaudhuri 2017):
:class:`MarkovChain` holds and validates the tables of one chain
X_1 → X_2 → … → X_T over labelled states. The max-influences of its window
quilts are computed from these tables by
:func:`~bayespriv.networks.calibrate_chain`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._validation import check_finite_array, fail, sealed

__all__ = ["MarkovChain"]


@dataclass(frozen=True, eq=False)
class MarkovChain:
    """A finite-state Markov chain X_1 → X_2 → … → X_T.

    Parameters
    ----------
    transition : array (k, k)
        Row-stochastic: ``transition[s, t] = P(X_{j+1} = t | X_j = s)``.
    initial : array (k,)
        Distribution of X_1.
    states : sequence, optional
        Labels of the states (default 0..k−1), as they appear in the data.

    Examples
    --------
    >>> import bayespriv as bp
    >>> weather = bp.MarkovChain([[0.9, 0.1], [0.2, 0.8]], initial=[0.5, 0.5], states=["dry", "rain"])
    >>> weather.k, weather.states
    (2, ('dry', 'rain'))
    >>> bp.MarkovChain.stationary([[0.9, 0.1], [0.2, 0.8]]).initial.round(4).tolist()  # started in equilibrium
    [0.6667, 0.3333]
    """

    transition: np.ndarray
    initial: np.ndarray
    states: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        p = check_finite_array(self.transition, "transition", ndim=2)
        if p.shape[0] != p.shape[1] or p.shape[0] < 2:
            raise fail("transition", "a square matrix with at least 2 states", f"shape {p.shape}")
        if np.any(p < 0) or not np.allclose(p.sum(axis=1), 1.0, atol=1e-12):
            raise fail("transition", "row-stochastic (non-negative rows summing to 1)", p.tolist())
        q = check_finite_array(self.initial, "initial", ndim=1)
        if q.shape != (p.shape[0],) or np.any(q < 0) or not math.isclose(q.sum(), 1.0, abs_tol=1e-12):
            raise fail("initial", f"a probability vector of length {p.shape[0]}", q.tolist())
        p = p / p.sum(axis=1, keepdims=True)
        q = q / q.sum()
        object.__setattr__(self, "transition", sealed(p))
        object.__setattr__(self, "initial", sealed(q))
        states = tuple(range(p.shape[0])) if self.states is None else tuple(self.states)
        if len(states) != p.shape[0] or len(set(states)) != len(states):
            raise fail("states", f"{p.shape[0]} distinct labels", self.states)
        object.__setattr__(self, "states", states)

    @property
    def k(self) -> int:
        """Number of states of the chain."""
        return int(self.transition.shape[0])

    @classmethod
    def stationary(cls, transition: Any, states: Sequence[Any] | None = None) -> "MarkovChain":
        """The chain started from a stationary distribution of ``transition``."""
        p = check_finite_array(transition, "transition", ndim=2)
        w, vecs = np.linalg.eig(p.T)
        j = int(np.argmin(np.abs(w - 1.0)))
        pi = np.abs(np.real(vecs[:, j]))
        return cls(p, pi / pi.sum(), None if states is None else tuple(states))
