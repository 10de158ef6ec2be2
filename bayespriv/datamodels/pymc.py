"""Θ as a PyMC hierarchical model.

The adversary's belief about the data is written as a PyMC model: hyperparameters
φ (free random variables) and record variables of shape ``(n_records,)`` drawn
given them. :class:`PyMCDataModel` draws whole batches of datasets from it,
conditioned on a secret, through one compiled PyTensor function per kind of
secret, and runs MCMC (once per secret, in :meth:`PyMCDataModel.prepare`) where
conditioning needs a posterior.
"""

from __future__ import annotations

import collections
import copy
import json
import logging
import math
import threading
import uuid
import weakref
import re
import zlib
from types import MappingProxyType
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._progress import should_show
from .._validation import check_positive_int, check_real, described, fail
from ..errors import ConvergenceError, ParameterTypeError, UnsupportedSecretError, ValidationError
from ..queries import Batch
from ..random import as_seed_sequence
from ..secrets import DatasetSecret, DistributionSecret, Secret, share_count
from .base import DataModel

__all__ = ["PyMCDataModel", "relaxed_thresholds", "RELAXED_PREFIX"]

#: Default convergence thresholds of :class:`PyMCDataModel` (R-hat at most, bulk ESS at least,
#: divergent transitions at most).
DEFAULT_MAX_R_HAT, DEFAULT_MIN_ESS_BULK, DEFAULT_MAX_DIVERGENCES = 1.01, 400.0, 0
#: Prefix of the assumption naming a convergence threshold looser than its default.
RELAXED_PREFIX = "mcmc_relaxed:"
#: (key in ``diagnostics["mcmc_thresholds"]``, constructor argument, default, +1 if larger is looser).
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
        ``"mcmc_relaxed:<argument>=<value>"`` per relaxed threshold, named by the constructor
        argument that set it, in the order ``max_r_hat``, ``min_ess_bulk``, ``max_divergences``
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
_live_runtimes: "weakref.WeakValueDictionary[str, _Runtime]" = weakref.WeakValueDictionary()
#: Attribute of a posterior group: the JSON list of the free variables the MCMC sampled.
_FREE_ATTR = "bayespriv_free_variables"
#: Names added to the MCMC model of a secret on a deterministic: the pivot's density term and D[i] itself.
_PIVOT_TERM = "__bayespriv_pivot"
_PIVOT_CHECK = "__bayespriv_pivot_check"  # no trailing "__": PyMC keeps such names out of the trace
_recent_runtimes: "collections.OrderedDict[str, _Runtime]" = collections.OrderedDict()


def _pm():
    """Import PyMC lazily (it is slow to import and only this module needs it)."""
    import pymc

    return pymc


# ---------------------------------------------------------------------------------------
# graph helpers
# ---------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------
# per-process runtime: the built model and its compiled functions
# ---------------------------------------------------------------------------------------
class _Runtime:
    """The PyMC model built by ``builder(n_records)`` and compiled samplers of it.

    Shared by all copies of one :class:`PyMCDataModel` within a process (see the
    registry above); never pickled. ``lock`` serialises every use of the
    compiled functions, whose RNG state is reseeded on each call.
    """

    def __init__(self, model) -> None:
        self.model = model
        self.lock = threading.RLock()
        self.functions: dict[tuple, tuple[Any, list, list[str]]] = {}
        self.plans: dict[Any, _Plan] = {}
        self.fingerprint: str | None = None  # of the built model and the builder (posterior cache keys)
        self.tables: dict[Any, Any] = {}  # secret -> quadrature table or the reason there is none
        self.pivots: dict[Any, Any] = {}  # (deterministic, index) -> (pivot, index, note) or the reason there is none


def _build_runtime(builder: Callable[[int], Any], n_records: int) -> _Runtime:
    pm = _pm()
    try:
        model = builder(n_records)
    except Exception as exc:  # noqa: BLE001 - re-raised with context
        raise ValidationError(f"builder(n_records={n_records}) must build a PyMC model; it raised {exc!r}") from exc
    if not isinstance(model, pm.Model):
        raise ParameterTypeError(f"builder(n_records) must return a pymc.Model; got {type(model).__name__}")
    return _Runtime(model)


def _runtime_for(token: str, builder: Callable[[int], Any], n_records: int) -> _Runtime:
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


# ---------------------------------------------------------------------------------------
# plans: how to draw given a secret
# ---------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Plan:
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
        :meth:`PyMCDataModel._deterministic_plan`
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
    draws, tune, chains : int, default 1000, 1000, 2
        MCMC settings (:func:`pymc.sample`, one core, no progress bar), used
        once per secret that needs a posterior.
    target_accept : float, default 0.9
        NUTS target acceptance rate.
    max_r_hat, min_ess_bulk, max_divergences : default 1.01, 400, 0
        Convergence thresholds: :meth:`prepare` raises
        :class:`~bayespriv.errors.ConvergenceError` when the largest R-hat
        exceeds ``max_r_hat``, the smallest bulk effective sample size is below
        ``min_ess_bulk`` or there are more than ``max_divergences`` divergent
        transitions. A threshold looser than its default is a weaker premise
        for the posterior draws: a calibration with some secret drawn by MCMC
        names it in its assumptions, and so does every guarantee built on it
        (``"mcmc_relaxed:max_divergences=50"``, see :func:`relaxed_thresholds`).
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
      multivariate law (Dirichlet, MvNormal) are refused: their elements are
      not independent given the parents. ``intervals`` take scalar parameters only.
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
    to, ``calibrate(..., reuse=loaded)`` (a verified file), and then only a
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
        draws: int = 1000,
        tune: int = 1000,
        chains: int = 2,
        target_accept: float = 0.9,
        max_r_hat: float = DEFAULT_MAX_R_HAT,
        min_ess_bulk: float = DEFAULT_MIN_ESS_BULK,
        max_divergences: int = DEFAULT_MAX_DIVERGENCES,
        conjugate: bool = True,
        theta: Mapping[str, Any] | None = None,
    ) -> None:
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
        self.draws = check_positive_int(draws, "draws")
        self.tune = check_positive_int(tune, "tune", minimum=0)
        self.chains = check_positive_int(chains, "chains")
        self.target_accept = check_real("target_accept", target_accept)
        if not 0.0 < self.target_accept < 1.0:
            raise fail("target_accept", "in the open interval (0, 1)", target_accept)
        self.max_r_hat = check_real("max_r_hat", max_r_hat)
        if not self.max_r_hat >= 1.0:
            raise fail("max_r_hat", ">= 1", max_r_hat)
        self.min_ess_bulk = check_real("min_ess_bulk", min_ess_bulk)
        if not self.min_ess_bulk >= 0:
            raise fail("min_ess_bulk", ">= 0", min_ess_bulk)
        self.max_divergences = check_positive_int(max_divergences, "max_divergences", minimum=0)
        self.conjugate = bool(conjugate)
        self._token = uuid.uuid4().hex
        self._rt: _Runtime | None = None
        self._pools: dict[Secret, dict[str, np.ndarray]] = {}
        self._tables: dict[Secret, Any] = {}  # secret -> QuadratureTable (prepared exact 1-D posteriors)
        self._diagnostics: dict[str, Any] = {}
        self._posteriors: dict[str, Any] = {}
        self._check_model()
        self.intervals = self._check_intervals(intervals)

    # -- model checks ----------------------------------------------------------------------
    def _runtime(self) -> _Runtime:
        if self._rt is None:
            self._rt = _runtime_for(self._token, self.builder, self.n_records)
        return self._rt

    @property
    def pymc_model(self):
        """The PyMC model built by ``builder(n_records)`` (do not mutate it)."""
        return self._runtime().model

    def _check_model(self) -> None:
        model = self.pymc_model
        if model.potentials:
            raise ValidationError(
                "the PyMC model must not contain pm.Potential terms (forward sampling would ignore them); "
                f"got {[p.name for p in model.potentials]!r}"
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
        if getattr(op, "ndim_supp", None) != 0:
            raise UnsupportedSecretError(
                f"element secrets need a parameter whose elements are independent given its parents (a univariate "
                f"distribution with a shape, e.g. pm.Beta('theta', a, b, shape=4)); {name!r} is {op}"
            )
        if secret in self.intervals:
            raise UnsupportedSecretError(f"intervals are for scalar parameters; got the element secret {secret.label!r}")

    def check_secret(self, secret: Secret | None) -> None:
        """Raise a clear error when the model cannot condition on ``secret``.

        Distribution secrets must name a scalar parameter; proportion secrets a
        Bernoulli record column, a category 0 or 1 and a share ``p`` with
        ``p·n`` whole; mean secrets a Normal record column.
        """
        if secret is None:
            return
        if isinstance(secret, DistributionSecret):
            self._check_parameter(secret)
            return
        super().check_secret(secret)
        from pytensor.tensor.random.basic import BernoulliRV, NormalRV

        model = self.pymc_model
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

    # -- plans -----------------------------------------------------------------------------
    def _plan(self, secret: Secret | None) -> _Plan:
        rt = self._runtime()
        with rt.lock:
            plan = rt.plans.get(secret)
            if plan is None:
                plan = self._make_plan(secret)
                rt.plans[secret] = plan
            return plan

    def _free_upstream(self, targets: Sequence[str], exclude: set[str]) -> set[str]:
        model = self.pymc_model
        anc = _ancestors([model[t] for t in targets])
        return {v.name for v in model.free_RVs if v in anc and v.name not in exclude}

    def _reaching_columns(self, candidates: set[str], blockers: Sequence[str]) -> set[str]:
        model = self.pymc_model
        anc = _ancestors([model[c] for c in self.columns], blockers=[model[b] for b in blockers])
        return {a for a in candidates if model[a] in anc}

    def _make_plan(self, secret: Secret | None) -> _Plan:
        model = self.pymc_model
        observed = [v.name for v in model.observed_RVs]
        if isinstance(secret, DistributionSecret) and secret in self.intervals:
            return self._interval_plan(secret, observed)

        fixed: dict[str, np.ndarray] = {}
        observe: dict[str, np.ndarray] = {}
        permute = None
        mean = None
        if secret is None:
            evidence: list[str] = []
        elif isinstance(secret, DistributionSecret) and self._is_deterministic(
                (_element(secret.parameter) or (secret.parameter,))[0]):
            return self._deterministic_plan(secret, observed)
        elif isinstance(secret, DistributionSecret) and _element(secret.parameter) is not None:
            return self._element_plan(secret, observed)
        elif isinstance(secret, DistributionSecret):
            name = secret.parameter
            value = np.asarray(secret.value, dtype=model[name].dtype)
            evidence = [name]
            fixed[name] = value
            observe[name] = value
        elif secret.statistic == "proportion":
            name = secret.column
            k = share_count(secret.value, self.n_records)
            inside = np.arange(self.n_records) < k
            config = (inside if int(secret.category) == 1 else ~inside).astype(model[name].dtype)
            evidence = [name]
            fixed[name] = config
            observe[name] = config
            permute = name
        else:
            evidence = []
            mean = (secret.column, float(secret.value))
        targets = observed + evidence + ([mean[0]] if mean else [])
        upstream = self._free_upstream(targets, set(evidence) | ({mean[0]} if mean else set()))
        relevant = self._reaching_columns(upstream, observed + evidence)
        base = _Plan("forward", "", fixed=fixed, permute=permute, observe=observe, mean=mean)
        if not relevant:
            what = "no free random variable upstream of the evidence reaches the columns"
            base.note = f"exact forward sampling ({what})" if secret is not None else "forward sampling from the prior"
            return base
        base.pool = tuple(sorted(upstream))
        base.keep = tuple(observed + evidence) + (("__bayespriv_sum__",) if mean else ())
        if self.conjugate and not observed and isinstance(secret, DatasetSecret) and secret.statistic == "proportion":
            conj = self._beta_bernoulli(secret.column, upstream)
            if conj is not None:
                a, b = conj
                ones = int(fixed[secret.column].sum())
                zeros = self.n_records - ones
                base.route = "conjugate"
                p = next(iter(upstream))
                base.conjugate = (p, a + ones, b + zeros)
                base.pool = ()
                base.fixed = {**fixed}
                base.note = f"exact conjugate posterior {p} ~ Beta({a:g} + {ones}, {b:g} + {zeros}) (Beta-Bernoulli), no MCMC"
                return base
        base.route = "mcmc"
        base.note = f"MCMC posterior of {list(base.pool)} given the evidence, then forward sampling"
        return base

    def _element_plan(self, secret: DistributionSecret, observed: list[str]) -> _Plan:
        """φ[i] = a for a parameter φ with independent elements given its parents π.

        Given π the other elements keep their law, so a draw is: π from its posterior
        given φ[i] = a (and the public data), whose density is p(π)·p(φ[i] = a | π)
        (MCMC on the model with that element's log density added, route ``"mcmc"``),
        then φ := a fresh draw of φ given π with element i set to a, then the rest
        forward. When no free variable upstream of φ (or of the public data) reaches
        the columns, π needs no posterior: exact forward sampling.
        """
        name, index = _element(secret.parameter)
        element = (name, index, float(secret.value))
        upstream = self._free_upstream(observed + [name], {name})
        relevant = self._reaching_columns(upstream, observed)
        if not relevant:
            return _Plan("forward", f"exact forward sampling: {secret.parameter} fixed, the other elements of {name!r} "
                         "drawn from their prior (independent of it)", element=element)
        return _Plan("mcmc", f"MCMC posterior of {sorted(upstream)} given {secret.parameter}={secret.value:g}, then "
                     f"the other elements of {name!r} and the records forward", pool=tuple(sorted(upstream)),
                     keep=tuple(observed) + ("__bayespriv_element__",), element=element)

    def _interval_plan(self, secret: DistributionSecret, observed: list[str]) -> _Plan:
        """lo <= φ_i <= hi: rejection from the prior, or from the MCMC posterior given the public data."""
        lo, hi = self.intervals[secret]
        name = secret.parameter
        if observed:
            keep = tuple(observed) + (name,)
            pool = tuple(sorted(self._free_upstream(keep, set()) | {name}))
            return _Plan("mcmc", f"posterior given the model's observed data, restricted to {lo:g} <= {name} <= {hi:g}",
                         pool=pool, keep=keep, interval=(name, lo, hi))
        pool = tuple(sorted(self._free_upstream([name], set()) | {name}))
        return _Plan("rejection", f"prior of {list(pool)} restricted to {lo:g} <= {name} <= {hi:g} (exact rejection "
                     "sampling)", pool=pool, interval=(name, lo, hi))

    def _deterministic_plan(self, secret: DistributionSecret, observed: list[str]) -> _Plan:
        """D[i] = a for a deterministic D (a scalar, or one element of a vector deterministic).

        The secret is the event D[i] = a, and the adversary's belief given it is the
        prior (and the public data) *conditioned* on that event — not the intervention
        ``pm.do(D[i] := a)``, which would leave D's parents at their unconditional law
        (see the class notes). A scalar D whose upstream free variables reach the
        columns and the public data only through D is the exception where the two
        coincide: exact forward sampling with D fixed (route ``"forward"``). Otherwise
        the upstream variables are drawn from their posterior given D[i] = a through
        a pivot (:meth:`_pivot`), by MCMC.
        """
        element = _element(secret.parameter)
        name, index = element if element is not None else (secret.parameter, ())
        model = self.pymc_model
        value = float(secret.value)
        if not index:
            upstream = self._free_upstream(observed + [name], set())
            if not self._reaching_columns(upstream, observed + [name]):
                return _Plan("forward", f"exact forward sampling: the deterministic {name!r} fixed to {value:g} "
                             "(nothing upstream of it reaches the columns or the public data other than through it, "
                             "so conditioning on it is the intervention pm.do)",
                             fixed={name: np.asarray(value, dtype=model[name].dtype)})
        found = self._pivot(name, index)
        if isinstance(found, str):
            raise UnsupportedSecretError(
                f"a secret on the deterministic {secret.parameter!r} needs a pivot: a free random variable with "
                f"support the real line (no value transform), independent elements given its parents and upstream "
                f"of no other free variable of {secret.parameter!r}, in which {secret.parameter!r} is affine "
                f"(as eta in the non-centred theta = mu + tau * eta); {found}. Put the secret on such a "
                "deterministic (e.g. a linear predictor rather than its inverse link) or on a free variable")
        members, gaussian, how = found
        plan = _Plan("mcmc", "", pivot=(name, index, value, members, gaussian),
                     keep=tuple(observed) + (_PIVOT_TERM, _PIVOT_CHECK))
        m = self._mcmc_model(plan)
        drawn = {w for w, _ in members}
        plan.pool = tuple(sorted({v.name for v in m.free_RVs} | drawn))
        plan.sources = {w: f"do_{w}" for w in sorted(drawn) if f"do_{w}" in m.named_vars}
        where = ", ".join(f"{w}{list(k) if k else ''}" for w, k in members)
        if gaussian:
            plan.note = (f"MCMC posterior of {list(plan.pool)} given {secret.parameter}={value:g}, by {how}: "
                         f"{where} drawn on the constraint (Matheron), the other variables weighted by the density "
                         f"of {secret.parameter} at {value:g}; then the records forward")
        else:
            plan.note = (f"MCMC posterior of {list(plan.pool)} given {secret.parameter}={value:g}, {how}: {where} "
                         f"solved from {secret.parameter} = {value:g}, density divided by |d {secret.parameter} / d "
                         f"{where}|; then the records forward")
        return plan

    def _pivot(self, name: str, index: tuple[int, ...]):
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
        (``gaussian`` True, :meth:`_gaussian_pivot_model`: Matheron's rule, no Jacobian
        funnel). Otherwise one pivot (``gaussian`` False, :meth:`_single_pivot_model`): a
        shift (constant slope) first, then an element no other element of D depends on,
        then the variable declared last. Memoised per process.
        """
        rt = self._runtime()
        with rt.lock:
            hit = rt.pivots.get((name, index))
            if hit is None:
                hit = self._find_pivot(name, index)
                rt.pivots[(name, index)] = hit
            return hit

    def _find_pivot(self, name: str, index: tuple[int, ...]):
        from pytensor.tensor.random.basic import NormalRV

        model = self.pymc_model
        label = f"{name}{list(index) if index else ''}"
        free = list(model.free_RVs)
        candidates, reasons = _pivot_candidates(model, model[name][index] if index else model[name])
        if not candidates:
            return "; ".join(reasons) or f"{name!r} has no free random variable upstream (it is a constant)"
        fn, points, ranked = _probe_pivots(model, name, index, candidates)
        affine = []
        for entry in ranked:
            _, _, _, k, w, val = entry
            if self._affine_at(fn, points, {val.name: [k]}):
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
        if normal and self._affine_at(fn, points, group):
            members = tuple((e[4].name, e[3]) for e in sorted(normal, key=lambda e: (free.index(e[4]), e[3])))
            shown = ", ".join(f"{w}{list(k) if k else ''}" for w, k in members)
            return members, True, f"Gaussian conditioning of the normal variables {shown} on the affine constraint"
        not_shift, _, _, k, w, _ = affine[0]
        how = ("a shift pivot (constant slope)" if not not_shift else "a pivot whose slope depends on the other variables")
        return ((w.name, k),), False, how

    @staticmethod
    def _affine_at(fn, points, members: Mapping[str, Sequence[tuple[int, ...]]]) -> bool:
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

    def _beta_bernoulli(self, column: str, upstream: set[str]) -> tuple[float, float] | None:
        """(a, b) when ``column ~ Bernoulli(p)`` and ``p ~ Beta(a, b)`` is all that is upstream."""
        from pytensor.tensor.random.basic import BernoulliRV, BetaRV

        if len(upstream) != 1:
            return None
        model = self.pymc_model
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

    # -- compiled batched samplers ---------------------------------------------------------
    def _function(self, givens: tuple[str, ...], mean_column: str | None, outputs: tuple[str, ...],
                  element: tuple[str, tuple[int, ...], float] | None = None):
        """Compiled ``f(n_draws, *given batches[, mean values]) -> outputs``, cached per process.

        Returns (function, its RNG shared variables, input names).
        """
        rt = self._runtime()
        key = (givens, mean_column, outputs, element)
        with rt.lock:
            hit = rt.functions.get(key)
            if hit is None:
                hit = self._compile(givens, mean_column, outputs, element)
                rt.functions[key] = hit
            return hit

    def _compile(self, givens, mean_column, outputs, element=None):
        import pytensor
        import pytensor.tensor as pt
        from pymc.distributions.shape_utils import change_dist_size
        from pytensor.graph.replace import graph_replace, vectorize_graph
        from pytensor.tensor.random.type import RandomGeneratorType

        from ._fast_rv import swap_samplers

        pm = _pm()
        model = self.pymc_model
        n = self.n_records
        placeholders = {name: model[name].type(name=f"{name}__given") for name in givens}
        interventions: dict[str, Any] = dict(placeholders)
        for obs in model.observed_RVs:  # public data stays fixed (a copy: pm.do renames what it is given)
            data = model.rvs_to_values[obs]
            interventions[obs.name] = np.array(data.get_value() if hasattr(data, "get_value") else data.data)
        extra = []
        if mean_column is not None:
            x = model[mean_column]
            loc, scale = (pt.cast(v, x.dtype) for v in x.owner.op.dist_params(x.owner))  # constants may be float32
            loc_n = pt.broadcast_to(loc, (n,))
            s2 = pt.broadcast_to(scale, (n,)) ** 2
            y = pt.random.normal(loc_n, pt.sqrt(s2))
            a = pt.scalar(f"{mean_column}__mean", dtype=x.dtype)
            x_cond = y + s2 / pt.sum(s2, axis=-1) * (n * a - pt.sum(y, axis=-1))
            interventions[mean_column] = pt.cast(x_cond, x.dtype)
            extra.append(a)
        if element is not None:  # a fresh draw of the parameter (same parents), one element set to the value
            name, index, value = element
            var = model[name]
            fresh = var.owner.clone().default_output()
            mask = np.zeros(_static_shape(var), dtype=bool)
            mask[index] = True
            interventions[name] = pt.switch(mask, np.asarray(value, dtype=var.dtype), fresh)
        do_model = pm.do(model, interventions) if interventions else model
        outs = [do_model[name] for name in outputs]
        batched_inputs = list(placeholders.values()) + extra
        rv_types = _random_op_types()
        nodes = []
        for var in _ancestors(outs):
            if var.owner is not None and isinstance(var.owner.op, rv_types) and var.owner not in nodes:
                nodes.append(var.owner)
        random_outputs = {v for node in nodes for v in node.outputs}
        n_draws = pt.lscalar("n_draws")
        replace = {}
        for node in nodes:
            params = [i for i in node.inputs if not isinstance(i.type, RandomGeneratorType)]
            upstream = _ancestors(params) if params else set()
            if not any(v in random_outputs or v in placeholders.values() or v in extra for v in upstream):
                out = node.default_output()
                replace[out] = change_dist_size(out, new_size=(n_draws,), expand=True)
        batched = {v: pt.tensor(dtype=v.dtype, shape=(None,) + v.type.shape, name=v.name) for v in batched_inputs}
        replace.update(batched)
        vouts = vectorize_graph(outs, replace=replace)
        vouts = swap_samplers(vouts)  # Bernoulli / Normal drawn by plain NumPy (same laws, see _fast_rv)
        # own RNGs: never touch the model's shared generators
        # (in graph order, so that reseeding is the same in every process)
        rngs_old = [v for v in _ancestors(vouts) if isinstance(v.type, RandomGeneratorType) and v.owner is None]
        own = {r: pytensor.shared(np.random.default_rng(0), name=f"rng{i}") for i, r in enumerate(rngs_old)}
        if own:
            vouts = graph_replace(vouts, own, strict=False)
        fn = pm.compile([n_draws] + [batched[v] for v in batched_inputs], vouts, on_unused_input="ignore")
        return fn, list(own.values())

    def _draw(self, givens: Mapping[str, np.ndarray], mean: tuple[str, float] | None, outputs: tuple[str, ...],
              n_draws: int, rng: np.random.Generator,
              element: tuple[str, tuple[int, ...], float] | None = None) -> dict[str, np.ndarray]:
        """Outputs ``(n_draws, ...)`` from the compiled sampler given batched ``givens``."""
        from pymc.pytensorf import reseed_rngs

        model = self.pymc_model
        to_compute = tuple(o for o in outputs if o not in givens)
        out = {o: givens[o] for o in outputs if o in givens}
        if not to_compute:
            return out
        names = tuple(sorted(givens))
        fn, rngs = self._function(names, mean[0] if mean else None, to_compute, element)
        args = [np.asarray(givens[g], dtype=model[g].dtype) for g in names]
        if mean is not None:
            args.append(np.full(n_draws, mean[1], dtype=model[mean[0]].dtype))
        seed = int(rng.integers(0, 2**63 - 1))
        rt = self._runtime()
        with rt.lock:
            if rngs:
                reseed_rngs(rngs, seed)
            values = fn(n_draws, *args)
        if not isinstance(values, list):
            values = [values]
        for o, v in zip(to_compute, values):
            v = np.asarray(v)
            if v.ndim == model[o].type.ndim:  # an output with no randomness in it
                v = np.broadcast_to(v, (n_draws,) + v.shape)
            out[o] = v
        return out

    # -- MCMC ------------------------------------------------------------------------------
    def _mcmc_model(self, plan: _Plan):
        pm = _pm()
        import pytensor.tensor as pt

        model = self.pymc_model
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
            m = self._pivoted_model(m, plan.pivot)
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

    @staticmethod
    def _pivot_density(logp, beta):
        """The potential of a single pivot: its log density at w* minus log|β| (the Jacobian of w -> D[i])."""
        import pytensor.tensor as pt

        return logp - pt.log(pt.abs(beta))

    def _pivoted_model(self, model, pivot):
        """The model conditioned on D[i] = a through its pivot (:meth:`_pivot`): a Gaussian group or one variable."""
        name, index, value, members, gaussian = pivot
        if gaussian:
            return self._gaussian_pivot_model(model, name, index, value, members)
        (wname, k), = members
        return self._single_pivot_model(model, name, index, value, wname, k)

    @staticmethod
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

    @staticmethod
    def _normal_params(model, members):
        """(location, scale) of each member w_j = W[k]: W's Normal parameters broadcast to its shape, element k."""
        import pytensor.tensor as pt

        out = []
        for w, k in members:
            var = model[w]
            loc, scale = (pt.broadcast_to(p, var.shape) for p in var.owner.op.dist_params(var.owner))
            out.append((loc[k], scale[k]) if k else (loc, scale))
        return out

    def _gaussian_pivot_model(self, model, name, index, value, members):
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
        alpha, betas = self._affine_parts(t_drawn, drawn, members)
        params = self._normal_params(model, members)
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
        alpha, betas = self._affine_parts(t_base, base, members)
        params = self._normal_params(m, members)
        mean = alpha + sum(b * loc for b, (loc, _) in zip(betas, params))
        sd = pt.sqrt(sum(b**2 * sc**2 for b, (_, sc) in zip(betas, params)))
        with m:
            pm.Potential(_PIVOT_TERM, -0.5 * ((value - mean) / sd) ** 2 - pt.log(sd) - 0.5 * math.log(2 * math.pi))
            pm.Deterministic(_PIVOT_CHECK, t.copy())  # a copy: Deterministic renames the variable it wraps
        return m

    def _single_pivot_model(self, model, name, index, value, wname, k):
        """The model conditioned on D[i] = a through one pivot w = W[k] (:meth:`_pivot`), any law on the real line.

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
            pm.Potential(_PIVOT_TERM, self._pivot_density(logp[k] if k else logp, beta))
            pm.Deterministic(_PIVOT_CHECK, t.copy())  # a copy: Deterministic renames the variable it wraps
        w_star, _ = solved()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "intervention references the intervened variable"
            return pm.do(m, {wname: pt.set_subtensor(W[k], w_star) if k else w_star})

    def _model_fingerprint(self) -> str:
        """SHA-256 of the built model's graph (:mod:`._model_fingerprint`) and of the builder's code and closure."""
        rt = self._runtime()
        with rt.lock:
            if rt.fingerprint is None:
                import hashlib

                from ..queries.query import _Canon
                from ._model_fingerprint import model_fingerprint

                graph, _ = model_fingerprint(rt.model)
                builder = _Canon().encode(self.builder)
                rt.fingerprint = hashlib.sha256(f"{graph}\n{builder}".encode()).hexdigest()
            return rt.fingerprint

    def _posterior_key(self, secret: Secret | None, plan: _Plan, seed: int | None, route: str = "mcmc") -> str:
        """The posterior cache key of one exact posterior: model, secret and its evidence, route, settings, seed,
        versions.

        ``route="mcmc"`` keys an MCMC run (with its settings); ``"quadrature"`` keys the quadrature table of
        the secret (with the tabulation tolerance). The seed is part of every key (``None``, for a table built
        outside :meth:`prepare`, is a seed of its own), so no entry of one route or seed answers another.
        """
        import hashlib

        import pytensor

        from ._model_fingerprint import _Writer

        token = _Writer().token
        evidence = {name: np.asarray(value) for name, value in plan.observe.items()}
        if route not in ("mcmc", "quadrature"):
            raise ValueError(f"route must be 'mcmc' or 'quadrature'; got {route!r}")
        parts = [
            "bayespriv-posterior-2", f"cached={route}", self._model_fingerprint(), f"n_records={self.n_records}",
            f"secret={type(secret).__name__}:{secret!r}", f"route={plan.route}", f"pool={plan.pool!r}",
            f"keep={plan.keep!r}", f"observe={token(evidence)}", f"mean={plan.mean!r}", f"interval={plan.interval!r}",
            f"element={plan.element!r}", f"pymc={_pm().__version__}", f"pytensor={pytensor.__version__}",
            f"seed={'none' if seed is None else int(seed)}",
        ]
        if plan.pivot is not None:
            parts.append(f"pivot={plan.pivot!r} sources={sorted(plan.sources.items())!r}")
        if route == "quadrature":
            from ._quadrature import TV_TOLERANCE

            parts.append(f"quadrature tv<={TV_TOLERANCE!r}")
        else:
            parts += [f"draws={self.draws}", f"tune={self.tune}", f"chains={self.chains}",
                      f"target_accept={self.target_accept!r}"]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _usable_run(self, idata: Any, key: str, plan: _Plan) -> bool:
        """An MCMC run found under ``key`` is used only if it says it is that run and holds what is read from it."""
        from ._posterior_cache import key_of as cache_key_of

        try:
            post = idata.posterior
            if cache_key_of(idata) != key or "sample_stats" not in idata.groups():
                return False
            json.loads(post.attrs[_FREE_ATTR])
            names = [plan.sources.get(name, name) for name in plan.pool]
            names += [_PIVOT_CHECK] if plan.pivot is not None else []
            return all(name in post and tuple(post[name].shape[:2]) == (self.chains, self.draws) for name in names)
        except (AttributeError, KeyError, TypeError, ValueError):
            return False

    def _sample_posterior(self, secret: Secret | None, plan: _Plan, seed: int) -> Any:
        """The InferenceData of :func:`pymc.sample` for ``secret``: from the posterior cache, or run and cached."""
        import arviz as az

        from ._posterior_cache import KEY_ATTR, get as cache_get, put as cache_put

        key = self._posterior_key(secret, plan, seed)
        idata = cache_get(key, az.InferenceData)
        if idata is not None and self._usable_run(idata, key, plan):
            return idata
        pm = _pm()
        m = self._mcmc_model(plan)
        logger = logging.getLogger("pymc")
        level = logger.level
        logger.setLevel(logging.WARNING)
        try:
            idata = pm.sample(
                draws=self.draws, tune=self.tune, chains=self.chains, cores=1, random_seed=seed,
                target_accept=self.target_accept, progressbar=should_show(None), compute_convergence_checks=False, model=m,
            )
        finally:
            logger.setLevel(level)
        idata.posterior.attrs[KEY_ATTR] = key
        idata.posterior.attrs[_FREE_ATTR] = json.dumps([v.name for v in m.free_RVs])
        cache_put(key, idata)
        return idata

    def _run_mcmc(self, secret: Secret | None, plan: _Plan, seed: int) -> tuple[dict[str, np.ndarray], dict[str, Any], Any]:
        """Posterior draws of ``plan.pool``, their diagnostics and the InferenceData; raises ConvergenceError.

        The run comes from the process's posterior cache when one with the same
        key exists (:func:`~bayespriv.clear_posterior_cache`); the draws, the
        diagnostics and the convergence checks are read from it exactly as
        from a new run.
        """
        label = "no secret" if secret is None else secret.label
        idata = self._sample_posterior(secret, plan, seed)
        post = idata.posterior
        free = json.loads(post.attrs[_FREE_ATTR])
        total = self.chains * self.draws
        pool = {}
        for name in plan.pool:
            values = np.asarray(post[plan.sources.get(name, name)].values)
            pool[name] = values.reshape((total,) + values.shape[2:])
        r_hat, ess_bulk, ess_tail = self._convergence(idata, free)
        divergences = int(idata.sample_stats["diverging"].values.sum()) if "diverging" in idata.sample_stats else 0
        diag: dict[str, Any] = {
            "route": plan.route, "note": plan.note, "variables": free,
            "r_hat_max": r_hat, "ess_bulk_min": ess_bulk, "ess_tail_min": ess_tail,
            "divergences": divergences, "chains": self.chains, "draws": self.draws, "tune": self.tune,
            "target_accept": self.target_accept, "seed": seed,
        }
        problems = []
        if not r_hat <= self.max_r_hat:
            problems.append(f"R-hat {r_hat:.4g} > {self.max_r_hat:g}")
        if not ess_bulk >= self.min_ess_bulk:
            problems.append(f"bulk ESS {ess_bulk:.4g} < {self.min_ess_bulk:g}")
        if divergences > self.max_divergences:
            problems.append(f"{divergences} divergent transitions > {self.max_divergences}")
        if plan.pivot is not None:
            deterministic, index, value, members, gaussian = plan.pivot
            reached = np.asarray(post[_PIVOT_CHECK].values, dtype=float)
            miss = float(np.max(np.abs(reached - value))) if reached.size else 0.0
            diag["pivot"] = ", ".join(f"{w}{list(k) if k else ''}" for w, k in members)
            diag["pivot_kind"] = "gaussian" if gaussian else "single"
            diag["pivot_error"] = miss
            if not miss <= 1e-6 * (1.0 + abs(value)):
                raise UnsupportedSecretError(
                    f"secret {label!r}: the posterior draws must have {deterministic}{list(index) if index else ''} = "
                    f"{value:g}; got values up to {miss:.3g} away through the pivot {diag['pivot']} "
                    "(is the deterministic affine in it?)")
        if problems:
            error = ConvergenceError(
                f"MCMC for secret {label!r} (variables {free}) must pass its convergence checks; got "
                + ", ".join(problems)
                + f" with tune={self.tune}, draws={self.draws}, chains={self.chains}, target_accept={self.target_accept:g}. "
                "Increase tune and draws, raise target_accept (divergences), or reparametrize the model "
                "(e.g. a non-centred hierarchy); thresholds are set by max_r_hat, min_ess_bulk and max_divergences. "
                "The run is on the error's attribute posterior (az.plot_trace(error.posterior))."
            )
            error.posterior = idata
            raise error
        if plan.interval is not None:
            name, lo, hi = plan.interval
            keep = (pool[name] >= lo) & (pool[name] <= hi)
            diag["in_interval"] = int(keep.sum())
            if keep.sum() < min(100, total):
                raise ConvergenceError(
                    f"MCMC for secret {label!r} must leave at least 100 posterior draws with {lo:g} <= {name} <= {hi:g}; "
                    f"got {int(keep.sum())} of {total}. Increase draws or widen the interval."
                )
            pool = {k: v[keep] for k, v in pool.items()}
        return pool, diag, idata

    @staticmethod
    def _convergence(idata, names: Sequence[str]) -> tuple[float, float, float]:
        import arviz as az

        post = idata.posterior[list(names)]
        r_hat = az.rhat(post)
        bulk = az.ess(post, method="bulk")
        tail = az.ess(post, method="tail")
        worst_r, worst_bulk, worst_tail = 1.0, math.inf, math.inf
        for name in names:
            values = np.asarray(post[name].values)
            constant = values.reshape(values.shape[0] * values.shape[1], -1)
            constant = np.all(constant == constant[:1], axis=0)  # a component that never moves
            r = np.asarray(r_hat[name].values, dtype=float).reshape(-1)
            b = np.asarray(bulk[name].values, dtype=float).reshape(-1)
            t = np.asarray(tail[name].values, dtype=float).reshape(-1)
            moving = ~constant
            if moving.any():
                r, b, t = r[moving], b[moving], t[moving]
                worst_r = max(worst_r, float(np.max(np.where(np.isnan(r), np.inf, r))))
                worst_bulk = min(worst_bulk, float(np.min(np.where(np.isnan(b), 0.0, b))))
                worst_tail = min(worst_tail, float(np.min(np.where(np.isnan(t), 0.0, t))))
        return worst_r, worst_bulk, worst_tail

    @staticmethod
    def _secret_seed(root: np.random.SeedSequence, secret: Secret | None) -> int:
        """An MCMC seed for ``secret`` that does not depend on the order of the secrets."""
        tag = zlib.crc32(repr(secret).encode())
        seq = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (tag,))
        return int(seq.generate_state(1, np.uint32)[0])

    # -- quadrature (exact 1-D posteriors) ----------------------------------------------------
    def _quadrature(self, secret: Secret | None, plan: _Plan, seed: int | None = None):
        """The quadrature table of ``secret``'s posterior (:mod:`._quadrature`), or the reason there is none.

        Memoised per process, per secret and seed (``None`` outside :meth:`prepare`). Only for an
        ``"mcmc"`` plan whose MCMC model has a single free random variable, scalar and continuous,
        with a value transform inverted in NumPy, no interval, and ``conjugate=True``.
        """
        rt = self._runtime()
        with rt.lock:
            hit = rt.tables.get((secret, seed))
            if hit is None:
                hit = self._cached_quadrature(secret, plan, seed)
                rt.tables[(secret, seed)] = hit
            return hit

    def _cached_quadrature(self, secret: Secret | None, plan: _Plan, seed: int | None = None):
        """:meth:`_build_quadrature` through the process's posterior cache (other instances of the same model)."""
        from ._posterior_cache import get as cache_get, put as cache_put
        from ._quadrature import QuadratureTable

        if not self.conjugate:
            return "exact posteriors disabled (conjugate=False)"
        key = self._posterior_key(secret, plan, seed, route="quadrature")
        hit = cache_get(key, (QuadratureTable, str))
        if hit is None:
            hit = self._build_quadrature(plan)
            size = 256 if isinstance(hit, str) else hit.cumulative.nbytes + hit.rise.nbytes
            cache_put(key, hit, size)
        return hit

    def _build_quadrature(self, plan: _Plan):
        from ._quadrature import build_table

        if not self.conjugate:
            return "exact posteriors disabled (conjugate=False)"
        if plan.interval is not None:
            return "interval secrets restrict the posterior (MCMC then rejection)"
        if plan.pivot is not None:
            return "a secret on a deterministic is drawn through its pivot"
        m = self._mcmc_model(plan)
        if len(m.free_RVs) != 1:
            return f"the posterior has {len(m.free_RVs)} free variables (quadrature is for one)"
        rv = m.free_RVs[0]
        if rv.type.ndim != 0 or not str(rv.dtype).startswith("float") or plan.pool != (rv.name,):
            return f"{rv.name!r} is not a scalar continuous latent variable"
        backward = _backward_of(m, rv)
        if backward is None:
            return f"the value transform of {rv.name!r} has no NumPy inverse here"
        logp = _vectorised_logp(m, rv)
        u0 = float(m.initial_point()[m.rvs_to_values[rv].name])
        return build_table(rv.name, logp, u0, backward)

    def _exact_table(self, secret: Secret | None, plan: _Plan):
        """The quadrature table to draw ``secret``'s latent variable from, or None (MCMC)."""
        table = self._tables.get(secret)
        if table is not None or secret in self._pools:
            return table
        table = self._quadrature(secret, plan)
        return None if isinstance(table, str) else table

    # -- preparation -----------------------------------------------------------------------
    def prepare(self, secrets: Sequence[Secret], rng: np.random.Generator) -> "PyMCDataModel":
        """Run the per-secret inference once; return a new model holding its draws.

        For each secret whose route is ``"quadrature"`` (see the class notes),
        tabulates its posterior; for each whose route is ``"mcmc"``, runs
        :func:`pymc.sample` with a seed derived from ``rng`` and the secret (or
        takes the run from the posterior cache), checks convergence and stores
        the posterior draws; other routes need nothing. The returned copy pickles (posterior draws are NumPy arrays;
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
        for secret in dict.fromkeys(secrets):
            self.check_secret(secret)
            plan = self._plan(secret)
            label = "no secret" if secret is None else secret.label
            seed = self._secret_seed(root, secret)
            table = self._quadrature(secret, plan, seed) if plan.route == "mcmc" else None
            if table is not None and not isinstance(table, str):
                new._tables[secret] = table
                per_secret[label] = {
                    "route": "quadrature", "variables": [table.name], "tv_bound": float(table.tv_bound),
                    "grid_points": int(table.cumulative.size + 1),
                    "note": f"exact posterior of {table.name!r} tabulated on {table.cumulative.size + 1} points "
                            f"(log-concave; total-variation distance <= {table.tv_bound:.2g}), no MCMC",
                }
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
        plan = self._plan(secret)
        if plan.route == "mcmc" and not isinstance(self._quadrature(secret, plan), str):
            return "quadrature"
        return plan.route

    # -- sampling --------------------------------------------------------------------------
    def _sample(self, secret, n_draws, rng, columns) -> Batch:
        plan = self._plan(secret)
        givens: dict[str, np.ndarray] = {}
        for name, value in plan.fixed.items():
            if name == plan.permute:  # a 0/1 configuration: shuffle it as booleans (2.5x faster than int64)
                flags = np.broadcast_to(value.astype(bool), (n_draws,) + value.shape)
                givens[name] = rng.permuted(flags, axis=1).astype(value.dtype)
            elif name not in plan.pool:
                givens[name] = np.broadcast_to(value, (n_draws,) + value.shape)
        if plan.route == "conjugate":
            name, a, b = plan.conjugate
            givens[name] = rng.beta(a, b, size=n_draws)
        elif plan.route == "rejection":
            givens.update(self._rejection(plan, n_draws, rng))
        elif plan.route == "mcmc" and (table := self._exact_table(secret, plan)) is not None:
            givens[table.name] = table.draw(n_draws, rng)
        elif plan.route == "mcmc":
            pool = self._pools.get(secret)
            if pool is None:
                rt = self._runtime()
                with rt.lock:
                    seed = int(rng.integers(0, 2**32 - 1))
                    pool, _, _ = self._run_mcmc(secret, plan, seed)
            size = next(iter(pool.values())).shape[0]
            idx = rng.integers(0, size, size=n_draws)
            for name, values in pool.items():
                givens[name] = values[idx]
        return self._draw(givens, plan.mean, tuple(columns), n_draws, rng, plan.element)

    def _rejection(self, plan: _Plan, n_draws: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Prior draws of ``plan.pool`` with the parameter in its interval, in vectorised rounds."""
        name, lo, hi = plan.interval
        kept: dict[str, list[np.ndarray]] = {v: [] for v in plan.pool}
        need, tried, accepted = n_draws, 0, 0
        while need > 0:
            rate = accepted / tried if accepted else None
            size = max(2 * need, 256) if rate is None else int(math.ceil(1.2 * need / rate)) + 16
            draws = self._draw({}, None, plan.pool, size, rng)
            ok = (draws[name] >= lo) & (draws[name] <= hi)
            tried += size
            accepted += int(ok.sum())
            for v in plan.pool:
                kept[v].append(draws[v][ok])
            need -= int(ok.sum())
            if tried >= 100_000 and accepted < 1e-3 * tried:
                raise ValidationError(
                    f"intervals[{name}] must have prior probability >= 1e-3 for rejection sampling; "
                    f"got about {accepted / tried:.2g} for [{lo:g}, {hi:g}]"
                )
        return {v: np.concatenate(kept[v])[:n_draws] for v in plan.pool}

    # -- pickling --------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_rt"] = None  # the PyMC model and compiled functions are rebuilt per process
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        extra = f", theta={self.theta}" if self.theta else ""
        return (
            f"PyMCDataModel(columns={list(self.columns)}, parameters={list(self.parameters)}, "
            f"n_records={self.n_records}{extra})"
        )


def _pivot_candidates(model, t) -> tuple[list, list[str]]:
    """Free variables that may carry a pivot of ``t`` (:meth:`PyMCDataModel._pivot`), and why the others may not."""
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


def _intervene_on_draws(model, interventions: Mapping[str, Any], drawn: Mapping[str, Any]):
    """A new model where every use of each free variable W is replaced by ``interventions[W]``, all at once.

    The expressions are written on placeholders ``drawn[W]`` standing for the free variables' own
    draws (and on any other model variable). Unlike successive :func:`pymc.do` calls, where a later
    intervention would also rewrite the earlier ones' references to its variable, the replacements
    are simultaneous: every intervention reads the original draws of all the W. Each W stays a free
    variable; its replacement is the deterministic ``do_W``.
    """
    from pymc.model.fgraph import extract_dims, fgraph_from_model, model_deterministic, model_from_fgraph
    from pymc.pytensorf import replace_vars_in_graphs, toposort_replace

    names = list(interventions)
    clash = [f"do_{w}" for w in names if f"do_{w}" in model.named_vars]
    if clash:
        raise UnsupportedSecretError(f"the model must not name variables {clash!r} (used for the conditioned variables)")
    fgraph, memo = fgraph_from_model(model, inlined_views=True)
    exprs = replace_vars_in_graphs([interventions[w] for w in names], replacements=memo)
    replacements = []
    for w, expr in zip(names, exprs):
        target = memo[model[w]]
        replacements.append((target, model_deterministic(expr.copy(name=f"do_{w}"), *extract_dims(target))))
    toposort_replace(fgraph, tuple(replacements))
    for w in names:  # the placeholders become the free variables' own draws
        fgraph.replace(drawn[w], memo[model[w]], import_missing=True)
    return model_from_fgraph(fgraph, mutate_fgraph=True)


def _backward_of(model, rv):
    """The NumPy inverse of ``rv``'s value transform in ``model`` (:class:`._quadrature.Backward`), or None."""
    from pymc.distributions.transforms import LogExpM1
    from pymc.logprob.transforms import IntervalTransform, LogOddsTransform, LogTransform

    from ._quadrature import Backward

    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return Backward("identity")
    if isinstance(transform, LogExpM1):
        return None
    if isinstance(transform, LogTransform):
        return Backward("log")
    if isinstance(transform, LogOddsTransform):
        return Backward("logodds")
    if isinstance(transform, IntervalTransform):
        bounds = []
        for b in transform.args_fn(*rv.owner.inputs):
            value = None if b is None else _scalar_constant(b)
            if b is not None and value is None:
                return None  # a bound that depends on something else
            bounds.append(None if value is None or not math.isfinite(value) else value)
        if bounds[0] is None and bounds[1] is None:
            return Backward("identity")
        return Backward("interval", bounds[0], bounds[1])
    return None


def _vectorised_logp(model, rv) -> Callable[[np.ndarray], np.ndarray]:
    """u -> the model's joint log density (value transform's Jacobian included) at ``rv``'s value u, vectorised.

    Evaluated in chunks so that the per-point terms (one per record of the
    evidence) stay below about 2^22 numbers.
    """
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph

    value = model.rvs_to_values[rv]
    points = pt.vector(f"{value.name}__points", dtype=value.dtype)
    out = vectorize_graph(model.logp(jacobian=True), replace={value: points})
    fn = _pm().compile([points], out, on_unused_input="ignore")
    width = max(1, sum(int(np.prod(_static_shape(v) or (1,))) for v in model.observed_RVs))
    chunk = max(256, (1 << 22) // width)

    def logp(u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=value.dtype)
        return np.concatenate([np.asarray(fn(u[i:i + chunk]), dtype=float).reshape(-1)
                               for i in range(0, u.size, chunk)])

    return logp
