"""The release path, one stage per function: check, bind, gate, spend, draw, record.

``Mechanism.release_value`` runs these stages in order. Everything that can
fail is checked *before* the ledger is charged, so a refused release spends
nothing and draws no noise:

1. :func:`check_ledger` / :func:`check_release_rng` — the arguments are what they claim to be
   (:func:`release_options`: the :class:`~bayespriv.privacy.ReleaseOptions`, checked when built, or the
   deprecated flag keywords folded into one);
2. :func:`bind_answer` / :func:`bind_dataset` — the data match what was calibrated
   (row count, columns, the query's output length, finite values);
3. :func:`premise_gate` — the guarantee's premises did not fail their checks,
   unless the caller opts in (the release is then recorded as *not established*);
   :func:`unverified_gate` — the calibration came from a verified file (or this
   process), unless the caller opts in to an unverified one;
4. :func:`watch_seed` — a seed reused for two releases of one mechanism warns;
5. the ledger's ``charge`` (atomic check-and-spend);
6. the noise, drawn from the mechanism's exact sampler; a failure after the
   spend (impossible by construction, but guarded) voids the ledger row.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import all_finite, check_finite_array, described, fail
from ..errors import (
    AssumptionFailedError,
    BayesPrivWarning,
    ParameterTypeError,
    ReleaseMismatchError,
    UnverifiedCalibrationError,
    warn,
)
from ..random import as_seed_sequence
from bayespriv._deprecation import keywords_into_option, renamed_keyword
from bayespriv.privacy.guarantee import Guarantee, ReleaseOptions

if TYPE_CHECKING:
    from bayespriv.random import RNGLike

__all__ = [
    "LEGACY_TABLE_PREFIX",
    "check_dataset_name",
    "MIN_EPSILON",
    "MAX_EPSILON",
    "MAX_NOISE_SCALE",
    "check_ledger",
    "check_release_rng",
    "bind_answer",
    "bind_dataset",
    "premise_gate",
    "unverified_gate",
    "watch_seed",
    "check_mechanism_epsilon",
    "DEFAULT_OPTIONS",
    "RELEASE_FLAGS",
    "release_options",
]

#: Smallest ε a mechanism accepts: below it a Laplace scale Δ/ε exceeds 10⁹ sensitivities (the release
#: carries no information) and ratios such as Δ/ε leave the floating-point range for ε near 5e-324.
MIN_EPSILON = 1e-9
#: Largest ε a mechanism accepts: e^ε must be representable (e^709.78 overflows a double), and
#: far below that ε promises nothing anyway.
MAX_EPSILON = 700.0
#: Largest noise standard deviation (or Laplace scale) a mechanism accepts: beyond it a release
#: carries no information and sums of noise draws risk overflow.
MAX_NOISE_SCALE = 1e100


def check_mechanism_epsilon(epsilon: Any, name: str = "epsilon") -> None:
    """Refuse ε outside [:data:`MIN_EPSILON`, :data:`MAX_EPSILON`] before any arithmetic on it.

    Both ends are numerical, not privacy, limits: e^ε overflows a double beyond
    ~709.78, and below 10⁻⁹ noise scales such as Δ/ε leave any useful (and, near
    5e-324, any representable) range. Other values (types, NaN, ≤ 0) are left to
    :func:`~bayespriv._validation.check_epsilon`.
    """
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool) and math.isfinite(float(epsilon)):
        eps = float(epsilon)
        if eps > MAX_EPSILON:
            raise fail(name, f"at most {MAX_EPSILON:g} (e^ε overflows double precision beyond ~709, and such an ε "
                             "promises nothing)", epsilon)
        if 0 < eps < MIN_EPSILON:
            raise fail(name, f"at least {MIN_EPSILON:g} (below it the noise would exceed 10⁹ sensitivities: the "
                             "release carries no information, and noise scales leave the floating-point range)", epsilon)


#: The options of a release that passes none: opts into nothing, declares nothing (checked once, here).
DEFAULT_OPTIONS = ReleaseOptions()
#: The keywords ``release`` and ``release_value`` took before :class:`~bayespriv.privacy.ReleaseOptions` held
#: them (deprecated spellings, kept for one release).
RELEASE_FLAGS = ("accept_failed_assumptions", "accept_unverified", "independent", "clip")

_MISSING = object()


def release_options(owner: str, options: Any, old: dict[str, Any], *, flags: tuple[str, ...] = RELEASE_FLAGS,
                    dataset_name: Any = None, renamed: bool = False) -> tuple[Any, ReleaseOptions]:
    """``(dataset_name, options)`` of a release called as ``owner``: ``options`` checked (None: the defaults),
    with the deprecated keywords of ``old`` folded in, each warning — the flags of ``flags`` into the options
    and, when ``renamed``, ``dataset=`` into ``dataset_name``. An old keyword given with its new spelling is a
    :class:`~bayespriv.errors.ValidationError`; a keyword that was never accepted, a ``TypeError``.

    Not on the fast path: a release that passes no old keyword only checks ``options``' type.
    """
    old = dict(old)
    if renamed and "dataset" in old:
        name = renamed_keyword(owner, "dataset", "dataset_name", old.pop("dataset"),
                               _MISSING if dataset_name is None else dataset_name, missing=_MISSING)
        dataset_name = None if name is _MISSING else name
    unknown = [name for name in old if name not in flags]
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    options = keywords_into_option(owner, "options", ReleaseOptions, old, options)
    if options is None:
        return dataset_name, DEFAULT_OPTIONS
    if not isinstance(options, ReleaseOptions):
        raise ParameterTypeError(f"options must be None or a bayespriv ReleaseOptions; got {options!r:.80} of type "
                                 f"{type(options).__name__}")
    return dataset_name, options


def check_ledger(ledger: Any) -> None:
    """``ledger`` is None or has a callable ``charge`` (a :class:`~bayespriv.Ledger`)."""
    if ledger is not None and not callable(getattr(ledger, "charge", None)):
        raise ParameterTypeError(
            f"ledger must be None or a bayespriv Ledger (an object with a charge(mechanism) method); got "
            f"{type(ledger).__name__}. Open one with bp.Ledger(path).")


def check_release_rng(rng: Any) -> bool:
    """Validate ``rng`` without drawing from it; returns whether the release is seeded."""
    if rng is None:
        return False
    if not isinstance(rng, np.random.Generator):
        as_seed_sequence(rng)  # raises ParameterTypeError naming rng
    return True


def bind_answer(answer: Any, k: int, *, n_records: Any = None, calibrated_n: int | None = None) -> np.ndarray:
    """The answer as a finite ``(k,)`` array; with ``n_records``, it must equal the calibrated size."""
    if type(answer) is np.ndarray and answer.dtype == np.float64 and answer.shape == (k,) and all_finite(answer):
        value = answer  # what a query returns: the general checks below would pass it unchanged
    else:
        value = np.atleast_1d(check_finite_array(answer, "answer"))
    if value.shape != (k,):
        raise ReleaseMismatchError(
            f"answer must be of shape ({k},) like the calibrated query; got shape {value.shape}")
    if n_records is not None and calibrated_n is not None:
        if isinstance(n_records, bool) or not isinstance(n_records, numbers.Integral) or int(n_records) != calibrated_n:
            raise ReleaseMismatchError(
                f"n_records must equal the calibrated number of records ({calibrated_n}): the noise was calibrated for "
                f"datasets of that size; got {n_records!r}")
    return value


def bind_dataset(dataset: Any, columns: tuple[str, ...], calibrated_n: int | None) -> pd.DataFrame:
    """The dataset must be a DataFrame with unique column names, the query's columns, and the calibrated row count."""
    if not isinstance(dataset, pd.DataFrame):
        raise ParameterTypeError(f"dataset must be a pandas DataFrame; got {type(dataset).__name__}")
    dup = dataset.columns[dataset.columns.duplicated()].tolist()
    if dup:
        raise ReleaseMismatchError(f"dataset must have unique column names; got duplicates {dup}")
    missing = [c for c in columns if c not in dataset.columns]
    if missing:
        raise ReleaseMismatchError(f"dataset must have the query's columns {list(columns)}; missing {missing}")
    if calibrated_n is None:
        raise ReleaseMismatchError(
            "dataset can be released only against a calibration that knows its number of records (the noise is "
            "calibrated for one dataset size); got a calibration with n_records=None. Pass n_records= to "
            "Calibration.from_moments, or use release_value(answer) and vouch for the size yourself.")
    if len(dataset) != calibrated_n:
        raise ReleaseMismatchError(
            f"dataset must have {calibrated_n} rows, as calibrated (the noise covers datasets of that size only); "
            f"got {described(f'{len(dataset)} rows')}")
    return dataset


def premise_gate(mechanism: Any, guarantee: Guarantee, accept_failed_assumptions: bool) -> None:
    """Refuse a release whose guarantee rests on an assumption that failed its check.

    Raises
    ------
    AssumptionFailedError
        Naming each failed check, its statistic and p-value, and the remedies.
    """
    if not isinstance(accept_failed_assumptions, bool):
        raise ParameterTypeError(f"accept_failed_assumptions must be True or False; got {accept_failed_assumptions!r}")
    if guarantee.established or accept_failed_assumptions:
        return
    raise AssumptionFailedError(
        f"{type(mechanism).__name__} cannot release: its guarantee (ε={guarantee.epsilon:g}, δ={guarantee.delta:g}) is not "
        f"established because the check of {', '.join(guarantee.failed_assumptions)} failed on the calibration "
        f"({_failed_details(mechanism)}). Nothing was spent and no noise was drawn. Remedies: "
        f"{_remedies(mechanism, guarantee)}; or pass options=ReleaseOptions(accept_failed_assumptions=True) to release "
        "anyway (the Release and the ledger then record the guarantee as NOT ESTABLISHED).")


#: The assumption of a guarantee built on a calibration loaded with ``trust="unverified"``.
UNVERIFIED = "unverified_calibration"


def unverified_gate(mechanism: Any, guarantee: Guarantee, accept_unverified: bool) -> None:
    """Refuse a release whose guarantee rests on a calibration file that did not verify, unless opted in.

    Raises
    ------
    UnverifiedCalibrationError
        Naming the file and what to do; nothing was spent and no noise was drawn.
    """
    if not isinstance(accept_unverified, bool):
        raise ParameterTypeError(f"accept_unverified must be True or False; got {accept_unverified!r}")
    if UNVERIFIED not in guarantee.assumptions or accept_unverified:
        return
    calibration = getattr(mechanism, "calibration", None)  # a mechanism's, or None (a composition of several)
    provenance = None if calibration is None else calibration.provenance
    where = f"the file {provenance.path!r}" if provenance is not None else "a file"
    raise UnverifiedCalibrationError(
        f"{type(mechanism).__name__} cannot release: its calibration was loaded with trust='unverified' from {where}, "
        "whose MAC did not verify under your key, so nothing vouches for the noise it sets. Nothing was spent and no "
        "noise was drawn. Re-run calibrate and save with your key, or pass "
        "options=ReleaseOptions(accept_unverified=True) (command line: --accept-unverified) to release anyway (the "
        "Release and its guarantee then name the assumption unverified_calibration).")


def _failed_details(mechanism: Any) -> str:
    try:
        checks = [c for c in mechanism.assumption_checks if c.holds is False]
    except Exception:  # pragma: no cover - exact calibrations without samples still have exact checks
        return "see mechanism.check()"
    parts = []
    for c in checks:
        p = f", p={c.p_value:.3g}" if c.p_value is not None else ""
        parts.append(f"{c.name} for {c.subject}: statistic {c.statistic:.4g}{p} at alpha={c.alpha:g}")
    return "; ".join(parts) or "see mechanism.check()"


def _remedies(mechanism: Any, guarantee: Guarantee) -> str:
    out = []
    if "equal_covariance" in guarantee.failed_assumptions:
        out.append("build the mechanism with covariance='unequal' (the calibration for unequal covariances, "
                   "which drops this assumption)")
    if any(a in guarantee.failed_assumptions for a in ("gaussian_query", "translation", "equal_covariance")):
        out.append("use mechanism.relaxed(eta) (Theorem 4.6) or mechanism.with_extra_laplace(lam) (Theorem 4.7), "
                   "or APGMnG")
    if "group_covers_secret" in guarantee.failed_assumptions:
        out.append("use GroupDP's default group_size (all n_records): the secrets (a share or a mean over the "
                   "dataset, a distribution parameter) can change every record")
        return "; ".join(out)
    out.append("calibrate again with more draws if the failure may be a fluke")
    return "; ".join(out)


def watch_seed(mechanism: Any, rng: RNGLike) -> None:
    """Warn when an integer seed is reused for a second release of one mechanism.

    Two releases with the same seed carry the same noise: their difference is
    the exact difference of the true answers. Seeds are for tests.
    """
    if rng is None or not isinstance(rng, numbers.Integral) or isinstance(rng, bool):
        return
    used = mechanism.__dict__.setdefault("_seeds_used", set())
    if int(rng) in used:
        warn(f"rng={int(rng)} was already used for a release of this {type(mechanism).__name__}: both releases carry "
             "the same noise, so their difference reveals the exact difference of the true answers. Seeds are for "
             "tests; leave rng=None for releases (fresh OS entropy).", BayesPrivWarning)
    used.add(int(rng))


#: What older versions recorded as a release's dataset: a fingerprint of the frame's bytes ("table:<sha256>"). A
#: ledger reads such rows as its default account (:mod:`bayespriv.ledger.session`); no name may start with it.
LEGACY_TABLE_PREFIX = "table:"


def check_dataset_name(value: Any, name: str = "dataset_name") -> str | None:
    """``value`` of a release's ``dataset_name``: None (the ledger's default account) or a non-empty name that does
    not start with :data:`LEGACY_TABLE_PREFIX`."""
    if value is not None and (not isinstance(value, str) or not value.strip() or value.startswith(LEGACY_TABLE_PREFIX)):
        raise fail(name, "None or a non-empty string naming the data the release reads, not starting with "
                   f"{LEGACY_TABLE_PREFIX!r} (older versions' table fingerprints)", value)
    return value
