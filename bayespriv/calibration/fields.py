"""A calibration's fields: the checks :class:`~bayespriv.calibration.result.Calibration` runs on
them at construction, and the fields of a calibration whose moments or laws are known exactly.

The checks take the calibration (or the field) and return the value to store, or raise
:class:`~bayespriv.errors.ValidationError` / :class:`~bayespriv.errors.ParameterTypeError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from .._validation import (
    check_covariance,
    check_finite_array,
    check_optional_positive_int,
    check_real,
    described,
    fail,
    sealed,
)
from ..errors import ParameterTypeError, ReleaseMismatchError, ValidationError
from ..queries import Query
from ..queries.query import fingerprint_matches
from ..secrets import DatasetSecret, DistributionSecret, Secret, SecretPair, as_pairs
from .laws import FiniteLaw
from .moments import bonferroni_z, law_mismatch

__all__ = ["n_intervals", "moments_fields", "laws_fields"]


def _checked_fingerprint(query: Query | None, given: Any) -> str | None:
    """The query's fingerprint (current scheme); a given one must be a string and match the query's.

    A given fingerprint of the legacy scheme (a file written before scheme 2, on this Python version) that
    matches is replaced by the current one, so saving the calibration again writes the current scheme.
    """
    if given is not None and not isinstance(given, str):
        raise ParameterTypeError(f"query_fingerprint must be None or a str; got {type(given).__name__}")
    if query is None or not isinstance(query, Query):
        return given
    actual = query.fingerprint
    if given is not None and given != actual and not fingerprint_matches(query, given):
        raise ReleaseMismatchError(
            f"query must be the calibrated query (fingerprint {given[:12]}…); got query {query.name!r} with "
            f"fingerprint {actual[:12]}… (its code, columns, name or bounds differ)")
    return actual


def _checked_query_name(query: Query | None, given: Any) -> str | None:
    """The query's name when there is a query, else the given name (None or a string)."""
    if given is not None and not isinstance(given, str):
        raise ParameterTypeError(f"query_name must be None or a str; got {type(given).__name__}")
    return query.name if isinstance(query, Query) else given


def _checked_posteriors(posteriors: Any) -> Mapping[str, Any]:
    """A read-only mapping secret label -> arviz.InferenceData (not deep-frozen: InferenceData is itself a mapping)."""
    if not isinstance(posteriors, Mapping):
        raise ParameterTypeError(f"posteriors must be a mapping of secret labels to arviz.InferenceData; got "
                                 f"{type(posteriors).__name__}")
    if posteriors:
        from ..datamodels.compat import is_inference_data

        for label, idata in posteriors.items():
            if not isinstance(label, str) or not is_inference_data(idata):
                raise fail("posteriors", "a mapping of secret labels (str) to arviz.InferenceData",
                           described(f"{label!r}: {type(idata).__name__}"))
    return MappingProxyType(dict(posteriors))


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


def _checked_arrays(cal: Any, n_secrets: int) -> dict[str, np.ndarray]:
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


def _checked_laws(cal: Any) -> Mapping[str, FiniteLaw]:
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


def _check_confidence_z(cal: Any) -> None:
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


def moments_fields(means: Mapping[Secret, Sequence[float]], covs: Mapping[Secret, Any],
                   pairs: SecretPair | Sequence[SecretPair], query: Query | None = None, *,
                   n_records: int | None = None) -> dict[str, Any]:
    """The fields of :meth:`Calibration.from_moments <bayespriv.calibration.result.Calibration.from_moments>`:
    the moments given, standard errors 0, ``confidence`` 1.0."""
    pairs, n_records = _exact_inputs(pairs, query, n_records)
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
    return _exact_fields(secrets, pairs, np.stack(mean_list), np.stack(cov_list), query, n_records)


def laws_fields(laws: Mapping[Secret, Any], pairs: SecretPair | Sequence[SecretPair], query: Query | None = None, *,
                n_records: int | None = None) -> dict[str, Any]:
    """The fields of :meth:`Calibration.from_laws <bayespriv.calibration.result.Calibration.from_laws>`:
    the laws' own moments, standard errors 0, ``confidence`` 1.0, and the laws by secret label."""
    pairs, n_records = _exact_inputs(pairs, query, n_records)
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
    return _exact_fields(secrets, pairs, np.stack([finite[s.label].mean for s in secrets]),
                         np.stack([finite[s.label].cov for s in secrets]), query, n_records, finite_laws=finite)


def _exact_inputs(pairs: SecretPair | Sequence[SecretPair], query: Query | None,
                  n_records: int | None) -> tuple[tuple[SecretPair, ...], int | None]:
    """The pairs and ``n_records`` of an exact calibration, checked, and its ``query`` checked."""
    pairs = as_pairs(pairs)
    n_records = check_optional_positive_int(n_records, "n_records")
    if query is not None and not isinstance(query, Query):
        raise ParameterTypeError(f"query must be None or a bayespriv Query; got {type(query).__name__}")
    return pairs, n_records


def _exact_fields(secrets: tuple[Secret, ...], pairs: tuple[SecretPair, ...], means: np.ndarray, covs: np.ndarray,
                  query: Query | None, n_records: int | None, **extra: Any) -> dict[str, Any]:
    """The fields of a calibration whose moments are exact: standard errors 0, ``confidence`` 1.0."""
    k = means.shape[1]
    return dict(secrets=secrets, pairs=pairs, mean_array=means, cov_array=covs, mean_se=np.zeros((len(secrets), k)),
                cov_se=np.zeros((len(secrets), k, k)), confidence=1.0, z=0.0, query=query, n_records=n_records,
                component_names=query.component_names(k) if query is not None else (), **extra)
