"""Pivots of a secret on a deterministic: the free variable element in which it is affine.

The event D[i] = a on a deterministic D has probability zero; its conditional
law is reached through a *pivot* (:meth:`PivotFinder.pivot`), found here by probing
D[i] and its gradients at random points of the unconstrained space.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .graph import _ancestors, _pm, _static_shape
from .runtime import RuntimeSource


class PivotFinder:
    """Pivot search of the secrets of a :class:`~bayespriv.datamodels.PyMCDataModel` on deterministics.

    Parameters
    ----------
    runtime : callable
        The data model's runtime lookup (:data:`~bayespriv.datamodels.pymc_model.runtime.RuntimeSource`): the
        built model, and the per-process memo of pivots.
    find : callable, optional
        ``find(name, index)`` -> (members, gaussian, how) or the reason there is none (the data model's hook,
        whose default is :meth:`find`).
    """

    def __init__(self, runtime: RuntimeSource, find: Callable[[str, tuple[int, ...]], Any] | None = None) -> None:
        self._runtime = runtime
        self._find_hook = find or self.find

    def pivot(self, name: str, index: tuple[int, ...]):
        """(members, gaussian, why) for the secret D[index] = a, or the reason there is none.

        The event D[i] = a has probability zero; its conditional law is that of the random
        variable D[i] (its disintegration). A *pivot* is a scalar element w = W[k] of a free
        random variable W such that D[i] = α + β·w with α and β functions of the other
        variables (not of w): then (others, w) -> (others, D[i]) is a change of variables
        with Jacobian |β|, and the others given D[i] = a have density ∝ p(others, w*) / |β|
        at w* = (a − α)/β. The law does not depend on which pivot is used; the choice only
        shapes the MCMC geometry.

        Candidates: W has support the real line (no value transform, so w* is always in
        it), a univariate distribution (its elements are independent given its parents), a
        float dtype, D[i] reaches W without crossing another free variable, and W is
        upstream of no free variable D[i] depends on (w* would depend on itself). The
        elements on which D[i] depends are found by its gradient at three random points of
        the unconstrained space, and affinity is checked there (second differences vanish).

        When D[i] is jointly affine in its candidate elements with a normal law
        (``pm.Normal``: μ and τ·η of ``theta = mu + tau * eta``), they are all used together
        (``gaussian`` True, ``ConditionedModelBuilder.gaussian_pivot_model`` in
        :mod:`~bayespriv.datamodels.pymc_model.conditioned`: Matheron's rule, no Jacobian funnel).
        Otherwise one pivot (``gaussian`` False, ``ConditionedModelBuilder.single_pivot_model``): a
        shift (constant slope) first, then an element no other element of D depends on,
        then the variable declared last. Memoised per process.
        """
        rt = self._runtime()
        with rt.lock:
            hit = rt.pivots.get((name, index))
            if hit is None:
                hit = self._find_hook(name, index)
                rt.pivots[(name, index)] = hit
            return hit

    def find(self, name: str, index: tuple[int, ...]):
        """:meth:`pivot` without the memo: the pivot of ``name[index]`` found by probing, or the reason there is
        none."""
        from pytensor.tensor.random.basic import NormalRV

        model = self._runtime().model
        label = f"{name}{list(index) if index else ''}"
        free = list(model.free_RVs)
        candidates, reasons = _pivot_candidates(model, model[name][index] if index else model[name])
        if not candidates:
            return "; ".join(reasons) or f"{name!r} has no free random variable upstream (it is a constant)"
        fn, points, ranked = _probe_pivots(model, name, index, candidates)
        affine = []
        for entry in ranked:
            _, _, _, k, w, val = entry
            if affine_at(fn, points, {val.name: [k]}):
                affine.append(entry)
            else:
                reasons.append(f"{label} is not affine in {w.name}{list(k) if k else ''}")
        if not affine:
            if not ranked:
                reasons.append(f"{label} does not depend on any candidate pivot")
            return "; ".join(reasons)
        normal = [e for e in affine if isinstance(e[4].owner.op, NormalRV)]
        group: dict[str, list] = {}
        for _, _, _, k, w, val in normal:
            group.setdefault(val.name, []).append(k)
        if normal and affine_at(fn, points, group):
            members = tuple((e[4].name, e[3]) for e in sorted(normal, key=lambda e: (free.index(e[4]), e[3])))
            shown = ", ".join(f"{w}{list(k) if k else ''}" for w, k in members)
            return members, True, f"Gaussian conditioning of the normal variables {shown} on the affine constraint"
        not_shift, _, _, k, w, _ = affine[0]
        how = ("a shift pivot (constant slope)" if not not_shift else "a pivot whose slope depends on the other variables")
        return ((w.name, k),), False, how


def affine_at(fn, points, members: Mapping[str, Sequence[tuple[int, ...]]]) -> bool:
    """D[i] is affine, with nonzero slopes, in the listed elements jointly (value name -> indices) at each point.

    With the members at 0 (α), each at 1 alone (α + β_j, β_j != 0) and all at two random vectors x,
    D[i] must equal α + Σ β_j x_j (relative tolerance 1e-9): affinity in each alone and no cross terms.
    """
    flat = [(v, k) for v, ks in members.items() for k in ks]
    gen = np.random.default_rng(1)

    def at(point, x):
        moved = dict(point)
        for (v, k), xj in zip(flat, x):
            w = np.array(moved[v], copy=True)
            w[k] = xj
            moved[v] = w
        return float(np.asarray(fn(**moved)[0]))

    for point in points:
        a = at(point, np.zeros(len(flat)))
        b = np.array([at(point, np.eye(len(flat))[j]) - a for j in range(len(flat))])
        if not (math.isfinite(a) and np.all(np.isfinite(b)) and np.all(b != 0)):
            return False
        for x in (gen.uniform(-3.0, 3.0, len(flat)), gen.uniform(-3.0, 3.0, len(flat))):
            if abs(at(point, x) - (a + b @ x)) > 1e-9 * (1.0 + abs(a) + np.abs(b) @ np.abs(x)):
                return False
    return True


def _pivot_candidates(model, t) -> tuple[list, list[str]]:
    """Free variables that may carry a pivot of ``t`` (:meth:`PivotFinder.pivot`), and why the others may not."""
    free = list(model.free_RVs)
    upstream = [v for v in free if v in _ancestors([t])]
    direct = _ancestors([t], blockers=free)
    reasons, candidates = [], []
    for w in upstream:
        why = None
        if w not in direct:
            why = "reaches it only through another free variable"
        elif any(w in _ancestors(o.owner.inputs) for o in upstream if o is not w):
            why = "is upstream of another free variable it depends on"
        elif model.rvs_to_transforms.get(w) is not None:
            why = f"has a bounded support (value transform {type(model.rvs_to_transforms[w]).__name__})"
        elif getattr(w.owner.op, "ndim_supp", None) != 0:
            why = "has a multivariate distribution"
        elif not str(w.dtype).startswith("float"):
            why = "is discrete"
        if why is None:
            candidates.append(w)
        else:
            reasons.append(f"{w.name!r} {why}")
    return candidates, reasons


def _probe_pivots(model, name: str, index: tuple[int, ...], candidates) -> tuple[Any, list[dict], list[tuple]]:
    """D[i] and its gradients at three random points of the unconstrained space, and the ranked pivot elements.

    Returns the compiled function (value variables -> [D[i], ∂D[i]/∂W per candidate, ∂(r·D)/∂W per
    candidate with r random and r_i = 0]), the points, and one entry ``(not shift, not local,
    −declaration order, k, W, W's value variable)`` per element W[k] with a nonzero slope at every
    point, sorted: a shift (the same slope at every point) first, then an element no other element
    of D depends on, then the variable declared last.
    """
    import pytensor
    import pytensor.tensor as pt

    free = list(model.free_RVs)
    D = model[name]
    t = D[index] if index else D
    values = [model.rvs_to_values[v] for v in free]
    t_v, D_v = model.replace_rvs_by_values([t, D])
    wv = [model.rvs_to_values[w] for w in candidates]
    outs = [t_v] + list(pytensor.grad(t_v, wv, disconnected_inputs="ignore"))
    gen = np.random.default_rng(0)
    if index:
        weights = gen.standard_normal(_static_shape(D))
        weights[index] = 0.0
        outs += list(pytensor.grad(pt.sum(pt.as_tensor(weights) * D_v), wv, disconnected_inputs="ignore"))
    fn = _pm().compile(values, outs, on_unused_input="ignore")
    start = model.initial_point()
    points = [{v.name: gen.standard_normal(np.shape(start[v.name])).astype(v.dtype) for v in values} for _ in range(3)]
    evals = [fn(**point) for point in points]
    n = len(candidates)
    ranked = []
    for c, (w, val) in enumerate(zip(candidates, wv)):
        grads = np.stack([np.asarray(e[1 + c], dtype=float) for e in evals])
        others = np.stack([np.asarray(e[1 + n + c], dtype=float) for e in evals]) if index else None
        for k in (tuple(int(i) for i in ix) for ix in np.argwhere(np.all(grads != 0, axis=0))):
            slopes = grads[(slice(None),) + k]
            shift = bool(np.all(slopes == slopes[0]))
            local = others is None or bool(np.all(others[(slice(None),) + k] == 0))
            ranked.append((not shift, not local, -free.index(w), k, w, val))
    ranked.sort(key=lambda r: r[:4])
    return fn, points, ranked
