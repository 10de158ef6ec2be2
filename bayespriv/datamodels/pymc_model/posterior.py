"""Posterior runs of a PyMC data model: cache keys, MCMC runs and their convergence checks.

:meth:`PosteriorRuns._posterior_key` keys an exact posterior (an MCMC run or a
quadrature table) by the model's fingerprint, the secret, the route, the
settings, the seed and the library versions; :meth:`PosteriorRuns._run_mcmc`
takes a run from the posterior cache or runs :func:`pymc.sample`, then checks
R-hat, bulk ESS, divergences and, for a pivoted secret, that the deterministic
has the secret's value on every draw.
"""

from __future__ import annotations

import json
import logging
import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._progress import progress
from ...errors import ConvergenceError, UnsupportedSecretError
from ...secrets import Secret
from .graph import _pm
from .plans import _PIVOT_CHECK, _Plan

#: Attribute of a posterior group: the JSON list of the free variables the MCMC sampled.
_FREE_ATTR = "bayespriv_free_variables"


class PosteriorRuns:
    """The posterior runs of :class:`~bayespriv.datamodels.PyMCDataModel`."""

    def _model_fingerprint(self) -> str:
        """SHA-256 of the built model's graph (:mod:`bayespriv.datamodels._model_fingerprint`) and of the builder's
        code and closure."""
        rt = self._runtime()
        with rt.lock:
            if rt.fingerprint is None:
                import hashlib

                from ...queries.query import _Canon
                from .._model_fingerprint import model_fingerprint

                graph, _ = model_fingerprint(rt.model)
                builder = _Canon().encode(self.builder)
                rt.fingerprint = hashlib.sha256(f"{graph}\n{builder}".encode()).hexdigest()
            return rt.fingerprint

    def _posterior_key(self, secret: Secret | None, plan: _Plan, seed: int | None, route: str = "mcmc",
                       extension: int = 0) -> str:
        """The posterior cache key of one exact posterior: model, secret and its evidence, route, settings, seed,
        versions.

        ``route="mcmc"`` keys an MCMC run (with its settings); ``"quadrature"`` keys the quadrature table of
        the secret (with the tabulation tolerance). The seed is part of every key (``None``, for a table built
        outside :meth:`prepare`, is a seed of its own), so no entry of one route or seed answers another.
        """
        import hashlib

        import pytensor

        from .._model_fingerprint import _Writer

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
            from .._quadrature import TV_TOLERANCE

            parts.append(f"quadrature tv<={TV_TOLERANCE!r}")
        else:
            parts += [f"draws={self.draws << extension}", f"tune={self.tune << extension}", f"chains={self.chains}",
                      f"target_accept={self.target_accept!r}"]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _usable_run(self, idata: Any, key: str, plan: _Plan, draws: int) -> bool:
        """An MCMC run found under ``key`` is used only if it says it is that run and holds what is read from it."""
        from .._posterior_cache import key_of as cache_key_of
        from ..compat import group, group_names

        try:
            post = group(idata, "posterior")
            if cache_key_of(idata) != key or "sample_stats" not in group_names(idata):
                return False
            json.loads(post.attrs[_FREE_ATTR])
            names = [plan.sources.get(name, name) for name in plan.pool]
            names += [_PIVOT_CHECK] if plan.pivot is not None else []
            return all(name in post and tuple(post[name].shape[:2]) == (self.chains, draws) for name in names)
        except (AttributeError, KeyError, TypeError, ValueError):
            return False

    def _sample_posterior(self, secret: Secret | None, plan: _Plan, seed: int, extension: int = 0) -> Any:
        """The InferenceData of :func:`pymc.sample` for ``secret`` (tuning and draws × 2^extension): from the
        posterior cache, or run and cached."""
        from .._posterior_cache import KEY_ATTR, get as cache_get, put as cache_put
        from ..compat import group_attrs, inference_data_types

        key = self._posterior_key(secret, plan, seed, extension=extension)
        idata = cache_get(key, inference_data_types())
        if idata is not None and self._usable_run(idata, key, plan, self.draws << extension):
            return idata
        pm = _pm()
        m = self._mcmc_model(plan)
        logger = logging.getLogger("pymc")
        level = logger.level
        logger.setLevel(logging.WARNING)
        iterations = self.chains * ((self.draws + self.tune) << extension)
        label = "the prior" if secret is None else secret.label
        try:  # the library's own bar, not PyMC's: rich's live display leaves an empty output box in notebooks
            with progress(iterations, f"MCMC given {label}", unit="draw") as bar:
                idata = pm.sample(
                    draws=self.draws << extension, tune=self.tune << extension, chains=self.chains, cores=1,
                    random_seed=seed, target_accept=self.target_accept, progressbar=False,
                    compute_convergence_checks=False, model=m, callback=lambda **_: bar.update(),
                )
        finally:
            logger.setLevel(level)
        attrs = group_attrs(idata, "posterior")
        attrs[KEY_ATTR] = key
        attrs[_FREE_ATTR] = json.dumps([v.name for v in m.free_RVs])
        cache_put(key, idata)
        return idata

    def _run_mcmc(self, secret: Secret | None, plan: _Plan, seed: int) -> tuple[dict[str, np.ndarray], dict[str, Any], Any]:
        """Posterior draws of ``plan.pool``, their diagnostics and the InferenceData; raises ConvergenceError.

        The run comes from the process's posterior cache when one with the same
        key exists (:func:`~bayespriv.clear_posterior_cache`); the draws, the
        diagnostics and the convergence checks are read from it exactly as
        from a new run. A run that misses its R-hat or bulk-ESS threshold by a
        little is run again with twice the tuning and draws, up to
        ``mcmc_extensions`` times (same thresholds; ``diag["extension"]``).
        """
        label = "no secret" if secret is None else secret.label
        for extension in range(self.mcmc_extensions + 1):
            idata = self._sample_posterior(secret, plan, seed, extension)
            pool, diag, problems, near = self._checked_run(idata, secret, plan, seed, extension)
            if not problems:
                break
            if not near or extension == self.mcmc_extensions:
                error = ConvergenceError(
                    f"MCMC for secret {label!r} (variables {diag['variables']}) must pass its convergence checks; got "
                    + ", ".join(problems)
                    + f" with tune={diag['tune']}, draws={diag['draws']}, chains={self.chains}, "
                    f"target_accept={self.target_accept:g}"
                    + (f" (after {extension} extension(s) from tune={self.tune}, draws={self.draws})" if extension else "")
                    + ". Increase tune and draws, raise target_accept (divergences), or reparametrize the model "
                    "(e.g. a non-centred hierarchy); thresholds are set by max_r_hat, min_ess_bulk and "
                    "max_divergences. The run is on the error's attribute posterior (az.plot_trace(error.posterior))."
                )
                error.posterior = idata
                raise error
        return self._in_interval(pool, diag, plan, label), diag, idata

    def _checked_run(self, idata: Any, secret: Secret | None, plan: _Plan, seed: int,
                     extension: int) -> tuple[dict[str, np.ndarray], dict[str, Any], list[str], bool]:
        """The pool and diagnostics of one run, what its convergence checks found, and whether it missed them
        only by a little (R-hat or bulk ESS, no divergences)."""
        from ..compat import group

        post = group(idata, "posterior")
        free = json.loads(post.attrs[_FREE_ATTR])
        draws = self.draws << extension
        total = self.chains * draws
        pool = {}
        for name in plan.pool:
            values = np.asarray(post[plan.sources.get(name, name)].values)
            pool[name] = values.reshape((total,) + values.shape[2:])
        r_hat, ess_bulk, ess_tail = self._convergence(idata, free)
        divergences = _divergences(idata)
        diag: dict[str, Any] = {
            "route": plan.route, "note": plan.note, "variables": free,
            "r_hat_max": r_hat, "ess_bulk_min": ess_bulk, "ess_tail_min": ess_tail,
            "divergences": divergences, "chains": self.chains, "draws": draws, "tune": self.tune << extension,
            "target_accept": self.target_accept, "seed": seed, "extension": extension,
        }
        problems = []
        if not r_hat <= self.max_r_hat:
            problems.append(f"R-hat {r_hat:.4g} > {self.max_r_hat:g}")
        if not ess_bulk >= self.min_ess_bulk:
            problems.append(f"bulk ESS {ess_bulk:.4g} < {self.min_ess_bulk:g}")
        if divergences > self.max_divergences:
            problems.append(f"{divergences} divergent transitions > {self.max_divergences}")
        if plan.pivot is not None:
            self._check_pivot(post, plan, diag, "no secret" if secret is None else secret.label)
        near = (divergences <= self.max_divergences and r_hat <= self.max_r_hat + 0.04
                and ess_bulk >= self.min_ess_bulk / 4)
        return pool, diag, problems, near

    @staticmethod
    def _check_pivot(post: Any, plan: _Plan, diag: dict[str, Any], label: str) -> None:
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

    @staticmethod
    def _in_interval(pool: dict[str, np.ndarray], diag: dict[str, Any], plan: _Plan, label: str) -> dict[str, np.ndarray]:
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

    @staticmethod
    def _convergence(idata, names: Sequence[str]) -> tuple[float, float, float]:
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

    @staticmethod
    def _secret_seed(root: np.random.SeedSequence, secret: Secret | None) -> int:
        """An MCMC seed for ``secret`` that does not depend on the order of the secrets."""
        tag = zlib.crc32(repr(secret).encode())
        seq = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (tag,))
        return int(seq.generate_state(1, np.uint32)[0])


def _divergences(idata: Any) -> int:
    """Divergent transitions of a run (0 when its sampler records none)."""
    from ..compat import group

    stats = group(idata, "sample_stats")
    return int(stats["diverging"].values.sum()) if "diverging" in stats else 0
