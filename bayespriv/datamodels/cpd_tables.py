"""The CPD tables of a discrete Bayesian network, read once into NumPy arrays indexed by node positions.

A pgmpy ``DiscreteBayesianNetwork`` keeps its CPDs in a list: ``get_cpds(node)``
scans it, so reading every node's CPD that way costs O(n²), and the
``states`` property rebuilds a dictionary over all CPDs on every access.
:func:`read_cpd_tables` walks the list once and returns a frozen
:class:`CPDTables` (states, scopes and float64 value arrays, each axis in
its node's own state order) that the calibration stage reads without
touching pgmpy again.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import described, fail

__all__ = ["CPDTables", "read_cpd_tables", "cpds_by_node", "network_states"]


@dataclass(frozen=True, eq=False)
class CPDTables:
    """The CPDs of a discrete network as arrays over node positions.

    Attributes
    ----------
    nodes : tuple
        The node order (positions).
    states : tuple of tuples
        ``states[k]``: the states of node k, in the order of its own CPD.
    scopes : tuple of tuples of int
        ``scopes[k]``: positions of the CPD's variables (node k first, then its parents in the CPD's order).
    tables : tuple of numpy.ndarray
        ``tables[k]``: the CPD values (float64, axes in ``scopes[k]`` order), every axis permuted to the
        state order of its node's own CPD.
    """

    nodes: tuple[Hashable, ...]
    states: tuple[tuple[Any, ...], ...]
    scopes: tuple[tuple[int, ...], ...]
    tables: tuple[np.ndarray, ...]

    @property
    def cards(self) -> np.ndarray:
        """Number of states of each node (int64)."""
        return np.array([len(s) for s in self.states], dtype=np.int64)


def cpds_by_node(network: Any) -> dict[Hashable, Any]:
    """Node -> its CPD (the first CPD listing it as its variable, as ``get_cpds(node)`` returns), in one pass."""
    out: dict[Hashable, Any] = {}
    for cpd in network.get_cpds():
        out.setdefault(cpd.variable, cpd)
    return out


def network_states(network: Any) -> Mapping[Hashable, list]:
    """Node -> state names, as pgmpy's ``states`` property gives them (computed once, not per node)."""
    states = getattr(network, "states", None)
    return states if isinstance(states, Mapping) else {}


def _aligned(cpd: Any, index: Mapping[Hashable, int], states: Sequence[tuple]) -> np.ndarray:
    """A read-only copy of the CPD's values with every axis in the state order of that axis' node (the memory
    layout is kept: the elimination's einsum then runs the same loops on it as on the CPD's own array)."""
    values = np.asarray(cpd.values, dtype=np.float64)
    for ax, u in enumerate(cpd.variables):
        own = states[index[u]]
        listed = tuple(cpd.state_names[u])
        if listed != own:
            values = np.take(values, [listed.index(s) for s in own], axis=ax)
    out = np.array(values, dtype=np.float64, order="K", copy=True)
    out.setflags(write=False)
    return out


def read_cpd_tables(network: Any, nodes: Sequence[Hashable] | None = None) -> CPDTables:
    """Read every CPD of a discrete Bayesian network once.

    Parameters
    ----------
    network : pgmpy.models.DiscreteBayesianNetwork
    nodes : sequence, optional
        The node order (positions); default ``network.nodes()``.

    Returns
    -------
    CPDTables

    Raises
    ------
    ValidationError
        A node without a CPD.
    """
    order = tuple(network.nodes()) if nodes is None else tuple(nodes)
    index = {v: k for k, v in enumerate(order)}
    cpds = cpds_by_node(network)
    missing = [v for v in order if v not in cpds]
    if missing:
        raise fail("network", "a network with a CPD for every node (check_model passes)",
                   described(f"no CPD for nodes {sorted(map(str, missing))[:12]}"))
    states = tuple(tuple(cpds[v].state_names[v]) for v in order)
    scopes = tuple(tuple(index[u] for u in cpds[v].variables) for v in order)
    tables = tuple(_aligned(cpds[v], index, states) for v in order)
    return CPDTables(order, states, scopes, tables)
