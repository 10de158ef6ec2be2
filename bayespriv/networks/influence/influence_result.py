"""The result of a max-influence computation: :class:`MaxInfluence` (value, where it is attained, why)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bayespriv._validation import fail

__all__ = ["MaxInfluence"]


@dataclass(frozen=True)
class MaxInfluence:
    """The max-influence e_Θ(X_Q | X_i) and where it is attained.

    Attributes
    ----------
    value : float
        e ≥ 0, or ``math.inf`` (see ``reason``).
    node : hashable
        The sensitive parameter φ_i.
    quilt : frozenset
        The set Q.
    assignment : mapping or None
        The values of φ_Q attaining the maximum (None when there is no maximiser:
        empty Q, fewer than two possible values of φ_i, a Gaussian network, or
        — continuous parameters — a supremum reached only as a limit at an
        edge of a support).
    pair : tuple or None
        ``(a, b)``: the values of φ_i in the numerator and the denominator.
    reason : str
        How the value came about (in particular why it is infinite or 0).
    member : any
        For a family: the worst member (its index in the sequence, or its
        parameters for ``builder`` + ``grid``); None for a single network.
    exact : bool
        True when the value is computed exactly (discrete and linear Gaussian
        networks, and 0 for parameters d-separated from φ_i); False for a
        numerical estimate (continuous parameters).
    margin : float
        For a numerical estimate: the refinement margin already added to
        ``value`` (|grid maximum at 2G − grid maximum at G|); 0 otherwise.
    assumptions : tuple of str
        What a guarantee resting on this value assumes beyond the network:
        ``"numerical_influence"`` for a numerical estimate, plus
        ``"truncated_prior"`` when user ``bounds`` cut a parameter's support
        (Θ restricted to the bounds).
    per_member : tuple of float or None
        For a family: e_θ(X_Q | X_i) of every member θ, in the family's order
        (``value`` is their maximum); None for a single network. The quilt
        mechanisms use it to choose the best quilt per θ.
    """

    value: float
    node: Hashable
    quilt: frozenset = field(default_factory=frozenset)
    assignment: Mapping[Hashable, Any] | None = None
    pair: tuple[Any, Any] | None = None
    reason: str = ""
    member: Any = None
    exact: bool = True
    margin: float = 0.0
    assumptions: tuple[str, ...] = ()
    per_member: tuple[float, ...] | None = None

    def __float__(self) -> float:
        return float(self.value)

    @property
    def finite(self) -> bool:
        """Whether the max-influence is finite (an infinite one gives no quilt bound)."""
        return math.isfinite(self.value)

    def __str__(self) -> str:
        return f"e({sorted(map(str, self.quilt))} | {self.node}) = {self.value:.6g} ({self.reason})"

    def member_values(self, n_members: int = 1) -> np.ndarray:
        """e_θ for each of ``n_members`` members (a single network's value repeated when ``per_member`` is None)."""
        if self.per_member is None:
            return np.full(n_members, float(self.value))
        if len(self.per_member) != n_members:
            raise fail("n_members", f"the family size {len(self.per_member)}", n_members)
        return np.asarray(self.per_member, dtype=float)

