"""Plan several releases on the same data at once: one calibration of the stacked query, noise chosen jointly.

Releasing q₁, …, q_m on the same data one at a time, each at (ε/m, δ/m), spends (ε, δ) by the sum and
wastes noise twice over: the sum over-charges releases whose laws overlap, and each query's noise is
sized for its own worst case. Planned together, the queries are one query F = (q₁, …, q_m), calibrated
once (draws of all of them on the same datasets, so their dependence is known), and one mechanism adds
noise to F with the joint guarantee (ε, δ) — :class:`~bayespriv.mechanisms.OptimalGaussian`,
the least total noise among Gaussian noises of its shape family, scaled by the accountant of the
released law (:meth:`ReleasePlan.with_mechanism` builds another class on the same calibrations).
:class:`ReleasePlan` shows the saving: the expected error of each query planned together against
released separately at (ε/m, δ/m) each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayespriv._validation import check_delta, check_epsilon, fail
from bayespriv.errors import BayesPrivDeprecationWarning, ParameterTypeError, ValidationError, warn
from bayespriv.random import as_seed_sequence

if TYPE_CHECKING:
    from bayespriv.datamodels import DataModel, DataModelFamily
    from bayespriv.mechanisms import Mechanism
    from bayespriv.random import RNGLike
    from bayespriv.secrets import SecretPair

__all__ = ["ReleasePlan", "plan_releases"]


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """Several queries on the same data, calibrated and noised together.

    Attributes
    ----------
    queries : tuple of Query
    calibration : Calibration
        Of the stacked query.
    mechanism : Mechanism
        On the stacked query, with the joint guarantee (ε, δ).
    separate : tuple of Mechanism
        Each query alone at (ε/m, δ/m) (what sequential composition of separate releases would need).
    """

    queries: tuple[Any, ...]
    calibration: Any
    mechanism: Any
    separate: tuple[Any, ...]

    @property
    def guarantee(self) -> Any:
        """The joint guarantee of the planned release."""
        return self.mechanism.guarantee

    def summary(self) -> pd.DataFrame:
        """Per query: the noise standard deviation of each component planned together and released separately,
        and their ratio (the last row: the total E‖noise‖² of each)."""
        rows, at = [], 0
        joint = np.asarray(self.mechanism.noise_cov)
        for q, sep in zip(self.queries, self.separate):
            k = sep.k
            mine = float(np.trace(joint[at:at + k, at:at + k]))
            theirs = float(np.trace(np.asarray(sep.noise_cov)))
            rows.append((q.name, math.sqrt(mine / k), math.sqrt(theirs / k), mine / theirs if theirs else math.nan))
            at += k
        total_joint = float(np.trace(joint))
        total_sep = float(sum(np.trace(np.asarray(m.noise_cov)) for m in self.separate))
        rows.append(("total E‖noise‖²", total_joint, total_sep, total_joint / total_sep if total_sep else math.nan))
        return pd.DataFrame(rows, columns=["query", "planned (sd)", "separate (sd)", "variance ratio"]).set_index("query")

    def release(self, dataset: pd.DataFrame, **kwargs: Any) -> Any:
        """Release every query at once (one ledger row, charged the joint guarantee); ``kwargs`` as
        :meth:`Mechanism.release <bayespriv.mechanisms.Mechanism.release>`."""
        return self.mechanism.release(dataset, **kwargs)

    def with_mechanism(self, mechanism: type[Mechanism]) -> ReleasePlan:
        """The same plan with its noise chosen by another mechanism class, on the same calibrations.

        Nothing is drawn again: ``mechanism`` is built on the stacked query's calibration at the plan's
        (ε, δ) and on each query's own calibration at (ε/m, δ/m), as :func:`plan_releases` builds its
        default, :class:`~bayespriv.mechanisms.OptimalGaussian`. Compare the summaries to choose.

        Parameters
        ----------
        mechanism : mechanism class
            E.g. ``bp.mechanisms.APGM``; built as ``mechanism(calibration, epsilon=..., delta=...)``.

        Returns
        -------
        ReleasePlan
        """
        cls = _mechanism_class(mechanism)
        calibrations = tuple(sep.calibration for sep in self.separate)
        return _plan(cls, self.queries, self.calibration, calibrations, self.mechanism.epsilon, self.mechanism.delta)


def _mechanism_class(mechanism: Any) -> type[Mechanism]:
    """``mechanism``, which must be a :class:`~bayespriv.mechanisms.Mechanism` class."""
    from bayespriv.mechanisms import Mechanism

    if not (isinstance(mechanism, type) and issubclass(mechanism, Mechanism)):
        raise ParameterTypeError(f"mechanism must be a Mechanism class; got {mechanism!r}")
    return mechanism


def _plan(cls: type[Mechanism], queries: tuple[Any, ...], joint_calibration: Any, calibrations: tuple[Any, ...],
          epsilon: float, delta: float) -> ReleasePlan:
    """``cls`` on the stacked query's calibration at (ε, δ) and on each query's at (ε/m, δ/m)."""
    m = len(queries)
    try:
        joint = cls(joint_calibration, epsilon=epsilon, delta=delta)
        separate = tuple(cls(cal, epsilon=epsilon / m, delta=delta / m) for cal in calibrations)
    except ValidationError as exc:
        raise ValidationError(f"plan_releases could not build {cls.__name__} for the plan: {exc}") from exc
    return ReleasePlan(queries, joint_calibration, joint, separate)


def _planned_mechanism(deprecated: dict[str, Any]) -> type[Mechanism]:
    """The mechanism class of :func:`plan_releases`: ``OptimalGaussian``, or the deprecated ``mechanism=`` (warns);
    any other keyword is a ``TypeError``, as Python's."""
    from bayespriv.mechanisms import OptimalGaussian

    unknown = [name for name in deprecated if name != "mechanism"]
    if unknown:
        raise TypeError(f"plan_releases() got an unexpected keyword argument {unknown[0]!r}")
    if not deprecated:
        return OptimalGaussian
    warn("plan_releases(mechanism=...) is deprecated and will be removed in the next release: use "
         "plan_releases(...).with_mechanism(...)", BayesPrivDeprecationWarning)
    mechanism = deprecated["mechanism"]
    return OptimalGaussian if mechanism is None else _mechanism_class(mechanism)


def plan_releases(model: DataModel | DataModelFamily, pairs: SecretPair | Sequence[SecretPair], queries: Sequence[Any],
                  *, epsilon: float, delta: float, n_draws: int, rng: RNGLike = None, confidence: float | None = 0.95,
                  **deprecated: Any) -> ReleasePlan:
    """Calibrate several queries together and choose their noise jointly under one (ε, δ).

    The noise is :class:`~bayespriv.mechanisms.OptimalGaussian`'s (the least total noise among Gaussian
    noises of its shape family); :meth:`ReleasePlan.with_mechanism` builds another mechanism class on the
    same calibrations.

    Parameters
    ----------
    model : DataModel or DataModelFamily
    pairs : SecretPair or sequence of SecretPair
    queries : sequence of Query
        Released on the same data.
    epsilon, delta : float
        The joint guarantee.
    n_draws : int
        Draws per secret of the stacked query (and of each query alone), as :func:`~bayespriv.calibrate`.
    rng : None, int, SeedSequence or Generator
        As :func:`~bayespriv.calibrate`: the stacked query and each query alone draw with a child of it.
    confidence : float or None
        As :func:`~bayespriv.calibrate`.

    Returns
    -------
    ReleasePlan

    Notes
    -----
    ``mechanism=`` (a mechanism class) is the deprecated spelling of
    ``plan_releases(...).with_mechanism(mechanism)``, kept for one release.

    Examples
    --------
    >>> import bayespriv as bp
    >>> model = bp.GaussianDataModel([0.0, 0.0, 0.0], [[1, .5, .5], [.5, 1, .5], [.5, .5, 1]], ["s", "a", "b"],
    ...                              n_records=40)
    >>> pair = bp.SecretPair(bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 0.3))
    >>> plan = plan_releases(model, pair, [bp.mean("a"), bp.mean("b")], epsilon=1.0, delta=1e-3, n_draws=20_000, rng=0)
    >>> plan.guarantee.epsilon, plan.guarantee.delta
    (1.0, 0.001)
    >>> bool(plan.summary().loc["total E‖noise‖²", "variance ratio"] < 1)  # less noise than separate releases
    True
    >>> plan.with_mechanism(bp.mechanisms.APGM).mechanism.calibration is plan.calibration  # nothing drawn again
    True
    """
    from bayespriv.calibration import calibrate
    from bayespriv.queries import Query, stack

    cls = _planned_mechanism(deprecated)
    eps, dlt = check_epsilon(epsilon), check_delta(delta)
    qs = tuple(queries)
    if len(qs) < 2 or not all(isinstance(q, Query) for q in qs):
        raise fail("queries", "a sequence of at least two Query objects", qs)
    seeds = as_seed_sequence(rng).spawn(len(qs) + 1)
    joint_cal = calibrate(model, pairs, stack(*qs), n_draws=n_draws, rng=seeds[0], confidence=confidence)
    calibrations = tuple(calibrate(model, pairs, q, n_draws=n_draws, rng=s, confidence=confidence)
                         for q, s in zip(qs, seeds[1:]))
    return _plan(cls, qs, joint_cal, calibrations, eps, dlt)
