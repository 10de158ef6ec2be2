"""Exact max-influence of a discrete network over parameters, from the joint table P(φ_Q, φ_i).

One fixed-order variable elimination (:class:`~bayespriv.networks.elimination.DiscreteTables`) gives the
joint table; the maximum of log P(x | a) / P(x | b) runs over the whole table at once, with reductions that
give NumPy's bits faster on tall tables.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable
from typing import Any

import numpy as np

from bayespriv.errors import ValidationError
from ..elimination import MAX_FACTOR, DiscreteTables, _float_product
from .influence_result import MaxInfluence

#: Tables with at least this many rows have their column sums accumulated row after row (same bits).
_TALL = 1024
#: Largest joint table P(φ_Q, φ_i) the exact discrete computation builds.
MAX_JOINT_STATES = 2**22


def _discrete_influence(tables: DiscreteTables, plan: Any, node: Hashable, quilt: tuple,
                        max_factor: int = MAX_FACTOR) -> MaxInfluence:
    """e(Q | i) of one discrete network from the joint table P(φ_Q, φ_i) (fixed-order variable elimination)."""
    index = tables.index
    cards = {v: tables.card_list[index[v]] for v in (*quilt, node)}
    size = int(_float_product(list(cards[v] for v in (*quilt, node))))
    if size > MAX_JOINT_STATES:
        raise ValidationError(
            f"quilt must have a joint table P(φ_Q, φ_i) of at most {MAX_JOINT_STATES} states for the exact "
            f"max-influence; got {size} states for Q = {sorted(map(str, quilt))}"
        )
    # C order first: the column sums below add in an order set by the memory layout, which must not depend on
    # how the elimination laid out its factors
    joint = np.ascontiguousarray(tables.joint(plan, max_factor)).reshape(-1, cards[node])
    states = {v: tables.states[index[v]] for v in (*quilt, node)}
    p_node = _column_sums(joint)
    possible = np.flatnonzero(p_node > 0)
    frozen_q = frozenset(quilt)
    if possible.size < 2:
        return MaxInfluence(0.0, node, frozen_q, None, None,
                            f"φ_{node} has fewer than two values of positive probability: no pair of secrets")
    # P(φ_Q = x | φ_i = a), rows x, columns a (every column when all are possible: the same quotients)
    cond = joint / p_node if possible.size == joint.shape[1] else joint[:, possible] / p_node[possible]
    positive = cond > 0
    any_pos, all_pos = _row_any(positive), _row_all(positive)
    mixed = np.flatnonzero(any_pos & ~all_pos)

    def assignment(row: int) -> dict:
        idx = np.unravel_index(row, [cards[v] for v in quilt])
        return {v: states[v][int(k)] for v, k in zip(quilt, idx)}

    if mixed.size:
        row = int(mixed[0])
        a = int(possible[np.flatnonzero(positive[row])[0]])
        b = int(possible[np.flatnonzero(~positive[row])[0]])
        pair = (states[node][a], states[node][b])
        return MaxInfluence(math.inf, node, frozen_q, assignment(row), pair,
                            f"P(φ_Q = x | φ_{node} = {pair[1]!r}) = 0 < P(φ_Q = x | φ_{node} = {pair[0]!r}): "
                            "the ratio is unbounded")
    rows = np.flatnonzero(all_pos)
    logc = np.log(cond if rows.size == cond.shape[0] else cond[rows])
    spread = _row_max(logc) - _row_min(logc)
    r = int(np.argmax(spread))
    a = int(possible[int(np.argmax(logc[r]))])
    b = int(possible[int(np.argmin(logc[r]))])
    value = float(spread[r])
    reason = "exact (variable elimination over the joint table)" if value > 0 else "φ_Q does not depend on φ_i"
    return MaxInfluence(value, node, frozen_q, assignment(int(rows[r])), (states[node][a], states[node][b]), reason)


def _column_sums(joint: np.ndarray) -> np.ndarray:
    """``joint.sum(axis=0)``, bit for bit: NumPy adds the rows of a C-ordered table one after the other, as
    ``add.accumulate`` does, which is faster on tall tables than the strided reduction."""
    if joint.ndim != 2 or joint.shape[0] < _TALL or joint.shape[1] < 2 or not joint.flags.c_contiguous:
        return joint.sum(axis=0)
    return np.add.accumulate(joint, axis=0)[-1]


def _row_max(table: np.ndarray) -> np.ndarray:
    """``table.max(axis=1)`` of a 2-D table without NaN, one elementwise maximum per column (exact, and
    faster than a reduction over short rows)."""
    return functools.reduce(np.maximum, table.T) if table.shape[1] else table.max(axis=1)


def _row_min(table: np.ndarray) -> np.ndarray:
    """``table.min(axis=1)`` of a 2-D table without NaN, one elementwise minimum per column (exact)."""
    return functools.reduce(np.minimum, table.T) if table.shape[1] else table.min(axis=1)



def _row_any(table: np.ndarray) -> np.ndarray:
    """``table.any(axis=1)`` of a 2-D bool table, one elementwise OR per column."""
    return functools.reduce(np.logical_or, table.T) if table.shape[1] else table.any(axis=1)


def _row_all(table: np.ndarray) -> np.ndarray:
    """``table.all(axis=1)`` of a 2-D bool table, one elementwise AND per column."""
    return functools.reduce(np.logical_and, table.T) if table.shape[1] else table.all(axis=1)
