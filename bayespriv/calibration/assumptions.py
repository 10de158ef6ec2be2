"""Checks, on the calibration samples, of the assumptions a mechanism's proof needs.

A Gaussian-family mechanism is proven under assumptions about the distribution
f_s of the query F(X) given a secret s:

* ``"gaussian_query"``: f_s is (multivariate) Gaussian (APGM, EigM, DauM, ...);
* ``"equal_covariance"``: Cov(F | a) = Cov(F | b) for every pair (a, b);
* ``"translation"``: f_a is a translation of f_b (ExpM, DirM, ...).

:func:`check_assumptions` tests each one on the calibration samples and
returns an :class:`AssumptionReport`. **What a check can and cannot
establish.** A check is a statistical test of the assumption (the null
hypothesis). A failed check is evidence against the assumption, wrong with
probability at most ``alpha`` (up to the asymptotic approximations named
below) when the assumption holds. A passed check is *not* proof: the test may
lack power (few draws, a departure it does not look at). The assumption
therefore stays named in every :class:`~bayespriv.mechanisms.Guarantee`; a
failure is recorded beside it. A check that did not reject with fewer draws
than its test needs to detect the departures that matter (:data:`POWER_RULES`:
a variance ratio of 2, a skewness of 1, a KS distance of 0.15 to every
translate, each with probability ≥ 1/2 at the check's Bonferroni level) reads
*unchecked* (``holds=None``), never passed: fewer draws cannot make a
calibration look cleaner. Without samples (``Calibration.from_moments``)
``gaussian_query`` and ``translation`` cannot be checked (``holds=None``: the
user vouches for them); ``equal_covariance`` is then compared exactly.

Each named check controls its own false-failure probability at ``alpha`` by a
Bonferroni split over every test it runs (all members θ of a family, all
secrets or pairs, all components).

When an assumption fails, the relaxed guarantees rest on Gaussian approximations of the true
law: :mod:`bayespriv.calibration.relaxed_bounds` estimates what they need (its names are
re-exported here). The power rules of the checks are in :mod:`bayespriv.calibration.power`.
"""

from __future__ import annotations

import html
import math
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from .._display import frame_html
from .._validation import check_real, fail
from ..errors import ParameterTypeError
from .power import MIN_DRAWS_NORMALITY, POWER_RULES, PowerRule, power_rules, required_draws
from .relaxed_bounds import (
    GaussianApproximation,
    RelaxationEstimate,
    approx_max_divergence,
    default_eta,
    estimate_lambda_eta,
    estimate_w_infinity,
    gaussian_approximations,
    w_infinity_gaussian,
)
from .result import Calibration
from .views import member_prefix

__all__ = [
    "CHECKABLE",
    "DEFAULT_ALPHA",
    "POWER_RULES",
    "PowerRule",
    "power_rules",
    "required_draws",
    "AssumptionCheck",
    "AssumptionReport",
    "check_assumptions",
    "GaussianApproximation",
    "gaussian_approximations",
    "RelaxationEstimate",
    "approx_max_divergence",
    "estimate_lambda_eta",
    "w_infinity_gaussian",
    "estimate_w_infinity",
    "default_eta",
]

#: Assumptions :func:`check_assumptions` knows how to test.
CHECKABLE: tuple[str, ...] = ("gaussian_query", "equal_covariance", "translation")
#: Default false-failure probability of each named check.
DEFAULT_ALPHA = 1e-3


def _check_alpha(alpha: Any) -> float:
    a = check_real("alpha", alpha)
    if not (0.0 < a < 1.0):
        raise fail("alpha", "in the open interval (0, 1)", alpha)
    return a


# -- results --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AssumptionCheck:
    """The outcome of one test of a named assumption on one subject.

    Attributes
    ----------
    name : str
        The assumption (``"gaussian_query"``, ``"equal_covariance"``, ``"translation"``).
    subject : str
        What was tested: a secret (``gaussian_query``) or a pair, prefixed by θ for families.
    holds : bool or None
        False when the test rejects at ``alpha``; True when it does not (which is
        not a proof) *and* had power (at least ``n_min`` draws); None when it is
        *unchecked*: it cannot be run (no samples, no test for this name) or it
        did not reject with fewer draws than its power needs (``n < n_min``).
    statistic : float
        The test statistic that decided (the most significant one).
    p_value : float or None
        Bonferroni-adjusted p-value (over every test run for this name); None
        when not applicable.
    alpha : float
        The false-failure probability of the named check.
    detail : str
        Which test, and how to read it.
    n_min : int or None
        Fewest draws per secret at which the check's tests detect the departures
        of :data:`POWER_RULES` with probability ≥ 1/2 at their Bonferroni level;
        None when no test ran.
    """

    name: str
    subject: str
    holds: bool | None
    statistic: float
    p_value: float | None
    alpha: float
    detail: str = ""
    n_min: int | None = None

    @property
    def state(self) -> str:
        """``"passed"``, ``"FAILED"`` or ``"unchecked"``."""
        return "unchecked" if self.holds is None else ("passed" if self.holds else "FAILED")


#: What a missing entry of :meth:`AssumptionReport.summary` means, for views made for a person.
SUMMARY_MISSING = {"holds": "unchecked", "statistic": "not computed", "p-value": "no test run",
                   "n_min": "no power rule", "detail": ""}


@dataclass(frozen=True)
class AssumptionReport:
    """Every check run for a calibration and a set of assumption names.

    Attributes
    ----------
    checks : tuple of AssumptionCheck
    names : tuple of str
        The names asked for (each has at least one check, possibly ``holds=None``).
    alpha : float
    """

    checks: tuple[AssumptionCheck, ...]
    names: tuple[str, ...]
    alpha: float
    #: What a missing entry of :meth:`summary` reads in a view (:data:`SUMMARY_MISSING`).
    summary_missing: ClassVar[Mapping[str, str]] = MappingProxyType(SUMMARY_MISSING)

    def __iter__(self):
        return iter(self.checks)

    def __len__(self) -> int:
        return len(self.checks)

    def holds(self, name: str) -> bool | None:
        """False if any check of ``name`` failed; else None if any is unchecked
        (could not be run, or lacked power); else True."""
        results = [c.holds for c in self.checks if c.name == name]
        if any(r is False for r in results):
            return False
        if not results or any(r is None for r in results):
            return None
        return True

    @property
    def failed(self) -> tuple[str, ...]:
        """Names whose check failed, in the order asked."""
        return tuple(n for n in self.names if self.holds(n) is False)

    @property
    def unchecked(self) -> tuple[str, ...]:
        """Names not established by a check: no test could run, or a test that did
        not reject had too few draws to detect the departures that matter
        (``n < n_min``). The user vouches for them."""
        return tuple(n for n in self.names if self.holds(n) is None)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.failed

    def summary(self) -> pd.DataFrame:
        """One row per check: assumption, subject, holds, state (passed / FAILED /
        unchecked), statistic, p-value, α, n_min, detail."""
        rows = [{"assumption": c.name, "subject": c.subject, "holds": c.holds, "state": c.state,
                 "statistic": c.statistic, "p-value": c.p_value, "alpha": c.alpha, "n_min": c.n_min,
                 "detail": c.detail} for c in self.checks]
        cols = ["assumption", "subject", "holds", "state", "statistic", "p-value", "alpha", "n_min", "detail"]
        return pd.DataFrame(rows, columns=cols).set_index(["assumption", "subject"])

    def __repr__(self) -> str:
        state = ", ".join(f"{n}={'unchecked' if self.holds(n) is None else ('ok' if self.holds(n) else 'FAILED')}"
                          for n in self.names)
        return f"AssumptionReport({state or 'nothing to check'}; alpha={self.alpha:g})"

    def _repr_html_(self) -> str:
        head = html.escape(repr(self))
        note = ("<p><small>A failed check is wrong with probability at most α when the assumption holds; "
                "a passed check is not a proof of the assumption; an <b>unchecked</b> one could not be run or "
                "had fewer draws than n_min, the fewest at which its test detects the departures that matter "
                "(POWER_RULES): it is vouched for, not checked.</small></p>")
        return f"<div><p><code>{head}</code></p>{frame_html(self.summary(), missing=SUMMARY_MISSING)}{note}</div>"


def _unchecked_for_power(check: AssumptionCheck, n: int, n_min: int) -> AssumptionCheck:
    """``check`` turned *unchecked* when it passed with fewer draws than its power needs."""
    if check.holds is not True or n >= n_min:
        return replace(check, n_min=n_min)
    what = "; ".join(f"{r.test} against {r.departure}" for r in power_rules(check.name))
    detail = (f"unchecked: n={n} < n_min={n_min} (the test could not detect {what} with probability 1/2 "
              f"at α={check.alpha:g} split over the check's tests); the test did not reject: {check.detail}")
    return replace(check, holds=None, n_min=n_min, detail=detail)


# -- the checks ----------------------------------------------------------------------------------


def _members(calibration: Calibration) -> tuple[Calibration, ...]:
    return calibration.members


def _bonferroni(raw_min: np.ndarray, n_tests: int) -> np.ndarray:
    return np.minimum(1.0, np.asarray(raw_min, dtype=float) * max(n_tests, 1))


#: Shapiro–Wilk p-values (Royston 1995) are accurate up to this many draws; more are not used.
MAX_DRAWS_SHAPIRO = 5000
#: Most projections tested per secret by the gaussian_query check.
MAX_PROJECTIONS = 64
#: Shift grid of the translation check.
N_SHIFTS = 21
#: Draws per secret used by the KS part of the translation check (the first ones; any i.i.d. subset is valid).
MAX_DRAWS_KS = 20000


def _projection_pairs(k: int) -> list[tuple[int, int]]:
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    if k + 2 * len(pairs) > MAX_PROJECTIONS:
        pairs = [(i, i + 1) for i in range(k - 1)] + ([(0, k - 1)] if k > 2 else [])
    return pairs


def _gaussian_query_checks(calibration: Calibration, alpha: float) -> list[AssumptionCheck]:
    """Per (member, secret): Shapiro–Wilk on each standardized component z_c and,
    for k > 1, on the projections (z_c ± z_d)/√2; Bonferroni over all of them.
    A pass with fewer draws than the power rule needs reads unchecked."""
    subjects: list[tuple[str, list[tuple[str, float, float]] | None, str]] = []
    sizes: dict[str, int] = {}
    for m in _members(calibration):
        prefix = member_prefix(calibration, m)
        for i, s in enumerate(m.secrets):
            subject = prefix + s.label
            if m.sample_array is None:
                subjects.append((subject, None, "no samples (from_moments): the user vouches for it"))
                continue
            x = m.sample_array[i][:MAX_DRAWS_SHAPIRO]
            n, k = x.shape
            sizes[subject] = n
            if n < MIN_DRAWS_NORMALITY:
                subjects.append((subject, None, f"unchecked: n={n} < {MIN_DRAWS_NORMALITY} (too few draws for the "
                                                "normality tests' p-values)"))
                continue
            sd = x.std(axis=0)
            varying = np.flatnonzero(sd > 1e-12 * np.maximum(np.abs(x).max(axis=0), 1e-300))
            if varying.size == 0:
                subjects.append((subject, [], "every component constant (a point mass)"))
                continue
            z = (x[:, varying] - x[:, varying].mean(axis=0)) / sd[varying]
            names = [m.component_names[c] for c in varying]
            cols, labels = [z], list(names)
            pairs = _projection_pairs(z.shape[1])
            if pairs:
                ii, jj = np.array(pairs).T
                cols += [(z[:, ii] + z[:, jj]) / math.sqrt(2), (z[:, ii] - z[:, jj]) / math.sqrt(2)]
                labels += [f"({names[a]} + {names[b]})/√2" for a, b in pairs] + [f"({names[a]} − {names[b]})/√2" for a, b in pairs]
            proj = np.concatenate(cols, axis=1)
            spread = proj.std(axis=0) > 1e-9
            res = stats.shapiro(proj[:, spread], axis=0)
            w, p = np.atleast_1d(res.statistic), np.atleast_1d(res.pvalue)
            labels = [lab for lab, ok in zip(labels, spread) if ok]
            subjects.append((subject, [(f"Shapiro–Wilk on {lab}", float(a), float(b)) for lab, a, b in zip(labels, w, p)], ""))
    n_tests = sum(len(t) for _, t, _ in subjects if t)
    out = []
    for subject, tests, note in subjects:
        if tests is None:
            out.append(AssumptionCheck("gaussian_query", subject, None, math.nan, None, alpha, note))
        elif not tests:  # a point mass in n draws: a rare departure could hide below n_min too
            check = AssumptionCheck("gaussian_query", subject, True, 0.0, 1.0, alpha, note)
            out.append(_unchecked_for_power(check, sizes[subject], required_draws("gaussian_query", alpha, max(n_tests, 1))))
        else:
            j = int(np.argmin([t[2] for t in tests]))
            p_adj = float(_bonferroni(tests[j][2], n_tests))
            detail = (f"most significant of {len(tests)} projections: {tests[j][0]} (W statistic; Bonferroni over "
                      f"{n_tests} tests)")
            check = AssumptionCheck("gaussian_query", subject, p_adj >= alpha, tests[j][1], p_adj, alpha, detail)
            out.append(_unchecked_for_power(check, sizes[subject], required_draws("gaussian_query", alpha, n_tests)))
    return out


def _welch(wa: np.ndarray, wb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Welch t statistics and two-sided p-values comparing the column means of
    ``wa`` (n, e) and ``wb`` (m, e)."""
    n, m = wa.shape[0], wb.shape[0]
    va, vb = wa.var(axis=0, ddof=1) / n, wb.var(axis=0, ddof=1) / m
    diff = wa.mean(axis=0) - wb.mean(axis=0)
    se2 = va + vb
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se2 > 0, diff / np.sqrt(se2), np.where(diff == 0, 0.0, np.inf))
        df = np.where(se2 > 0, se2**2 / (va**2 / max(n - 1, 1) + vb**2 / max(m - 1, 1)), 1.0)
    df = np.where(np.isfinite(df) & (df > 0), df, 1.0)
    return t, 2.0 * stats.t.sf(np.abs(t), df)


def _equal_covariance_checks(calibration: Calibration, alpha: float) -> list[AssumptionCheck]:
    """Per (member, pair): for each entry c ≤ d, Welch's t-test comparing the means
    of the products (x_c − x̄_c)(x_d − x̄_d) under the two secrets (a test of
    Σ_a,cd = Σ_b,cd with distribution-free standard errors, the ones of
    :mod:`bayespriv.calibration.moments`); Bonferroni over all entries and
    pairs. Exact calibrations compare the covariances given."""
    rows: list[tuple[str, tuple]] = []
    for m in _members(calibration):
        prefix = member_prefix(calibration, m)
        for p in m.pairs:
            ia, ib = m.index(p.a), m.index(p.b)
            if m.sample_array is None:
                ca, cb = m.cov_array[ia], m.cov_array[ib]
                scale = max(float(np.abs(ca).max()), float(np.abs(cb).max()), 1e-300)
                rows.append((prefix + p.label, ("exact", bool(np.allclose(ca, cb, rtol=1e-9, atol=1e-12 * scale)),
                                                float(np.abs(ca - cb).max()))))
                continue
            t, pv = _cov_entry_tests(m.sample_array[ia], m.sample_array[ib])
            n = min(m.sample_array[ia].shape[0], m.sample_array[ib].shape[0])
            rows.append((prefix + p.label, ("test", t, pv, n)))
    n_tests = sum(len(r[1][1]) for r in rows if r[1][0] == "test")
    out = []
    for subject, (kind, *vals) in rows:
        if kind == "exact":
            holds, gap = vals
            out.append(AssumptionCheck("equal_covariance", subject, holds, gap, None, alpha,
                                       "exact moments compared (largest |Σ_a − Σ_b| entry)"))
            continue
        t, pv, n = vals
        j = int(np.argmin(pv))
        p_adj = float(_bonferroni(pv[j], n_tests))
        check = AssumptionCheck(
            "equal_covariance", subject, p_adj >= alpha, float(abs(t[j])), p_adj, alpha,
            f"largest |Welch t| of the covariance-entry differences (entry {j} of the upper triangle; "
            f"Bonferroni over {n_tests} entries)")
        out.append(_unchecked_for_power(check, n, required_draws("equal_covariance", alpha, n_tests)))
    return out


def _ks_shift_statistic(a: np.ndarray, b: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """KS distance between the ECDFs of ``a`` and ``b + s`` for each shift s (sorted a, b)."""
    n, m = a.shape[0], b.shape[0]
    ra = np.searchsorted(a, a, side="right") / n  # F̂_a at its own jump points (ties handled)
    rb = np.searchsorted(b, b, side="right") / m
    fb_at_a = np.searchsorted(b, (a[None, :] - shifts[:, None]).ravel(), side="right").reshape(-1, n) / m
    fa_at_b = np.searchsorted(a, (b[None, :] + shifts[:, None]).ravel(), side="right").reshape(-1, m) / n
    return np.maximum(np.abs(ra[None, :] - fb_at_a).max(axis=1), np.abs(fa_at_b - rb[None, :]).max(axis=1))


def _window_mass(b: np.ndarray, width: float) -> float:
    """Largest fraction of the sorted ``b`` in a half-open window of length ``width``."""
    if width <= 0:
        counts = np.searchsorted(b, b, side="right") - np.searchsorted(b, b, side="left")
    else:
        counts = np.searchsorted(b, b + width, side="right") - np.arange(b.shape[0])
    return float(counts.max()) / b.shape[0]


def _cov_entry_tests(xa: np.ndarray, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Welch t and p-values of Σ_a,cd = Σ_b,cd for every entry c ≤ d."""
    iu = np.triu_indices(xa.shape[1])
    xa = xa - xa.mean(axis=0)
    xb = xb - xb.mean(axis=0)
    return _welch(xa[:, iu[0]] * xa[:, iu[1]], xb[:, iu[0]] * xb[:, iu[1]])


def _translation_checks(calibration: Calibration, alpha: float) -> list[AssumptionCheck]:
    """Per (member, pair): two necessary conditions of "f_a is f_b shifted",
    Bonferroni over all their tests and pairs:

    * per component, a two-sample KS test with the shift a nuisance parameter,
      handled conservatively. A Welch confidence interval for the shift s*
      (difference of means, level α/(2·tests)); the statistic is
      ``T = min_g D(s_g) − ω``: the smallest KS distance between a and b + s
      over a grid of that interval, minus the largest mass of b in a window of
      half the grid step, so that on the interval's event T ≤ D(s*), whose law
      is the two-sample KS null (Kolmogorov's asymptotic tail);
    * equal covariances (Welch's t on every entry, as ``equal_covariance``),
      which KS on marginals detects poorly.

    Only marginals and second moments are compared: a pass says nothing about
    the rest of the joint law.
    """
    rows: list[tuple[str, Any]] = []
    for m in _members(calibration):
        prefix = member_prefix(calibration, m)
        for p in m.pairs:
            if m.sample_array is None:
                rows.append((prefix + p.label, None))
                continue
            rows.append((prefix + p.label, (m.sample_array[m.index(p.a)], m.sample_array[m.index(p.b)])))
    n_ks = sum(r[1][0].shape[1] for r in rows if r[1] is not None)
    n_cov = sum(r[1][0].shape[1] * (r[1][0].shape[1] + 1) // 2 for r in rows if r[1] is not None)
    n_tests = n_ks + n_cov
    a_ci = alpha / (2.0 * max(n_tests, 1))
    out = []
    for subject, data in rows:
        if data is None:
            out.append(AssumptionCheck("translation", subject, None, math.nan, None, alpha,
                                       "no samples (from_moments): the user vouches for it"))
            continue
        xa, xb = data
        n, mm = min(xa.shape[0], MAX_DRAWS_KS), min(xb.shape[0], MAX_DRAWS_KS)
        cands: list[tuple[float, float, str]] = []  # (p-value adjusted, statistic, what)
        for c in range(xa.shape[1]):
            a, b = np.sort(xa[:MAX_DRAWS_KS, c]), np.sort(xb[:MAX_DRAWS_KS, c])
            va, vb = a.var(ddof=1) / n, b.var(ddof=1) / mm
            se = math.sqrt(va + vb)
            if se > 0:
                df = (va + vb) ** 2 / (va**2 / max(n - 1, 1) + vb**2 / max(mm - 1, 1))
                half = float(stats.t.isf(a_ci / 2.0, df)) * se
            else:
                half = 0.0
            shifts = a.mean() - b.mean() + np.linspace(-half, half, N_SHIFTS)
            d = _ks_shift_statistic(a, b, shifts)
            step = 2.0 * half / (N_SHIFTS - 1)
            t = max(0.0, float(d.min()) - (_window_mass(b, step / 2.0) if half > 0 else 0.0))
            pv = float(stats.kstwobign.sf(t * math.sqrt(n * mm / (n + mm))))
            cands.append((min(1.0, 2.0 * n_tests * pv), t, f"shift-minimized two-sample KS on component {c}"))
        tw, pw = _cov_entry_tests(xa, xb)
        j = int(np.argmin(pw))
        cands.append((min(1.0, float(pw[j]) * n_tests), float(abs(tw[j])),
                      f"Welch t on covariance entry {j} of the upper triangle"))
        p_adj, stat, what = min(cands, key=lambda c: c[0])
        check = AssumptionCheck(
            "translation", subject, p_adj >= alpha, stat, p_adj, alpha,
            f"most significant: {what} (marginal KS and covariance entries only; Bonferroni over {n_tests} tests, "
            "KS tests weighted twice for the shift's interval)")
        out.append(_unchecked_for_power(check, min(n, mm), required_draws("translation", alpha, n_tests)))
    return out


_CHECKS = {
    "gaussian_query": _gaussian_query_checks,
    "equal_covariance": _equal_covariance_checks,
    "translation": _translation_checks,
}

_CACHE: "weakref.WeakKeyDictionary[Calibration, dict[tuple[str, float], tuple[AssumptionCheck, ...]]]" = weakref.WeakKeyDictionary()


def check_assumptions(
    calibration: Calibration,
    names: Iterable[str] | str = CHECKABLE,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> AssumptionReport:
    """Test named assumptions on the calibration samples.

    Parameters
    ----------
    calibration : Calibration
    names : str or iterable of str
        Assumption names; those without a test here (see :data:`CHECKABLE`)
        get one check with ``holds=None``.
    alpha : float in (0, 1)
        False-failure probability of each named check (Bonferroni over all its
        tests). Shapiro–Wilk p-values (Royston's approximation) are accurate
        for 20 ≤ n ≤ 5000 (more draws: the first 5000 are used; measured
        within ±20% of α down to α = 1e-3); Welch's t and Kolmogorov's limit
        are asymptotic. Measured false-failure rates: gaussian_query
        0.046–0.055 at α = 0.05 on Gaussian draws (n = 200, 2000; 3000
        replications); translation 0.03–0.08 and equal_covariance 0.06–0.10
        at α = 0.1 on shifted exponential and Gaussian pairs (n = 30–1000;
        400 replications).

    Returns
    -------
    AssumptionReport

    Notes
    -----
    * ``gaussian_query``: per secret (and θ), Shapiro–Wilk on each
      standardized component and, for k > 1, on the projections
      (z_c ± z_d)/√2 (all pairs, or neighbouring pairs when k is large).
      Normal projections are necessary, not sufficient, for joint normality.
    * ``equal_covariance``: per pair, Welch's t on every covariance entry
      (distribution-free standard errors); exact comparison for
      ``from_moments`` calibrations.
    * ``translation``: per pair and component, a two-sample KS test with the
      shift a nuisance parameter (minimized over its confidence interval,
      conservatively). Translation also implies equal covariances: ask for
      ``equal_covariance`` too to test the joint second moments.
    * Power: a check that does not reject with fewer draws per secret than
      :func:`required_draws` (name, alpha, its number of tests) reads
      *unchecked* (``holds=None``, ``detail`` starting ``"unchecked: n=…<
      n_min=…"``); ``AssumptionCheck.n_min`` records the number. A rejection
      below it still fails.

    Results are cached per calibration (calibrations are immutable).
    """
    if not isinstance(calibration, Calibration):
        raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
    alpha = _check_alpha(alpha)
    if isinstance(names, str):
        names = (names,)
    names = tuple(dict.fromkeys(names))
    for n in names:
        if not isinstance(n, str):
            raise ParameterTypeError(f"names must be strings; got {n!r} of type {type(n).__name__}")
    per_cal = _CACHE.setdefault(calibration, {})
    checks: list[AssumptionCheck] = []
    for n in names:
        key = (n, alpha)
        if key not in per_cal:
            if n in _CHECKS:
                per_cal[key] = tuple(_CHECKS[n](calibration, alpha))
            else:
                per_cal[key] = (AssumptionCheck(n, "-", None, math.nan, None, alpha, "no check implemented for this assumption"),)
        checks.extend(per_cal[key])
    return AssumptionReport(tuple(checks), names, alpha)
