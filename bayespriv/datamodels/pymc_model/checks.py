"""Checks of a PyMC data model and of the secrets it is asked to condition on.

The model's columns and parameters must be variables of the right kind and
shape, ``intervals`` must be pairs around their secrets' values, and a
distribution secret must name a parameter (or one element of it) the model can
condition on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..._validation import check_real, described, fail
from ...errors import ParameterTypeError, UnsupportedSecretError, ValidationError
from ...secrets import DistributionSecret
from .graph import _element, _static_shape


class SecretChecks:
    """The model and secret checks of :class:`~bayespriv.datamodels.PyMCDataModel`."""

    def _check_model(self) -> None:
        model = self.pymc_model
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
        for c in self.columns:
            if c not in named:
                raise ValidationError(f"columns must name variables of the PyMC model; got {c!r}, model has {sorted(named)!r}")
            if c not in free and c not in dets:
                raise ValidationError(
                    f"columns must be free random variables or deterministics (not observed data); got {c!r}"
                )
            shape = _static_shape(model[c])
            if shape != (self.n_records,):
                raise ValidationError(
                    f"column {c!r} must have shape (n_records,) = ({self.n_records},) in builder(n_records); got {shape}"
                )
        for p in self.parameters:
            if p not in free and p not in dets:
                raise ValidationError(
                    f"parameters must name free random variables or deterministics of the PyMC model; got {p!r}, "
                    f"free variables are {sorted(free)!r}, deterministics {sorted(dets)!r}"
                )
            if p in self.columns:
                raise ValidationError(f"parameters must be hyperparameters, not columns; got {p!r}")

    def _check_intervals(self, intervals) -> dict[DistributionSecret, tuple[float, float]]:
        if intervals is None:
            return {}
        if not isinstance(intervals, Mapping):
            raise ParameterTypeError(f"intervals must be a mapping DistributionSecret -> (lo, hi); got {type(intervals).__name__}")
        out = {}
        for secret, bounds in intervals.items():
            if not isinstance(secret, DistributionSecret):
                raise ParameterTypeError(f"intervals keys must be DistributionSecret; got {type(secret).__name__}")
            self._check_parameter(secret)
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

    def _check_parameter(self, secret: DistributionSecret) -> None:
        element = _element(secret.parameter)
        name = element[0] if element else secret.parameter
        if name not in self.parameters:
            raise ValidationError(
                f"secret parameter must be one of the model's parameters {list(self.parameters)!r} (or an element "
                f"of one, e.g. 'theta[2]'); got {secret.parameter!r}"
            )
        var = self.pymc_model[name]
        if self._is_deterministic(name):
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

    def _is_deterministic(self, name: str) -> bool:
        return any(v.name == name for v in self.pymc_model.deterministics)

    def _check_deterministic(self, secret: DistributionSecret, name: str, element, var) -> None:
        """A secret on a deterministic (or one element of it): a valid index; a pivot exists (see :meth:`_pivot`)."""
        shape = _static_shape(var)
        if element is None and var.type.ndim != 0:
            raise UnsupportedSecretError(
                f"distribution secrets need a scalar parameter or one element of a vector parameter; "
                f"{name!r} has {var.type.ndim} dimension(s): name an element, e.g. DistributionSecret('{name}[0]', value)"
            )
        if element is not None and (shape is None or len(element[1]) != len(shape)
                                    or not all(0 <= i < n for i, n in zip(element[1], shape))):
            raise fail("parameter", f"an index within the shape {shape} of {name!r}", described(f"{secret.parameter!r}"))
        intervals = getattr(self, "intervals", None)  # None while the constructor checks ``intervals`` itself
        if intervals is not None and secret not in intervals:
            self._plan(secret)  # finds the pivot now: a deterministic with none is refused before any sampling

    def _check_element(self, secret: DistributionSecret, name: str, index: tuple[int, ...], var) -> None:
        """An element secret: a valid index of a parameter whose elements are independent given its parents."""
        shape = _static_shape(var)
        if shape is None or len(index) != len(shape) or not all(0 <= i < n for i, n in zip(index, shape)):
            raise fail("parameter", f"an index within the shape {shape} of {name!r}",
                       described(f"{secret.parameter!r}"))
        op = var.owner.op if var.owner is not None else None
        if _is_dirichlet(op) and len(index) == 1 and secret not in self.intervals:
            if not 0.0 < float(secret.value) < 1.0:
                raise fail("value", f"a weight in (0, 1) for the Dirichlet parameter {name!r}", secret.value)
            return
        if getattr(op, "ndim_supp", None) != 0:
            raise UnsupportedSecretError(
                f"element secrets need a parameter whose elements are independent given its parents (a univariate "
                f"distribution with a shape, e.g. pm.Beta('theta', a, b, shape=4)); {name!r} is {op}"
            )
        if secret in self.intervals:
            raise UnsupportedSecretError(f"intervals are for scalar parameters; got the element secret {secret.label!r}")


def _is_dirichlet(op) -> bool:
    """Whether ``op`` draws a Dirichlet vector (its weights are handled by the aggregation property)."""
    from pytensor.tensor.random.basic import DirichletRV

    return isinstance(op, DirichletRV)
