"""The frozen result of a calibration: what the mechanisms need, with its error."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .._display import cell, frame_html
from .._validation import (
    check_covariance,
    check_finite_array,
    check_optional_positive_int,
    check_real,
    described,
    fail,
    freeze,
    seal_fields,
    sealed,
    thaw,
)
from ..errors import ParameterTypeError, ReleaseMismatchError, ValidationError
from ..queries import Query
from ..secrets import DatasetSecret, DistributionSecret, Secret, SecretPair, as_pairs
from .constraints import PairConstraints
from .laws import FiniteLaw
from ._hooks import call as call_registered
from .moments import bonferroni_z, law_mismatch, loewner_lower
from .signing import UNVERIFIED, FileProvenance

__all__ = ["Calibration"]

_ORDS = {1: 1, 2: 2, "inf": np.inf, np.inf: np.inf}
#: The numeric arrays of a calibration (sealed: their memory cannot be written, see :func:`~bayespriv._validation.sealed`).
_ARRAYS = ("mean_array", "cov_array", "mean_se", "cov_se", "cov_se_white", "sample_array")


def _checked_fingerprint(query: Query | None, given: Any) -> str | None:
    """The query's fingerprint; a given one must be a string and match the query's."""
    if given is not None and not isinstance(given, str):
        raise ParameterTypeError(f"query_fingerprint must be None or a str; got {type(given).__name__}")
    if query is None or not isinstance(query, Query):
        return given
    actual = query.fingerprint
    if given is not None and given != actual:
        raise ReleaseMismatchError(
            f"query must be the calibrated query (fingerprint {given[:12]}…); got query {query.name!r} with "
            f"fingerprint {actual[:12]}… (its code, columns, name or bounds differ)")
    return actual


def _checked_query_name(query: Query | None, given: Any) -> str | None:
    """The query's name when there is a query, else the given name (None or a string)."""
    if given is not None and not isinstance(given, str):
        raise ParameterTypeError(f"query_name must be None or a str; got {type(given).__name__}")
    return query.name if isinstance(query, Query) else given


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


def _checked_posteriors(posteriors: Any) -> Mapping[str, Any]:
    """A read-only mapping secret label -> arviz.InferenceData (not deep-frozen: InferenceData is itself a mapping)."""
    if not isinstance(posteriors, Mapping):
        raise ParameterTypeError(f"posteriors must be a mapping of secret labels to arviz.InferenceData; got "
                                 f"{type(posteriors).__name__}")
    if posteriors:
        import arviz as az

        for label, idata in posteriors.items():
            if not isinstance(label, str) or not isinstance(idata, az.InferenceData):
                raise fail("posteriors", "a mapping of secret labels (str) to arviz.InferenceData",
                           described(f"{label!r}: {type(idata).__name__}"))
    return MappingProxyType(dict(posteriors))


def _theta_label(theta: Mapping[str, Any] | None) -> str:
    if not theta:
        return "θ"
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in theta.items())


def _ord(ord_: Any) -> float:
    if ord_ not in _ORDS:
        raise fail("ord", "1, 2 or inf", ord_)
    return _ORDS[ord_]


def n_intervals(n_secrets: int, k: int) -> int:
    """Intervals the Bonferroni split of one calibration covers: a mean per
    component and a covariance entry per pair of components, per secret (the
    same count as :func:`bayespriv.calibration.engine.calibrate` uses)."""
    return n_secrets * k + n_secrets * k * (k + 1) // 2


def _checked_secrets(secrets: Any, pairs: Any) -> tuple[tuple[Secret, ...], tuple[SecretPair, ...]]:
    """Secrets: distinct Secret objects; pairs: SecretPair objects over them."""
    if isinstance(secrets, (str, bytes, Mapping)) or not isinstance(secrets, (tuple, list)):
        raise ParameterTypeError(f"secrets must be a tuple of secrets; got {type(secrets).__name__}")
    secrets = tuple(secrets)
    if not secrets or not all(isinstance(s, (DatasetSecret, DistributionSecret)) for s in secrets):
        raise fail("secrets", "a non-empty tuple of DatasetSecret / DistributionSecret", secrets)
    if len(set(secrets)) != len(secrets):
        raise fail("secrets", "distinct secrets", described(str([s.label for s in secrets])))
    pairs = as_pairs(pairs)
    stray = [s.label for p in pairs for s in p.secrets if s not in secrets]
    if stray:
        raise fail("pairs", "pairs of the calibration's secrets", described(f"pairs naming {stray!r}"))
    return secrets, pairs


def _checked_arrays(cal: "Calibration", n_secrets: int) -> dict[str, np.ndarray]:
    """Finite, read-only float arrays of consistent shapes (S, k) / (S, k, k) / (S, n, k)."""
    mean = check_finite_array(cal.mean_array, "mean_array", ndim=2)
    if mean.shape[0] != n_secrets or mean.shape[1] < 1:
        raise fail("mean_array", f"of shape ({n_secrets}, k) with k >= 1 (one row per secret)", described(f"shape {mean.shape}"))
    k = mean.shape[1]
    out = {"mean_array": mean}
    for name, shape in (("cov_array", (n_secrets, k, k)), ("mean_se", (n_secrets, k)), ("cov_se", (n_secrets, k, k)),
                        ("cov_se_white", (n_secrets, k, k))):
        value = getattr(cal, name)
        if value is None and name == "cov_se_white":
            if np.any(out["cov_se"]):
                raise ValidationError("cov_se_white is required when cov_se is non-zero (it gives the covariance lower bounds)")
            value = np.zeros(shape)
        arr = check_finite_array(value, name)
        if arr.shape != shape:
            raise fail(name, f"of shape {shape}", described(f"shape {arr.shape}"))
        if name != "cov_array" and np.any(arr < 0):
            raise fail(name, "non-negative (standard errors)", described(f"minimum {arr.min():.3g}"))
        out[name] = arr
    if np.any(np.diagonal(out["cov_array"], axis1=1, axis2=2) < 0):
        raise fail("cov_array", "covariances with non-negative variances", described("a negative diagonal entry"))
    if cal.sample_array is not None:
        arr = check_finite_array(cal.sample_array, "sample_array", ndim=3)
        if arr.shape[0] != n_secrets or arr.shape[2] != k:
            raise fail("sample_array", f"of shape ({n_secrets}, n_draws, {k})", described(f"shape {arr.shape}"))
        out["sample_array"] = arr
    # sealed, not merely read-only: a read-only array that owns its memory can be made writable again
    return {name: sealed(arr, float) for name, arr in out.items()}


def _checked_laws(cal: "Calibration") -> Mapping[str, FiniteLaw]:
    """Exact laws: none, or one :class:`FiniteLaw` of dimension k per secret label, with the moments
    they give (``confidence`` 1.0); family members all with laws or all without. A read-only mapping
    in the order of the secrets."""
    laws = cal.finite_laws
    if not isinstance(laws, Mapping):
        raise ParameterTypeError(f"finite_laws must be a mapping of secret labels to FiniteLaw; got {type(laws).__name__}")
    with_laws = {bool(m.finite_laws) for m in cal.family}
    if len(with_laws) > 1 or (with_laws and with_laws != {bool(laws)}):
        raise fail("finite_laws", "given for every member of a family and its root, or for none",
                   described(f"{sum(bool(m.finite_laws) for m in cal.family)} of {len(cal.family)} members with laws, "
                             f"root {'with' if laws else 'without'}"))
    if not laws:
        return MappingProxyType({})
    labels = [s.label for s in cal.secrets]
    if len(set(labels)) != len(labels):
        raise fail("finite_laws", "keyed by distinct secret labels", described(f"secrets labelled {labels!r}"))
    if set(laws) != set(labels):
        raise fail("finite_laws", f"one law per secret, keyed by its label {labels!r}", described(f"keys {list(laws)!r}"))
    for label in labels:
        law = laws[label]
        if not isinstance(law, FiniteLaw):
            raise ParameterTypeError(f"finite_laws[{label!r}] must be a FiniteLaw; got {type(law).__name__}")
        if law.k != cal.k:
            raise fail(f"finite_laws[{label!r}]", f"a law of F's dimension k = {cal.k}", described(f"k = {law.k}"))
    if cal.confidence != 1.0:
        raise fail("confidence", "1.0 with exact laws (their moments hold surely)", cal.confidence)
    wrong = law_mismatch(cal.secrets, cal.component_names, laws, cal.mean_array, cal.cov_array)
    if wrong is not None:
        raise fail("mean_array and cov_array", "the moments of finite_laws", described(wrong))
    return MappingProxyType({label: laws[label] for label in labels})


def _check_confidence_z(cal: "Calibration") -> None:
    """The stated confidence must be what the bounds (estimate ± z·s.e.) deliver.

    * ``confidence=None`` (plug-in) ⇔ bounds equal the estimates: ``z`` must be 0.
    * ``confidence=1.0`` is only true of exact moments: every standard error is 0.
    * ``confidence=c`` in (0, 1): the engine uses the two-sided Bonferroni
      quantile ``z = Φ⁻¹(1 − (1 − c)/(2m))`` over the ``m`` intervals of the
      calibration (:func:`n_intervals`, times the number of members for a
      family); a smaller ``z`` would claim ``c`` over bounds too narrow for it
      (e.g. ``z = 0``: zero-width bounds), a larger one is conservative.
    """
    z = check_real("z", cal.z)
    if not (math.isfinite(z) and z >= 0):
        raise fail("z", "a finite number >= 0 (the multiplier of the standard errors in the bounds)", cal.z)
    c = cal.confidence
    if c is None:
        if z != 0:
            raise fail("z", "0 when confidence is None (a plug-in calibration's bounds are its estimates)", cal.z)
        return
    c = check_real("confidence", c)
    if not 0.0 < c <= 1.0:
        raise fail("confidence", "None or in (0, 1]", cal.confidence)
    has_error = any(np.any(getattr(cal, n)) for n in ("mean_se", "cov_se", "cov_se_white"))
    if c == 1.0:
        if has_error:
            raise fail("confidence", "below 1 when standard errors are non-zero (only exact moments hold surely)", c)
        return
    m = n_intervals(len(cal.secrets), cal.mean_array.shape[1]) * max(1, len(cal.family))
    needed = bonferroni_z(c, m)
    if z < needed * (1 - 1e-9):
        raise fail("z", f">= {needed:.6g}, the Bonferroni quantile for confidence={c:g} over {m} intervals "
                        "(a smaller z claims that confidence over bounds too narrow for it)", cal.z)


def _as_finite_law(value: Any, name: str) -> FiniteLaw:
    """A FiniteLaw, or one built from a pair (points, weights)."""
    if isinstance(value, FiniteLaw):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        try:
            return FiniteLaw(*value)
        except (ValidationError, ParameterTypeError) as exc:
            raise fail(name, "a FiniteLaw or a pair (points, weights) of a law", described(str(exc))) from exc
    raise ParameterTypeError(f"{name} must be a FiniteLaw or a pair (points, weights); got {type(value).__name__}")


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
        (:class:`~bayespriv.calibration.signing.FileProvenance`); None for a
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

        :func:`~bayespriv.calibration.signing.content_digest` of the file as
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

    def _posterior_variable(self) -> str:
        """Name of the variable holding F in :meth:`to_inference_data` (one model)."""
        return self.query.name if self.query is not None else "F"

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
        import arviz as az

        if self.sample_array is None:
            raise fail("calibration", "a sampled calibration (with draws of F) to become InferenceData",
                       described("a calibration without samples (exact moments, from_moments)"))
        coords = {"chain": [0], "draw": np.arange(self.sample_array.shape[1]),
                  "secret": [s.label for s in self.secrets], "component": list(self.component_names)}
        dims = ("chain", "draw", "secret", "component")
        name = self._posterior_variable()
        if self.is_family:
            names = [f"{name} | {_theta_label(m.theta)}" for m in self.members]
            if len(set(names)) != len(names):
                names = [f"{name} | member {i}" for i in range(len(names))]
            data = {n: (dims, np.swapaxes(m.sample_array, 0, 1)[None]) for n, m in zip(names, self.members)
                    if m.sample_array is not None}
        else:
            data = {name: (dims, np.swapaxes(self.sample_array, 0, 1)[None])}
        attrs = {"query": name, "n_draws_per_secret": int(self.sample_array.shape[1]),
                 "confidence": "plug-in" if self.confidence is None else float(self.confidence),
                 "inference_library": "bayespriv"}
        return az.InferenceData(posterior=xr.Dataset(data, coords=coords, attrs=attrs))

    # -- persistence ---------------------------------------------------------------------
    def to_netcdf(self, path: Any, *, seed: Any = None, key: bytes | None = None) -> Path:
        """Save to a netCDF-4 file, signed; :func:`~bayespriv.load_calibration` reads it back bit-identical.

        The file layout is described in :mod:`bayespriv.calibration.persist`,
        the signature in :mod:`bayespriv.calibration.signing`.

        Parameters
        ----------
        path : str or path-like
            The file to write (overwritten); its directory must exist.
        seed : int, sequence of int, SeedSequence or None
            The seed the calibration was drawn with, when known (a calibration
            does not keep it); recorded in the file's metadata.
        key : bytes, optional
            The signing key; default: the data owner's key (created with mode
            0600 on first use, see :func:`~bayespriv.calibration.signing.load_key`).

        Returns
        -------
        pathlib.Path
            The file written.
        """

        return call_registered("save_calibration", self, path, seed=seed, key=key)

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
        pairs = as_pairs(pairs)
        n_records = check_optional_positive_int(n_records, "n_records")
        if query is not None and not isinstance(query, Query):
            raise ParameterTypeError(f"query must be None or a bayespriv Query; got {type(query).__name__}")
        if not isinstance(means, Mapping) or not isinstance(covs, Mapping):
            raise ParameterTypeError("means and covs must be mappings from secret to array")
        secrets = tuple(dict.fromkeys(s for p in pairs for s in p.secrets))
        for s in secrets:
            if s not in means or s not in covs:
                raise ValidationError(f"means and covs must give a value for every secret of the pairs; missing {s.label!r}")
        mean_list = [np.atleast_1d(check_finite_array(means[s], f"means[{s.label}]")) for s in secrets]
        k = mean_list[0].shape[0]
        for s, m in zip(secrets, mean_list):
            if m.shape != (k,):
                raise fail(f"means[{s.label}]", f"of shape ({k},) like the first secret's", described(f"shape {m.shape}"))
        cov_list = [check_covariance(np.reshape(covs[s], (k, k)) if np.size(covs[s]) == k * k else covs[s],
                                     f"covs[{s.label}]", k) for s in secrets]
        names = ()
        if query is not None:
            names = query.component_names(k)
        return cls(
            secrets=secrets,
            pairs=pairs,
            mean_array=np.stack(mean_list),
            cov_array=np.stack(cov_list),
            mean_se=np.zeros((len(secrets), k)),
            cov_se=np.zeros((len(secrets), k, k)),
            confidence=1.0,
            z=0.0,
            query=query,
            n_records=n_records,
            component_names=names,
        )

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
        query (:mod:`~bayespriv.mechanisms.finite_exact`), with no assumption.

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
        pairs = as_pairs(pairs)
        n_records = check_optional_positive_int(n_records, "n_records")
        if query is not None and not isinstance(query, Query):
            raise ParameterTypeError(f"query must be None or a bayespriv Query; got {type(query).__name__}")
        if not isinstance(laws, Mapping):
            raise ParameterTypeError(f"laws must be a mapping from secret to FiniteLaw or (points, weights); "
                                     f"got {type(laws).__name__}")
        secrets = tuple(dict.fromkeys(s for p in pairs for s in p.secrets))
        finite = {}
        for s in secrets:
            if s not in laws:
                raise ValidationError(f"laws must give a law for every secret of the pairs; missing {s.label!r}")
            finite[s.label] = _as_finite_law(laws[s], f"laws[{s.label}]")
        k = finite[secrets[0].label].k
        for s in secrets:
            if finite[s.label].k != k:
                raise fail(f"laws[{s.label}]", f"of dimension k = {k} like the first secret's",
                           described(f"k = {finite[s.label].k}"))
        return cls(
            secrets=secrets,
            pairs=pairs,
            mean_array=np.stack([finite[s.label].mean for s in secrets]),
            cov_array=np.stack([finite[s.label].cov for s in secrets]),
            mean_se=np.zeros((len(secrets), k)),
            cov_se=np.zeros((len(secrets), k, k)),
            confidence=1.0,
            z=0.0,
            query=query,
            n_records=n_records,
            component_names=query.component_names(k) if query is not None else (),
            finite_laws=finite,
        )

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
          vouches for its numbers, so a release needs ``accept_unverified=True``.
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

    def pair_sensitivities(self, ord: Any = 2, *, bound: bool = False) -> np.ndarray:
        """‖mean difference‖_ord for every pair, in the order of ``pairs``."""
        o = _ord(ord)
        return np.array([np.linalg.norm(self.difference(p, bound=bound), o) for p in self.pairs])

    def pair_sensitivity_se(self, ord: Any = 2) -> np.ndarray:
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

    def sensitivity_se(self, ord: Any = 2) -> float:
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

    def convergence(self, ord: Any = 2, *, n_points: int = 20) -> Any:
        """The sensitivity and variance estimates and bounds recomputed on prefixes of the draws.

        See :func:`bayespriv.calibration.convergence.convergence`.
        """

        return call_registered("convergence", self, ord, n_points=n_points)

    def draws_for_slack(self, target: float, ord: Any = 2) -> int:
        """Draws per secret for a sensitivity slack (bound − estimate) of ``target``.

        See :func:`bayespriv.calibration.convergence.draws_for_slack`.
        """

        return call_registered("draws_for_slack", self, target, ord)

    def sensitivity(self, ord: Any = 2, *, bound: bool = False) -> float:
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
            prefix = _theta_label(m.theta) + ": " if self.is_family else ""
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
        rows = []
        for m in self.members:
            for p, e1, s1, b1, e2, s2, b2 in zip(
                m.pairs,
                m.pair_sensitivities(1),
                m.pair_sensitivity_se(1),
                m.pair_sensitivities(1, bound=True),
                m.pair_sensitivities(2),
                m.pair_sensitivity_se(2),
                m.pair_sensitivities(2, bound=True),
            ):
                row = {"pair": p.label, "L1": e1, "L1 s.e.": s1, "L1 bound": b1, "L2": e2, "L2 s.e.": s2,
                       "L2 bound": b2}
                if self.is_family:
                    row = {"theta": _theta_label(m.theta), **row}
                rows.append(row)
        out = pd.DataFrame(rows).set_index(["theta", "pair"] if self.is_family else "pair")
        return self._with_w_infinity(out)

    def _with_w_infinity(self, table: pd.DataFrame) -> pd.DataFrame:
        """For a sampled scalar query (k = 1, not a family), the ∞-Wasserstein distance of each pair —
        what the Wasserstein mechanism rests on: its plug-in estimate and its DKW confidence bound
        over the query's provable support (inf when the query declares none; a mechanism may
        declare one). A W∞ bound is a distribution-free band, not a CLT interval, so it has no
        standard error of its own; the bound's excess over the estimate is its uncertainty."""
        if self.k != 1 or self.sample_array is None or self.is_family or self.confidence is None:
            return table

        try:
            wb = call_registered("wasserstein_bounds", self).table()
        except Exception:  # noqa: BLE001 - a display must not fail; the mechanism reports the reason
            return table
        return table.join(wb[["estimate", "bound"]].rename(columns={"estimate": "W∞", "bound": "W∞ bound"}))

    def moments_table(self) -> pd.DataFrame:
        """One row per (secret, component): mean, its s.e., variance, its s.e. (fourth moments), its lower bound."""
        rows = []
        for i, s in enumerate(self.secrets):
            low = np.diag(self.cov_lower(s))
            for c, name in enumerate(self.component_names):
                rows.append({
                    "secret": s.label, "component": name, "mean": self.mean_array[i, c],
                    "mean s.e.": self.mean_se[i, c], "variance": self.cov_array[i, c, c],
                    "variance s.e.": self.cov_se[i, c, c], "variance lower": low[c],
                })
        return pd.DataFrame(rows).set_index(["secret", "component"])

    def __repr__(self) -> str:
        how = ("exact laws" if self.finite_laws else "exact") if self.exact else ("plug-in" if self.plug_in else f"confidence={self.confidence}")
        q = f"query={self.query_name!r}" if self.query_name is not None else "no query"
        fam = f", family of {len(self.family)} (worst θ {_theta_label(self.theta)})" if self.is_family else ""
        draws = "no draws" if self.n_draws is None else f"n_draws={self.n_draws}"
        return (f"Calibration({q}, secrets={len(self.secrets)}, pairs={len(self.pairs)}, k={self.k}, "
                f"{draws}, {how}, sensitivity L2={self.sensitivity(2):.4g} "
                f"(s.e. {self.sensitivity_se(2):.2g}, bound {self.sensitivity(2, bound=True):.4g}), "
                f"smallest variance={float(np.min(self.variance())):.4g} "
                f"(s.e. {float(self.variance_se()[int(np.argmin(self.variance()))]):.2g}, "
                f"bound {float(np.min(self.variance(bound=True))):.4g}){fam}"
                f"{', UNVERIFIED calibration file' if UNVERIFIED in self.assumptions else ''})")

    def _summary_reasons(self) -> dict[str, str]:
        """Why a column of :meth:`summary` can hold ``inf``, for views made for a person.

        The W∞ bound is infinite when the query proves no support for F (a mean without
        ``bounds=``): its DKW band then reaches the unbounded tails.
        """

        lo, hi = call_registered("query_support", self.query, self.k, self.n_records)
        name = self.query_name or "the query"
        why = (f"unbounded: {name} has no declared bounds"
               if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)))
               else "not provable from these draws")
        return {"W∞ bound": why, "W∞": why}

    def _repr_html_(self) -> str:
        head = html.escape(repr(self))
        parts = []
        for key, value in self.diagnostics.items():
            if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
                table = pd.DataFrame.from_dict(dict(value), orient="index")
                parts.append(f"<p><b>{html.escape(str(key))}</b></p>{frame_html(table)}")
            else:
                parts.append(f"<p><b>{html.escape(str(key))}</b>: {html.escape(cell(value))}</p>")
        if self.posteriors:
            parts.append(f"<p><b>posteriors</b> (arviz.InferenceData, for az.plot_trace / az.summary): "
                         f"{html.escape(', '.join(self.posteriors))}</p>")
        diag = "".join(parts)
        summary = frame_html(self.summary(), infinite=self._summary_reasons())
        return f"<div><p><code>{head}</code></p>{summary}{diag}</div>"
