"""Discrete Bayesian networks rebuilt from plain tables (what a saved calibration stores), so that no
layer after the data models touches pgmpy."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CPDTable", "discrete_network", "pgmpy_network_kind"]


def pgmpy_network_kind(obj: Any) -> str | None:
    """``"discrete"`` for a pgmpy ``DiscreteBayesianNetwork``, ``"gaussian"`` for a
    ``LinearGaussianBayesianNetwork``, None for anything else (the one place later layers learn it)."""
    try:
        from pgmpy.models import DiscreteBayesianNetwork, LinearGaussianBayesianNetwork
    except ImportError:  # pragma: no cover - pgmpy is a dependency
        return None
    if isinstance(obj, LinearGaussianBayesianNetwork):
        return "gaussian"
    if isinstance(obj, DiscreteBayesianNetwork):
        return "discrete"
    return None


@dataclass(frozen=True)
class CPDTable:
    """One conditional probability table: its variable first, then its evidence (pgmpy's order).

    Attributes
    ----------
    variables : tuple
        The CPD's variable, then its evidence variables.
    cardinality : tuple of int
        States of each, in the same order.
    values : ndarray of shape (cardinality[0], prod(cardinality[1:]))
    states : mapping
        Variable -> its state names, in order.
    """

    variables: tuple[Hashable, ...]
    cardinality: tuple[int, ...]
    values: np.ndarray
    states: Mapping[Hashable, Sequence[Any]]


def discrete_network(nodes: Sequence[Hashable], edges: Sequence[tuple[Hashable, Hashable]],
                     cpds: Sequence[CPDTable]) -> Any:
    """A checked pgmpy ``DiscreteBayesianNetwork`` with these nodes, edges and CPDs, in this order.

    Examples
    --------
    >>> import numpy as np
    >>> net = discrete_network(["a"], [], [CPDTable(("a",), (2,), np.array([[0.3], [0.7]]), {"a": [0, 1]})])
    >>> sorted(net.nodes())
    ['a']
    """
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork()
    net.add_nodes_from(list(nodes))
    net.add_edges_from(list(edges))
    for c in cpds:
        evidence = list(c.variables[1:])
        net.add_cpds(TabularCPD(c.variables[0], c.cardinality[0], c.values, evidence=evidence or None,
                                evidence_card=list(c.cardinality[1:]) or None,
                                state_names={v: list(s) for v, s in c.states.items()}))
    net.check_model()
    return net
