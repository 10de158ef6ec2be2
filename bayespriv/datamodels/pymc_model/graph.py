"""Graph helpers of the PyMC data model: lazy PyMC import, ancestors, shapes, constants, element names.

Read-only questions about a PyTensor / PyMC graph that every route of
:class:`~bayespriv.datamodels.PyMCDataModel` asks: which variables are upstream
of which (:func:`_ancestors`), static shapes, scalar constants, the model pruned
to what some variables depend on, and the parsing of an element name such as
``"theta[2]"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def _pm():
    """Import PyMC lazily (it is slow to import and only this module needs it)."""
    import pymc

    return pymc


def _ancestors(outputs, blockers=()):
    """Ancestors of ``outputs`` (themselves included), in a deterministic traversal order."""
    from pytensor.graph.traversal import ancestors

    return dict.fromkeys(ancestors(list(outputs), blockers=list(blockers)))


def _random_op_types() -> tuple[type, ...]:
    from pymc.distributions.distribution import SymbolicRandomVariable
    from pytensor.tensor.random.op import RandomVariable

    return (RandomVariable, SymbolicRandomVariable)


def _strip_dimshuffle(var):
    from pytensor.tensor.elemwise import DimShuffle

    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    return var


def _scalar_constant(var) -> float | None:
    from pytensor.tensor.basic import get_underlying_scalar_constant_value
    from pytensor.tensor.exceptions import NotScalarConstantError

    try:
        return float(get_underlying_scalar_constant_value(var))
    except (NotScalarConstantError, TypeError, ValueError):
        return None


def _static_shape(var) -> tuple[int, ...] | None:
    shape = var.type.shape
    if all(s is not None for s in shape):
        return tuple(int(s) for s in shape)
    try:
        return tuple(int(s) for s in var.shape.eval())
    except Exception:  # noqa: BLE001 - a shape that depends on random draws
        return None


def _is_deterministic(model, name: str) -> bool:
    """Whether ``name`` is a deterministic of ``model``."""
    return any(v.name == name for v in model.deterministics)


def _prune_to_ancestors(model, keep: Sequence[str]):
    """A new model holding only the variables ``keep`` depends on (and ``keep``).

    Same operation as :func:`pymc.model.transform.basic.prune_vars_detached_from_observed`,
    but for any set of variables.
    """
    from pymc.model.fgraph import ModelVar, fgraph_from_model, model_from_fgraph

    fgraph, memo = fgraph_from_model(model, inlined_views=True)
    targets = [memo[model[name]] for name in keep]
    needed = {v.owner for v in _ancestors(targets) if v.owner is not None}
    for node in [n for n in fgraph.apply_nodes if isinstance(n.op, ModelVar) and n not in needed]:
        if node in fgraph.apply_nodes:
            fgraph.remove_node(node)
    return model_from_fgraph(fgraph, mutate_fgraph=True)


_ELEMENT = re.compile(r"^\s*([^\[\]]+?)\s*\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]\s*$")


def _element(parameter: str) -> tuple[str, tuple[int, ...]] | None:
    """``("theta", (2,))`` for ``"theta[2]"`` (``"w[1, 0]"`` for a matrix); None for a plain name."""
    match = _ELEMENT.match(parameter)
    if match is None:
        return None
    return match.group(1), tuple(int(i) for i in match.group(2).split(","))
