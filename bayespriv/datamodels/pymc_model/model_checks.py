"""Checks of a PyMC data model and of the secrets it is asked to condition on.

The model's columns and parameters must be variables of the right kind and
shape, ``intervals`` must be pairs around their secrets' values, and a
distribution secret must name a parameter (or one element of it) the model can
condition on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bayespriv._validation import check_real, described, fail
from bayespriv.errors import ParameterTypeError, UnsupportedSecretError, ValidationError
from bayespriv.secrets import DatasetSecret, DistributionSecret, share_count
from .graph import _element, _is_deterministic, _static_shape
from .runtime import RuntimeSource


def check_model(model, columns: Sequence[str], n_records: int, parameters: Sequence[str]) -> None:
    """Raise a clear error unless ``model`` has no potential, ``columns`` are its free random variables or
    deterministics of shape ``(n_records,)`` and ``parameters`` its other free variables or deterministics."""
    if model.potentials:
        raise ValidationError(
            "the PyMC model must not contain pm.Potential terms (forward sampling would ignore them); "
            f"got {[p.name for p in model.potentials]!r}. Write the density the potential adds as a proper "
            "prior instead: the rat-tumour hyperprior pm.Potential(-2.5 * log(alpha + beta)) is "
            "phi = pm.Uniform('phi', 0, 1), kappa = pm.Pareto('kappa', alpha=0.5, m=m) with "
            "alpha = phi * kappa, beta = (1 - phi) * kappa (p(phi, kappa) ∝ kappa^(-3/2), the same density, "
            "proper once kappa >= m > 0); observed-data potentials become observed variables"
        )
    free = {v.name for v in model.free_RVs}
    named = set(model.named_vars)
    dets = {v.name for v in model.deterministics}
    for c in columns:
        if c not in named:
            raise ValidationError(f"columns must name variables of the PyMC model; got {c!r}, model has {sorted(named)!r}")
        if c not in free and c not in dets:
            raise ValidationError(
                f"columns must be free random variables or deterministics (not observed data); got {c!r}"
            )
        shape = _static_shape(model[c])
        if shape != (n_records,):
            raise ValidationError(
                f"column {c!r} must have shape (n_records,) = ({n_records},) in builder(n_records); got {shape}"
            )
    for p in parameters:
        if p not in free and p not in dets:
            raise ValidationError(
                f"parameters must name free random variables or deterministics of the PyMC model; got {p!r}, "
                f"free variables are {sorted(free)!r}, deterministics {sorted(dets)!r}"
            )
        if p in columns:
            raise ValidationError(f"parameters must be hyperparameters, not columns; got {p!r}")


def check_intervals(intervals: Any, check_parameter: Callable[[DistributionSecret], None]
                    ) -> dict[DistributionSecret, tuple[float, float]]:
    """The ``intervals`` argument of a data model, checked: each key a distribution secret that
    ``check_parameter`` accepts, on a scalar parameter, each value a pair ``lo < hi`` around its value."""
    if intervals is None:
        return {}
    if not isinstance(intervals, Mapping):
        raise ParameterTypeError(f"intervals must be a mapping DistributionSecret -> (lo, hi); got {type(intervals).__name__}")
    out = {}
    for secret, bounds in intervals.items():
        if not isinstance(secret, DistributionSecret):
            raise ParameterTypeError(f"intervals keys must be DistributionSecret; got {type(secret).__name__}")
        check_parameter(secret)
        if _element(secret.parameter) is not None:
            raise UnsupportedSecretError(f"intervals are for scalar parameters; got the element secret {secret.label!r}")
        try:
            lo, hi = (check_real("intervals bound", b) for b in bounds)
        except TypeError:
            raise ParameterTypeError(f"intervals values must be pairs (lo, hi); got {bounds!r} for {secret.label!r}") from None
        if not (lo < hi) or math.isnan(lo) or math.isnan(hi):
            raise fail(f"intervals[{secret.label}]", "a pair (lo, hi) with lo < hi", bounds)
        if not lo <= secret.value <= hi:
            raise fail(f"intervals[{secret.label}]", f"an interval containing the secret's value {secret.value:g}", bounds)
        out[secret] = (lo, hi)
    return out


class SecretChecker:
    """The checks of the secrets a :class:`~bayespriv.datamodels.PyMCDataModel` is asked to condition on.

    Parameters
    ----------
    runtime : callable
        The data model's runtime lookup (:data:`~bayespriv.datamodels.pymc_model.runtime.RuntimeSource`): the
        built model.
    parameters : sequence of str
        The model's parameters (names a distribution secret may use).
    n_records : int
        Records per dataset.
    intervals : mapping, optional
        The checked ``intervals`` of the data model; None while the constructor checks ``intervals`` themselves
        (every secret checked is then one of them).
    plan : callable, optional
        ``plan(secret)``: the secret's plan, built to find the pivot of a secret on a deterministic before any
        sampling (not called while ``intervals`` is None).
    """

    def __init__(self, runtime: RuntimeSource, *, parameters: Sequence[str], n_records: int,
                 intervals: Mapping[DistributionSecret, tuple[float, float]] | None = None,
                 plan: Callable[[DistributionSecret], Any] | None = None) -> None:
        self._runtime = runtime
        self.parameters, self.n_records, self.intervals, self._plan = tuple(parameters), n_records, intervals, plan

    def _listed(self, secret: DistributionSecret) -> bool:
        """Whether ``secret`` is read as an interval (every secret is while the intervals are being checked)."""
        return self.intervals is None or secret in self.intervals

    def check_dataset_secret(self, secret: DatasetSecret) -> None:
        """Raise a clear error unless ``secret`` is a proportion secret on a Bernoulli record column (category 0 or
        1, a share ``p`` with ``p·n`` whole) or a mean secret on a Normal record column."""
        from pytensor.tensor.random.basic import BernoulliRV, NormalRV

        model = self._runtime().model
        var = model[secret.column]
        op = var.owner.op if var.owner is not None else None
        if var not in model.free_RVs:
            raise UnsupportedSecretError(
                f"dataset secrets need a column that is a random variable of the model; {secret.column!r} is a deterministic"
            )
        if secret.statistic == "proportion":
            if not isinstance(op, BernoulliRV):
                raise UnsupportedSecretError(
                    f"proportion secrets need a Bernoulli record column (values 0/1); {secret.column!r} is {op}"
                )
            cat = secret.category
            if isinstance(cat, (bool, np.bool_)):
                cat = int(cat)
            if not isinstance(cat, (int, np.integer, float, np.floating)) or cat not in (0, 1):
                raise fail("category", f"0 or 1 (the values of the Bernoulli column {secret.column!r})", secret.category)
            share_count(secret.value, self.n_records)
        else:
            if not isinstance(op, NormalRV):
                raise UnsupportedSecretError(
                    f"mean secrets need a Normal record column (exact Gaussian conditioning on the sum); {secret.column!r} is {op}"
                )

    def check_parameter(self, secret: DistributionSecret) -> None:
        """Raise a clear error unless ``secret`` names a parameter (or one element of it) the model can condition
        on."""
        element = _element(secret.parameter)
        name = element[0] if element else secret.parameter
        if name not in self.parameters:
            raise ValidationError(
                f"secret parameter must be one of the model's parameters {list(self.parameters)!r} (or an element "
                f"of one, e.g. 'theta[2]'); got {secret.parameter!r}"
            )
        model = self._runtime().model
        var = model[name]
        if _is_deterministic(model, name):
            self._check_deterministic(secret, name, element, var)
            return
        if element is None:
            if var.type.ndim != 0:
                raise UnsupportedSecretError(
                    f"distribution secrets need a scalar parameter or one element of a vector parameter; "
                    f"{name!r} has {var.type.ndim} dimension(s): name an element, e.g. "
                    f"DistributionSecret('{name}[0]', value)"
                )
            return
        self._check_element(secret, name, element[1], var)

    def _check_deterministic(self, secret: DistributionSecret, name: str, element, var) -> None:
        """A secret on a deterministic (or one element of it): a valid index; a pivot exists (see
        :meth:`~bayespriv.datamodels.pymc_model.pivots.PivotFinder.pivot`)."""
        shape = _static_shape(var)
        if element is None and var.type.ndim != 0:
            raise UnsupportedSecretError(
                f"distribution secrets need a scalar parameter or one element of a vector parameter; "
                f"{name!r} has {var.type.ndim} dimension(s): name an element, e.g. DistributionSecret('{name}[0]', value)"
            )
        if element is not None and (shape is None or len(element[1]) != len(shape)
                                    or not all(0 <= i < n for i, n in zip(element[1], shape))):
            raise fail("parameter", f"an index within the shape {shape} of {name!r}", described(f"{secret.parameter!r}"))
        if not self._listed(secret):
            self._plan(secret)  # finds the pivot now: a deterministic with none is refused before any sampling

    def _check_element(self, secret: DistributionSecret, name: str, index: tuple[int, ...], var) -> None:
        """An element secret: a valid index of a parameter whose elements are independent given its parents."""
        shape = _static_shape(var)
        if shape is None or len(index) != len(shape) or not all(0 <= i < n for i, n in zip(index, shape)):
            raise fail("parameter", f"an index within the shape {shape} of {name!r}",
                       described(f"{secret.parameter!r}"))
        op = var.owner.op if var.owner is not None else None
        if is_dirichlet(op) and len(index) == 1 and not self._listed(secret):
            if not 0.0 < float(secret.value) < 1.0:
                raise fail("value", f"a weight in (0, 1) for the Dirichlet parameter {name!r}", secret.value)
            return
        if getattr(op, "ndim_supp", None) != 0:
            raise UnsupportedSecretError(
                f"element secrets need a parameter whose elements are independent given its parents (a univariate "
                f"distribution with a shape, e.g. pm.Beta('theta', a, b, shape=4)); {name!r} is {op}"
            )
        if self._listed(secret):
            raise UnsupportedSecretError(f"intervals are for scalar parameters; got the element secret {secret.label!r}")


def is_dirichlet(op) -> bool:
    """Whether ``op`` draws a Dirichlet vector (its weights are handled by the aggregation property)."""
    from pytensor.tensor.random.basic import DirichletRV

    return isinstance(op, DirichletRV)
