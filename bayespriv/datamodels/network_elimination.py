"""Exact inference on a compiled discrete network by variable elimination, and sampling from it.

A network's joint law is the product of its CPDs. Summing variables out of that product one at a
time (variable elimination: Zhang & Poole 1994; Koller & Friedman 2009, §9.3) gives any marginal at
a cost set by the largest factor it builds — the network's induced width under the elimination
order — instead of the product of the cardinalities of an ancestral set (alarm's BP has 24
ancestors and a 1.5e10-entry joint table, but factors of at most a few thousand entries). The order
is greedy: each step eliminates the variable whose product factor is smallest (min-weight).

Sampling given evidence runs the same elimination and keeps, for each eliminated variable v, the
product factor ψ_v over v and the variables still to be eliminated; drawing in reverse order, v is
drawn from ψ_v(·, values already drawn) normalised — forward filtering, backward sampling, which
gives exact draws of the eliminated variables jointly given the evidence (Koller & Friedman 2009,
§12.1 on sampling from a clique tree). Everything here is vectorised over records: a loop runs over
the variables of the network, never over records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedSecretError

__all__ = ["Factor", "EliminationPlan", "eliminate", "plan_elimination", "sample_eliminated"]


@dataclass(frozen=True)
class Factor:
    """A table over ``scope`` (network node indices), one axis per node in that order."""

    scope: tuple[int, ...]
    table: np.ndarray


def _product(factors: Sequence[Factor], cards: Sequence[int], limit: int, what: str) -> Factor:
    """The product of ``factors`` over the union of their scopes (refused above ``limit`` entries)."""
    scope = tuple(sorted({v for f in factors for v in f.scope}))
    size = math.prod(cards[v] for v in scope)
    if size > limit:
        raise UnsupportedSecretError(
            f"exact inference for {what} needs a factor of {size:.3g} entries over {len(scope)} nodes (the network's "
            f"width under elimination) and at most {limit} are built; pass exact_laws=False to calibrate by "
            "sampling, or put the secret on a node with fewer, smaller ancestors")
    label = {v: a for a, v in enumerate(scope)}
    operands = []
    for f in factors:
        operands += [f.table, [label[v] for v in f.scope]]
    table = np.einsum(*operands, list(range(len(scope))), optimize=len(factors) > 2)
    return Factor(scope, table)


def _pick(pool: list[Factor], remaining: set[int], cards: Sequence[int]) -> int:
    """The variable of ``remaining`` whose elimination builds the smallest product factor (ties: lowest index)."""
    def weight(v: int) -> tuple[int, int]:
        scope = {u for f in pool if v in f.scope for u in f.scope}
        return math.prod(cards[u] for u in scope), v

    return min(remaining, key=weight)


@dataclass(frozen=True)
class EliminationPlan:
    """What eliminating ``order`` left: ψ per eliminated variable (in order) and the factors over the kept ones."""

    order: tuple[int, ...]
    psi: tuple[Factor, ...]
    rest: tuple[Factor, ...]


def plan_elimination(factors: Sequence[Factor], drop: Sequence[int], cards: Sequence[int], limit: int,
                     what: str) -> EliminationPlan:
    """Sum the variables ``drop`` out of the product of ``factors`` (greedy min-weight order), keeping each ψ."""
    pool, remaining = list(factors), set(drop)
    order, psi = [], []
    while remaining:
        v = _pick(pool, remaining, cards)
        remaining.discard(v)
        touching = [f for f in pool if v in f.scope]
        pool = [f for f in pool if v not in f.scope]
        product = _product(touching, cards, limit, what) if touching else Factor((v,), np.ones(cards[v]))
        psi.append(product)
        order.append(v)
        axis = product.scope.index(v)
        pool.append(Factor(tuple(u for u in product.scope if u != v), product.table.sum(axis=axis)))
    return EliminationPlan(tuple(order), tuple(psi), tuple(pool))


def eliminate(factors: Sequence[Factor], keep: Sequence[int], cards: Sequence[int], limit: int,
              what: str) -> np.ndarray:
    """The (unnormalised) table over ``keep`` (axes in that order) of the product of ``factors``, all other
    variables summed out."""
    drop = sorted({v for f in factors for v in f.scope} - set(keep))
    plan = plan_elimination(factors, drop, cards, limit, what)
    out = _product(plan.rest, cards, limit, what) if plan.rest else Factor((), np.ones(()))
    missing = [v for v in keep if v not in out.scope]
    table, scope = out.table, list(out.scope)
    for v in missing:  # a kept variable no factor mentions (cannot happen for an ancestral set; kept for safety)
        table, scope = np.multiply.outer(table, np.ones(cards[v])), scope + [v]
    return np.transpose(table, [scope.index(v) for v in keep])


def sample_eliminated(plan: EliminationPlan, fixed: dict[int, np.ndarray], rng: np.random.Generator) -> None:
    """Draw every variable ``plan`` eliminated, jointly given the variables in ``fixed`` (state index arrays of
    one shape, one entry per record), into ``fixed``: in reverse elimination order, v from ψ_v at the values
    already drawn, normalised. Records whose ψ row sums to 0 (evidence of probability 0) draw the last state."""
    for v, psi in zip(reversed(plan.order), reversed(plan.psi)):
        others = [u for u in psi.scope if u != v]
        table = np.moveaxis(psi.table, psi.scope.index(v), -1)
        rows = table[tuple(fixed[u] for u in others)] if others else np.broadcast_to(
            table, next(iter(fixed.values())).shape + table.shape) if fixed else table
        cdf = np.cumsum(rows, axis=-1)
        total = cdf[..., -1:]
        u = rng.random(total.shape) * total
        fixed[v] = np.minimum((cdf <= u).sum(axis=-1), rows.shape[-1] - 1).astype(np.intp)
