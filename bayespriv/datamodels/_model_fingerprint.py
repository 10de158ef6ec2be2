"""A stable hash of a PyMC model: its graph, distributions, constants, data and transforms.

Used to key cached MCMC posteriors (:mod:`.posterior_cache`): two models with
the same fingerprint have the same log density and the same forward graph, so
:func:`pymc.sample` with the same settings and seed draws the same values.

The graph of every named variable of the model (free, observed, deterministic,
potential, data) and of the observed values is walked depth first, inputs in
order, and each variable is written as text without any object identity:
an applied operation by its class and its ``__props__`` (recursively; the inner
graph of composite operations such as PyMC's symbolic random variables), a
constant or a shared value (``pm.Data``) by its dtype, shape and the SHA-256 of
its bytes, a random generator by its type only (its state is reseeded by every
sampler), a root input by its type and name. Named variables add their name,
role (free, observed, ...) and value transform. Anything that cannot be written
without an object address (an operation without ``__props__`` and no inner
graph, whose ``repr`` shows an address) makes the fingerprint *incomplete*: it
then ends with a random nonce, so it never matches another build of the model
(the cache then only serves the same built model, within one process).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

import numpy as np

__all__ = ["model_fingerprint"]

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_SIMPLE = (type(None), bool, int, float, complex, str, bytes)
_MAX_DEPTH = 12


def _qualname(cls: type) -> str:
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', getattr(cls, '__name__', '?'))}"


def _array(value: Any) -> str:
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError("object array")
    digest = hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()
    return f"array({arr.dtype.str},{arr.shape},{digest})"


class _Writer:
    """Text of a graph with variables numbered in a deterministic depth-first order."""

    def __init__(self) -> None:
        self.complete = True
        self.lines: list[str] = []
        self.ids: dict[Any, int] = {}

    # -- values --------------------------------------------------------------------------------
    def token(self, obj: Any, depth: int = 0) -> str:
        """A text of ``obj`` without object identities (``self.complete`` False when impossible)."""
        if depth > _MAX_DEPTH:
            self.complete = False
            return "deep"
        if isinstance(obj, _SIMPLE):
            return f"{type(obj).__name__}:{obj!r}"
        if isinstance(obj, (np.ndarray, np.generic)):
            return _array(obj)
        if isinstance(obj, (tuple, list)):
            return "[" + ",".join(self.token(v, depth + 1) for v in obj) + "]"
        if hasattr(obj, "items") and callable(obj.items):
            return "{" + ",".join(sorted(f"{self.token(k, depth + 1)}:{self.token(v, depth + 1)}"
                                         for k, v in obj.items())) + "}"
        if isinstance(obj, type):
            return f"type:{_qualname(obj)}"
        if callable(obj) and hasattr(obj, "__code__"):
            code = obj.__code__
            return f"code:{_qualname(obj)}:{code.co_code.hex()}:{self.token(code.co_consts, depth + 1)}"
        if hasattr(obj, "fgraph") and getattr(obj, "fgraph", None) is not None:
            return self._inner(obj, depth)
        props = getattr(type(obj), "__props__", None)
        if props is not None:
            fields = ",".join(f"{p}={self.token(getattr(obj, p, None), depth + 1)}" for p in props)
            return f"{_qualname(type(obj))}({fields})"
        state = getattr(obj, "__dict__", None)
        if isinstance(state, dict) and not state:
            return f"{_qualname(type(obj))}()"
        text = repr(obj)
        if _ADDRESS.search(text):
            self.complete = False
        return f"{_qualname(type(obj))}:{text}"

    def _inner(self, op: Any, depth: int) -> str:
        """An operation holding an inner graph (OpFromGraph, Composite): the inner graph's own text."""
        inner = _Writer()
        inner.walk(list(op.fgraph.outputs), roots=list(op.fgraph.inputs))
        self.complete &= inner.complete
        props = getattr(type(op), "__props__", None) or ()
        extra = ",".join(f"{p}={self.token(getattr(op, p, None), depth + 1)}" for p in props if p != "fgraph")
        digest = hashlib.sha256("\n".join(inner.lines).encode()).hexdigest()
        return f"{_qualname(type(op))}[{digest}]({extra})"

    # -- graph ---------------------------------------------------------------------------------
    def _root(self, var: Any, roots: list) -> str:
        from pytensor.compile.sharedvalue import SharedVariable
        from pytensor.graph.basic import Constant
        from pytensor.tensor.random.type import RandomType

        kind = str(var.type)
        if var in roots:
            return f"input{roots.index(var)}:{kind}"
        if isinstance(var.type, RandomType):
            return f"rng:{kind}"
        if isinstance(var, Constant):
            return f"const:{kind}:{self.token(var.data)}"
        if isinstance(var, SharedVariable):
            return f"shared:{kind}:{var.name}:{self.token(var.get_value(borrow=True))}"
        return f"root:{kind}:{var.name}"

    def walk(self, outputs: list, roots: list | None = None) -> None:
        """Number every variable upstream of ``outputs`` (post-order, inputs in order) and write it."""
        roots = roots or []
        stack: list[tuple[Any, bool]] = [(v, False) for v in reversed(outputs)]
        while stack:
            var, expanded = stack.pop()
            if var in self.ids:
                continue
            node = var.owner
            if node is None:
                self._add(var, self._root(var, roots))
                continue
            if not expanded:
                stack.append((var, True))
                stack.extend((i, False) for i in reversed(node.inputs) if i not in self.ids)
                continue
            inputs = ",".join(str(self.ids[i]) for i in node.inputs)
            index = node.outputs.index(var)
            self._add(var, f"{self.token(node.op)}({inputs})[{index}]:{var.type}")

    def _add(self, var: Any, text: str) -> None:
        self.ids[var] = len(self.ids)
        self.lines.append(text)


def model_fingerprint(model: Any) -> tuple[str, bool]:
    """(hex SHA-256 of ``model``'s graph, whether it is complete); see the module notes.

    An incomplete fingerprint carries a random nonce: it matches nothing but itself.
    """
    writer = _Writer()
    named = list(model.named_vars.items())
    observed_values = [model.rvs_to_values[v] for v in model.observed_RVs]
    writer.walk([v for _, v in named] + observed_values)
    roles = []
    free, obs = set(model.free_RVs), set(model.observed_RVs)
    dets, pots = set(model.deterministics), set(model.potentials)
    for name, var in named:
        role = ("free" if var in free else "observed" if var in obs else "deterministic" if var in dets
                else "potential" if var in pots else "other")
        transform = model.rvs_to_transforms.get(var) if var in free else None
        t = "none" if transform is None else f"{_qualname(type(transform))}{writer.token(vars(transform))}"
        roles.append(f"{name}:{role}:{writer.ids.get(var)}:{t}")
    for v, value in zip(model.observed_RVs, observed_values):
        roles.append(f"observed-value:{v.name}:{writer.ids.get(value)}")
    roles.append(f"check_bounds:{bool(getattr(model, 'check_bounds', True))}")
    text = "\n".join(writer.lines + roles)
    if not writer.complete:
        text += "\nnonce:" + uuid.uuid4().hex
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), writer.complete
