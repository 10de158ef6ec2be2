"""Θ as a PyMC hierarchical model.

The adversary's belief about the data is written as a PyMC model: hyperparameters
φ (free random variables) and record variables of shape ``(n_records,)`` drawn
given them. :class:`PyMCDataModel` draws whole batches of datasets from it,
conditioned on a secret, through one compiled PyTensor function per kind of
secret, and runs MCMC (once per secret, in :meth:`PyMCDataModel.prepare`) where
conditioning needs a posterior.

This module holds the data model, its public methods and the registry of its
per-process runtimes. The data model owns one collaborator per stage of its
routes, each in :mod:`bayespriv.datamodels.pymc_model` (checks, plans, pivots,
conditioned models, compiled samplers, posterior runs, tabulated posteriors),
rebuilt from its settings after unpickling and never pickled.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import threading
import uuid
import weakref
from types import MappingProxyType
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._deprecation import keywords_into_option
from .._validation import fail
from ..errors import ParameterTypeError, ValidationError
from ..queries import Batch
from ..random import as_seed_sequence
from ..secrets import DistributionSecret, Secret
from .base import DataModel
from .pymc_model.batched import BatchedSampler
from .pymc_model.conditioned import ConditionedModelBuilder, single_pivot_density
from .pymc_model.graph import _ancestors, _pm  # noqa: F401 - read from here by datamodels.parameters.density
from .pymc_model.model_checks import SecretChecker, check_intervals, check_model
from .pymc_model.pivots import PivotFinder
from .pymc_model.plans import Plan, PlanBuilder
from .pymc_model.posterior import (  # noqa: F401 - the defaults are read from here too
    DEFAULT_MAX_DIVERGENCES,
    DEFAULT_MAX_R_HAT,
    DEFAULT_MIN_ESS_BULK,
    McmcSettings,
    PosteriorRunner,
    convergence,
)
from .pymc_model.runtime import Runtime
from .pymc_model.tabulated import TabulatedPosteriors, table_diagnostics

__all__ = ["PyMCDataModel", "relaxed_thresholds", "RELAXED_PREFIX"]

#: The fields of :class:`McmcSettings`, each also a (deprecated) keyword of :class:`PyMCDataModel` and an attribute
#: of the model.
_MCMC_FIELDS = tuple(f.name for f in dataclasses.fields(McmcSettings))
#: Prefix of the assumption naming a convergence threshold looser than its default.
RELAXED_PREFIX = "mcmc_relaxed:"
#: (key in ``diagnostics["mcmc_thresholds"]``, :class:`McmcSettings` field, default, +1 if larger is looser).
_THRESHOLDS = (("r_hat_max", "max_r_hat", DEFAULT_MAX_R_HAT, 1),
               ("ess_bulk_min", "min_ess_bulk", DEFAULT_MIN_ESS_BULK, -1),
               ("divergences_max", "max_divergences", DEFAULT_MAX_DIVERGENCES, 1))


def _number(value: float) -> str:
    """A threshold as it is written in an assumption name: ``50``, ``1.05``, ``100``, ``inf``."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def relaxed_thresholds(thresholds: Mapping[str, Any]) -> tuple[str, ...]:
    """Assumption names of the MCMC convergence thresholds looser than the defaults.

    Parameters
    ----------
    thresholds : mapping
        ``PyMCDataModel.thresholds`` (as kept in ``Calibration.diagnostics["mcmc_thresholds"]``):
        ``r_hat_max``, ``ess_bulk_min``, ``divergences_max``.

    Returns
    -------
    tuple of str
        ``"mcmc_relaxed:<argument>=<value>"`` per relaxed threshold, named by the
        :class:`McmcSettings` field that set it, in the order ``max_r_hat``, ``min_ess_bulk``, ``max_divergences``
        (e.g. ``"mcmc_relaxed:max_divergences=50"``); empty when none is looser than its default
        (stricter thresholds are not named).

    Examples
    --------
    >>> relaxed_thresholds({"r_hat_max": 1.05, "ess_bulk_min": 400.0, "divergences_max": 50})
    ('mcmc_relaxed:max_r_hat=1.05', 'mcmc_relaxed:max_divergences=50')
    """
    out = []
    for key, argument, default, looser in _THRESHOLDS:
        value = thresholds.get(key)
        if value is None:
            continue
        if (float(value) - default) * looser > 0:
            out.append(f"{RELAXED_PREFIX}{argument}={_number(value)}")
    return tuple(out)


#: Runtimes (built model + compiled functions) kept alive per process, so that
#: copies of one data model unpickled task after task in a worker compile once.
_RECENT_RUNTIMES = 16
_registry_lock = threading.Lock()
_live_runtimes: "weakref.WeakValueDictionary[str, Runtime]" = weakref.WeakValueDictionary()
_recent_runtimes: "collections.OrderedDict[str, Runtime]" = collections.OrderedDict()
#: The collaborators of a :class:`PyMCDataModel` (built by ``_assemble``, never pickled).
_PARTS = ("_sampler", "_conditioned", "_pivots", "_plans", "_runs", "_tabulated", "_checks")


def _mcmc_settings(owner: str, mcmc: Any, old: Mapping[str, Any]) -> McmcSettings:
    """The ``mcmc=`` of a :class:`PyMCDataModel` called as ``owner``: checked (None: the defaults), with the
    deprecated keywords of ``old`` (the settings' fields, once keywords of their own) folded in, warning. An old
    keyword given with ``mcmc=`` is a :class:`~bayespriv.errors.ValidationError`; a keyword that was never
    accepted, a ``TypeError`` (as Python's)."""
    unknown = [name for name in old if name not in _MCMC_FIELDS]
    if unknown:
        raise TypeError(f"{owner}.__init__() got an unexpected keyword argument {unknown[0]!r}")
    mcmc = keywords_into_option(owner, "mcmc", McmcSettings, old, mcmc)
    if mcmc is None:
        return McmcSettings()
    if not isinstance(mcmc, McmcSettings):
        raise ParameterTypeError(f"mcmc must be None or a bayespriv McmcSettings; got {mcmc!r:.80} of type "
                                 f"{type(mcmc).__name__}")
    return mcmc


def _build_runtime(builder: Callable[[int], Any], n_records: int) -> Runtime:
    pm = _pm()
    try:
        model = builder(n_records)
    except Exception as exc:  # noqa: BLE001 - re-raised with context
        raise ValidationError(f"builder(n_records={n_records}) must build a PyMC model; it raised {exc!r}") from exc
    if not isinstance(model, pm.Model):
        raise ParameterTypeError(f"builder(n_records) must return a pymc.Model; got {type(model).__name__}")
    return Runtime(model)


def _runtime_for(token: str, builder: Callable[[int], Any], n_records: int) -> Runtime:
    with _registry_lock:
        rt = _live_runtimes.get(token)
        if rt is None:
            rt = _build_runtime(builder, n_records)
            _live_runtimes[token] = rt
        _recent_runtimes[token] = rt
        _recent_runtimes.move_to_end(token)
        while len(_recent_runtimes) > _RECENT_RUNTIMES:
            _recent_runtimes.popitem(last=False)
        return rt


class PyMCDataModel(DataModel):
    """Θ given by a PyMC model: hyperparameters φ, then ``n_records`` records.

    Parameters
    ----------
    builder : callable
        ``builder(n_records)`` returns a :class:`pymc.Model` whose record
        variables have shape ``(n_records,)``. It is called once per process
        (the model is rebuilt, never pickled), so it must be deterministic and,
        for process executors, picklable (a module-level function or a
        :func:`functools.partial` of one). The user's model object is never
        mutated: conditioning uses :func:`pymc.do` / :func:`pymc.observe`,
        which return new models.
    n_records : int
        Records per dataset.
    columns : sequence of str
        Record variables exposed as columns: free random variables or
        deterministics of shape ``(n_records,)``.
    parameters : sequence of str, default ()
        The hyperparameters φ that :class:`~bayespriv.DistributionSecret` may
        name: free random variables or deterministics of the model (e.g.
        ``theta = pm.Deterministic("theta", mu + tau * eta)`` of a non-centred
        hierarchy). A secret names a scalar parameter (``"p"``) or one element
        of a vector parameter — a free variable whose elements are independent
        given its parents, or any vector deterministic (``"theta[2]"``,
        ``"w[1, 0]"``).
    intervals : mapping DistributionSecret -> (lo, hi), optional
        Read the listed distribution secrets as the *event* ``lo <= φ_i <= hi``
        ("φ_i in a set") rather than the point ``φ_i = value``.
        :class:`~bayespriv.DistributionSecret` holds one number, so the set is
        declared here; ``value`` must lie in ``[lo, hi]`` and serves as the
        label. Example: ``{DistributionSecret("p", 0.25): (0.0, 0.5)}``.
    mcmc : McmcSettings, optional
        The MCMC settings, used once per secret that needs a posterior
        (:class:`~bayespriv.datamodels.McmcSettings`: ``draws``, ``tune``,
        ``chains``, ``target_accept``, the convergence thresholds
        ``max_r_hat``, ``min_ess_bulk``, ``max_divergences`` and
        ``mcmc_extensions``). None: ``McmcSettings()``, the defaults. A
        threshold looser than its default is a weaker premise for the
        posterior draws: a calibration with some secret drawn by MCMC names it
        in its assumptions (``"mcmc_relaxed:max_divergences=50"``, see
        :func:`relaxed_thresholds`). The eight settings passed as keywords of
        their own (``draws=500``) are the deprecated spelling, kept for one
        release: they warn with
        :class:`~bayespriv.errors.BayesPrivDeprecationWarning`, and with
        ``mcmc=`` too are a :class:`~bayespriv.errors.ValidationError`. The
        model keeps each setting as an attribute of the same name
        (``model.draws``), and the whole as :attr:`mcmc`.
    conjugate : bool, default True
        Use exact posteriors where they apply instead of MCMC: the
        Beta-Bernoulli conjugate and the quadrature route for a single scalar
        latent variable (see below); ``False`` forces MCMC (useful to check
        one against the other).
    theta : dict, optional
        Parameters naming this model inside a
        :class:`~bayespriv.datamodels.family.DataModelFamily`.

    Notes
    -----
    **Secrets and how they are conditioned on.** Let ``O`` be the model's own
    observed variables (public data the adversary has seen: the belief is the
    posterior given them) and ``E`` the variables a secret fixes. ``A`` is the
    set of free random variables upstream of ``E`` and ``O``. Because ``A``,
    ``E`` and ``O`` together are closed under taking parents, every other
    variable is distributed, given them, by its own conditional in the model:
    so a draw is "``A`` from its posterior given ``E`` and ``O``, then
    everything else forward, with ``E`` and ``O`` fixed" (a :func:`pymc.do`
    intervention on ``A``, ``E`` and ``O``). Which variables are upstream is
    read from the PyTensor graph (ancestors of each variable).

    * ``DistributionSecret(φ_i, a)`` (a point). When no free random variable
      upstream of φ_i (or of the public data) reaches the columns other than
      through φ_i — e.g. φ_i is a root of the graph — conditioning on φ_i = a
      *is* the intervention ``pm.do(model, {φ_i: a})``: exact forward
      sampling (route ``"forward"``). When φ_i has parents that also reach the
      records (e.g. τ → φ_i and τ → μ → y), conditioning is not intervening:
      the parents are drawn from their posterior given φ_i = a
      (``pm.observe`` + MCMC, route ``"mcmc"``), then ``pm.do`` on both.
    * ``DistributionSecret("theta[2]", a)`` (one element of a vector
      parameter θ with a univariate distribution, e.g.
      ``pm.Beta("theta", α, β, shape=4)``: its elements are independent given
      their parents π). Only θ[2] is fixed: a draw is π from its posterior
      given θ[2] = a (density ∝ p(π)·p(θ[2] = a | π), MCMC on the model with
      that term added as a potential, route ``"mcmc"``), then θ := a fresh
      draw of θ given π with element 2 set to a, then the records. When no
      free random variable upstream of θ (or of the public data) reaches the
      columns — π are constants — the other elements are drawn from their
      prior: exact forward sampling (route ``"forward"``). Parameters with a
      multivariate law (MvNormal, ...) are refused: their elements are
      not independent given the parents — except a weight of a Dirichlet with
      constant concentrations, w ~ Dir(α): given w_i = v the other weights are
      (1 − v)·Dir(α without α_i), independent of w_i (the aggregation property,
      Dirichlet neutrality), drawn exactly (route ``"forward"``).
      ``intervals`` take scalar parameters only.
    * ``DistributionSecret("theta[2]", a)`` on a **deterministic** θ (or a
      scalar deterministic), e.g. the non-centred ``theta = mu + tau * eta``.
      *Conditioning, not intervention.* A Pufferfish secret is an event of
      the adversary's belief Θ, and the guarantee compares the laws of the
      data *given* each event: the secret's law is Θ conditioned on
      θ_2 = a. The intervention ``pm.do(θ_2 := a)`` instead cuts θ_2 from its
      parents and leaves μ, τ, η at their unconditional (posterior) law; but
      an adversary who learns θ_2 = a also learns about μ and τ, hence about
      every other school's θ — in the eight-schools scenario
      (``models/schools.py``) the sensitivity of the mean of new scores is
      about 6 under conditioning and 1.25 under the intervention, which would
      under-noise almost fivefold. The two coincide only when nothing
      upstream of θ_2 reaches the records or the public data other than
      through it (then route ``"forward"``, for scalar deterministics).
      *The conditional law of a measure-zero event.* θ_2 = a has probability
      zero; its law is the disintegration along the random variable θ_2:
      change variables from a *pivot* w (a scalar element of a free variable
      in which θ_2 is affine, θ_2 = α + β·w with α, β free of w) to θ_2 and
      set θ_2 = a; the other variables then have density
      ∝ p(others, w = w*) / |β| at w* = (a − α)/β. For θ = μ + τη and
      pivot η_2 this is p(μ, τ, η_{−2}) φ((a − μ)/τ)/τ = p(μ, τ, η_{−2})
      N(a; μ, τ²), exactly the centred model's conditional given its free
      θ_2 = a, so equivalent parametrisations give the same secret; any
      valid pivot gives the same law (the choice only shapes the MCMC
      geometry). The pivot must have the real line as support (no value
      transform), independent elements given its parents and be upstream of
      no other free variable θ_2 depends on; the one chosen is the first of:
      a *shift* (constant β: no Jacobian funnel — μ for θ = μ + τη, giving
      μ = a − τη_2, which samples like a non-centred model where the pivot
      η_2 would bring back the funnel N(a; μ, τ²)), an element no other
      element of θ depends on, the variable declared last. Affinity is
      checked at random points, and θ_2 = a on every posterior draw. MCMC
      (route ``"mcmc"``) runs on the model with every use of the pivot's
      variable replaced (``pm.do``) by its value with w = w*, plus the
      potential log p(w*) − log|β|; the draws (the pivot's solved value
      included) then feed forward sampling. Deterministics that are not affine
      in any such variable (e.g. ``invlogit(μ + τη)``) are refused: put the
      secret on the linear predictor (the same event, θ_2 = logit(a)).
    * ``DistributionSecret`` listed in ``intervals`` (φ_i in ``[lo, hi]``):
      φ_i and its ancestors are drawn jointly from the prior and kept when
      ``lo <= φ_i <= hi`` — exact rejection sampling from the prior restricted
      to the set, vectorised in rounds (an error is raised when the set has
      prior probability below 1e-3). With public data in the model, the same
      restriction is applied to posterior draws (MCMC).
    * ``DatasetSecret.proportion(column, category, p)`` on a Bernoulli record
      column: exactly ``k = p·n`` records have ``column == category`` (``k``
      must be a whole number, see :func:`~bayespriv.secrets.share_count`). The
      column is fixed to one configuration with ``k`` records in the category,
      the hyperparameters upstream of the column are drawn from their
      posterior given it (``pm.observe`` on the column + MCMC), and the other
      columns are drawn given both. Records are assumed **exchangeable** given
      the hyperparameters (the model is invariant under permuting record
      positions, as every i.i.d.-given-φ model is): the posterior then depends
      on the configuration only through ``k``, so the configuration is
      shuffled uniformly per draw, which makes the draws correct for every
      query, symmetric in the records or not. Exact routes, used instead of
      MCMC and named in ``diagnostics``: (i) nothing upstream of the column
      reaches the other columns (e.g. the column's distribution has constant
      parameters) — forward sampling; (ii) the column is ``Bernoulli(p)``
      with ``p ~ Beta(a, b)`` (constants) the only free variable upstream —
      the posterior is ``Beta(a + ones, b + zeros)``, drawn directly.
    * ``DatasetSecret.mean(column, a)`` on a Normal record column
      ``x_r ~ N(m_r, s_r²)`` (independent given their parents): every drawn
      dataset has column mean exactly ``a``. Given the parents, the records
      are drawn by Gaussian conditioning on their sum (Matheron's rule,
      ``x = y + s²/Σs² (n a − Σ y)`` with ``y`` an unconditional draw); the
      parents' posterior is proportional to their prior times the density of
      ``Σ x ~ N(Σ m, Σ s²)`` at ``n a`` (MCMC), or not needed when the
      parameters are constants (exact forward route).

    **Sampling.** Every route draws the whole batch ``(n_draws, n_records)``
    from one compiled function: the model is intervened on (``pm.do``) at the
    given variables, every random variable without random parents gets a
    leading batch dimension (``change_dist_size``) and the rest of the graph is
    vectorised (``vectorize_graph``), so no variable is shared across the
    batch. Compiled functions are cached per (given variables, columns) and
    per process, reseeded from the ``rng`` of each call: calibration is
    reproducible and identical whichever executor runs it. Posterior draws
    (``chains × draws``) are resampled with replacement, one per dataset.

    **Quadrature (exact one-dimensional posteriors).** When a secret's
    posterior involves a single free random variable θ, scalar and continuous
    (every other variable upstream of the evidence is fixed or deterministic:
    e.g. ``z ~ Normal``, ``p = sigmoid(z)``, a proportion secret on
    ``Bernoulli(p)``; a mean secret with one Normal hyperparameter; a parent τ
    of a distribution secret's φ), its log density on PyMC's unconstrained
    scale is tabulated on a uniform grid and θ is drawn by exact inverse CDF
    of the exponential of the piecewise-linear interpolation, fresh per
    dataset (route ``"quadrature"``, no MCMC). For a log-concave posterior the
    interpolation and the extended chords sandwich the density, which bounds
    the total-variation distance between the drawn and the exact posterior by
    ``1 − Z_lower/Z_upper``; the grid is refined until that bound is at most
    1e-6 (reported as ``tv_bound`` in :attr:`diagnostics`). Log-concavity is
    checked on the grid spanning the posterior's mass (45 nats below the
    mode), not proven: a feature narrower than a grid cell or a second mode
    far outside the bracket would escape the check. A posterior that fails
    the check, or whose value transform is not log / log-odds / interval /
    none, goes to MCMC (the reason is in the ``note``).

    **MCMC.** :meth:`prepare` (called once by :func:`~bayespriv.calibrate`)
    runs :func:`pymc.sample` once per secret that needs it, on the model
    observed at the secret and pruned to the variables upstream of the
    evidence, checks R-hat, bulk ESS and divergences (ArviZ), records them in
    :attr:`diagnostics` and returns a new model holding the posterior draws.
    Sampling with such a secret on an unprepared model runs the MCMC inside
    the call, every call (seeded from ``rng``). The calibration's Monte-Carlo
    standard errors treat the resampled posterior draws as exact draws: the
    ESS threshold keeps the neglected MCMC error small relative to them.

    **Posterior cache.** MCMC runs and quadrature tables are kept in a
    process-wide cache (64 entries, 512 MiB, least recently used dropped)
    keyed by a hash of the built model's graph (variables, distributions,
    constants, ``pm.Data`` values, transforms), of the builder's code and
    closure, ``n_records``, the secret and its evidence, the route, ``draws``,
    ``tune``, ``chains``, ``target_accept`` (MCMC), the seed derived for the
    secret (every route) and the PyMC / PyTensor versions: a repeated
    :func:`~bayespriv.calibrate` with the same seed (even with a new
    instance of the model) skips :func:`pymc.sample` and gives the same
    numbers bit for bit, while a changed prior, data, setting or seed runs
    MCMC again. Only this process's own runs enter the cache; a lookup of the
    wrong type is a miss. The key travels in the saved posteriors
    (``Calibration.to_netcdf``), but :func:`~bayespriv.load_calibration`
    does not put them in the cache: a new process reuses them only when told
    to, ``calibrate(..., execution=ExecutionOptions(reuse=loaded))`` (a verified file), and then only a
    run whose key is the one this model computes. Convergence is checked on
    every use. :func:`~bayespriv.clear_posterior_cache` empties it.

    **Public (auxiliary) data.** Put what the adversary already knows into the
    model as observed variables sharing the hyperparameters, e.g.
    ``pm.Bernoulli("public", p, observed=survey)`` next to
    ``pm.Bernoulli("gender", p, shape=n)``: the belief on φ is then the
    posterior given those data, and every secret is conditioned jointly on
    them and on the secret's evidence (one MCMC per secret, route ``"mcmc"``,
    unless the data do not reach the columns). This is exact where fitting the
    hyperprior first and resampling its draws would drop the dependence
    between the public data and the secret's evidence, so there is no separate
    ``auxiliary=`` argument.

    Models with :func:`pymc.Potential` terms are refused (forward sampling
    would ignore them while MCMC would not).

    Examples
    --------
    >>> import pymc as pm, bayespriv as bp
    >>> def build(n):
    ...     with pm.Model() as m:
    ...         p = pm.Beta("p", 2, 2)
    ...         g = pm.Bernoulli("gender", p, shape=n)
    ...         pm.Normal("height", pm.math.switch(g, 70.0, 64.0), 3.0, shape=n)
    ...     return m
    >>> model = PyMCDataModel(build, n_records=50, columns=["gender", "height"], parameters=["p"])
    >>> batch = model.sample(bp.DistributionSecret("p", 0.3), 4, rng=0)
    >>> batch["height"].shape
    (4, 50)
    """

    def __init__(
        self,
        builder: Callable[[int], Any],
        *,
        n_records: int,
        columns: Sequence[str],
        parameters: Sequence[str] = (),
        intervals: Mapping[DistributionSecret, tuple[float, float]] | None = None,
        mcmc: McmcSettings | None = None,
        conjugate: bool = True,
        theta: Mapping[str, Any] | None = None,
        **deprecated: Any,
    ) -> None:
        mcmc = _mcmc_settings(type(self).__name__, mcmc, deprecated)
        if not callable(builder):
            raise ParameterTypeError(f"builder must be callable (n_records -> pymc.Model); got {type(builder).__name__}")
        if isinstance(columns, str):
            raise ParameterTypeError(f"columns must be a sequence of names, not a single string; got {columns!r}")
        super().__init__(columns, n_records, theta)
        if isinstance(parameters, str):
            raise ParameterTypeError(f"parameters must be a sequence of names, not a single string; got {parameters!r}")
        self.parameters = tuple(parameters)
        if not all(isinstance(p, str) for p in self.parameters) or len(set(self.parameters)) != len(self.parameters):
            raise fail("parameters", "distinct variable names", list(parameters))
        self.builder = builder
        for name in _MCMC_FIELDS:  # each setting a plain attribute too (model.draws): the signature reads them
            setattr(self, name, getattr(mcmc, name))
        self.conjugate = bool(conjugate)
        self._token = uuid.uuid4().hex
        self._rt: Runtime | None = None
        self._pools: dict[Secret, dict[str, np.ndarray]] = {}
        self._tables: dict[Secret, Any] = {}  # secret -> QuadratureTable (prepared exact 1-D posteriors)
        self._diagnostics: dict[str, Any] = {}
        self._posteriors: dict[str, Any] = {}
        check_model(self.pymc_model, self.columns, self.n_records, self.parameters)
        checking = SecretChecker(self._runtime, parameters=self.parameters, n_records=self.n_records)
        self.intervals = check_intervals(intervals, checking.check_parameter)
        self._assemble()

    def _assemble(self) -> None:
        """Build the collaborators from the settings: after construction, unpickling and copying (never pickled).

        Each reaches the per-process runtime through :meth:`_runtime`, and those that consult a hook (the
        methods below ``_run_mcmc``) are handed this model's, so that a subclass overriding one changes what
        they do.
        """
        rt, n = self._runtime, self.n_records
        self._sampler = BatchedSampler(rt, n)
        self._conditioned = ConditionedModelBuilder(rt, n, pivot_density=self._pivot_density)
        self._pivots = PivotFinder(rt, find=self._find_pivot)
        self._plans = PlanBuilder(rt, columns=self.columns, n_records=n, intervals=self.intervals,
                                  conjugate=self.conjugate, pivots=self._pivots, conditioned=self._conditioned,
                                  element_plan=self._element_plan)
        settings = McmcSettings(**{name: getattr(self, name) for name in _MCMC_FIELDS})
        self._runs = PosteriorRunner(rt, builder=self.builder, n_records=n, settings=settings,
                                     conditioned=self._conditioned, convergence=self._convergence)
        self._tabulated = TabulatedPosteriors(rt, conjugate=self.conjugate, runs=self._runs,
                                              conditioned=self._conditioned)
        self._checks = SecretChecker(rt, parameters=self.parameters, n_records=n, intervals=self.intervals,
                                     plan=self._plans.plan)

    # -- the built model -------------------------------------------------------------------
    def _runtime(self) -> Runtime:
        if self._rt is None:
            self._rt = _runtime_for(self._token, self.builder, self.n_records)
        return self._rt

    @property
    def mcmc(self) -> McmcSettings:
        """The MCMC settings this model runs with (read-only: a model with other settings is a new model,
        ``PyMCDataModel(..., mcmc=dataclasses.replace(model.mcmc, draws=2000))``)."""
        return self._runs.settings

    @property
    def pymc_model(self):
        """The PyMC model built by ``builder(n_records)`` (do not mutate it)."""
        return self._runtime().model

    # -- secrets ---------------------------------------------------------------------------
    def check_secret(self, secret: Secret | None) -> None:
        """Raise a clear error when the model cannot condition on ``secret``.

        Distribution secrets must name a scalar parameter; proportion secrets a
        Bernoulli record column, a category 0 or 1 and a share ``p`` with
        ``p·n`` whole; mean secrets a Normal record column.
        """
        if secret is None:
            return
        if isinstance(secret, DistributionSecret):
            self._checks.check_parameter(secret)
            return
        super().check_secret(secret)
        self._checks.check_dataset_secret(secret)

    # -- preparation -----------------------------------------------------------------------
    def prepare(self, secrets: Sequence[Secret], rng: np.random.Generator) -> "PyMCDataModel":
        """Run the per-secret inference once; return a new model holding its draws.

        For each secret whose route is ``"quadrature"`` (see the class notes),
        tabulates its posterior; for each whose route is ``"mcmc"``, runs
        :func:`pymc.sample` with a seed derived from ``rng`` and the secret (or
        takes the run from the posterior cache), checks convergence and stores
        the posterior draws; other routes need nothing. A secret this model was
        already prepared for keeps its table or draws and their diagnostics (no
        second run: an attack on a prepared model samples the posterior it was
        given). The returned copy pickles (posterior draws are NumPy arrays;
        compiled functions are rebuilt per process) and reports
        :attr:`diagnostics`.

        Raises
        ------
        ConvergenceError
            When a posterior fails the R-hat / ESS / divergence thresholds.
        """
        root = as_seed_sequence(rng)
        new = copy.copy(self)
        new._pools = dict(self._pools)
        new._tables = dict(self._tables)
        new._posteriors = {}
        per_secret: dict[str, Any] = {}
        earlier = self._diagnostics.get("mcmc", {}) if self._diagnostics else {}
        for secret in dict.fromkeys(secrets):
            self.check_secret(secret)
            plan = self._plans.plan(secret)
            label = "no secret" if secret is None else secret.label
            if (secret in self._pools or secret in self._tables) and label in earlier:  # prepared before
                per_secret[label] = earlier[label]
                if label in self._posteriors:
                    new._posteriors[label] = self._posteriors[label]
                continue
            seed = PosteriorRunner.secret_seed(root, secret)
            table = self._tabulated.table(secret, plan, seed) if plan.route == "mcmc" else None
            if table is not None and not isinstance(table, str):
                new._tables[secret] = table
                per_secret[label] = table_diagnostics(table)
            elif plan.route == "mcmc":
                pool, diag, idata = self._run_mcmc(secret, plan, seed)
                if isinstance(table, str) and self.conjugate:
                    diag["note"] = f"{diag.get('note', 'MCMC')} (no quadrature: {table})"
                new._pools[secret] = pool
                if idata is not None:
                    new._posteriors[label] = idata
                per_secret[label] = diag
            else:
                per_secret[label] = {"route": plan.route, "note": plan.note}
        new._diagnostics = {"mcmc": per_secret, "mcmc_thresholds": self.thresholds}
        return new

    @property
    def thresholds(self) -> dict[str, float]:
        """The convergence thresholds :meth:`prepare` enforces."""
        return {"r_hat_max": self.max_r_hat, "ess_bulk_min": self.min_ess_bulk, "divergences_max": self.max_divergences}

    @property
    def diagnostics(self) -> Mapping[str, Any]:
        """``{"mcmc": {secret label: {...}}, "mcmc_thresholds": {...}}`` after :meth:`prepare`, else ``{}``.

        Each secret's entry names its ``route`` (``forward``, ``conjugate``,
        ``quadrature``, ``rejection`` or ``mcmc``) with a ``note``; quadrature
        entries add ``variables``, ``tv_bound`` and ``grid_points``; MCMC entries add
        ``r_hat_max``, ``ess_bulk_min``, ``ess_tail_min``, ``divergences``,
        ``chains``, ``draws``, ``tune``, ``target_accept``, ``variables`` and
        ``seed``.
        """
        return self._diagnostics

    @property
    def posteriors(self) -> Mapping[str, Any]:
        """secret label -> the :class:`arviz.InferenceData` of its MCMC run in :meth:`prepare`.

        One entry per secret whose route is ``"mcmc"`` (posterior, sample_stats
        and observed_data groups as :func:`pymc.sample` returns them, tuning
        draws discarded), so ``az.plot_trace`` and ``az.summary`` can diagnose
        a :class:`~bayespriv.errors.ConvergenceError` or a doubtful run.
        Empty before :meth:`prepare`. Read-only view.
        """
        return MappingProxyType(getattr(self, "_posteriors", {}))

    def route(self, secret: Secret | None) -> str:
        """How ``secret`` is conditioned on: ``"forward"``, ``"conjugate"``, ``"quadrature"``, ``"rejection"`` or ``"mcmc"``.

        Telling ``"quadrature"`` from ``"mcmc"`` tabulates the posterior (once per process).
        """
        self.check_secret(secret)
        plan = self._plans.plan(secret)
        if plan.route == "mcmc" and not isinstance(self._tabulated.table(secret, plan), str):
            return "quadrature"
        return plan.route

    # -- sampling --------------------------------------------------------------------------
    def _sample(self, secret, n_draws, rng, columns) -> Batch:
        plan = self._plans.plan(secret)
        givens = self._sampler.fixed(plan, n_draws, rng)
        if plan.route == "conjugate":
            name, a, b = plan.conjugate
            givens[name] = rng.beta(a, b, size=n_draws)
        elif plan.route == "rejection":
            givens.update(self._sampler.rejection(plan, n_draws, rng))
        elif plan.route == "mcmc" and (table := self._exact_table(secret, plan)) is not None:
            givens[table.name] = table.draw(n_draws, rng)
        elif plan.route == "mcmc":
            givens.update(self._posterior_draws(secret, plan, n_draws, rng))
        return self._sampler.draw(givens, plan.mean, tuple(columns), n_draws, rng, plan.element)

    def _exact_table(self, secret: Secret | None, plan: Plan):
        """The quadrature table to draw ``secret``'s latent variable from (prepared, or tabulated now), or None."""
        return self._tabulated.exact(secret, plan, self._tables, self._pools)

    def _posterior_draws(self, secret: Secret | None, plan: Plan, n_draws: int,
                         rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``n_draws`` joint draws of ``plan.pool`` resampled with replacement from the prepared posterior draws
        (or, on a model not prepared for ``secret``, from an MCMC run made now and seeded from ``rng``)."""
        pool = self._pools.get(secret)
        if pool is None:
            with self._runtime().lock:
                seed = int(rng.integers(0, 2**32 - 1))
                pool, _, _ = self._run_mcmc(secret, plan, seed)
        size = next(iter(pool.values())).shape[0]
        idx = rng.integers(0, size, size=n_draws)
        return {name: values[idx] for name, values in pool.items()}

    # -- hooks: ``_run_mcmc`` is called here; the others are handed to the collaborators (:meth:`_assemble`) --
    def _run_mcmc(self, secret: Secret | None, plan: Plan,
                  seed: int) -> tuple[dict[str, np.ndarray], dict[str, Any], Any]:
        """Posterior draws of ``plan.pool``, their diagnostics and the InferenceData (:meth:`PosteriorRunner.run
        <bayespriv.datamodels.pymc_model.posterior.PosteriorRunner.run>`); raises ConvergenceError."""
        return self._runs.run(secret, plan, seed)

    def _convergence(self, idata: Any, names: Sequence[str]) -> tuple[float, float, float]:
        """The worst R-hat, bulk ESS and tail ESS of a run
        (:func:`~bayespriv.datamodels.pymc_model.posterior.convergence`)."""
        return convergence(idata, names)

    def _element_plan(self, secret: DistributionSecret, observed: list[str]) -> Plan:
        """The plan of a secret on one element of a vector parameter (:meth:`PlanBuilder.element_plan
        <bayespriv.datamodels.pymc_model.plans.PlanBuilder.element_plan>`)."""
        return self._plans.element_plan(secret, observed)

    def _find_pivot(self, name: str, index: tuple[int, ...]):
        """The pivot of a secret on ``name[index]``, or the reason there is none (:meth:`PivotFinder.find
        <bayespriv.datamodels.pymc_model.pivots.PivotFinder.find>`)."""
        return self._pivots.find(name, index)

    @staticmethod
    def _pivot_density(logp, beta):
        """The potential of a single pivot
        (:func:`~bayespriv.datamodels.pymc_model.conditioned.single_pivot_density`)."""
        return single_pivot_density(logp, beta)

    # -- pickling --------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in _PARTS}  # the collaborators are rebuilt
        state["_rt"] = None  # the PyMC model and compiled functions are rebuilt per process
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._assemble()

    def _signature_state(self) -> dict[str, Any]:
        """What defines this model's law (:mod:`bayespriv.datamodels.signature`): the built graph, its data and the
        builder (the posterior cache's fingerprint), and the plain settings."""
        plain = {k: v for k, v in vars(self).items()
                 if not k.startswith("_") and isinstance(v, (str, int, float, bool, type(None), tuple, list))}
        return {"graph": self._runs.fingerprint(), **plain}

    def __repr__(self) -> str:
        extra = f", theta={self.theta}" if self.theta else ""
        return (
            f"PyMCDataModel(columns={list(self.columns)}, parameters={list(self.parameters)}, "
            f"n_records={self.n_records}{extra})"
        )
