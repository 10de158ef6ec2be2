"""Sampling plans of a PyMC data model: how to draw datasets given each kind of secret.

:class:`Plan` records a route (``forward``, ``conjugate``, ``mcmc``,
``rejection``) and what it fixes, observes and draws from a posterior;
:class:`PlanBuilder` (a collaborator of :class:`~bayespriv.datamodels.PyMCDataModel`)
builds the plan of a secret from the model's graph, once per secret and process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import UnsupportedSecretError
from ...secrets import DatasetSecret, DistributionSecret, Secret, share_count
from .graph import _ancestors, _element, _is_deterministic, _scalar_constant, _strip_dimshuffle
from .runtime import RuntimeSource

#: Names added to the MCMC model of a secret on a deterministic: the pivot's density term and D[i] itself.
PIVOT_TERM = "__bayespriv_pivot"
PIVOT_CHECK = "__bayespriv_pivot_check"  # no trailing "__": PyMC keeps such names out of the trace


@dataclass(eq=False)
class Plan:
    """How :class:`PyMCDataModel` draws datasets given one secret.

    route : "forward" | "conjugate" | "mcmc" | "rejection"
    fixed : variables replaced by a constant value (pm.do), name -> unbatched array
    permute : name of the fixed record variable whose positions are shuffled per draw
    pool : variables whose joint (posterior) draws are fed to the forward sampler
    observe : what MCMC observes on top of the model's own observed variables
    mean : (column, value) for a mean secret (Gaussian conditioning on the column sum)
    keep : variables the MCMC model is pruned to (ancestors of these)
    interval : (parameter, lo, hi) for a set-valued distribution secret
    conjugate : (parameter, a, b) posterior Beta(a, b) for the Beta-Bernoulli route
    element : (parameter, index, value) for a secret on one element of a vector parameter: the
        parameter is replaced by a fresh draw of itself with that element set to the value
    pivot : (deterministic, index, value, members, gaussian) for a secret on a deterministic (or one
        element of it): members are the (variable, index) the MCMC model draws on the constraint
        (a group of normal variables when ``gaussian``, else one pivot); see
        :meth:`PlanBuilder.deterministic_plan`
    sources : pool variable -> the posterior variable its draws are read from (default: itself)
    """

    route: str
    note: str
    fixed: dict[str, np.ndarray] = field(default_factory=dict)
    permute: str | None = None
    pool: tuple[str, ...] = ()
    observe: dict[str, np.ndarray] = field(default_factory=dict)
    mean: tuple[str, float] | None = None
    keep: tuple[str, ...] = ()
    interval: tuple[str, float, float] | None = None
    conjugate: tuple[str, float, float] | None = None
    element: tuple[str, tuple[int, ...], float] | None = None
    pivot: tuple[str, tuple[int, ...], float, tuple[tuple[str, tuple[int, ...]], ...], bool] | None = None
    sources: dict[str, str] = field(default_factory=dict)


class PlanBuilder:
    """The plans of the secrets of a :class:`~bayespriv.datamodels.PyMCDataModel` (see its notes on secrets).

    Parameters
    ----------
    runtime : callable
        The data model's runtime lookup (:data:`~bayespriv.datamodels.pymc_model.runtime.RuntimeSource`): the
        built model, and the per-process memo of plans.
    columns : sequence of str
        The model's record columns.
    n_records : int
        Records per dataset.
    intervals : mapping DistributionSecret -> (lo, hi)
        The checked ``intervals`` of the data model.
    conjugate : bool
        Whether the Beta-Bernoulli conjugate route may be used.
    pivots : PivotFinder
        The pivot search of secrets on deterministics (:mod:`~bayespriv.datamodels.pymc_model.pivots`).
    conditioned : ConditionedModelBuilder
        The conditioned models (:mod:`~bayespriv.datamodels.pymc_model.conditioned`): a plan on a deterministic
        reads its pool from the model MCMC will sample.
    element_plan : callable, optional
        ``element_plan(secret, observed) -> Plan`` for element secrets (the data model's hook, whose default is
        :meth:`element_plan`).
    """

    def __init__(self, runtime: RuntimeSource, *, columns: Sequence[str], n_records: int,
                 intervals: Mapping[DistributionSecret, tuple[float, float]], conjugate: bool, pivots: Any,
                 conditioned: Any, element_plan: Callable[[DistributionSecret, list[str]], Plan] | None = None) -> None:
        self._runtime = runtime
        self.columns, self.n_records, self.intervals, self.conjugate = tuple(columns), n_records, intervals, conjugate
        self.pivots, self.conditioned = pivots, conditioned
        self._element_hook = element_plan or self.element_plan

    @property
    def model(self):
        """The built PyMC model."""
        return self._runtime().model

    def plan(self, secret: Secret | None) -> Plan:
        """The plan of ``secret`` (memoised per process)."""
        rt = self._runtime()
        with rt.lock:
            plan = rt.plans.get(secret)
            if plan is None:
                plan = self.make(secret)
                rt.plans[secret] = plan
            return plan

    def make(self, secret: Secret | None) -> Plan:
        """The plan of ``secret``, built from the model's graph."""
        model = self.model
        observed = [v.name for v in model.observed_RVs]
        if isinstance(secret, DistributionSecret):
            element = _element(secret.parameter)
            if secret in self.intervals:
                return self.interval_plan(secret, observed)
            if _is_deterministic(model, (element or (secret.parameter,))[0]):
                return self.deterministic_plan(secret, observed)
            if element is not None:
                return self._element_hook(secret, observed)
        evidence, fixed, permute, mean = self.evidence(secret)
        targets = observed + evidence + ([mean[0]] if mean else [])
        upstream = self.free_upstream(targets, set(evidence) | ({mean[0]} if mean else set()))
        given = {"fixed": fixed, "permute": permute, "observe": dict(fixed), "mean": mean}
        if not self.reaching_columns(upstream, observed + evidence):
            what = "no free random variable upstream of the evidence reaches the columns"
            note = f"exact forward sampling ({what})" if secret is not None else "forward sampling from the prior"
            return Plan("forward", note, **given)
        pool = tuple(sorted(upstream))
        keep = tuple(observed + evidence) + (("__bayespriv_sum__",) if mean else ())
        if self.conjugate and not observed and isinstance(secret, DatasetSecret) and secret.statistic == "proportion":
            conj = self.beta_bernoulli(secret.column, upstream)
            if conj is not None:
                return self.conjugate_plan(secret.column, next(iter(upstream)), conj, keep, given)
        note = f"MCMC posterior of {list(pool)} given the evidence, then forward sampling"
        return Plan("mcmc", note, pool=pool, keep=keep, **given)

    def free_upstream(self, targets: Sequence[str], exclude: set[str]) -> set[str]:
        """Names of the free random variables upstream of ``targets``, ``exclude`` left out."""
        model = self.model
        anc = _ancestors([model[t] for t in targets])
        return {v.name for v in model.free_RVs if v in anc and v.name not in exclude}

    def reaching_columns(self, candidates: set[str], blockers: Sequence[str]) -> set[str]:
        """The ``candidates`` that reach a column other than through ``blockers``."""
        model = self.model
        anc = _ancestors([model[c] for c in self.columns], blockers=[model[b] for b in blockers])
        return {a for a in candidates if model[a] in anc}

    def evidence(self, secret: Secret | None) -> tuple[list[str], dict[str, np.ndarray], str | None,
                                                        tuple[str, float] | None]:
        """What a secret other than an interval, element or deterministic one fixes: (evidence, fixed, permute, mean).

        A scalar parameter fixed to its value; a proportion secret's column fixed to one configuration with
        ``k = p·n`` records in the category (shuffled per draw: ``permute``); a mean secret's (column, value).
        """
        if secret is None:
            return [], {}, None, None
        if isinstance(secret, DistributionSecret):
            name = secret.parameter
            return [name], {name: np.asarray(secret.value, dtype=self.model[name].dtype)}, None, None
        if secret.statistic == "proportion":
            name = secret.column
            k = share_count(secret.value, self.n_records)
            inside = np.arange(self.n_records) < k
            config = (inside if int(secret.category) == 1 else ~inside).astype(self.model[name].dtype)
            return [name], {name: config}, name, None
        return [], {}, None, (secret.column, float(secret.value))

    def conjugate_plan(self, column: str, p: str, prior: tuple[float, float], keep: tuple[str, ...],
                        given: dict) -> Plan:
        """The Beta-Bernoulli route: ``p ~ Beta(a + ones, b + zeros)`` given the fixed configuration of ``column``."""
        a, b = prior
        ones = int(given["fixed"][column].sum())
        zeros = self.n_records - ones
        note = f"exact conjugate posterior {p} ~ Beta({a:g} + {ones}, {b:g} + {zeros}) (Beta-Bernoulli), no MCMC"
        return Plan("conjugate", note, keep=keep, conjugate=(p, a + ones, b + zeros), **given)

    def element_plan(self, secret: DistributionSecret, observed: list[str]) -> Plan:
        """φ[i] = a for a parameter φ with independent elements given its parents π.

        Given π the other elements keep their law, so a draw is: π from its posterior
        given φ[i] = a (and the public data), whose density is p(π)·p(φ[i] = a | π)
        (MCMC on the model with that element's log density added, route ``"mcmc"``),
        then φ := a fresh draw of φ given π with element i set to a, then the rest
        forward. When no free variable upstream of φ (or of the public data) reaches
        the columns, π needs no posterior: exact forward sampling.
        """
        from .model_checks import is_dirichlet

        name, index = _element(secret.parameter)
        element = (name, index, float(secret.value))
        upstream = self.free_upstream(observed + [name], {name})
        relevant = self.reaching_columns(upstream, observed)
        dirichlet = is_dirichlet(self.model[name].owner.op)
        if not relevant and dirichlet:
            return Plan("forward", f"exact forward sampling: {secret.parameter} fixed, the other weights of {name!r} "
                        "(1 − value)·Dirichlet(the other concentrations) (aggregation property)", element=element)
        if not relevant:
            return Plan("forward", f"exact forward sampling: {secret.parameter} fixed, the other elements of {name!r} "
                        "drawn from their prior (independent of it)", element=element)
        if dirichlet:
            raise UnsupportedSecretError(
                f"a secret on the Dirichlet weight {secret.parameter!r} needs constant concentrations, or parameters "
                f"upstream of {name!r} that do not reach the records; {sorted(relevant)} do. Give the concentrations as "
                "numbers, or put the secret on a scalar parameter")
        return Plan("mcmc", f"MCMC posterior of {sorted(upstream)} given {secret.parameter}={secret.value:g}, then "
                    f"the other elements of {name!r} and the records forward", pool=tuple(sorted(upstream)),
                    keep=tuple(observed) + ("__bayespriv_element__",), element=element)

    def interval_plan(self, secret: DistributionSecret, observed: list[str]) -> Plan:
        """lo <= φ_i <= hi: rejection from the prior, or from the MCMC posterior given the public data."""
        lo, hi = self.intervals[secret]
        name = secret.parameter
        if observed:
            keep = tuple(observed) + (name,)
            pool = tuple(sorted(self.free_upstream(keep, set()) | {name}))
            return Plan("mcmc", f"posterior given the model's observed data, restricted to {lo:g} <= {name} <= {hi:g}",
                        pool=pool, keep=keep, interval=(name, lo, hi))
        pool = tuple(sorted(self.free_upstream([name], set()) | {name}))
        return Plan("rejection", f"prior of {list(pool)} restricted to {lo:g} <= {name} <= {hi:g} (exact rejection "
                    "sampling)", pool=pool, interval=(name, lo, hi))

    def deterministic_plan(self, secret: DistributionSecret, observed: list[str]) -> Plan:
        """D[i] = a for a deterministic D (a scalar, or one element of a vector deterministic).

        The secret is the event D[i] = a, and the adversary's belief given it is the
        prior (and the public data) *conditioned* on that event — not the intervention
        ``pm.do(D[i] := a)``, which would leave D's parents at their unconditional law
        (see the data model's notes). A scalar D whose upstream free variables reach the
        columns and the public data only through D is the exception where the two
        coincide: exact forward sampling with D fixed (route ``"forward"``). Otherwise
        the upstream variables are drawn from their posterior given D[i] = a through
        a pivot (:meth:`PivotFinder.pivot
        <bayespriv.datamodels.pymc_model.pivots.PivotFinder.pivot>`), by MCMC.
        """
        element = _element(secret.parameter)
        name, index = element if element is not None else (secret.parameter, ())
        model = self.model
        value = float(secret.value)
        if not index:
            upstream = self.free_upstream(observed + [name], set())
            if not self.reaching_columns(upstream, observed + [name]):
                return Plan("forward", f"exact forward sampling: the deterministic {name!r} fixed to {value:g} "
                            "(nothing upstream of it reaches the columns or the public data other than through it, "
                            "so conditioning on it is the intervention pm.do)",
                            fixed={name: np.asarray(value, dtype=model[name].dtype)})
        found = self.pivots.pivot(name, index)
        if isinstance(found, str):
            raise UnsupportedSecretError(
                f"a secret on the deterministic {secret.parameter!r} needs a pivot: a free random variable with "
                f"support the real line (no value transform), independent elements given its parents and upstream "
                f"of no other free variable of {secret.parameter!r}, in which {secret.parameter!r} is affine "
                f"(as eta in the non-centred theta = mu + tau * eta); {found}. Put the secret on such a "
                "deterministic (e.g. a linear predictor rather than its inverse link) or on a free variable")
        members, gaussian, how = found
        pivot = (name, index, value, members, gaussian)
        keep = tuple(observed) + (PIVOT_TERM, PIVOT_CHECK)
        m = self.conditioned.mcmc_model(Plan("mcmc", "", pivot=pivot, keep=keep))  # the model MCMC will sample
        drawn = {w for w, _ in members}
        pool = tuple(sorted({v.name for v in m.free_RVs} | drawn))
        sources = {w: f"do_{w}" for w in sorted(drawn) if f"do_{w}" in m.named_vars}
        where = ", ".join(f"{w}{list(k) if k else ''}" for w, k in members)
        if gaussian:
            note = (f"MCMC posterior of {list(pool)} given {secret.parameter}={value:g}, by {how}: "
                    f"{where} drawn on the constraint (Matheron), the other variables weighted by the density "
                    f"of {secret.parameter} at {value:g}; then the records forward")
        else:
            note = (f"MCMC posterior of {list(pool)} given {secret.parameter}={value:g}, {how}: {where} "
                    f"solved from {secret.parameter} = {value:g}, density divided by |d {secret.parameter} / d "
                    f"{where}|; then the records forward")
        return Plan("mcmc", note, pool=pool, keep=keep, pivot=pivot, sources=sources)

    def beta_bernoulli(self, column: str, upstream: set[str]) -> tuple[float, float] | None:
        """(a, b) when ``column ~ Bernoulli(p)`` and ``p ~ Beta(a, b)`` is all that is upstream."""
        from pytensor.tensor.random.basic import BernoulliRV, BetaRV

        if len(upstream) != 1:
            return None
        model = self.model
        p = model[next(iter(upstream))]
        x = model[column]
        if not isinstance(x.owner.op, BernoulliRV) or not isinstance(p.owner.op, BetaRV) or p.type.ndim != 0:
            return None
        (prob,) = x.owner.op.dist_params(x.owner)
        if _strip_dimshuffle(prob) is not p:
            return None
        a, b = (_scalar_constant(v) for v in p.owner.op.dist_params(p.owner))
        if a is None or b is None:
            return None
        return a, b
