"""The frozen result of a calibration: what the mechanisms need, with its error.

The checks of its fields and the fields of exact calibrations are in
:mod:`bayespriv.calibration.fields`; its tables and views in :mod:`bayespriv.calibration.views`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import check_optional_positive_int, fail, freeze, seal_fields, sealed, thaw
from ..errors import ParameterTypeError, ValidationError
from ..queries import Query
from ..secrets import DatasetSecret, Secret, SecretPair
from .constraints import PairConstraints
from .fields import (
    _check_confidence_z,
    _checked_arrays,
    _checked_fingerprint,
    _checked_laws,
    _checked_posteriors,
    _checked_query_name,
    _checked_secrets,
    laws_fields,
    moments_fields,
)
from .laws import FiniteLaw
from bayespriv._late import late
from .moments import loewner_lower
from bayespriv.calibration.provenance import UNVERIFIED, FileProvenance
from .views import (
    calibration_html,
    calibration_repr,
    inference_data,
    moments_table,
    summary_reasons,
    summary_table,
    theta_label,
)

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import xarray as xr
    import os

__all__ = ["Calibration"]

_ORDS = {1: 1, 2: 2, "inf": np.inf, np.inf: np.inf}
#: The numeric arrays of a calibration (sealed: their memory cannot be written, see :func:`~bayespriv._validation.sealed`).
_ARRAYS = ("mean_array", "cov_array", "mean_se", "cov_se", "cov_se_white", "sample_array")

def _per_secret_diagnostics(cal: "Calibration") -> list[Mapping[str, Any]]:
    """The per-secret entries a PyMC model leaves in ``diagnostics["mcmc"]`` (empty for others)."""
    per_secret = cal.diagnostics.get("mcmc", {})
    return [d for d in per_secret.values() if isinstance(d, Mapping)] if isinstance(per_secret, Mapping) else []


def _relaxed_mcmc(members: Sequence["Calibration"]) -> tuple[str, ...]:
    """``mcmc_relaxed:…`` names of the convergence thresholds looser than the defaults, over the
    members with some secret drawn by MCMC (:func:`~bayespriv.datamodels.pymc.relaxed_thresholds`)."""
    from ..datamodels.pymc import relaxed_thresholds

    names: dict[str, None] = {}
    for m in members:
        if any(d.get("route") == "mcmc" for d in _per_secret_diagnostics(m)):
            thresholds = m.diagnostics.get("mcmc_thresholds")
            if isinstance(thresholds, Mapping):
                names.update(dict.fromkeys(relaxed_thresholds(thresholds)))
    return tuple(names)


def _ord(ord_: Any) -> float:
    if ord_ not in _ORDS:
        raise fail("ord", "1, 2 or inf", ord_)
    return _ORDS[ord_]


@seal_fields
@dataclass(frozen=True, eq=False)
class Calibration:
    """Moments of F(X) per secret, their Monte-Carlo error and conservative bounds.

    Built by :func:`bayespriv.calibrate` (sampling, with the exact laws when
    the data model tabulates them), :meth:`from_moments` (moments known
    exactly) or :meth:`from_laws` (laws known exactly). Mechanisms read it; it
    never sees data.

    Immutable: its fields refuse assignment even through ``object.__setattr__``
    (:func:`~bayespriv._validation.seal_fields`), its arrays are sealed (their
    memory cannot be made writable), its mappings are read-only views, and
    :attr:`means` / :attr:`covs` are new dicts at each access.

    Attributes
    ----------
    secrets : tuple of Secret
        Every secret appearing in ``pairs``, in order of first appearance.
    pairs : tuple of SecretPair
    mean_array : ndarray (S, k)
    cov_array : ndarray (S, k, k)
    mean_se, cov_se : ndarray
        Monte-Carlo standard errors (zeros when exact).
    cov_se_white : ndarray (S, k, k)
        Standard errors of the whitened covariance entries, behind the
        multiplicative Loewner lower bounds (see
        :mod:`bayespriv.calibration.moments`); zeros when exact.
    confidence : float or None
        Probability, over the calibration's own randomness, that every bound
        holds: 1.0 for exact moments, ``None`` for a plug-in calibration (bounds
        equal estimates, as in the papers).
    z : float
        Multiplier of the standard errors in the bounds (Bonferroni over all
        mean and covariance-entry intervals).
    query : Query or None
    n_draws : int or None
    n_records : int or None
    sample_array : ndarray (S, n_draws, k) or None
        The draws of F(X) | secret (None for :meth:`from_moments`); the labelled
        view is :attr:`samples`.
    component_names : tuple of str
    theta : dict or None
        Parameters of the data model (the worst θ for families).
    diagnostics : dict
    family : tuple of Calibration
        For a :class:`~bayespriv.DataModelFamily`: one calibration per member θ
        (this object is the member with the largest L2 sensitivity bound, and
        its arrays are that member's). Empty for a single model. Every bound of
        every member holds jointly with probability ``confidence``.
    posteriors : mapping of str to arviz.InferenceData
        The MCMC runs behind the draws, per secret label (read-only): what a
        :class:`~bayespriv.PyMCDataModel` sampled in ``prepare`` for each
        secret that needed a posterior (route ``"mcmc"``), with the posterior
        and sample-stats groups, so ``az.plot_trace(cal.posteriors[label])``
        and ``az.summary`` work on them. Empty when no secret needed MCMC.
        For a family, each member keeps its own (this object: the worst
        member's). Saved by :meth:`to_netcdf` as groups of the file.
    query_fingerprint : str or None
        :attr:`Query.fingerprint` of the calibrated query, computed at
        construction when ``query`` is given; a calibration loaded from a file
        (:func:`~bayespriv.load_calibration`) keeps the saved one even without
        its query. Given together with a query, it must match (else
        :class:`~bayespriv.errors.ReleaseMismatchError`).
    provenance : FileProvenance or None
        For a calibration read by :func:`~bayespriv.load_calibration`: the
        file, its content digest and whether it verified
        (:class:`~bayespriv.calibration.provenance.FileProvenance`); None for a
        calibration computed in this process. A calibration loaded with
        ``trust="unverified"`` from a file that did not verify carries the
        assumption ``"unverified_calibration"`` (:attr:`assumptions`), and so
        does every guarantee built on it.
    query_name : str or None
        The calibrated query's name: ``query.name`` when ``query`` is given; a
        calibration loaded from a file without its query keeps the saved name,
        so that its views still say which query it calibrated.
    finite_laws : mapping of str to FiniteLaw
        The exact law of F(X) under each secret, by secret label (read-only;
        :class:`~bayespriv.calibration.laws.FiniteLaw`: finitely many values
        and their probabilities), when it is known: from :meth:`from_laws`, or
        from :func:`~bayespriv.calibrate` when the data model tabulates it (a
        count of a category over a resampled table or a Bayesian network).
        Then the moments are the laws' own (standard errors 0, ``confidence``
        1.0) and the accountant of the released law reads the laws, exactly,
        instead of the draws (which stay, for diagnostics and plots). Empty
        otherwise; either every secret has its law or none. For a family,
        each member holds its own.

    Examples
    --------
    Moments known exactly (here the Gaussian quickstart's: mean weight 150 ∓ 10/3 given a mean height
    of 65 or 67, variance 6):

    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    >>> cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]}, bp.SecretPair(a, b))
    >>> round(cal.sensitivity(), 2), cal.confidence, str(cal.worst_pair)
    (6.66, 1.0, 'mean(height)=65 vs mean(height)=67')
    >>> cal.means[a], cal.covs[b]
    (array([146.67]), array([[6.]]))
    """

    secrets: tuple[Secret, ...]
    pairs: tuple[SecretPair, ...]
    mean_array: np.ndarray
    cov_array: np.ndarray
    mean_se: np.ndarray
    cov_se: np.ndarray
    confidence: float | None
    z: float
    query: Query | None = None
    n_draws: int | None = None
    n_records: int | None = None
    sample_array: np.ndarray | None = field(default=None, repr=False)
    cov_se_white: np.ndarray | None = field(default=None, repr=False)
    component_names: tuple[str, ...] = ()
    theta: Mapping[str, Any] | None = None
    diagnostics: Mapping[str, Any] = field(default_factory=dict, repr=False)
    family: tuple["Calibration", ...] = field(default=(), repr=False)
    query_fingerprint: str | None = field(default=None, repr=False)
    posteriors: Mapping[str, Any] = field(default_factory=dict, repr=False)
    provenance: FileProvenance | None = field(default=None, repr=False)
    query_name: str | None = field(default=None, repr=False)
    finite_laws: Mapping[str, FiniteLaw] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        secrets, pairs = _checked_secrets(self.secrets, self.pairs)
        object.__setattr__(self, "secrets", secrets)
        object.__setattr__(self, "pairs", pairs)
        for name, value in _checked_arrays(self, len(secrets)).items():
            object.__setattr__(self, name, value)
        self._check_labels()
        _check_confidence_z(self)
        # Read-only views, deep: nothing may edit a calibration's parameters or diagnostics afterwards.
        object.__setattr__(self, "theta", None if self.theta is None else freeze(self.theta))
        object.__setattr__(self, "diagnostics", freeze(self.diagnostics))
        object.__setattr__(self, "query_fingerprint", _checked_fingerprint(self.query, self.query_fingerprint))
        object.__setattr__(self, "query_name", _checked_query_name(self.query, self.query_name))
        object.__setattr__(self, "posteriors", _checked_posteriors(self.posteriors))
        if self.provenance is not None and not isinstance(self.provenance, FileProvenance):
            raise ParameterTypeError(f"provenance must be None or a FileProvenance; got {type(self.provenance).__name__}")
        object.__setattr__(self, "finite_laws", _checked_laws(self))

    @property
    def content_hash(self) -> str | None:
        """The verified SHA-256 content digest of the file this calibration was loaded from.

        :func:`~bayespriv.files.signing.content_digest` of the file as
        read, once its MAC verified under the owner's key and its contents
        agreed with themselves; a ledger records it to name the exact file
        behind a release. None for a calibration computed in this process (a
        file's digest covers what only saving adds — versions, the seed — so an
        in-memory calibration has no digest of its own) and for one loaded
        with ``trust="unverified"`` from a file that did not verify (its
        unverified digest is ``provenance.content_hash``).
        """
        p = self.provenance
        return p.content_hash if p is not None and p.verified else None

    def _check_labels(self) -> None:
        """query, sizes, names, θ, diagnostics and family members: right types."""
        if self.query is not None and not isinstance(self.query, Query):
            raise ParameterTypeError(f"query must be None or a bayespriv Query; got {type(self.query).__name__}")
        object.__setattr__(self, "n_draws", check_optional_positive_int(self.n_draws, "n_draws", minimum=2))
        object.__setattr__(self, "n_records", check_optional_positive_int(self.n_records, "n_records"))
        names = self.component_names
        if not names:
            names = tuple(f"F[{i}]" for i in range(self.k))
        if isinstance(names, str) or not isinstance(names, Sequence) or len(names) != self.k \
                or not all(isinstance(n, str) for n in names):
            raise fail("component_names", f"a sequence of {self.k} strings (one per component)", names)
        object.__setattr__(self, "component_names", tuple(names))
        if self.theta is not None and not isinstance(self.theta, Mapping):
            raise ParameterTypeError(f"theta must be None or a mapping of parameter names to values; got {type(self.theta).__name__}")
        if not isinstance(self.diagnostics, Mapping):
            raise ParameterTypeError(f"diagnostics must be a mapping; got {type(self.diagnostics).__name__}")
        family = self.family
        if not isinstance(family, (tuple, list)) or not all(isinstance(m, Calibration) for m in family):
            raise ParameterTypeError(f"family must be a tuple of Calibration objects; got {family!r:.80}")
        object.__setattr__(self, "family", tuple(family))

    # -- pickling: mapping proxies do not pickle (calibrations are sent to process pools) --
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["theta"] = thaw(state["theta"])
        state["diagnostics"] = thaw(state["diagnostics"])
        state["posteriors"] = dict(state.get("posteriors", {}))
        state["finite_laws"] = dict(state.get("finite_laws", {}))
        return state

    def __setstate__(self, state: dict) -> None:
        theta = state.get("theta")
        arrays = {k: sealed(v, float) for k, v in state.items() if k in _ARRAYS and v is not None}  # unpickled: writable
        self.__dict__.update(state, **arrays, theta=None if theta is None else freeze(theta),
                             diagnostics=freeze(state.get("diagnostics", {})),
                             posteriors=MappingProxyType(dict(state.get("posteriors", {}))),
                             finite_laws=MappingProxyType(dict(state.get("finite_laws", {}))))

    @property
    def samples(self) -> xr.DataArray | None:
        """The draws of F(X) | secret as an xarray DataArray, dims ``(secret, draw, component)``.

        A new labelled view of the sealed :attr:`sample_array` at each access (no copy of the draws)."""
        import xarray as xr
        if self.sample_array is None:
            return None
        arr = self.sample_array
        return xr.DataArray(
            arr,
            dims=("secret", "draw", "component"),
            coords={"secret": [s.label for s in self.secrets], "draw": np.arange(arr.shape[1]),
                    "component": list(self.component_names)},
            name=self.query.name if self.query is not None else "F",
        )

    def to_inference_data(self) -> Any:
        """The draws of F(X) | secret as an :class:`arviz.InferenceData`.

        The ``posterior`` group holds one variable of dims ``(chain, draw,
        secret, component)`` with a single chain (the draws are independent, not
        a Markov chain), named after the query (``"F"`` without one); a family
        (:class:`~bayespriv.DataModelFamily`) has one such variable per member,
        named ``"<query> | <θ>"``. So ``az.summary``, ``az.ess``, ``az.mcse``
        and ``az.plot_posterior`` read every (secret, component) at once, e.g.
        ``az.summary(cal.to_inference_data(), kind="diagnostics")`` gives the
        ESS and MCSE of each mean. R-hat needs two chains or more: ArviZ
        reports it as NaN (and logs a shape warning) for one chain.

        Returns
        -------
        arviz.InferenceData
            ``posterior`` as above, its attributes naming the query, the number
            of draws per secret and the calibration's confidence.

        Raises
        ------
        ValidationError
            A calibration without draws (:meth:`from_moments`, or loaded
            without its samples).
        """
        return inference_data(self)

    # -- persistence ---------------------------------------------------------------------
    def to_netcdf(self, path: str | os.PathLike, *, seed: int | Sequence[int] | np.random.SeedSequence | None = None,
                  key: bytes | None = None) -> Path:
        """Save to a netCDF-4 file, signed; :func:`~bayespriv.load_calibration` reads it back bit-identical.

        The file layout is described in :mod:`bayespriv.files.calibration_io`,
        the signature in :mod:`bayespriv.files.signing`.

        Parameters
        ----------
        path : str or path-like
            The file to write (overwritten); its directory must exist.
        seed : int, sequence of int, SeedSequence or None
            The seed the calibration was drawn with, when known (a calibration
            does not keep it); recorded in the file's metadata.
        key : bytes, optional
            The signing key; default: the data owner's key (created with mode
            0600 on first use, see :func:`~bayespriv.files.signing.load_key`).

        Returns
        -------
        pathlib.Path
            The file written.
        """

        return late("save_calibration")(self, path, seed=seed, key=key)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_moments(
        cls,
        means: Mapping[Secret, Sequence[float]],
        covs: Mapping[Secret, Any],
        pairs: SecretPair | Sequence[SecretPair],
        query: Query | None = None,
        *,
        n_records: int | None = None,
    ) -> "Calibration":
        """A calibration from moments known exactly (closed forms, a paper's table).

        ``means`` maps each secret to an array ``(k,)``, ``covs`` to ``(k, k)``
        (a scalar is accepted for k = 1). The bounds equal the values given and
        ``confidence`` is 1.0: whatever guarantee is built on it is as exact as
        the moments you supplied.
        """
        return cls(**moments_fields(means, covs, pairs, query, n_records=n_records))

    @classmethod
    def from_laws(
        cls,
        laws: Mapping[Secret, Any],
        pairs: SecretPair | Sequence[SecretPair],
        query: Query | None = None,
        *,
        n_records: int | None = None,
    ) -> "Calibration":
        """A calibration from the exact laws of F(X) under each secret, each with finitely many values.

        The moments are the laws' own (exact, standard errors 0, ``confidence``
        1.0, like :meth:`from_moments`), and the accountant of the released
        law computes δ(ε) from the laws themselves: exactly for a scalar
        query (:mod:`~bayespriv.privacy.finite_exact`), with no assumption.

        Parameters
        ----------
        laws : mapping of Secret to FiniteLaw or (points, weights)
            For every secret of ``pairs``: the values F takes, ``points``
            ``(m,)`` or ``(m, k)``, and their probabilities ``weights``
            ``(m,)`` (non-negative, summing to 1 within 1e-9).
        pairs : SecretPair or sequence of SecretPair
        query : Query, optional
        n_records : int, optional

        Returns
        -------
        Calibration
            With :attr:`finite_laws` keyed by secret label.

        Examples
        --------
        A count of positives among 2 records, each positive with probability 0.3 or 0.5:

        >>> import bayespriv as bp
        >>> a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.5)
        >>> cal = bp.Calibration.from_laws({a: ([0, 1, 2], [0.49, 0.42, 0.09]), b: ([0, 1, 2], [0.25, 0.5, 0.25])},
        ...                                bp.SecretPair(a, b))
        >>> cal.means[a], cal.covs[a], cal.confidence
        (array([0.6]), array([[0.42]]), 1.0)
        """
        return cls(**laws_fields(laws, pairs, query, n_records=n_records))

    # -- shape and lookup ------------------------------------------------------------------
    @property
    def k(self) -> int:
        """Dimension of the query (number of components of F)."""
        return int(self.mean_array.shape[1])

    @property
    def exact(self) -> bool:
        """True when the moments are exact (``confidence`` 1.0, standard errors 0): given by
        :meth:`from_moments`, or the moments of exact laws (:attr:`finite_laws`: :meth:`from_laws`, or
        :func:`~bayespriv.calibrate` on a model that tabulates them, whose draws are then kept for
        diagnostics only)."""
        return self.confidence == 1.0

    @property
    def plug_in(self) -> bool:
        """True for a plug-in calibration (``confidence=None``): bounds are the estimates (assumption ``estimated_moments``)."""
        return self.confidence is None

    def index(self, secret: Secret) -> int:
        """Position of ``secret`` in :attr:`secrets`; ValidationError when it is not one of them."""
        try:
            return self.secrets.index(secret)
        except ValueError:
            raise ValidationError(f"secret must be one of the calibration's secrets; got {getattr(secret, 'label', secret)!r}") from None

    @property
    def means(self) -> dict[Secret, np.ndarray]:
        """Estimated E[F(X) | secret] per secret."""
        return {s: self.mean_array[i] for i, s in enumerate(self.secrets)}

    @property
    def covs(self) -> dict[Secret, np.ndarray]:
        """Estimated Cov(F(X) | secret) per secret."""
        return {s: self.cov_array[i] for i, s in enumerate(self.secrets)}

    @property
    def assumptions(self) -> tuple[str, ...]:
        """Assumptions every guarantee built on this calibration inherits.

        * ``"estimated_moments"``: a plug-in calibration (bounds are estimates).
        * ``"monte_carlo_clt"``: sampled bounds rest on CLT normal intervals.
        * ``"extremes_at_grid"``: a family given by the corners of a box.
        * ``"exchangeable_records"``: some secret is a proportion
          (:meth:`DatasetSecret.proportion`). Such a secret fixes *how many*
          records are in the category (p·n), not *which*; the attribute-privacy
          proofs (Zhang et al., Definition 4 and §4) treat a dataset as a
          multiset of records whose order carries no information, and the
          calibration draws each stratum as an exchangeable set. A release
          whose query or data depend on record order or identity (row
          positions, record-level links) is outside that premise.
        * ``"mcmc_posterior"``: some secret's datasets were drawn through an
          MCMC posterior (route ``"mcmc"``), whose draws are taken as draws of
          the posterior; R-hat, ESS and divergences are checked (a failed check
          refuses the calibration) but cannot prove convergence.
        * ``"mcmc_relaxed:<argument>=<value>"``, one per MCMC convergence
          threshold set looser than its default (``max_r_hat`` above 1.01,
          ``min_ess_bulk`` below 400, ``max_divergences`` above 0), e.g.
          ``"mcmc_relaxed:max_divergences=50"``: the MCMC posterior draws were
          accepted under that weaker check. Named when some secret of that
          model went through MCMC (the thresholds gate nothing else), whether
          or not the run needed the slack — it is a setting, so the name does
          not depend on the seed (the counts are in ``diagnostics["mcmc"]``).
        * ``"tabulated_posterior"``: some secret's posterior was tabulated
          (route ``"quadrature"``): within the recorded total-variation bound if
          it is log-concave, which is checked on the grid, not proven.
        * ``"unverified_calibration"``: loaded with ``trust="unverified"`` from
          a file whose MAC did not verify under the owner's key: nothing
          vouches for its numbers, so a release needs ``options=ReleaseOptions(accept_unverified=True)``.
        """
        out: tuple[str, ...] = ()
        if self.plug_in:
            out = ("estimated_moments",)
        elif self.n_draws is not None and not self.exact:
            out = ("monte_carlo_clt",)
        if self.diagnostics.get("family", {}).get("covers") == "corners":
            out += ("extremes_at_grid",)
        if any(isinstance(s, DatasetSecret) and s.statistic == "proportion" for s in self.secrets):
            out += ("exchangeable_records",)
        routes = {d.get("route") for m in self.members for d in _per_secret_diagnostics(m)}
        out += tuple(name for route, name in (("mcmc", "mcmc_posterior"), ("quadrature", "tabulated_posterior"))
                     if route in routes)
        out += _relaxed_mcmc(self.members)
        if self.provenance is not None and not self.provenance.verified:
            out += (UNVERIFIED,)
        return out

    # -- bounds ------------------------------------------------------------------------------
    def mean_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Simultaneous lower and upper bounds ``(S, k)`` of the true means."""
        half = self.z * self.mean_se
        return self.mean_array - half, self.mean_array + half

    def difference(self, pair: SecretPair, *, bound: bool = False) -> np.ndarray:
        """Mean difference of a pair: the estimate ``μ̂_a − μ̂_b``, or with
        ``bound=True`` the componentwise upper bound ``u`` of ``|μ_a − μ_b|``
        (so ``‖μ_a − μ_b‖_p ≤ ‖u‖_p`` for every p on the calibration's event)."""
        ia, ib = self.index(pair.a), self.index(pair.b)
        d = self.mean_array[ia] - self.mean_array[ib]
        if not bound:
            return d
        return np.abs(d) + self.z * (self.mean_se[ia] + self.mean_se[ib])

    def pair_sensitivities(self, ord: float | str = 2, *, bound: bool = False) -> np.ndarray:
        """‖mean difference‖_ord for every pair, in the order of ``pairs``."""
        o = _ord(ord)
        return np.array([np.linalg.norm(self.difference(p, bound=bound), o) for p in self.pairs])

    def pair_sensitivity_se(self, ord: float | str = 2) -> np.ndarray:
        """Monte-Carlo standard error of each pair's estimated ‖μ̂_a − μ̂_b‖_ord, in the order of ``pairs``.

        Delta method on the norm ``N(d)`` of ``d = μ̂_a − μ̂_b``: the two
        secrets are sampled independently, so ``Var(d) ≈ (Σ̂_a + Σ̂_b)/n``
        (the full covariances: components of F are correlated), and
        ``se = √(gᵀ Var(d) g)`` with ``g`` the gradient of the norm at ``d``
        (``d/‖d‖₂`` for L2, ``sign(d)`` for L1, the indicator of the largest
        ``|d_c|`` for L∞). Where ``d = 0`` the norm is not differentiable and
        ``√(tr Var(d))`` (the size of ``‖d‖₂`` under pure noise) is reported.
        Zero for exact moments (no draws, or exact laws).

        Returns
        -------
        ndarray (len(pairs),)
        """
        o = _ord(ord)
        if self.n_draws is None or self.exact:
            return np.zeros(len(self.pairs))
        out = []
        for p in self.pairs:
            ia, ib = self.index(p.a), self.index(p.b)
            var = (self.cov_array[ia] + self.cov_array[ib]) / self.n_draws
            d = self.mean_array[ia] - self.mean_array[ib]
            norm = float(np.linalg.norm(d, o))
            if norm == 0.0:
                out.append(math.sqrt(max(float(np.trace(var)), 0.0)))
                continue
            if o == 2:
                g = d / norm
            elif o == 1:
                g = np.sign(d)
            else:
                g = np.zeros_like(d)
                g[int(np.argmax(np.abs(d)))] = np.sign(d[int(np.argmax(np.abs(d)))])
            out.append(math.sqrt(max(float(g @ var @ g), 0.0)))
        return np.array(out)

    def sensitivity_se(self, ord: float | str = 2) -> float:
        """Monte-Carlo standard error of :meth:`sensitivity` (the estimate): the
        :meth:`pair_sensitivity_se` of the (member and) pair whose estimate is the largest."""
        best, se = -math.inf, 0.0
        for m in self.members:
            est, ses = m.pair_sensitivities(ord), m.pair_sensitivity_se(ord)
            i = int(np.argmax(est))
            if est[i] > best:
                best, se = float(est[i]), float(ses[i])
        return se

    def variance_se(self) -> np.ndarray:
        """Monte-Carlo standard error ``(k,)`` of :meth:`variance` (the estimate): per
        component, the fourth-moment standard error of the variance of the (member and)
        secret whose variance is the smallest (zeros for exact moments)."""
        best = np.full(self.k, math.inf)
        se = np.zeros(self.k)
        for m in self.members:
            var = np.diagonal(m.cov_array, axis1=1, axis2=2)
            ses = np.diagonal(m.cov_se, axis1=1, axis2=2)
            i = np.argmin(var, axis=0)
            cols = np.arange(self.k)
            better = var[i, cols] < best
            best = np.where(better, var[i, cols], best)
            se = np.where(better, ses[i, cols], se)
        return se

    def convergence(self, ord: float | str = 2, *, n_points: int = 20) -> Any:
        """The sensitivity and variance estimates and bounds recomputed on prefixes of the draws.

        See :func:`bayespriv.calibration.convergence.convergence`.
        """

        return late("convergence")(self, ord, n_points=n_points)

    def draws_for_slack(self, target: float, ord: float | str = 2) -> int:
        """Draws per secret for a sensitivity slack (bound − estimate) of ``target``.

        See :func:`bayespriv.calibration.convergence.draws_for_slack`.
        """

        return late("draws_for_slack")(self, target, ord)

    def sensitivity(self, ord: float | str = 2, *, bound: bool = False) -> float:
        """Largest distance between the means of a pair, Δ_{E,ord}, over pairs
        and (for families) over every θ.

        With ``bound=True``: an upper bound holding with probability ``confidence``.
        """
        return float(max(m.pair_sensitivities(ord, bound=bound).max() for m in self.members))

    @property
    def members(self) -> tuple["Calibration", ...]:
        """Per-θ calibrations of a family; ``(self,)`` for a single model."""
        return self.family or (self,)

    @property
    def is_family(self) -> bool:
        """True when calibrated over a family of data models (see :attr:`worst_theta`)."""
        return bool(self.family)

    @property
    def worst_pair(self) -> SecretPair:
        """The pair with the largest (bounded) L2 mean difference (at the worst θ)."""
        return self.pairs[int(np.argmax(self.pair_sensitivities(2, bound=True)))]

    @property
    def worst_theta(self) -> Mapping[str, Any] | None:
        """Parameters of the member with the largest L2 sensitivity bound (for
        families; mechanisms name their own worst θ per their formula), or the
        model's θ."""
        return self.theta

    def pair_constraints(self) -> PairConstraints:
        """Every (θ, pair) condition with its conservative box and covariance
        lower bounds (see :mod:`bayespriv.calibration.constraints`)."""
        labels, pairs, thetas, diffs, halfs, cas, cbs = [], [], [], [], [], [], []
        for m in self.members:
            lows = loewner_lower(m.cov_array, m.cov_se_white, m.z)
            prefix = theta_label(m.theta) + ": " if self.is_family else ""
            for p in m.pairs:
                ia, ib = m.index(p.a), m.index(p.b)
                labels.append(prefix + p.label)
                pairs.append(p)
                thetas.append(m.theta)
                diffs.append(m.mean_array[ia] - m.mean_array[ib])
                halfs.append(m.z * (m.mean_se[ia] + m.mean_se[ib]))
                cas.append(lows[ia])
                cbs.append(lows[ib])
        return PairConstraints(tuple(labels), tuple(pairs), tuple(thetas), np.stack(diffs), np.stack(halfs),
                               np.stack(cas), np.stack(cbs), self.confidence)

    def cov_lower(self, secret: Secret) -> np.ndarray:
        """A matrix below Cov(F | secret) in the Loewner order (on the calibration's event)."""
        i = self.index(secret)
        return loewner_lower(self.cov_array[i : i + 1], self.cov_se_white[i : i + 1], self.z)[0]

    def variance(self, *, bound: bool = False) -> np.ndarray:
        """Smallest conditional variance of each component over the secrets;
        with ``bound=True`` a lower bound (diagonal of the Loewner bounds)."""
        per = []
        for m in self.members:
            lows = loewner_lower(m.cov_array, m.cov_se_white, m.z) if bound else m.cov_array
            per.append(np.diagonal(lows, axis1=1, axis2=2).min(axis=0))
        return np.min(per, axis=0)

    # -- presentation ------------------------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """One row per pair (per θ and pair for families): L1/L2 sensitivities
        (estimate, its Monte-Carlo standard error :meth:`pair_sensitivity_se`, and bound)."""
        return summary_table(self)

    def moments_table(self) -> pd.DataFrame:
        """One row per (secret, component): mean, its s.e., variance, its s.e. (fourth moments), its lower bound."""
        return moments_table(self)

    def __repr__(self) -> str:
        return calibration_repr(self)

    def _summary_reasons(self) -> dict[str, str]:
        """Why a column of :meth:`summary` can hold ``inf``, for views made for a person.

        The W∞ bound is infinite when the query proves no support for F (a mean without
        ``bounds=``): its DKW band then reaches the unbounded tails.
        """
        return summary_reasons(self)

    def _repr_html_(self) -> str:
        return calibration_html(self)
