"""Posterior runs of a PyMC data model: cache keys, MCMC runs and their convergence checks.

:meth:`PosteriorRunner.key` keys an exact posterior (an MCMC run or a
quadrature table) by the model's fingerprint, the secret, the route, the
settings, the seed and the library versions; :meth:`PosteriorRunner.run`
takes a run from the posterior cache or runs :func:`pymc.sample`, then checks
R-hat, bulk ESS, divergences and, for a pivoted secret, that the deterministic
has the secret's value on every draw.
"""

from __future__ import annotations

import json
import logging
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._progress import progress
from ..._validation import check_positive_int, check_real, fail
from ...errors import ConvergenceError, UnsupportedSecretError
from ...secrets import Secret
from .graph import _pm
from .plans import PIVOT_CHECK, Plan
from .runtime import RuntimeSource

#: Attribute of a posterior group: the JSON list of the free variables the MCMC sampled.
_FREE_ATTR = "bayespriv_free_variables"


#: Default convergence thresholds of :class:`McmcSettings` (R-hat at most, bulk ESS at least,
#: divergent transitions at most).
DEFAULT_MAX_R_HAT, DEFAULT_MIN_ESS_BULK, DEFAULT_MAX_DIVERGENCES = 1.01, 400.0, 0


@dataclass(frozen=True, kw_only=True)
class McmcSettings:
    """The MCMC settings of a :class:`~bayespriv.datamodels.PyMCDataModel` (``PyMCDataModel(..., mcmc=...)``),
    checked once, at construction.

    Keyword-only and frozen; the default, ``McmcSettings()``, is the model's default. Every value is checked
    here (a wrong type is a :class:`~bayespriv.errors.ParameterTypeError`, a value out of range a
    :class:`~bayespriv.errors.ValidationError` naming the field), so a model holds only valid settings.

    Attributes
    ----------
    draws, tune, chains : int, default 1000, 1000, 2
        :func:`pymc.sample`'s settings (one core, no progress bar), used once per secret that needs a
        posterior: ``draws`` and ``chains`` at least 1, ``tune`` at least 0.
    target_accept : float, default 0.9
        NUTS target acceptance rate, in the open interval (0, 1).
    max_r_hat, min_ess_bulk, max_divergences : default 1.01, 400, 0
        Convergence thresholds: :meth:`~bayespriv.datamodels.PyMCDataModel.prepare` raises
        :class:`~bayespriv.errors.ConvergenceError` when the largest R-hat exceeds ``max_r_hat`` (at least 1),
        the smallest bulk effective sample size is below ``min_ess_bulk`` (at least 0) or there are more than
        ``max_divergences`` (an integer, at least 0) divergent transitions. A threshold looser than its
        default is a weaker premise for the posterior draws: a calibration with some secret drawn by MCMC
        names it in its assumptions, and so does every guarantee built on it
        (``"mcmc_relaxed:max_divergences=50"``, see :func:`~bayespriv.datamodels.pymc.relaxed_thresholds`).
    mcmc_extensions : int, default 2
        A run that misses only the R-hat or bulk-ESS threshold, and by a little (R-hat at most
        ``max_r_hat`` + 0.04, bulk ESS at least a quarter of ``min_ess_bulk``), is run again with twice the
        tuning and draws, up to this many times (4× at the default); the thresholds stay the same, and the
        diagnostics record the extension (``"extension"``, the ``tune`` and ``draws`` used). A run with
        divergences, or far from the thresholds, is refused at once. 0: never extend.

    Examples
    --------
    >>> from bayespriv.datamodels import McmcSettings
    >>> McmcSettings(draws=500, max_divergences=5)
    McmcSettings(draws=500, tune=1000, chains=2, target_accept=0.9, max_r_hat=1.01, min_ess_bulk=400.0, \
max_divergences=5, mcmc_extensions=2)
    >>> McmcSettings(draws=0)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: draws must be an integer >= 1; got 0
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 2
    target_accept: float = 0.9
    max_r_hat: float = DEFAULT_MAX_R_HAT
    min_ess_bulk: float = DEFAULT_MIN_ESS_BULK
    max_divergences: int = DEFAULT_MAX_DIVERGENCES
    mcmc_extensions: int = 2

    def __post_init__(self) -> None:
        checked = {
            "draws": check_positive_int(self.draws, "draws"),
            "tune": check_positive_int(self.tune, "tune", minimum=0),
            "chains": check_positive_int(self.chains, "chains"),
            "target_accept": check_real("target_accept", self.target_accept),
        }
        if not 0.0 < checked["target_accept"] < 1.0:
            raise fail("target_accept", "in the open interval (0, 1)", self.target_accept)
        checked["max_r_hat"] = check_real("max_r_hat", self.max_r_hat)
        if not checked["max_r_hat"] >= 1.0:
            raise fail("max_r_hat", ">= 1", self.max_r_hat)
        checked["min_ess_bulk"] = check_real("min_ess_bulk", self.min_ess_bulk)
        if not checked["min_ess_bulk"] >= 0:
            raise fail("min_ess_bulk", ">= 0", self.min_ess_bulk)
        checked["max_divergences"] = check_positive_int(self.max_divergences, "max_divergences", minimum=0)
        checked["mcmc_extensions"] = check_positive_int(self.mcmc_extensions, "mcmc_extensions", minimum=0)
        for name, value in checked.items():  # plain int / float, as the checks return them
            object.__setattr__(self, name, value)


class PosteriorRunner:
    """The posterior runs of a :class:`~bayespriv.datamodels.PyMCDataModel`: cache keys, MCMC runs, checks.

    Parameters
    ----------
    runtime : callable
        The data model's runtime lookup (:data:`~bayespriv.datamodels.pymc_model.runtime.RuntimeSource`): the
        built model, its lock and the memo of its fingerprint.
    builder : callable
        The data model's ``builder`` (part of the fingerprint).
    n_records : int
        Records per dataset.
    settings : McmcSettings
        The MCMC settings and convergence thresholds (checked by :class:`McmcSettings` itself).
    conditioned : ConditionedModelBuilder
        The models MCMC samples (:mod:`~bayespriv.datamodels.pymc_model.conditioned`).
    convergence : callable, optional
        ``convergence(idata, names) -> (worst R-hat, worst bulk ESS, worst tail ESS)`` (the data model's hook,
        whose default is :func:`convergence`).
    """

    def __init__(self, runtime: RuntimeSource, *, builder: Callable[[int], Any], n_records: int,
                 settings: McmcSettings, conditioned: Any,
                 convergence: Callable[[Any, Sequence[str]], tuple[float, float, float]] | None = None) -> None:
        self._runtime = runtime
        self.builder, self.n_records, self.settings, self.conditioned = builder, n_records, settings, conditioned
        self._convergence = convergence or _default_convergence

    def fingerprint(self) -> str:
        """SHA-256 of the built model's graph (:mod:`bayespriv.datamodels._model_fingerprint`) and of the builder's
        code and closure."""
        rt = self._runtime()
        with rt.lock:
            if rt.fingerprint is None:
                import hashlib

                from ...queries.query import CanonicalEncoder
                from .._model_fingerprint import model_fingerprint

                graph, _ = model_fingerprint(rt.model)
                builder = CanonicalEncoder().encode(self.builder)
                rt.fingerprint = hashlib.sha256(f"{graph}\n{builder}".encode()).hexdigest()
            return rt.fingerprint

    def key(self, secret: Secret | None, plan: Plan, seed: int | None, route: str = "mcmc",
            extension: int = 0) -> str:
        """The posterior cache key of one exact posterior: model, secret and its evidence, route, settings, seed,
        versions.

        ``route="mcmc"`` keys an MCMC run (with its settings); ``"quadrature"`` keys the quadrature table of
        the secret (with the tabulation tolerance). The seed is part of every key (``None``, for a table built
        outside :meth:`~bayespriv.datamodels.PyMCDataModel.prepare`, is a seed of its own), so no entry of one
        route or seed answers another.
        """
        import hashlib

        import pytensor

        from .._model_fingerprint import _Writer

        token = _Writer().token
        evidence = {name: np.asarray(value) for name, value in plan.observe.items()}
        if route not in ("mcmc", "quadrature"):
            raise ValueError(f"route must be 'mcmc' or 'quadrature'; got {route!r}")
        parts = [
            "bayespriv-posterior-2", f"cached={route}", self.fingerprint(), f"n_records={self.n_records}",
            f"secret={type(secret).__name__}:{secret!r}", f"route={plan.route}", f"pool={plan.pool!r}",
            f"keep={plan.keep!r}", f"observe={token(evidence)}", f"mean={plan.mean!r}", f"interval={plan.interval!r}",
            f"element={plan.element!r}", f"pymc={_pm().__version__}", f"pytensor={pytensor.__version__}",
            f"seed={'none' if seed is None else int(seed)}",
        ]
        if plan.pivot is not None:
            parts.append(f"pivot={plan.pivot!r} sources={sorted(plan.sources.items())!r}")
        if route == "quadrature":
            from .._quadrature import TV_TOLERANCE

            parts.append(f"quadrature tv<={TV_TOLERANCE!r}")
        else:
            s = self.settings
            parts += [f"draws={s.draws << extension}", f"tune={s.tune << extension}", f"chains={s.chains}",
                      f"target_accept={s.target_accept!r}"]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def usable(self, idata: Any, key: str, plan: Plan, draws: int) -> bool:
        """An MCMC run found under ``key`` is used only if it says it is that run and holds what is read from it."""
        from ..posterior_cache import key_of as cache_key_of
        from ..compat import group, group_names

        try:
            post = group(idata, "posterior")
            if cache_key_of(idata) != key or "sample_stats" not in group_names(idata):
                return False
            json.loads(post.attrs[_FREE_ATTR])
            names = [plan.sources.get(name, name) for name in plan.pool]
            names += [PIVOT_CHECK] if plan.pivot is not None else []
            chains = self.settings.chains
            return all(name in post and tuple(post[name].shape[:2]) == (chains, draws) for name in names)
        except (AttributeError, KeyError, TypeError, ValueError):
            return False

    def sample_posterior(self, secret: Secret | None, plan: Plan, seed: int, extension: int = 0) -> Any:
        """The InferenceData of :func:`pymc.sample` for ``secret`` (tuning and draws × 2^extension): from the
        posterior cache, or run and cached."""
        from ..posterior_cache import KEY_ATTR, get as cache_get, put as cache_put
        from ..compat import group_attrs, inference_data_types

        s = self.settings
        key = self.key(secret, plan, seed, extension=extension)
        idata = cache_get(key, inference_data_types())
        if idata is not None and self.usable(idata, key, plan, s.draws << extension):
            return idata
        pm = _pm()
        m = self.conditioned.mcmc_model(plan)
        logger = logging.getLogger("pymc")
        level = logger.level
        logger.setLevel(logging.WARNING)
        iterations = s.chains * ((s.draws + s.tune) << extension)
        label = "the prior" if secret is None else secret.label
        try:  # the library's own bar, not PyMC's: rich's live display leaves an empty output box in notebooks
            with progress(iterations, f"MCMC given {label}", unit="draw") as bar:
                idata = pm.sample(
                    draws=s.draws << extension, tune=s.tune << extension, chains=s.chains, cores=1,
                    random_seed=seed, target_accept=s.target_accept, progressbar=False,
                    compute_convergence_checks=False, model=m, callback=lambda **_: bar.update(),
                )
        finally:
            logger.setLevel(level)
        attrs = group_attrs(idata, "posterior")
        attrs[KEY_ATTR] = key
        attrs[_FREE_ATTR] = json.dumps([v.name for v in m.free_RVs])
        cache_put(key, idata)
        return idata

    def run(self, secret: Secret | None, plan: Plan, seed: int) -> tuple[dict[str, np.ndarray], dict[str, Any], Any]:
        """Posterior draws of ``plan.pool``, their diagnostics and the InferenceData; raises ConvergenceError.

        The run comes from the process's posterior cache when one with the same
        key exists (:func:`~bayespriv.clear_posterior_cache`); the draws, the
        diagnostics and the convergence checks are read from it exactly as
        from a new run. A run that misses its R-hat or bulk-ESS threshold by a
        little is run again with twice the tuning and draws, up to
        ``mcmc_extensions`` times (same thresholds; ``diag["extension"]``).
        """
        s = self.settings
        label = "no secret" if secret is None else secret.label
        for extension in range(s.mcmc_extensions + 1):
            idata = self.sample_posterior(secret, plan, seed, extension)
            pool, diag, problems, near = self.checked(idata, secret, plan, seed, extension)
            if not problems:
                break
            if not near or extension == s.mcmc_extensions:
                error = ConvergenceError(
                    f"MCMC for secret {label!r} (variables {diag['variables']}) must pass its convergence checks; got "
                    + ", ".join(problems)
                    + f" with tune={diag['tune']}, draws={diag['draws']}, chains={s.chains}, "
                    f"target_accept={s.target_accept:g}"
                    + (f" (after {extension} extension(s) from tune={s.tune}, draws={s.draws})" if extension else "")
                    + ". Increase tune and draws, raise target_accept (divergences), or reparametrize the model "
                    "(e.g. a non-centred hierarchy): PyMCDataModel(..., mcmc=McmcSettings(...)), whose max_r_hat, "
                    "min_ess_bulk and max_divergences set the thresholds. The run is on the error's attribute "
                    "posterior (az.plot_trace(error.posterior))."
                )
                error.posterior = idata
                raise error
        return in_interval(pool, diag, plan, label), diag, idata

    def checked(self, idata: Any, secret: Secret | None, plan: Plan, seed: int,
                extension: int) -> tuple[dict[str, np.ndarray], dict[str, Any], list[str], bool]:
        """The pool and diagnostics of one run, what its convergence checks found, and whether it missed them
        only by a little (R-hat or bulk ESS, no divergences)."""
        from ..compat import group

        s = self.settings
        post = group(idata, "posterior")
        free = json.loads(post.attrs[_FREE_ATTR])
        draws = s.draws << extension
        total = s.chains * draws
        pool = {}
        for name in plan.pool:
            values = np.asarray(post[plan.sources.get(name, name)].values)
            pool[name] = values.reshape((total,) + values.shape[2:])
        r_hat, ess_bulk, ess_tail = self._convergence(idata, free)
        divergences = _divergences(idata)
        diag: dict[str, Any] = {
            "route": plan.route, "note": plan.note, "variables": free,
            "r_hat_max": r_hat, "ess_bulk_min": ess_bulk, "ess_tail_min": ess_tail,
            "divergences": divergences, "chains": s.chains, "draws": draws, "tune": s.tune << extension,
            "target_accept": s.target_accept, "seed": seed, "extension": extension,
        }
        problems = []
        if not r_hat <= s.max_r_hat:
            problems.append(f"R-hat {r_hat:.4g} > {s.max_r_hat:g}")
        if not ess_bulk >= s.min_ess_bulk:
            problems.append(f"bulk ESS {ess_bulk:.4g} < {s.min_ess_bulk:g}")
        if divergences > s.max_divergences:
            problems.append(f"{divergences} divergent transitions > {s.max_divergences}")
        if plan.pivot is not None:
            check_pivot(post, plan, diag, "no secret" if secret is None else secret.label)
        near = divergences <= s.max_divergences and r_hat <= s.max_r_hat + 0.04 and ess_bulk >= s.min_ess_bulk / 4
        return pool, diag, problems, near

    @staticmethod
    def secret_seed(root: np.random.SeedSequence, secret: Secret | None) -> int:
        """An MCMC seed for ``secret`` that does not depend on the order of the secrets."""
        tag = zlib.crc32(repr(secret).encode())
        seq = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (tag,))
        return int(seq.generate_state(1, np.uint32)[0])


def check_pivot(post: Any, plan: Plan, diag: dict[str, Any], label: str) -> None:
    """Record the pivot of ``plan`` in ``diag``; raise when a posterior draw misses the secret's value."""
    deterministic, index, value, members, gaussian = plan.pivot
    reached = np.asarray(post[PIVOT_CHECK].values, dtype=float)
    miss = float(np.max(np.abs(reached - value))) if reached.size else 0.0
    diag["pivot"] = ", ".join(f"{w}{list(k) if k else ''}" for w, k in members)
    diag["pivot_kind"] = "gaussian" if gaussian else "single"
    diag["pivot_error"] = miss
    if not miss <= 1e-6 * (1.0 + abs(value)):
        raise UnsupportedSecretError(
            f"secret {label!r}: the posterior draws must have {deterministic}{list(index) if index else ''} = "
            f"{value:g}; got values up to {miss:.3g} away through the pivot {diag['pivot']} "
            "(is the deterministic affine in it?)")


def in_interval(pool: dict[str, np.ndarray], diag: dict[str, Any], plan: Plan, label: str) -> dict[str, np.ndarray]:
    """``pool`` restricted to the draws in the secret's interval (``intervals=``), at least 100 of them."""
    if plan.interval is None:
        return pool
    name, lo, hi = plan.interval
    keep = (pool[name] >= lo) & (pool[name] <= hi)
    diag["in_interval"] = int(keep.sum())
    if keep.sum() < min(100, keep.size):
        raise ConvergenceError(
            f"MCMC for secret {label!r} must leave at least 100 posterior draws with {lo:g} <= {name} <= {hi:g}; "
            f"got {int(keep.sum())} of {keep.size}. Increase draws or widen the interval."
        )
    return {k: v[keep] for k, v in pool.items()}


def convergence(idata, names: Sequence[str]) -> tuple[float, float, float]:
    """The worst R-hat, bulk ESS and tail ESS of the variables ``names`` of a run, over their components that
    move (ArviZ)."""
    import arviz as az

    from ..compat import group

    post = group(idata, "posterior")[list(names)]
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


def _divergences(idata: Any) -> int:
    """Divergent transitions of a run (0 when its sampler records none)."""
    from ..compat import group

    stats = group(idata, "sample_stats")
    return int(stats["diverging"].values.sum()) if "diverging" in stats else 0


#: The default of :class:`PosteriorRunner`'s ``convergence`` (its parameter of the same name hides the function).
_default_convergence = convergence
