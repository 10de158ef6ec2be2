"""The PyMC models that MCMC samples: the model observed at a secret's evidence and conditioned on it.

:meth:`ConditionedModelBuilder.mcmc_model` observes the evidence (``pm.observe``),
adds the density of an element secret or a mean secret's sum, conditions a
secret on a deterministic through its pivot (a Gaussian group drawn by
Matheron's rule, or one solved variable with its Jacobian) and prunes the model
to what the evidence depends on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...errors import UnsupportedSecretError
from .graph import _pm, _prune_to_ancestors, _static_shape
from .plans import PIVOT_CHECK, PIVOT_TERM, Plan
from .runtime import RuntimeSource


class ConditionedModelBuilder:
    """The conditioned models of a :class:`~bayespriv.datamodels.PyMCDataModel`: what its MCMC runs sample.

    Parameters
    ----------
    runtime : callable
        The data model's runtime lookup (:data:`~bayespriv.datamodels.pymc_model.runtime.RuntimeSource`): the
        built model.
    n_records : int
        Records per dataset.
    pivot_density : callable, optional
        ``pivot_density(logp, beta)``: the potential of a single pivot (the data model's hook, whose default is
        :func:`single_pivot_density`).
    """

    def __init__(self, runtime: RuntimeSource, n_records: int, pivot_density: Callable[[Any, Any], Any] | None = None
                 ) -> None:
        self._runtime = runtime
        self.n_records = n_records
        self._pivot_density = pivot_density or single_pivot_density

    def mcmc_model(self, plan: Plan):
        """The model MCMC samples for ``plan``: observed at its evidence, conditioned on its element, pivot or
        mean, and pruned to what ``plan.keep`` depends on."""
        pm = _pm()
        import pytensor.tensor as pt

        model = self._runtime().model
        m = pm.observe(model, plan.observe) if plan.observe else model
        if plan.element is not None:
            from pymc.model.fgraph import clone_model

            name, index, value = plan.element
            m = clone_model(m)
            var = m[name]
            with m:  # log p(φ[i] = a | parents), elementwise log density at a constant vector of a
                full = np.full(_static_shape(var), value, dtype=var.dtype)
                pm.Potential("__bayespriv_element__", pm.logp(var, full)[index])
        if plan.pivot is not None:
            m = self.pivoted_model(m, plan.pivot)
        if plan.mean is not None:
            from pymc.model.fgraph import clone_model

            column, value = plan.mean
            m = clone_model(m)
            x = m[column]
            loc, scale = x.owner.op.dist_params(x.owner)
            n = self.n_records
            with m:
                pm.Normal(
                    "__bayespriv_sum__",
                    mu=pt.sum(pt.broadcast_to(loc, (n,))),
                    sigma=pt.sqrt(pt.sum(pt.broadcast_to(scale, (n,)) ** 2)),
                    observed=n * value,
                )
        return _prune_to_ancestors(m, plan.keep)

    def pivoted_model(self, model, pivot):
        """The model conditioned on D[i] = a through its pivot
        (:meth:`~bayespriv.datamodels.pymc_model.pivots.PivotFinder.pivot`): a Gaussian group or one variable."""
        name, index, value, members, gaussian = pivot
        if gaussian:
            return gaussian_pivot_model(model, name, index, value, members)
        (wname, k), = members
        return self.single_pivot_model(model, name, index, value, wname, k)

    def single_pivot_model(self, model, name, index, value, wname, k):
        """The model conditioned on D[i] = a through one pivot w = W[k] (:meth:`PivotFinder.pivot
        <bayespriv.datamodels.pymc_model.pivots.PivotFinder.pivot>`), any law on the real line.

        With D[i] = α + β·w (α, β free of w: D[i] at w = 0, and its change from 0 to 1),
        the potential ``log p(W[k] = w* | parents of W) − log|β|`` (the pivot's density
        at w* = (a − α)/β, and the Jacobian) is added, then every use of W is replaced
        (:func:`pymc.do`) by W' = W with element k set to w*, so that D[i] = a exactly and
        every variable downstream of W sees w*. A scalar W leaves the free variables (it
        becomes the deterministic w*). A vector W stays a free variable whose element k is
        used nowhere any more: its density term integrates to one over that element for
        every value of W's parents, so the other variables' marginal is exactly their
        conditional law given D[i] = a; W' is then the deterministic ``do_W``.
        """
        import warnings

        import pytensor.tensor as pt
        from pymc.model.fgraph import clone_model
        from pytensor.graph.replace import graph_replace

        pm = _pm()
        m = clone_model(model)
        W = m[wname]
        t = m[name][index] if index else m[name]

        def solved():  # fresh nodes on every call: the potential's and the intervention's graphs stay apart
            at = [graph_replace(t, {W: pt.set_subtensor(W[k], x) if k else pt.constant(x, dtype=W.dtype)},
                                strict=False) for x in (0.0, 1.0)]
            beta = at[1] - at[0]
            return pt.cast((value - at[0]) / beta, W.dtype), beta

        w_star, beta = solved()
        with m:
            logp = pm.logp(W, pt.full_like(W, w_star) if k else w_star)
            pm.Potential(PIVOT_TERM, self._pivot_density(logp[k] if k else logp, beta))
            pm.Deterministic(PIVOT_CHECK, t.copy())  # a copy: Deterministic renames the variable it wraps
        w_star, _ = solved()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "intervention references the intervened variable"
            return pm.do(m, {wname: pt.set_subtensor(W[k], w_star) if k else w_star})


def single_pivot_density(logp, beta):
    """The potential of a single pivot: its log density at w* minus log|β| (the Jacobian of w -> D[i]).

    Parameters
    ----------
    logp : TensorVariable
        The pivot's log density at w*.
    beta : TensorVariable
        The slope of D[i] in the pivot.

    Returns
    -------
    TensorVariable
        ``logp − log|beta|``.
    """
    import pytensor.tensor as pt

    return logp - pt.log(pt.abs(beta))


def gaussian_pivot_model(model, name, index, value, members):
    """The model conditioned on D[i] = a when D[i] = α + Σ β_j w_j in normal variables w_j ~ N(m_j, s_j²).

    Given the other variables (α, β, m, s depend on them only), the w_j are independent normals and
    D[i] is Gaussian: its density at a is N(a; α + Σ β_j m_j, Σ β_j² s_j²), and the w_j given
    D[i] = a are the Gaussian conditional on the hyperplane, drawn exactly by Matheron's rule from
    free draws y_j ~ N(m_j, s_j²): w_j = y_j + s_j² β_j (a − α − Σ β_l y_l) / Σ β_l² s_l². So the
    conditional law given D[i] = a is: the model's own free variables (the y_j are the w_j's own
    draws, at their prior), the potential log N(a; α + Σ β_j m_j, Σ β_j² s_j²), and every use of a
    w_j replaced by its projection (a simultaneous intervention, each W' = ``do_W`` built from the
    draws of all the W). The component of y along the constraint is used nowhere; its prior
    integrates to one. No Jacobian funnel: neither a small nor a large scale makes a variable
    narrow that another one's scale controls (the case of a single pivot in a hierarchy).
    """
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace

    pm = _pm()
    rvs = list(dict.fromkeys(w for w, _ in members))
    drawn = {w: model[w].type(name=f"{w}__drawn") for w in rvs}
    t = model[name][index] if index else model[name]
    t_drawn = graph_replace(t, {model[w]: drawn[w] for w in rvs}, strict=False)
    alpha, betas = _affine_parts(t_drawn, drawn, members)
    params = _normal_params(model, members)
    y = [drawn[w][k] if k else drawn[w] for w, k in members]
    resid = value - alpha - sum(b * yj for b, yj in zip(betas, y))
    total = sum(b**2 * sc**2 for b, (_, sc) in zip(betas, params))
    projected = dict(drawn)
    for (w, k), b, (_, sc), yj in zip(members, betas, params, y):
        wj = pt.cast(yj + sc**2 * b * resid / total, drawn[w].dtype)
        projected[w] = pt.set_subtensor(projected[w][k], wj) if k else wj
    m = _intervene_on_draws(model, projected, drawn)
    t = m[name][index] if index else m[name]
    base = {w: m[w] for w in rvs}
    t_base = graph_replace(t, {m[f"do_{w}"]: m[w] for w in rvs}, strict=False)
    alpha, betas = _affine_parts(t_base, base, members)
    params = _normal_params(m, members)
    mean = alpha + sum(b * loc for b, (loc, _) in zip(betas, params))
    sd = pt.sqrt(sum(b**2 * sc**2 for b, (_, sc) in zip(betas, params)))
    with m:
        pm.Potential(PIVOT_TERM, -0.5 * ((value - mean) / sd) ** 2 - pt.log(sd) - 0.5 * math.log(2 * math.pi))
        pm.Deterministic(PIVOT_CHECK, t.copy())  # a copy: Deterministic renames the variable it wraps
    return m


def _affine_parts(t, base: Mapping[str, Any], members):
    """α and the slopes β_j of t = α + Σ β_j w_j, with t written on the variables ``base`` (name -> tensor):
    t with every member set to 0, then each set to 1 alone (fresh nodes on every call)."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace

    def at(values):
        replace = {}
        for w, var in base.items():
            for (wj, k), x in zip(members, values):
                if wj == w:
                    var = pt.set_subtensor(var[k], x) if k else pt.constant(x, dtype=var.dtype)
            replace[base[w]] = var
        return graph_replace(t, replace, strict=False)

    alpha = at([0.0] * len(members))
    return alpha, [at([1.0 if i == j else 0.0 for i in range(len(members))]) - alpha for j in range(len(members))]


def _normal_params(model, members):
    """(location, scale) of each member w_j = W[k]: W's Normal parameters broadcast to its shape, element k."""
    import pytensor.tensor as pt

    out = []
    for w, k in members:
        var = model[w]
        loc, scale = (pt.broadcast_to(p, var.shape) for p in var.owner.op.dist_params(var.owner))
        out.append((loc[k], scale[k]) if k else (loc, scale))
    return out


def _intervene_on_draws(model, interventions: Mapping[str, Any], drawn: Mapping[str, Any]):
    """A new model where every use of each free variable W is replaced by ``interventions[W]``, all at once.

    The expressions are written on placeholders ``drawn[W]`` standing for the free variables' own
    draws (and on any other model variable). Unlike successive :func:`pymc.do` calls, where a later
    intervention would also rewrite the earlier ones' references to its variable, the replacements
    are simultaneous: every intervention reads the original draws of all the W. Each W stays a free
    variable; its replacement is the deterministic ``do_W``.
    """
    from pymc.model.fgraph import fgraph_from_model, model_from_fgraph
    from pymc.pytensorf import replace_vars_in_graphs, toposort_replace

    from ..compat import deterministic_like

    names = list(interventions)
    clash = [f"do_{w}" for w in names if f"do_{w}" in model.named_vars]
    if clash:
        raise UnsupportedSecretError(f"the model must not name variables {clash!r} (used for the conditioned variables)")
    fgraph, memo = fgraph_from_model(model, inlined_views=True)
    exprs = replace_vars_in_graphs([interventions[w] for w in names], replacements=memo)
    replacements = []
    for w, expr in zip(names, exprs):
        target = memo[model[w]]
        replacements.append((target, deterministic_like(target, expr, f"do_{w}")))
    toposort_replace(fgraph, tuple(replacements))
    for w in names:  # the placeholders become the free variables' own draws
        fgraph.replace(drawn[w], memo[model[w]], import_missing=True)
    return model_from_fgraph(fgraph, mutate_fgraph=True)
