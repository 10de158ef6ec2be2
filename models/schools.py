"""Eight schools (Rubin 1981; Gelman et al., *Bayesian Data Analysis*, §5.5), non-centred, with its
exact answers.

Eight high schools ran the same SAT-coaching programme; school j reports an estimated coaching
effect y_j with a known standard error σ_j (:data:`SCORES`, :data:`STANDARD_ERRORS`). The
adversary's belief Θ is the hierarchical model as people write it — non-centred, the form that
samples well::

    mu ~ N(0, 5²),  tau ~ HalfCauchy(5),  eta_j ~ N(0, 1),
    theta = pm.Deterministic("theta", mu + tau * eta),
    y_j ~ N(theta_j, σ_j²)  observed (the published study: public data).

The release. A new round of the study produces :data:`N_RECORDS` = 80 new scores, ten per
school: record r is a new estimate of the effect in school ``r mod 8``, drawn with that
school's standard error, ``score_r ~ N(theta_{r mod 8}, σ_{r mod 8}²)``. The statistic
released is the mean of the 80 new scores (:func:`schools_query`). The scores are spread
across the schools on purpose: the mean of scores of school C alone would be N(v, σ_C²/80)
given theta_C = v whatever the rest of the model says, so neither the hierarchy nor any
posterior would matter; across schools, the other seven effects move with what the secret
says about mu and tau.

The secret. School C (index 2, y = −3, σ = 16) wants to hide whether its true effect is 0 or 10
points: ``DistributionSecret("theta[2]", 0.0)`` vs ``("theta[2]", 10.0)`` (:func:`secret_pair`),
a secret on an element of a *deterministic*. Its law is the model *conditioned* on the event
theta_2 = v (and on the published y), as Pufferfish requires, drawn by
:class:`~bayespriv.PyMCDataModel` through the pivot mu = v − tau·eta_2 (see its notes).

Exact answers (:func:`exact_law`). Given tau, everything is Gaussian: integrating the other
effects, y_j ~ N(mu, tau² + σ_j²) for j ≠ 2, and the secret contributes the factor N(v; mu, tau²)
(theta_2 = mu + tau·eta_2 at v, density φ((v − mu)/tau)/tau after the change of variables). So
mu | tau is Gaussian, tau has the density p(tau)·N_8((v, y_{−2}); 0, 25·11ᵀ + diag(tau², tau² + σ_j²))
and the mean F of the new scores is, given tau, exactly N(m(tau), s²(tau)): the law of F is a
one-dimensional mixture over tau, computed by quadrature on a log grid (relative error below
1e-9 against a grid ten times finer). With ``intervention=True`` the same function gives the
law under ``pm.do(theta_2 := v)`` — the other variables keep their posterior given the data
alone — which is *not* the secret's law: the sensitivity of the mean is 10/8 = 1.25 under the
intervention against about 5.98 under conditioning (the adversary who learns theta_2 learns
about mu and tau, hence about the other seven schools), so calibrating on the intervention
would under-noise almost fivefold.

Measured (this machine, 2 shared cores): ``calibrate(schools_model(), secret_pair(),
schools_query(), n_draws=4000, rng=20261124)`` runs two MCMC runs with the library's default
settings and thresholds (1000 tune + 1000 draws, 2 chains, target_accept 0.9, R-hat ≤ 1.01,
bulk ESS ≥ 400, no divergence) and passes them: about 9 s in a fresh process (compilation
included), 6 s once compiled; R-hat ≤ 1.005, bulk ESS ≈ 1000, no divergence; its means,
variances and posterior mean of mu agree with :func:`exact_law` (``tests/models/test_schools.py``).
The default of *no* divergent transition is strict for this model whatever the secret: over 40
runs with other seeds, 4 conditioned runs had one divergence, and so had 5 of 40 runs of the
plain non-centred posterior (no secret) — about one calibration in five with an arbitrary seed
stops with a ConvergenceError; rerun with another seed or a higher ``target_accept``. The
centred form (theta a free variable) does not pass even with thresholds relaxed to R-hat 1.1 and
50 divergences (bulk ESS 70–114).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

import bayespriv as bp

__all__ = [
    "SCORES",
    "STANDARD_ERRORS",
    "SCHOOLS",
    "N_RECORDS",
    "SECRET_SCHOOL",
    "SCHOOL_OF_RECORD",
    "build_schools",
    "schools_model",
    "secret_pair",
    "schools_query",
    "ExactLaw",
    "exact_law",
]

#: The estimated coaching effects y_j of the eight schools A–H (public data).
SCORES = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
#: Their standard errors σ_j.
STANDARD_ERRORS = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
SCHOOLS = ("A", "B", "C", "D", "E", "F", "G", "H")
#: New scores per released dataset (ten per school).
N_RECORDS = 80
#: The school whose effect is secret: C.
SECRET_SCHOOL = 2
#: Prior scales: mu ~ N(0, MU_SD²), tau ~ HalfCauchy(TAU_SCALE).
MU_SD, TAU_SCALE = 5.0, 5.0


def school_of_record(n_records: int) -> np.ndarray:
    """The school of each record: ``r mod 8``."""
    return np.arange(n_records) % len(SCORES)


SCHOOL_OF_RECORD = school_of_record(N_RECORDS)


def build_schools(n_records: int):
    """The non-centred eight-schools model with ``n_records`` new scores (column ``score``)."""
    import pymc as pm

    school = school_of_record(n_records)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, MU_SD)
        tau = pm.HalfCauchy("tau", TAU_SCALE)
        eta = pm.Normal("eta", 0.0, 1.0, shape=len(SCORES))
        theta = pm.Deterministic("theta", mu + tau * eta)
        pm.Normal("y", theta, STANDARD_ERRORS, observed=SCORES)
        pm.Normal("score", theta[school], STANDARD_ERRORS[school], shape=n_records)
    return model


def schools_model(n_records: int = N_RECORDS, mcmc: bp.McmcSettings | None = None) -> bp.PyMCDataModel:
    """Θ: the non-centred model; secrets may name ``theta[j]``, ``mu`` or ``tau``.

    ``mcmc`` goes to :class:`~bayespriv.PyMCDataModel` (a :class:`~bayespriv.McmcSettings`:
    ``draws``, ``tune``, thresholds…); None: the library's defaults.
    """
    return bp.PyMCDataModel(build_schools, n_records=n_records, columns=["score"],
                            parameters=["theta", "mu", "tau"], mcmc=mcmc)


def secret_pair(low: float = 0.0, high: float = 10.0, school: int = SECRET_SCHOOL) -> bp.SecretPair:
    """School ``school``'s true effect is ``low`` vs ``high`` (default: school C, 0 vs 10 points)."""
    return bp.SecretPair(bp.DistributionSecret(f"theta[{school}]", low),
                         bp.DistributionSecret(f"theta[{school}]", high))


def schools_query() -> bp.Query:
    """The mean of the new scores."""
    return bp.mean("score", name="mean new score")


@dataclass(frozen=True)
class ExactLaw:
    """The law of F (the mean of the new scores) given theta_j = v and the published scores.

    F given tau is N(m(tau), s²(tau)); the posterior of tau is tabulated on ``tau`` with
    weights ``weight``. ``g`` is E[F | mu, tau, eta] (the mean of the eight effects), the part
    of F that posterior draws carry: Var(F) = Var(g) + ``noise`` (the records' own variance).
    """

    mean: float
    variance: float
    fourth: float  # E[(F − E F)^4]
    g_variance: float
    g_fourth: float
    noise: float
    mu_mean: float
    mu_variance: float
    tau_mean: float
    tau: np.ndarray
    weight: np.ndarray


def exact_law(value: float, *, school: int = SECRET_SCHOOL, n_records: int = N_RECORDS,
              intervention: bool = False, grid: int = 20_001) -> ExactLaw:
    """The law of the mean of the new scores given theta_school = value (see the module notes).

    Parameters
    ----------
    value : float
    school : int, default 2 (school C)
    n_records : int, default 80 (ten per school)
    intervention : bool, default False
        The law under ``pm.do(theta_school := value)`` instead: the other variables keep their
        posterior given the published scores of the other schools (school ``school``'s score no
        longer depends on them), and theta_school is set to ``value``.
    grid : int
        Points of the log-tau grid on [1e-6, 1e6] (the integrand vanishes at both ends, so the
        Riemann sum is the trapezoid rule and converges fast).
    """
    per_school = np.bincount(school_of_record(n_records), minlength=len(SCORES))
    n = n_records
    u = np.linspace(np.log(1e-6), np.log(1e6), grid)
    tau = np.exp(u)
    t2 = tau[:, None] ** 2
    other = np.arange(len(SCORES)) != school
    y, s = SCORES[other], STANDARD_ERRORS[other]
    # Marginally over mu ~ N(0, MU_SD²): z ~ N(0, MU_SD² 11ᵀ + diag(dg)), z = (value, y_{-j}) or y_{-j}.
    if intervention:
        dg, z = t2 + s**2, np.broadcast_to(y, t2.shape[:1] + y.shape)
    else:
        dg = np.concatenate([t2, t2 + s**2], axis=1)
        z = np.broadcast_to(np.concatenate([[value], y]), dg.shape)
    inv = 1.0 / dg
    s0, s1 = inv.sum(axis=1), (inv * z).sum(axis=1)
    c2 = MU_SD**2
    quad = (z**2 * inv).sum(axis=1) - c2 * s1**2 / (1.0 + c2 * s0)  # Sherman-Morrison
    logdet = np.log(dg).sum(axis=1) + np.log1p(c2 * s0)
    logw = -0.5 * quad - 0.5 * logdet + stats.halfcauchy.logpdf(tau, scale=TAU_SCALE) + u  # d tau = tau du
    w = np.exp(logw - logw.max())
    w /= w.sum()
    prec = 1.0 / c2 + s0  # mu | tau ~ N(M, 1/prec)
    M = s1 / prec
    # theta_k | mu, tau, y_k ~ N(c_k + d_k mu, v_k) for the other schools
    v_k = 1.0 / (1.0 / t2 + 1.0 / s**2)
    c_k, d_k = v_k * y / s**2, v_k / t2
    weights_k = per_school[other] / n  # F = Σ_k (records of k / n) theta_k + value·(records of j)/n + noise
    w_j = per_school[school] / n
    m = value * w_j + (weights_k * c_k).sum(axis=1) + M * (weights_k * d_k).sum(axis=1)
    g_var = (weights_k**2 * v_k).sum(axis=1) + (weights_k * d_k).sum(axis=1) ** 2 / prec
    noise = float((per_school * STANDARD_ERRORS**2).sum() / n**2)
    mean = float((w * m).sum())
    dev = m - mean
    g_variance = float((w * (g_var + dev**2)).sum())
    f_var = g_var + noise
    return ExactLaw(
        mean=mean,
        variance=g_variance + noise,
        fourth=float((w * (3 * f_var**2 + 6 * f_var * dev**2 + dev**4)).sum()),
        g_variance=g_variance,
        g_fourth=float((w * (3 * g_var**2 + 6 * g_var * dev**2 + dev**4)).sum()),
        noise=noise,
        mu_mean=float((w * M).sum()),
        mu_variance=float((w * (1.0 / prec + M**2)).sum() - (w * M).sum() ** 2),
        tau_mean=float((w * tau).sum()),
        tau=tau,
        weight=w,
    )
