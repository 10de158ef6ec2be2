"""Scores of Markov quilts: Algorithm 2's σ(Q) = Δ_{A∩N} F / (ε − e) and the dominance rules.

:class:`QuiltScore` is one scored quilt of a sensitive node (its column
sensitivity Δ_{A∩N} F and max-influence e_Θ(X_Q | X_i)). The functions here
compare scored quilts without ε where they can: a quilt dominated by a
sub-quilt with no larger Δ never scores lower (e only grows with Q), and the
(Δ, e_θ) Pareto front holds the best quilt at every ε and for every θ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .enumeration import Quilt
from ..influence import MaxInfluence

__all__ = ["QuiltScore"]


@dataclass(frozen=True)
class QuiltScore:
    """One quilt of a sensitive node with what Algorithm 2 needs.

    Attributes
    ----------
    quilt : Quilt
    sensitivity : float
        Δ_{A∩N} F: the query's column sensitivity over the queried attributes
        in the nearby set (0 when none is nearby).
    influence : MaxInfluence
        e_Θ(X_Q | X_i).
    """

    quilt: Quilt
    sensitivity: float
    influence: MaxInfluence

    @property
    def max_influence(self) -> float:
        """The max-influence of the quilt on the node (``influence.value``)."""
        return float(self.influence.value)

    def score(self, epsilon: float) -> float:
        """σ(Q) = Δ_{A∩N} F / (ε − e), or ``inf`` when e ≥ ε (not usable)."""
        e = self.max_influence
        if not e < epsilon:
            return math.inf
        return 0.0 if self.sensitivity == 0 else self.sensitivity / (epsilon - e)


def _undominated(z: np.ndarray, sens: np.ndarray, exhaustive: bool, n: int, node: int) -> np.ndarray:
    """Quilts not dominated by a strict sub-quilt with Δ no larger (bool mask).

    e(Q) ≤ e(Q') for Q ⊆ Q' (marginalising cannot increase a max-ratio), so a
    quilt with a sub-quilt of no larger Δ never scores lower at any ε.
    """
    if exhaustive:
        # Rows are all subsets; index them by their bitmask over the other nodes, then
        # min over strict subsets by a sum-over-subsets DP.
        others = [j for j in range(n) if j != node]
        masks = (z[:, others].astype(np.int64) << np.arange(len(others), dtype=np.int64)).sum(axis=1)
        by_mask = np.empty(1 << len(others))
        by_mask[masks] = sens
        sub = by_mask.copy()
        full = np.arange(1 << len(others))
        for b in range(len(others)):
            has = full[(full >> b) & 1 == 1]
            sub[has] = np.minimum(sub[has], sub[has ^ (1 << b)])
        strict = np.full(1 << len(others), np.inf)
        for b in range(len(others)):
            has = full[(full >> b) & 1 == 1]
            strict[has] = np.minimum(strict[has], sub[has ^ (1 << b)])
        return sens < strict[masks]
    return ~(_strict_subsets(z) & (sens[:, None] <= sens[None, :])).any(axis=0)


def _strict_subsets(z: np.ndarray) -> np.ndarray:
    """``out[a, b]``: row a is a strict subset of row b (bool S × S), on the bits of the columns in use."""
    used = z[:, z.any(axis=0)]
    packed = np.packbits(used, axis=1)  # S × words
    sizes = z.sum(axis=1)
    inside = ~(packed[:, None, :] & ~packed[None, :, :]).any(axis=2)  # a ⊆ b
    return inside & (sizes[:, None] < sizes[None, :])


def _scores(cands: Sequence[QuiltScore], n_members: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(σ(θ, Q) as members × candidates, e_θ(Q) as members × candidates)."""
    if not cands:
        return np.full((n_members, 0), np.inf), np.full((n_members, 0), np.inf)
    e = np.stack([c.influence.member_values(n_members) for c in cands], axis=1)
    d = np.array([c.sensitivity for c in cands], dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma = np.where(d == 0, 0.0, d / (epsilon - e))
    return np.where(e < epsilon, sigma, np.inf), e


def _best_per_member(cands: Sequence[QuiltScore], n_members: int, epsilon: float) -> np.ndarray:
    """Index of the best candidate for each member θ (−1: none usable), with :meth:`QuiltCalibration.best`'s ties."""
    sigma, e = _scores(cands, n_members, epsilon)
    if sigma.shape[1] == 0:
        return np.full(n_members, -1)
    size = np.array([len(c.quilt.quilt) for c in cands])
    out = np.empty(n_members, dtype=np.int64)
    for m in range(n_members):
        order = np.lexsort((np.arange(len(cands)), size, e[m], sigma[m]))
        out[m] = order[0] if np.isfinite(sigma[m, order[0]]) else -1
    return out


def _pareto_front(sens: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Entries not dominated in (Δ, e_θ for every θ) by an earlier-or-better entry (bool mask).

    ``e`` is members × entries. Entry j is dominated by k when Δ_k ≤ Δ_j and e_k ≤ e_j for every θ, strictly
    somewhere (or equal everywhere and k < j): at every ε and for every θ, k scores no worse than j.
    """
    le = (sens[:, None] <= sens[None, :]) & (e[:, :, None] <= e[:, None, :]).all(axis=0)  # le[k, j]: k ≤ j
    eq = le & le.T
    idx = np.arange(len(sens))
    dominates = (le & ~eq) | (eq & (idx[:, None] < idx[None, :]))
    return ~dominates.any(axis=0)
