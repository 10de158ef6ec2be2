"""Coverage of a confidence statement: repeated calibrations against laws whose true δ is known.

A guarantee "(ε, δ) with confidence 1 − α" built on sampled draws is a claim about repeated
calibrations: the *true* δ(ε) of the noise actually built exceeds the request in at most a
fraction α of independent calibrations — for every law of the query, rare events and heavy
tails included. This module tests that claim the only way it can be tested: it draws many
calibrations with independent seeds from a law whose released privacy profile is computable
independently of the library, builds the mechanism on each, and computes the true δ(ε) of the
noise that mechanism would add, with nothing from :mod:`bayespriv.mechanisms` (closed forms, normal
CDFs, dense quadrature and FFT convolution with SciPy/NumPy only). A refusal is safe: it releases
nothing.

Laws (:class:`CoverageLaw`): a Gaussian mean, binomial and hypergeometric counts, a rare far
component (probability ``p`` of a jump far from the other secret's law), a Student-t(3) against a
normal, and two-dimensional Gaussian and rare-far laws. Each gives the exact true δ of the released
law as an interval ``(lo, hi)`` (quadrature and truncation error included); a calibration fails
when ``lo`` exceeds the request, so a failure is never an artefact of the oracle.

:func:`measure_coverage` returns the counts (:func:`coverage_by_noise` for a mechanism and its twins on the same
calibrations, :class:`CalibrationRuns` how many and from which seed); :func:`failure_threshold` the largest number
of failures that ``runs`` calibrations may show when the true failure rate is at most ``1 − confidence``, at a
stated false-alarm probability (a one-sided binomial test).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import log_ndtr

from .._deprecation import option_value
from .._validation import check_delta, check_epsilon, check_positive_int, fail

__all__ = ["CoverageLaw", "CoverageResult", "CalibrationRuns", "measure_coverage", "coverage_by_noise",
           "failure_threshold", "gaussian_mean_law", "binomial_law", "hypergeometric_law", "rare_far_law",
           "student_t_law", "gaussian_2d_law", "rare_far_2d_law", "mixture_delta_1d", "gaussian_pair_delta"]

Interval = tuple[float, float]


# ------------------------------------------------------------------------------------ oracles
def gaussian_pair_delta(distance: float, epsilon: float) -> float:
    """δ(ε) of N(μ_a, S) against N(μ_b, S) at Mahalanobis distance ``r`` (Balle & Wang 2018, Theorem 8):
    Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r), in log space."""
    r = float(distance)
    if r <= 0:
        return 0.0
    la, lb = float(log_ndtr(r / 2 - epsilon / r)), float(log_ndtr(-r / 2 - epsilon / r))
    t = epsilon + lb - la
    return 0.0 if t >= 0 else math.exp(la) * -math.expm1(t)


def _hockey_on_grid(pa: np.ndarray, pb: np.ndarray, h: float, epsilon: float) -> Interval:
    """max over both directions of ∫ (p − e^ε q)₊ by the trapezoid rule, with an error interval from
    the rule on every other point (the coarser rule's error is about four times the finer one's)."""
    out = []
    for p, q in ((pa, pb), (pb, pa)):
        f = np.clip(p - math.exp(epsilon) * q, 0.0, None)
        fine = float(np.trapezoid(f, dx=h))
        coarse = float(np.trapezoid(f[::2], dx=2 * h))
        out.append((fine, abs(fine - coarse)))
    value, err = max(out)
    return max(0.0, value - err), value + err


def _normal_mixture_density(y: np.ndarray, centres: np.ndarray, weights: np.ndarray, sd: float) -> np.ndarray:
    out = np.zeros_like(y)
    for lo in range(0, centres.size, 64):
        c, w = centres[lo:lo + 64], weights[lo:lo + 64]
        out += np.exp(-0.5 * ((y[:, None] - c[None, :]) / sd) ** 2) @ w
    return out / (sd * math.sqrt(2 * math.pi))


def mixture_delta_1d(centres_a: Sequence[float], weights_a: Sequence[float], centres_b: Sequence[float],
                     weights_b: Sequence[float], sd: float, epsilon: float, *, points_per_sd: int = 64) -> Interval:
    """True δ(ε) of two one-dimensional mixtures of normals of common standard deviation ``sd``:
    ``Σ w_i N(c_i, sd²)`` (a finite law convolved with Gaussian noise, or a mixture of normal components
    with the noise's variance added). Dense trapezoid quadrature over ±40 sd beyond the extreme centres."""
    ca, cb = np.asarray(centres_a, float), np.asarray(centres_b, float)
    wa, wb = np.asarray(weights_a, float), np.asarray(weights_b, float)
    lo, hi = min(ca.min(), cb.min()) - 40 * sd, max(ca.max(), cb.max()) + 40 * sd
    h = sd / points_per_sd
    n = int(math.ceil((hi - lo) / h)) | 1
    y = lo + h * np.arange(n + 1)
    return _hockey_on_grid(_normal_mixture_density(y, ca, wa, sd), _normal_mixture_density(y, cb, wb, sd), h, epsilon)


def _student_noise_delta(df: float, sd_noise: float, epsilon: float) -> Interval:
    """True δ(ε) of t(df) ∗ N(0, s²) against N(0, 1 + s²): the t density convolved with the noise by FFT on a
    fine grid over [−R, R]; the t mass beyond ±R (at most what the truncation can move) widens the interval."""
    from scipy.signal import fftconvolve

    s = float(sd_noise)
    h = min(1.0, s) / 40.0
    big = 4000.0
    x = np.arange(-big, big + h / 2, h)
    kernel_x = np.arange(-12 * s, 12 * s + h / 2, h)
    kernel = stats.norm.pdf(kernel_x, scale=s) * h
    pa = fftconvolve(stats.t.pdf(x, df), kernel, mode="same")
    pb = stats.norm.pdf(x, scale=math.sqrt(1.0 + s * s))
    lo, hi = _hockey_on_grid(pa, pb, h, epsilon)
    tail = 2.0 * float(stats.t.sf(big - 12 * s, df))
    return max(0.0, lo - tail), hi + tail


def _grid_2d(centres: Sequence[np.ndarray], sd: float, cov: np.ndarray, step: float) -> tuple[np.ndarray, ...]:
    pts = np.vstack(centres)
    spread = 12.0 * math.sqrt(float(np.linalg.eigvalsh(cov).max()))
    lo, hi = pts.min(axis=0) - spread, pts.max(axis=0) + spread
    axes = [lo[i] + step * np.arange(int(math.ceil((hi[i] - lo[i]) / step)) + 1) for i in range(2)]
    return np.meshgrid(*axes, indexing="ij")


def _normal_2d_mixture(gx: np.ndarray, gy: np.ndarray, centres: np.ndarray, weights: np.ndarray,
                       cov: np.ndarray) -> np.ndarray:
    prec = np.linalg.inv(cov)
    norm = 1.0 / (2 * math.pi * math.sqrt(float(np.linalg.det(cov))))
    out = np.zeros_like(gx)
    for c, w in zip(centres, weights):
        dx, dy = gx - c[0], gy - c[1]
        out += w * np.exp(-0.5 * (prec[0, 0] * dx * dx + 2 * prec[0, 1] * dx * dy + prec[1, 1] * dy * dy))
    return out * norm


def _mixture_delta_2d(centres_a: np.ndarray, weights_a: np.ndarray, centres_b: np.ndarray, weights_b: np.ndarray,
                      cov: np.ndarray, epsilon: float) -> Interval:
    """True δ(ε) of two 2-D mixtures of normals with common covariance ``cov``, by the 2-D trapezoid rule
    (error from the rule on every other point)."""
    sd_min = math.sqrt(float(np.linalg.eigvalsh(cov).min()))
    step = sd_min / 12.0
    gx, gy = _grid_2d([centres_a, centres_b], sd_min, cov, step)
    pa = _normal_2d_mixture(gx, gy, centres_a, weights_a, cov)
    pb = _normal_2d_mixture(gx, gy, centres_b, weights_b, cov)
    out = []
    for p, q in ((pa, pb), (pb, pa)):
        f = np.clip(p - math.exp(epsilon) * q, 0.0, None)
        fine = float(np.trapezoid(np.trapezoid(f, dx=step, axis=1), dx=step))
        coarse = float(np.trapezoid(np.trapezoid(f[::2, ::2], dx=2 * step, axis=1), dx=2 * step))
        out.append((fine, abs(fine - coarse)))
    value, err = max(out)
    return max(0.0, value - err), value + err


# --------------------------------------------------------------------------------------- laws
Sampler = Callable[[int, int, np.random.Generator], np.ndarray]
Oracle = Callable[[np.ndarray, float], Interval]


@dataclass(frozen=True)
class CoverageLaw:
    """A pair of laws of F (secret a, secret b) whose released privacy profile is known exactly.

    Attributes
    ----------
    name : str
    k : int
        Components of F.
    sample : callable ``(secret_index, n, rng) -> array (n, k)``
        Independent draws of F under secret a (index 0) or b (index 1).
    true_delta : callable ``(noise_cov (k, k), epsilon) -> (lo, hi)``
        The true δ(ε) (both directions) of the two laws with additive N(0, noise_cov) noise, as an
        interval that contains it.
    """

    name: str
    k: int
    sample: Sampler = field(repr=False)
    true_delta: Oracle = field(repr=False)


def _pick(secret: int, a: Any, b: Any) -> Any:
    if secret not in (0, 1):
        raise fail("secret", "0 (secret a) or 1 (secret b)", secret)
    return a if secret == 0 else b


def gaussian_mean_law(shift: float = 1.0, sd: float = 1.0) -> CoverageLaw:
    """F | a ~ N(shift, sd²), F | b ~ N(0, sd²) (a mean over records of a Gaussian column)."""
    def sample(secret: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(_pick(secret, shift, 0.0), sd, (n, 1))

    def oracle(noise_cov: np.ndarray, eps: float) -> Interval:
        v = gaussian_pair_delta(abs(shift) / math.sqrt(sd * sd + float(noise_cov[0, 0])), eps)
        return v * (1 - 1e-9), v * (1 + 1e-9) + 1e-300

    return CoverageLaw(f"Gaussian mean (shift {shift:g}, sd {sd:g})", 1, sample, oracle)


def _finite_law(name: str, support: np.ndarray, pmf_a: np.ndarray, pmf_b: np.ndarray) -> CoverageLaw:
    keep_a, keep_b = pmf_a > 1e-300, pmf_b > 1e-300

    def sample(secret: int, n: int, rng: np.random.Generator) -> np.ndarray:
        pmf = _pick(secret, pmf_a, pmf_b)
        return rng.choice(support, size=(n, 1), p=pmf / pmf.sum()).astype(float)

    def oracle(noise_cov: np.ndarray, eps: float) -> Interval:
        sd = math.sqrt(float(noise_cov[0, 0]))
        return mixture_delta_1d(support[keep_a], pmf_a[keep_a], support[keep_b], pmf_b[keep_b], sd, eps)

    return CoverageLaw(name, 1, sample, oracle)


def binomial_law(n_records: int = 100, p_a: float = 0.4, p_b: float = 0.3) -> CoverageLaw:
    """F = number of records in a category: Binomial(n_records, p) under each secret."""
    support = np.arange(n_records + 1, dtype=float)
    return _finite_law(f"binomial count ({n_records} records, {p_a:g} vs {p_b:g})", support,
                       stats.binom.pmf(support, n_records, p_a), stats.binom.pmf(support, n_records, p_b))


def hypergeometric_law(population: int = 1000, in_category_a: int = 400, in_category_b: int = 300,
                       n_records: int = 100) -> CoverageLaw:
    """F = number in a category among ``n_records`` drawn without replacement from a population of which
    ``in_category_a`` (or ``_b``) are in it: hypergeometric under each secret."""
    support = np.arange(n_records + 1, dtype=float)
    pa = stats.hypergeom.pmf(support, population, in_category_a, n_records)
    pb = stats.hypergeom.pmf(support, population, in_category_b, n_records)
    return _finite_law(f"hypergeometric count ({n_records} of {population}, {in_category_a} vs {in_category_b})",
                       support, pa, pb)


def rare_far_law(p: float, far: float, shift: float = 1.0) -> CoverageLaw:
    """F | a ~ N(shift, 1) except that with probability ``p`` it is N(far, 1); F | b ~ N(0, 1).

    A region of mass p that n draws miss with probability (1 − p)ⁿ, carrying δ ≈ p once it lies far
    from the other law: the case that a bound resting on the draws alone cannot see."""
    def sample(secret: int, n: int, rng: np.random.Generator) -> np.ndarray:
        x = rng.normal(_pick(secret, shift, 0.0), 1.0, (n, 1))
        if secret == 0:
            x = np.where(rng.random((n, 1)) < p, rng.normal(far, 1.0, (n, 1)), x)
        return x

    def oracle(noise_cov: np.ndarray, eps: float) -> Interval:
        sd = math.sqrt(1.0 + float(noise_cov[0, 0]))
        return mixture_delta_1d([shift, far], [1.0 - p, p], [0.0], [1.0], sd, eps)

    return CoverageLaw(f"rare far component (p {p:g} at {far:g})", 1, sample, oracle)


def student_t_law(df: float = 3.0) -> CoverageLaw:
    """F | a ~ Student-t(df), F | b ~ N(0, 1): the same centre, δ carried by a heavy tail."""
    def sample(secret: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_t(df, (n, 1)) if secret == 0 else rng.normal(0.0, 1.0, (n, 1))

    def oracle(noise_cov: np.ndarray, eps: float) -> Interval:
        return _student_noise_delta(df, math.sqrt(float(noise_cov[0, 0])), eps)

    return CoverageLaw(f"Student-t({df:g}) vs N(0, 1)", 1, sample, oracle)


def gaussian_2d_law(shift: Sequence[float] = (1.0, 0.5), cov: Sequence[Sequence[float]] = ((1.0, 0.3), (0.3, 0.5))
                    ) -> CoverageLaw:
    """F | a ~ N(shift, Σ), F | b ~ N(0, Σ) in two dimensions (δ in closed form at the Mahalanobis distance
    in Σ + the noise covariance)."""
    m, c = np.asarray(shift, float), np.asarray(cov, float)
    chol = np.linalg.cholesky(c)

    def sample(secret: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return _pick(secret, m, np.zeros(2)) + rng.standard_normal((n, 2)) @ chol.T

    def oracle(noise_cov: np.ndarray, eps: float) -> Interval:
        v = gaussian_pair_delta(math.sqrt(float(m @ np.linalg.solve(c + noise_cov, m))), eps)
        return v * (1 - 1e-9), v * (1 + 1e-9) + 1e-300

    return CoverageLaw("Gaussian 2-D", 2, sample, oracle)


def rare_far_2d_law(p: float, far: Sequence[float] = (20.0, 10.0), shift: Sequence[float] = (1.0, 0.0)) -> CoverageLaw:
    """F | a ~ N(shift, I₂) except that with probability ``p`` it is N(far, I₂); F | b ~ N(0, I₂)."""
    m, f = np.asarray(shift, float), np.asarray(far, float)

    def sample(secret: int, n: int, rng: np.random.Generator) -> np.ndarray:
        x = rng.standard_normal((n, 2)) + _pick(secret, m, np.zeros(2))
        if secret == 0:
            x = np.where(rng.random((n, 1)) < p, f + rng.standard_normal((n, 2)), x)
        return x

    def oracle(noise_cov: np.ndarray, eps: float) -> Interval:
        cov = np.eye(2) + noise_cov
        return _mixture_delta_2d(np.vstack([m, f]), np.array([1.0 - p, p]), np.zeros((1, 2)), np.ones(1), cov, eps)

    return CoverageLaw(f"rare far component 2-D (p {p:g} at ({f[0]:g}, {f[1]:g}))", 2, sample, oracle)


# ------------------------------------------------------------------------------------ harness
@dataclass(frozen=True)
class CoverageResult:
    """What ``runs`` independent calibrations of one law gave.

    Attributes
    ----------
    law : str
    n_draws : int
        Draws per secret of each calibration.
    delta : float
        The δ asked for.
    runs, established, refused, failures : int
        Calibrations in all; with an established guarantee; refused; established with a true δ above
        the request (the oracle's lower end above ``delta``).
    worst_ratio : float
        Largest true δ (upper end) over the request among the established (0 when none).
    draws_asked : tuple of int
        The draws per secret each refusal asked for (where it said).
    reasons : tuple of str
        One refusal message per distinct first line (for the report).
    """

    law: str
    n_draws: int
    delta: float
    runs: int
    established: int
    refused: int
    failures: int
    worst_ratio: float
    draws_asked: tuple[int, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def failure_rate(self) -> float:
        """Failures over all calibrations (a refusal is safe)."""
        return self.failures / self.runs


def failure_threshold(runs: int, confidence: float, false_alarm: float) -> int:
    """Largest failure count compatible with a true failure rate of at most ``1 − confidence``:
    the smallest c with P(Binomial(runs, 1 − confidence) > c) ≤ ``false_alarm``."""
    runs = check_positive_int(runs, "runs")
    c = int(stats.binom.ppf(1.0 - false_alarm, runs, 1.0 - confidence))
    while stats.binom.sf(c, runs, 1.0 - confidence) > false_alarm:
        c += 1
    return c


@dataclass(frozen=True, kw_only=True)
class CalibrationRuns:
    """The independent calibrations a coverage measurement draws (``measure_coverage(..., calibrations=...)``,
    ``coverage_by_noise(..., calibrations=...)``): how many, and the root of their seeds; checked once.

    Keyword-only and frozen; the default, ``CalibrationRuns()``, is 100 calibrations seeded from 0. The same
    value gives the same calibrations (and the same mechanisms built on them) to every call, so a mechanism
    and its twins, or two harnesses, are judged on identical draws. A wrong type is a
    :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field.

    Attributes
    ----------
    runs : int, default 100
        Calibrations, at least 1; :func:`failure_threshold` says how many failures ``runs`` may show.
    seed : int, default 0
        Root of the independent seeds, at least 0: calibration i uses the i-th child of
        ``numpy.random.SeedSequence(seed)`` (``spawn``), so the first calibrations do not depend on ``runs``.

    Examples
    --------
    >>> from bayespriv.audit import CalibrationRuns
    >>> CalibrationRuns(runs=20, seed=5)
    CalibrationRuns(runs=20, seed=5)
    >>> CalibrationRuns(runs=0)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: runs must be an integer >= 1; got 0
    """

    runs: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "runs", check_positive_int(self.runs, "runs"))
        object.__setattr__(self, "seed", check_positive_int(self.seed, "seed", minimum=0))




def _calibration_runs(owner: str, calibrations: Any, old: Mapping[str, Any]) -> CalibrationRuns:
    """The ``calibrations=`` of a call of ``owner``: checked (None: the defaults), with the deprecated ``runs=``
    and ``seed=`` of ``old`` folded in, warning. An old keyword given with ``calibrations=`` is a
    :class:`~bayespriv.errors.ValidationError`; a keyword that was never accepted, a ``TypeError`` (as
    Python's)."""
    return option_value(owner, "calibrations", CalibrationRuns, calibrations, old)


def _model(law: CoverageLaw) -> tuple[Any, Any, Any]:
    from ..datamodels import FunctionDataModel
    from ..queries import mean, stack
    from ..secrets import DistributionSecret, SecretPair

    columns = ["x"] if law.k == 1 else [f"x{i}" for i in range(law.k)]

    def draw(secret: Any, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        x = law.sample(int(secret.value), n, rng)
        return {c: x[:, i:i + 1] for i, c in enumerate(columns)}

    model = FunctionDataModel(draw, columns=columns, n_records=1)
    pair = SecretPair(DistributionSecret("secret", 0.0), DistributionSecret("secret", 1.0))
    query = mean(columns[0]) if law.k == 1 else stack(*[mean(c) for c in columns])
    return model, pair, query


def measure_coverage(law: CoverageLaw, *, n_draws: int, epsilon: float = 1.0, delta: float = 1e-3,
                     calibrations: CalibrationRuns | None = None, build: Callable[..., Any] | None = None,
                     noise_factor: float = 1.0, confidence: float = 0.95, **deprecated: Any) -> CoverageResult:
    """Calibrate ``calibrations.runs`` times with independent seeds, build the mechanism, and count the failures.

    Parameters
    ----------
    law : CoverageLaw
    n_draws : int
        Draws per secret of each calibration (``bp.calibrate`` on a FunctionDataModel drawing ``law``).
    epsilon, delta : float
        The request.
    calibrations : CalibrationRuns, optional
        How many calibrations, seeded from which root (:class:`CalibrationRuns`; default: 100 from seed 0).
        ``runs=`` and ``seed=`` are its deprecated spelling, kept for one release.
    build : callable ``(calibration, epsilon, delta) -> mechanism``, optional
        Default: APGM with its default accountant. A ValidationError is a refusal.
    noise_factor : float
        Multiplies the built noise *variance* before the true δ is computed: 0.5 is the half-noise twin,
        which a working harness must flag.
    confidence : float
        The calibration's confidence.

    Returns
    -------
    CoverageResult

    See Also
    --------
    coverage_by_noise : the mechanism and its twins judged on the same calibrations (one calibration and one
        construction per run for all of them).
    """
    calibrations = _calibration_runs("measure_coverage", calibrations, deprecated)
    results = coverage_by_noise(law, n_draws=n_draws, epsilon=epsilon, delta=delta, calibrations=calibrations,
                                build=build, noise_factors=(noise_factor,), confidence=confidence)
    return results[0]


@dataclass
class _Tally:
    """Running counts of one noise factor over the calibrations."""

    established: int = 0
    failures: int = 0
    worst: float = 0.0


def coverage_by_noise(law: CoverageLaw, *, n_draws: int, epsilon: float = 1.0, delta: float = 1e-3,
                      calibrations: CalibrationRuns | None = None, build: Callable[..., Any] | None = None,
                      noise_factors: Sequence[float] = (1.0, 0.5), confidence: float = 0.95, **deprecated: Any
                      ) -> tuple[CoverageResult, ...]:
    """:func:`measure_coverage` for several noise factors at once, on the same calibrations and mechanisms.

    Each calibration is drawn and its mechanism built once; the true δ of the built noise is then computed
    with its variance multiplied by each factor (1.0: the mechanism itself; 0.5: its half-noise twin). The
    results are exactly those of separate :func:`measure_coverage` calls with the same ``calibrations`` (the
    same calibrations and mechanisms), at the cost of one. ``calibrations`` is a :class:`CalibrationRuns`
    (default: 100 from seed 0); ``runs=`` and ``seed=`` are its deprecated spelling, kept for one release.
    The other parameters are :func:`measure_coverage`'s.

    Returns
    -------
    tuple of CoverageResult
        One per factor, in the order given.
    """
    from ..calibration import ExecutionOptions, calibrate
    from ..errors import ValidationError
    from ..mechanisms import APGM

    calibrations = _calibration_runs("coverage_by_noise", calibrations, deprecated)
    eps, target = check_epsilon(epsilon), check_delta(delta)
    factors = tuple(_check_factor(f) for f in noise_factors)
    build = build or (lambda cal, e, d: APGM(cal, epsilon=e, delta=d))
    model, pair, query = _model(law)
    tallies = [_Tally() for _ in factors]
    refused, asked, reasons = 0, [], {}
    quiet = ExecutionOptions(progress=False)
    for child in np.random.SeedSequence(calibrations.seed).spawn(calibrations.runs):
        cal = calibrate(model, pair, query, n_draws=n_draws, rng=child, confidence=confidence, execution=quiet)
        try:
            mech = build(cal, eps, target)
        except ValidationError as exc:
            refused += 1
            asked.extend(_asked(exc))
            reasons.setdefault(str(exc).split(":")[0][:160], str(exc))
            continue
        if not mech.guarantee.established:
            refused += 1
            continue
        for factor, tally in zip(factors, tallies):
            lo, hi = law.true_delta(np.atleast_2d(mech.noise_cov) * factor, eps)
            tally.established += 1
            tally.failures += lo > target
            tally.worst = max(tally.worst, hi / target)
    return tuple(CoverageResult(law.name, n_draws, target, calibrations.runs, t.established, refused, t.failures,
                                t.worst, tuple(asked), tuple(reasons.values())) for t in tallies)


def _check_factor(factor: Any) -> float:
    value = float(factor)
    if not (math.isfinite(value) and value > 0):
        raise fail("noise_factors", "finite numbers > 0 (multipliers of the built noise variance)", factor)
    return value


def _asked(exc: Exception) -> list[int]:
    need = getattr(exc, "draws_needed", None)
    return [int(need)] if need else []
