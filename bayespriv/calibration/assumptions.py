"""Checks, on the calibration samples, of the assumptions a mechanism's proof needs,
and estimates of what the relaxed guarantees need when they fail.

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

When an assumption fails, two fallbacks of Chen & Ohrimenko (AISTATS 2023,
§4.4) bound the privacy loss through Gaussian approximations f̃ of the true
f. For each pair (a, b) (and member θ) we take

    f̃_a = N(μ̂_a, C_ab),  f̃_b = N(μ̂_b, C_ab),  C_ab = (Σ̂_a + Σ̂_b) / 2,

which are Gaussian, translations of each other and of equal covariance, so
every assumption above holds for them. Every mechanism of bayespriv whose
guarantee rests on these assumptions (APGM, ExpM, DirM, EigM, DauM,
OptimalGaussian, Noiseless) is (ε, δ)-private for them *deterministically*:
its noise covers every mean difference in the calibration's confidence box
(whose centre is μ̂_a − μ̂_b; the conditions are convex in the difference) and
credits at most a Loewner lower bound of both covariances, and any matrix
below both Σ̂_a and Σ̂_b is below their average C_ab (more covariance only
adds independent Gaussian noise: post-processing).

* Theorem 4.6 needs λ bounding the η-approximate max-divergence
  ``D^η_∞`` between f and f̃ in both directions:
  :func:`approx_max_divergence` / :func:`estimate_lambda_eta`.
* Theorem 4.7 needs the ∞-Wasserstein distance between f and f̃:
  :func:`w_infinity_gaussian` / :func:`estimate_w_infinity`.

See those functions for exactly what is estimated and what is bounded.
"""

from __future__ import annotations

import html
import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import special, stats

from .._display import frame_html
from .._validation import check_delta, check_positive_int, check_real, fail
from ..errors import ParameterTypeError, ValidationError
from .result import Calibration, _theta_label

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
#: Fewest draws for the normality test.
MIN_DRAWS_NORMALITY = 20
#: Smallest expected count (under f̃) of a cell of the divergence estimator; the
#: outermost cells, of this size, are charged in full to η (see approx_max_divergence).
MIN_CELL_COUNT = 10


def _check_alpha(alpha: Any) -> float:
    a = check_real("alpha", alpha)
    if not (0.0 < a < 1.0):
        raise fail("alpha", "in the open interval (0, 1)", alpha)
    return a


def _check_confidence(confidence: Any) -> float:
    c = check_real("confidence", confidence)
    if not (0.0 < c < 1.0):
        raise fail("confidence", "in the open interval (0, 1)", confidence)
    return c


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


# -- power: the fewest draws at which a check can detect the departures that matter -------------------


@dataclass(frozen=True)
class PowerRule:
    """The smallest number of draws at which one test of a named check has power.

    A check's test rejects at a per-test level α' (its ``alpha`` split by
    Bonferroni over the tests it runs). Below :meth:`n_min` of α' the test
    would miss ``departure`` more often than not, so a pass there says nothing:
    the check reads *unchecked* (``holds=None``), never passed. A rejection
    below ``n_min`` still counts (its level does not depend on power).

    ``n_min(α') = ceil(factor · q(α')²)`` with ``q`` the test's critical value:
    the two-sided normal quantile ``Φ⁻¹(1 − α'/2)`` (``quantile="normal"``)
    or Kolmogorov's ``K⁻¹(1 − α')`` (``quantile="kolmogorov"``); ``factor``
    is the asymptotic one from the test's noncentrality, corrected where the
    measured small-sample power fell short (see :data:`POWER_RULES`).

    Attributes
    ----------
    check : str
        The named check (``"gaussian_query"``, ``"equal_covariance"``, ``"translation"``).
    departure : str
        The departure from the assumption that matters, with its size.
    test : str
        The test that must detect it.
    factor : float
        ``n_min = ceil(factor · q²)``.
    quantile : str
        ``"normal"`` or ``"kolmogorov"``.
    share : float
        Fraction of the check's α that each test of this kind gets (the
        translation check weights its KS tests twice: ``share = 1/2``).
    floor : int
        Fewest draws for the test's p-values to be valid at all.
    """

    check: str
    departure: str
    test: str
    factor: float
    quantile: str
    share: float = 1.0
    floor: int = 3

    def n_min(self, alpha: float, n_tests: int = 1) -> int:
        """Fewest draws per secret for power ≥ 1/2 at per-test level ``share · alpha / n_tests``."""
        a = self.share * alpha / max(int(n_tests), 1)
        q = float(stats.kstwobign.isf(a)) if self.quantile == "kolmogorov" else float(special.ndtri(1.0 - a / 2.0))
        return max(self.floor, math.ceil(self.factor * q * q))


#: Variance ratio that the ``equal_covariance`` power rule must detect. At ratio 2,
#: N(0, 2) against N(0, 1) alone (no mean shift) has δ(ε = 1) = 0.046 (quadrature): any Gaussian
#: mechanism whose target δ is below 0.02 is broken by this departure.
VARIANCE_RATIO = 2.0
#: Skewness that the ``gaussian_query`` power rule must detect (Gamma(4) has skewness 1 and
#: puts 9.1e-3 beyond the upper 1e-3 quantile of the Gaussian with its mean and variance: a
#: Gaussian mechanism's δ-sized tails are off by a factor 9).
SKEWNESS = 1.0
#: KS distance to every translate that the ``translation`` power rule must detect: the
#: standardized exponential law against N(0, 1) (0.149, computed by minimizing over the shift).
KS_DISTANCE = 0.15


def _welch_factor(ratio: float) -> float:
    # Welch's t on the squares (x − x̄)² of Gaussian draws, variances 1 and ρ: the mean
    # difference ρ − 1 over the standard error sqrt(2(1 + ρ²)/n) reaches the critical value
    # q at n = 2(1 + ρ²) q² / (ρ − 1)² (power 1/2). Measured n50 is ≤ 3.5 % above it for
    # α' ∈ [1e-6, 1e-2] (1000 replications each): factor × 1.05.
    return 1.05 * 2.0 * (1.0 + ratio**2) / (ratio - 1.0) ** 2


#: The power rule of every test a check runs, as data. Measurements (seeded simulation,
#: 1000 replications per α' for the first two, 400 for the third):
#:
#: * Shapiro–Wilk on Gamma(4) draws (skewness 1): power 1/2 at n50 = 54, 85, 118, 149, 190
#:   for α' = 1e-2 … 1e-6, i.e. n50 / q² = 7.6–8.2 (the skewness-test asymptotic 6 q²/γ²
#:   gives power 0.33 only); factor 8.5.
#: * Welch on the squares, variance ratio 2: n50 = 66, 112, 155, 199, 246 against the
#:   asymptotic 66, 108, 151, 195, 239 (α' = 1e-2 … 1e-6); factor = asymptotic × 1.05.
#: * The translation check's shift-minimized KS on N(0, 1) against an exponential of the same
#:   variance (KS distance 0.149 to every translate): the two-sample asymptotic
#:   n = 2 (K⁻¹(1 − α') / d)² gives power 0.05–0.15 (the shift is minimized over and the
#:   statistic lowered by a window mass, conservatively); 1.3 × it gives 0.55–0.64 at
#:   α = 0.05, 1e-3, 1e-5 (k = 1): factor 2 × 1.3 / d².
POWER_RULES: tuple[PowerRule, ...] = (
    PowerRule("gaussian_query", f"skewness {SKEWNESS:g} (a Gamma(4)-shaped law)", "Shapiro–Wilk",
              8.5 / SKEWNESS**2, "normal", floor=MIN_DRAWS_NORMALITY),
    PowerRule("equal_covariance", f"variance ratio {VARIANCE_RATIO:g} on a component (Gaussian F)",
              "Welch's t on the covariance entries", _welch_factor(VARIANCE_RATIO), "normal"),
    PowerRule("translation", f"KS distance {KS_DISTANCE:g} to every translate (exponential against Gaussian)",
              "shift-minimized two-sample KS", 1.3 * 2.0 / KS_DISTANCE**2, "kolmogorov", share=0.5),
    PowerRule("translation", f"variance ratio {VARIANCE_RATIO:g} on a component (Gaussian F)",
              "Welch's t on the covariance entries", _welch_factor(VARIANCE_RATIO), "normal"),
)


def power_rules(check: str) -> tuple[PowerRule, ...]:
    """The rows of :data:`POWER_RULES` for one named check (empty when it has none)."""
    return tuple(r for r in POWER_RULES if r.check == check)


def required_draws(check: str, alpha: float, n_tests: int) -> int:
    """Fewest draws per secret at which every test of ``check`` has power ≥ 1/2
    against its departure (the largest :meth:`PowerRule.n_min` of its rows), with
    the check's ``alpha`` split over ``n_tests`` tests. 0 for a check without rules."""
    return max((r.n_min(alpha, n_tests) for r in power_rules(check)), default=0)


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


def _prefix(calibration: Calibration, member: Calibration) -> str:
    return _theta_label(member.theta) + ": " if calibration.is_family else ""


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
        prefix = _prefix(calibration, m)
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
        prefix = _prefix(calibration, m)
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
        prefix = _prefix(calibration, m)
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


# -- Gaussian approximations of the relaxed guarantees ------------------------------------------------


@dataclass(frozen=True, eq=False)
class GaussianApproximation:
    """f̃ = N(mean, cov) standing for the law of F given one secret of one pair.

    Attributes
    ----------
    label : str
        ``"<pair> | <secret>"``, prefixed by θ for families.
    samples : ndarray (n, k)
        Draws of the true f (from the calibration).
    mean : ndarray (k,)
        μ̂ of the secret.
    cov : ndarray (k, k)
        C_ab = (Σ̂_a + Σ̂_b)/2, common to both secrets of the pair.
    member : int
        Index of the member θ (0 for a single model).
    secret_index : int
        Index of the secret in the member's ``secrets``.
    """

    label: str
    samples: np.ndarray = field(repr=False)
    mean: np.ndarray
    cov: np.ndarray
    member: int
    secret_index: int


def _require_samples(calibration: Calibration, what: str) -> None:
    if any(m.sample_array is None for m in calibration.members):
        raise ValidationError(
            f"calibration must carry samples (built by calibrate) to estimate {what}; got a calibration without "
            "samples (from_moments). Pass the bound yourself (e.g. lambda_eta=...) if you know it."
        )


def gaussian_approximations(calibration: Calibration) -> tuple[GaussianApproximation, ...]:
    """Two approximations per (member, pair): N(μ̂_a, C_ab) and N(μ̂_b, C_ab).

    Each mechanism of bayespriv is (ε, δ)-private for these deterministically
    (see the module docstring), so Theorems 4.6 / 4.7 apply with them.
    """
    _require_samples(calibration, "a Gaussian approximation's divergence")
    out = []
    for mi, m in enumerate(calibration.members):
        prefix = _prefix(calibration, m)
        for p in m.pairs:
            ia, ib = m.index(p.a), m.index(p.b)
            c = (m.cov_array[ia] + m.cov_array[ib]) / 2.0
            c = (c + c.T) / 2.0
            for i, s in ((ia, p.a), (ib, p.b)):
                out.append(GaussianApproximation(f"{prefix}{p.label} | {s.label}", m.sample_array[i], m.mean_array[i], c, mi, i))
    return tuple(out)


@dataclass(frozen=True)
class RelaxationEstimate:
    """A relaxation quantity (λ_η or W∞) over every Gaussian approximation.

    Attributes
    ----------
    kind : str
        ``"lambda_eta"`` or ``"w_infinity"``.
    value : float
        The maximum over approximations (``inf`` when the draws cannot support
        a finite value at this η).
    eta : float
    confidence : float
        Joint confidence of the margins used.
    per_approximation : tuple of (str, float)
    rigorous : bool
        True when ``value`` is a confidence bound (W∞ for k = 1); False when it
        is an estimate (λ_η always; W∞ for k > 1, which assumes a componentwise coupling).
    detail : str
    """

    kind: str
    value: float
    eta: float
    confidence: float
    per_approximation: tuple[tuple[str, float], ...]
    rigorous: bool
    detail: str = ""

    def table(self) -> pd.Series:
        return pd.Series(dict(self.per_approximation), name=self.kind)


# -- λ_η: η-approximate max-divergence between f and a Gaussian approximation ---------------------------


def _cells(u: np.ndarray, n: int, m: int, min_count: int, two_tailed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts and f̃-probabilities of the cells of a view, and which cells are charged in full.

    ``u`` are the f̃-CDF values of the draws (uniform under f̃). Cells: m equal
    f̃-probability cells, with the outermost one(s) split geometrically down to
    ``min_count / n`` (tail levels L, 2L, 4L, ... ≤ 1/(2m), so that no cell is
    much smaller than its neighbours); the extreme cell(s), of f̃-probability
    ``min_count / n`` (or 1/m when n < 2m·min_count), are charged in full.
    """
    base = min_count / n
    levels = base * 2.0 ** np.arange(64)
    levels = levels[levels <= 0.5 / m]
    inner = np.arange(1, m) / m
    parts = [inner, 1.0 - levels]
    if two_tailed:
        parts.append(levels)
    edges = np.unique(np.concatenate(parts))
    q = np.diff(np.concatenate([[0.0], edges, [1.0]]))
    idx = np.searchsorted(edges, u, side="right")
    counts = np.bincount(idx, minlength=q.shape[0])
    charged = np.zeros(q.shape[0], dtype=bool)
    charged[-1] = True
    if two_tailed:
        charged[0] = True
    return counts, q, charged


def _min_t(a: np.ndarray, b: np.ndarray, budget: float) -> float:
    """Smallest t ≥ 1 with Σ (a − t b)₊ ≤ budget (b > 0); the upper end of the bisection bracket."""
    def h(t: float) -> float:
        return float(np.clip(a - t * b, 0.0, None).sum())
    if h(1.0) <= budget:
        return 1.0
    lo, hi = 0.0, 1.0  # in log t
    while h(math.exp(hi)) > budget:
        lo, hi = hi, 2.0 * hi
        if hi > 700:
            return math.inf
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if h(math.exp(mid)) <= budget:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _view_lambda(counts: np.ndarray, q: np.ndarray, charged: np.ndarray, n: int, eta: float, alpha_cell: float) -> float:
    """λ for one view: the smallest λ with both hockey-stick divergences ≤ η for
    every cell probability in its Clopper–Pearson interval (charged cells in full)."""
    lo = np.where(counts > 0, stats.beta.ppf(alpha_cell / 2, counts, n - counts + 1), 0.0)
    hi = np.where(counts < n, stats.beta.ppf(1 - alpha_cell / 2, counts + 1, n - counts), 1.0)
    free = ~charged
    # H(f || f̃) = Σ (p − t q)₊ ≤ Σ_charged p + Σ_free (hi − t q)₊
    c1 = float(hi[charged].sum())
    # H(f̃ || f) = Σ (q − t p)₊ ≤ Σ_charged q + Σ_free (q − t lo)₊ (cells with lo = 0 count in full)
    zero = free & (lo <= 0)
    c2 = float(q[charged].sum() + q[zero].sum())
    if c1 > eta or c2 > eta:
        return math.inf
    t1 = _min_t(hi[free], q[free], eta - c1)
    pos = free & ~zero
    t2 = _min_t(q[pos], lo[pos], eta - c2)
    return math.log(max(t1, t2))


def approx_max_divergence(
    samples: np.ndarray,
    mean: Sequence[float] | np.ndarray,
    cov: Any,
    eta: float,
    *,
    confidence: float = 0.95,
    min_count: int = MIN_CELL_COUNT,
    n_cells: int | None = None,
) -> float:
    """Estimate λ with max(D^η_∞(f ‖ f̃), D^η_∞(f̃ ‖ f)) ≤ λ, from draws of f, for f̃ = N(mean, cov).

    Definition (Chen & Ohrimenko 2023, Def. 4.1): ``D^η_∞(μ ‖ ν) ≤ λ`` iff
    ``μ(S) ≤ e^λ ν(S) + η`` for every S, i.e. iff the hockey-stick divergence
    ``∫ (dμ − e^λ dν)₊ ≤ η``. The returned λ is the smallest λ ≥ 0 for which
    both hockey-stick divergences are ≤ η for the *discretized* f and f̃, with

    * the draws whitened by ``cov`` (z = C^{-1/2}(x − mean), N(0, I) under f̃)
      and discretized into cells of known f̃-probability: each whitened
      coordinate (and, for k > 1, the radius |z|², χ²_k under f̃) cut at the
      f̃-quantiles j/m (m = max(4, round(n^{1/3}))), the outer cells refined at
      the levels L·2^i ≤ 1/(2m), L = ``min_count / n``;
    * each cell's f-probability replaced by the end of its Clopper–Pearson
      interval that is worse for the bound (joint level ``confidence`` by
      Bonferroni over all cells);
    * the outermost cells (f̃-probability ``min_count / n`` each) charged in
      full to η in both directions: nothing is assumed about the tails, where
      the draws say nothing;
    * the maximum over the views (coordinates, radius).

    What is and is not guaranteed: the cell probabilities are bounded with
    probability ``confidence``, but the density ratio *inside* a cell cannot be
    seen from draws — a discretization can only lower a divergence (data
    processing). The value is therefore an **estimate** of λ, not a bound: it
    is close to the truth when f/f̃ is nearly constant inside each cell, and
    for k > 1 it looks only at the coordinates and the radius of the whitened
    draws. Guarantees built on it carry the assumption ``estimated_divergence``.
    It is ``inf`` when η is too small for the draws (below about
    ``2 · min_count / n`` plus the Monte-Carlo margin of the outer cells).

    Parameters
    ----------
    samples : array (n, k) or (n,)
    mean : array (k,)
    cov : array (k, k)
        PSD; directions of zero variance must have zero spread in ``samples``
        too (else λ = inf: f puts mass where f̃ puts none).
    eta : float in (0, 1)
    confidence : float in (0, 1)
    min_count : int
    n_cells : int, optional
        m; default max(4, round(n^{1/3})).

    Returns
    -------
    float
        λ ≥ 0, or ``inf``.
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise fail("samples", "a finite array of shape (n, k)", x.shape)
    n, k = x.shape
    mu = np.asarray(mean, dtype=float).reshape(k)
    c = np.asarray(cov, dtype=float).reshape(k, k)
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    min_count = check_positive_int(min_count, "min_count")
    m = max(4, int(round(n ** (1.0 / 3.0)))) if n_cells is None else check_positive_int(n_cells, "n_cells", minimum=2)
    w, v = np.linalg.eigh((c + c.T) / 2)
    scale = max(float(np.abs(w).max(initial=0.0)), 1e-300)
    pos = w > 1e-12 * scale
    centred = x - mu
    proj = centred @ v
    spread = np.abs(proj[:, ~pos])
    if spread.size and float(spread.max()) > 1e-9 * max(float(np.abs(centred).max(initial=0.0)), 1e-300):
        return math.inf
    z = proj[:, pos] / np.sqrt(w[pos])
    d = z.shape[1]
    if d == 0:
        return 0.0  # f̃ and f are the same point mass
    views = [(special.ndtr(z[:, j]), True) for j in range(d)]
    if d > 1:
        views.append((stats.chi2.cdf((z**2).sum(axis=1), d), False))
    cells = [_cells(u, n, m, min_count, two) for u, two in views]
    n_cells_total = sum(cq[1].shape[0] for cq in cells)
    alpha_cell = (1.0 - confidence) / n_cells_total
    return max(_view_lambda(cnt, q, ch, n, eta, alpha_cell) for cnt, q, ch in cells)


def default_eta(calibration: Calibration, delta: float = 0.0, *, kind: str = "lambda_eta", confidence: float = 0.95) -> float:
    """A default η the draws can support.

    For λ_η: ``max(δ, 500 / n)``, capped at 0.5. The outer cells of
    :func:`approx_max_divergence` take about ``80 / n`` of η; measured on
    Gaussian draws, λ̂ ≈ 0.5 at η = 100/n, 0.25 at 200/n and 0.1 at 500/n,
    whatever n. For W∞: ``max(δ, 4 k ε_n)`` with ε_n the DKW
    half-width (the central quantile range must exceed the band).
    """
    if any(mm.sample_array is None for mm in calibration.members):
        return float(max(delta, 1e-3))
    n = min(int(mm.sample_array.shape[1]) for mm in calibration.members)
    if kind == "w_infinity":
        count = sum(len(mm.secrets) for mm in calibration.members) * calibration.k
        eps_n = math.sqrt(math.log(2.0 * count / (1.0 - confidence)) / (2.0 * n))
        return float(min(0.5, max(delta, 4.0 * calibration.k * eps_n)))
    return float(min(0.5, max(delta, 500.0 / n)))


def estimate_lambda_eta(
    calibration: Calibration,
    eta: float,
    *,
    confidence: float = 0.95,
    min_count: int = MIN_CELL_COUNT,
) -> RelaxationEstimate:
    """λ_η of Theorem 4.6 over every Gaussian approximation of the calibration.

    The maximum of :func:`approx_max_divergence` over
    :func:`gaussian_approximations` (Bonferroni: each gets confidence
    ``1 − (1 − confidence)/count``). An **estimate** (see
    :func:`approx_max_divergence`); ``rigorous=False``.
    """
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    approx = gaussian_approximations(calibration)
    each = 1.0 - (1.0 - confidence) / len(approx)
    vals = tuple((a.label, approx_max_divergence(a.samples, a.mean, a.cov, eta, confidence=each, min_count=min_count))
                 for a in approx)
    value = max(v for _, v in vals)
    return RelaxationEstimate(
        "lambda_eta", float(value), eta, confidence, vals, False,
        "binned hockey-stick divergence with Clopper–Pearson margins, outer cells charged in full "
        "(an estimate: the density ratio inside a cell is not seen)",
    )


# -- W∞ between f and a Gaussian approximation (one-sample, DKW) ------------------------------------


def w_infinity_gaussian(samples: np.ndarray, mean: float, sd: float, eta: float, *, confidence: float = 0.95) -> float:
    """Upper confidence bound on the η-trimmed ∞-Wasserstein distance between a
    1-D law F (from its draws) and N(mean, sd²).

    Quantity bounded: ``w = sup_{u ∈ [η/2, 1 − η/2]} |F⁻¹(u) − G⁻¹(u)|``, G the
    Gaussian CDF. Under the quantile coupling (X, Y) = (F⁻¹(U), G⁻¹(U)),
    P(|X − Y| > w) ≤ η; with η → 0 this is W∞(F, G) (quantile couplings are
    optimal for W∞ on the line). (The untrimmed W∞ between a Gaussian and a
    law with lighter or bounded tails is infinite, hence the trimming.)

    Bound: by the Dvoretzky–Kiefer–Wolfowitz inequality (Massart's constant),
    with probability ≥ ``confidence`` the true CDF lies within
    ε_n = sqrt(ln(2/(1 − confidence)) / (2n)) of the empirical one, so
    x_(⌈n(u − ε_n)⌉) ≤ F⁻¹(u) ≤ x_(⌈n(u + ε_n)⌉) for every u; the bound is the
    supremum of the distance from G⁻¹(u) to that band over the central range
    (exact over the band's steps). ``inf`` when η/2 ≤ ε_n (too few draws).
    This is a rigorous confidence bound (draws i.i.d. from F).
    """
    x = np.sort(np.asarray(samples, dtype=float).reshape(-1))
    n = x.shape[0]
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    sd = float(sd)
    if not np.all(np.isfinite(x)) or n == 0:
        raise fail("samples", "a non-empty finite array", x.shape)
    eps = math.sqrt(math.log(2.0 / (1.0 - confidence)) / (2.0 * n))
    lo_u, hi_u = eta / 2.0, 1.0 - eta / 2.0
    if lo_u - eps <= 0.0 or hi_u + eps >= 1.0:
        return math.inf
    j = np.arange(1, n + 1)

    def g_inv(u: np.ndarray) -> np.ndarray:
        return mean + sd * special.ndtri(u)

    # Upper band R(u) = x_(j) on u ∈ ((j−1)/n − ε, j/n − ε]: sup of R − G⁻¹ at the left end.
    left = np.maximum((j - 1) / n - eps, lo_u)
    right = np.minimum(j / n - eps, hi_u)
    ok = left <= right
    up = float(np.max(x[ok] - g_inv(left[ok]), initial=-math.inf))
    # Lower band L(u) = x_(j) on u ∈ ((j−1)/n + ε, j/n + ε]: sup of G⁻¹ − L at the right end.
    left = np.maximum((j - 1) / n + eps, lo_u)
    right = np.minimum(j / n + eps, hi_u)
    ok = left <= right
    down = float(np.max(g_inv(right[ok]) - x[ok], initial=-math.inf))
    return max(up, down, 0.0)


def estimate_w_infinity(calibration: Calibration, eta: float, *, confidence: float = 0.95) -> RelaxationEstimate:
    """W of Theorem 4.7 (η-trimmed, L1 norm) over every Gaussian approximation.

    Per approximation N(μ̂_s, C_ab) and component c, :func:`w_infinity_gaussian`
    at η/k with marginal N(μ̂_sc, C_ab,cc); DKW events Bonferroni-split over
    (member, secret, component). The value is max over approximations of
    Σ_c W_c: the L1 displacement of the product of the marginal quantile
    couplings, which couples the joint laws only when the components' copulas
    agree (e.g. independent components). For k = 1 the value is a rigorous
    bound with probability ``confidence``; for k > 1 it rests on that
    assumption (``componentwise_coupling``) and ``rigorous=False``.
    """
    eta = check_delta(eta, "eta")
    confidence = _check_confidence(confidence)
    approx = gaussian_approximations(calibration)
    k = calibration.k
    count = sum(len(m.secrets) for m in calibration.members) * k
    each = 1.0 - (1.0 - confidence) / count
    vals = []
    for a in approx:
        sd = np.sqrt(np.clip(np.diag(a.cov), 0.0, None))
        wc = [w_infinity_gaussian(a.samples[:, c], float(a.mean[c]), float(sd[c]), eta / k, confidence=each) for c in range(k)]
        vals.append((a.label, float(sum(wc))))
    value = max(v for _, v in vals)
    return RelaxationEstimate(
        "w_infinity", float(value), eta, confidence, tuple(vals), k == 1,
        "η-trimmed W∞ (L1) by quantile coupling with DKW bands" + ("" if k == 1 else "; sum over components (componentwise coupling)"),
    )
