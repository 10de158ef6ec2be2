"""The synthetic hospital of §4.2 of Zhang, Ohrimenko, Yang & Cummings,
*Attribute Privacy* (FAccT 2022), with its exact answers.

Fifty patients with columns ``gender`` ("female" / "other"), ``height``,
``weight``, ``blood_pressure`` and ``temperature``. The hospital releases the
average of one numeric column while hiding whether the share of women is below
or above 50%.

Generator (the paper's "Experiments" paragraph). We read the second parameter
of N(·, ·) as a **standard deviation**: that is the only reading under which
the paper's reported variances come out, 4.5 = 15²/50, 2 = 10²/50 and
0.08 = 2²/50.

* gender: female with probability 0.6, otherwise "other";
* height: N(65, 3) if female, N(70, 3) otherwise;
* weight | height: N(3.6·height − 90, 15) (the paper prints ``3.6 x_w``; the
  weight is a function of the height);
* temperature: N(98.6, 0.5), independent of gender;
* blood pressure: N(100, 3) if female, N(106, 3) otherwise.

Conditioning on the secret "the share of women is p" (a
:meth:`~bayespriv.DatasetSecret.proportion` on ``gender == "female"``) fixes
exactly k = p·n women in every drawn dataset, at random positions; the other
columns are then drawn from the generator given gender. Given k, every average
is exactly Gaussian, with a variance that does not depend on k, so the
assumptions of APGM (``gaussian_query``, ``equal_covariance``) hold for this
generator.

Closed forms (f = k/n the share of women; see :func:`exact_moments`)::

    E[mean weight | f]         = 3.6·(65 f + 70 (1 − f)) − 90
    Var[mean weight | f]       = (15² + 3.6²·3²) / n        = 6.8328 for n = 50
    E[mean blood pressure | f] = 100 f + 106 (1 − f)
    Var[mean blood pressure|f] = 3² / n                     = 0.18
    E[mean temperature | f]    = 98.6
    Var[mean temperature | f]  = 0.5² / n                   = 0.005

Paper inconsistencies (explained by ``bayespriv demo``)
-------------------------------------------------------
* **d(U) erratum.** The pair set ``a ∈ (.25, .5), b ∈ (.5, .75)`` has diameter
  d(U) = 0.5 (0.48 for the shares attainable with n = 50), but the reported
  sensitivities multiply by 0.25: 6.125 = 3.5·7·0.25, 2.5 = 10·0.25,
  0.075 = 0.3·0.25.
* **Θ is not the generator.** The sensitivities and variances are computed
  from a set Θ (weight slope k₁ ∈ (3, 3.5), heights of "other" with standard
  deviation 8 rather than 3, blood-pressure difference 6–10 with standard
  deviation 10, temperature difference 0–0.3 with standard deviation 2) that
  differs from the generator the data are sampled from (slope 3.6, height
  difference 5, blood-pressure difference 6 with standard deviation 3, no
  temperature difference, standard deviation 0.5). Note also that the
  generator's slope 3.6 lies outside Θ's k₁ ∈ (3, 3.5).
* **Weight variance.** The reported Var(F₁ | s) = 4.5 = 15²/50 omits the
  height term 3.6²·3²/50 (k₁²·σ_h²/n in Θ's terms) of the average weight's
  conditional variance.
* **True average weight.** The reported 161.33 is about 3.5 standard
  deviations above what the generator gives for a hospital of 50
  (151.2 ± 2.9 with a Bernoulli(0.6) share of women); blood pressure (102.18
  vs 102.4) and temperature (98.58 vs 98.6) agree.

``bayespriv demo`` calibrates the *generator* by sampling and prints the
paper's Θ-based values (:data:`PAPER`) beside.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

import bayespriv as bp
from bayespriv.errors import ParameterTypeError, UnsupportedSecretError, ValidationError
from bayespriv.secrets import as_pairs, share_count
from bayespriv.random import RNGLike, as_generator

__all__ = [
    "COLUMNS",
    "N_RECORDS",
    "P_FEMALE",
    "QUERIES",
    "PAPER",
    "PaperValues",
    "HospitalModel",
    "hospital_model",
    "sample_hospital",
    "secret_pairs",
    "exact_moments",
    "THETA_DEFAULTS",
    "THETA_RANGES",
    "QUERY_GRIDS",
    "hospital_pymc_model",
    "hospital_generator_pymc",
    "hospital_family",
    "pymc_secret_pairs",
    "theta_moments",
    "family_exact",
]

#: Patients in the paper's dataset.
N_RECORDS = 50
#: Probability that a patient is female in the unconditional generator.
P_FEMALE = 0.6
COLUMNS = ("gender", "height", "weight", "blood_pressure", "temperature")

# Generator parameters (second parameter of N(., .) read as a standard deviation).
HEIGHT_MEAN = {"female": 65.0, "other": 70.0}
HEIGHT_SD = 3.0
WEIGHT_SLOPE, WEIGHT_INTERCEPT, WEIGHT_SD = 3.6, -90.0, 15.0
BP_MEAN = {"female": 100.0, "other": 106.0}
BP_SD = 3.0
TEMP_MEAN, TEMP_SD = 98.6, 0.5

#: The released statistics of §4.2.
QUERIES: dict[str, bp.Query] = {
    "average weight": bp.mean("weight", name="average weight"),
    "average blood pressure": bp.mean("blood_pressure", name="average blood pressure"),
    "average temperature": bp.mean("temperature", name="average temperature"),
}


@dataclass(frozen=True)
class PaperValues:
    """What §4.2 reports for one query (computed from its Θ with d(U) = 0.25).

    Attributes
    ----------
    sensitivity : float
        Δ_gndr F as printed.
    variance : float
        Var(F | s_a) as printed.
    abs_error : float or None
        Reported average absolute error of Algorithm 1 over 100 runs; None
        where the paper reports that no noise is added.
    true_average : float
        The true answer on the paper's simulated dataset.
    """

    sensitivity: float
    variance: float
    abs_error: float | None
    true_average: float

    @property
    def reported_error(self) -> str:
        """The reported error as the paper words it."""
        return "no noise" if self.abs_error is None else f"{self.abs_error:.2f}"


#: The paper's reported values per query (§4.2, "Experiments"). The classic σ²
#: they imply, (cΔ/ε)² − Var with c = sqrt(2 ln(1.25/δ)), ε = 1, δ = 1e-3, is
#: 530.54 / 87.14 / 0.00022; the paper prints only the errors.
PAPER: MappingProxyType[str, PaperValues] = MappingProxyType({
    "average weight": PaperValues(6.125, 4.5, 18.90, 161.33),
    "average blood pressure": PaperValues(2.5, 2.0, 7.40, 102.18),
    "average temperature": PaperValues(0.075, 0.08, None, 98.58),
})


def _women(p: Any, n_records: int, name: str = "p") -> int:
    """k = p·n, refusing shares that no dataset of n records can have."""
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise ParameterTypeError(f"{name} must be a real number; got {p!r} of type {type(p).__name__}")
    p = float(p)
    if not (math.isfinite(p) and 0.0 <= p <= 1.0):
        raise ValidationError(f"{name} must be a share of women in [0, 1]; got {p!r}")
    return share_count(p, n_records)


def _check_n(n_records: Any) -> int:
    if isinstance(n_records, bool) or not isinstance(n_records, (int, np.integer)) or n_records < 1:
        raise ValidationError(f"n_records must be an integer >= 1; got {n_records!r}")
    return int(n_records)


def _draw(female: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every column given the gender mask ``(draws, n_records)``; one vectorized draw."""
    z = rng.standard_normal((4,) + female.shape)
    height = np.where(female, HEIGHT_MEAN["female"], HEIGHT_MEAN["other"]) + HEIGHT_SD * z[0]
    weight = WEIGHT_SLOPE * height + WEIGHT_INTERCEPT + WEIGHT_SD * z[1]
    blood = np.where(female, BP_MEAN["female"], BP_MEAN["other"]) + BP_SD * z[2]
    temperature = TEMP_MEAN + TEMP_SD * z[3]
    return {
        "gender": np.where(female, "female", "other"),
        "height": height,
        "weight": weight,
        "blood_pressure": blood,
        "temperature": temperature,
    }


def _check_hospital_secret(secret: Any, n_records: int) -> int:
    """k for a share-of-women secret; clear errors for anything else."""
    if not isinstance(secret, bp.DatasetSecret):
        raise UnsupportedSecretError(
            f"the hospital model conditions on DatasetSecret.proportion('gender', 'female', p) only; "
            f"got {type(secret).__name__}"
        )
    if secret.column != "gender" or secret.statistic != "proportion" or secret.category != "female":
        raise UnsupportedSecretError(
            "the hospital model conditions on the share of women, "
            f"DatasetSecret.proportion('gender', 'female', p); got {secret.label!r}"
        )
    return _women(secret.value, n_records)


def _hospital_sampler(secret, n_draws: int, rng: np.random.Generator, *, n_records: int) -> dict[str, np.ndarray]:
    n = n_records
    if secret is None:
        female = rng.random((n_draws, n)) < P_FEMALE
    else:
        k = _check_hospital_secret(secret, n)
        female = rng.permuted(np.broadcast_to(np.arange(n) < k, (n_draws, n)), axis=1)
    return _draw(female, rng)


class HospitalModel(bp.FunctionDataModel):
    """The §4.2 generator as a :class:`~bayespriv.FunctionDataModel` that refuses,
    before any sampling, secrets it cannot condition on (wrong column or
    category, or a share p with p·n not a whole number)."""

    def check_secret(self, secret) -> None:
        super().check_secret(secret)
        if secret is not None:
            _check_hospital_secret(secret, self.n_records)


def hospital_model(n_records: int = N_RECORDS) -> HospitalModel:
    """Θ of the hospital: the paper's generator, conditioned on the share of women.

    Given ``DatasetSecret.proportion("gender", "female", p)`` every drawn
    dataset has exactly k = p·n women, at uniformly random positions. Without a
    secret, gender is i.i.d. Bernoulli(0.6). Sampling is vectorized over draws
    and records.

    Parameters
    ----------
    n_records : int, default 50

    Returns
    -------
    HospitalModel
        A :class:`bayespriv.FunctionDataModel` accepting only
        :class:`~bayespriv.DatasetSecret`.

    Raises
    ------
    bayespriv.UnsupportedSecretError
        At calibration or sampling, for a secret other than the share of women,
        or a share p with p·n not an integer.
    """
    n = _check_n(n_records)
    sampler = functools.partial(_hospital_sampler, n_records=n)  # picklable, for process executors
    return HospitalModel(sampler, columns=COLUMNS, n_records=n, secret_kinds=(bp.DatasetSecret,))


def sample_hospital(rng: RNGLike = None, n_records: int = N_RECORDS) -> pd.DataFrame:
    """One hospital of ``n_records`` patients from the unconditional generator.

    This is the dataset whose statistics the demo releases (the paper's
    "simulated dataset"). ``rng``: None, a seed, a SeedSequence or a Generator.
    """
    model = hospital_model(n_records)
    batch = model.sample(None, 1, as_generator(rng))
    return pd.DataFrame({c: batch[c][0] for c in COLUMNS})


def secret_pairs(n_records: int = N_RECORDS) -> tuple[bp.SecretPair, ...]:
    """"Share of women below vs above 50%": every attainable share strictly inside
    (0.25, 0.5) against every one strictly inside (0.5, 0.75).

    For n = 50: 0.26, 0.28, …, 0.48 against 0.52, …, 0.74 (12 × 12 = 144 pairs).
    """
    n = _check_n(n_records)

    def shares(lo: float, hi: float) -> list[bp.DatasetSecret]:
        ks = [k for k in range(n + 1) if lo * n < k < hi * n]
        return [bp.DatasetSecret.proportion("gender", "female", k / n) for k in ks]

    below, above = shares(0.25, 0.5), shares(0.5, 0.75)
    if not below or not above:
        raise ValidationError(
            f"n_records must allow a share of women strictly inside (0.25, 0.5) and one inside (0.5, 0.75); got {n}"
        )
    return bp.pairs_between(below, above)


def exact_moments(query_name: str, p: float, n_records: int = N_RECORDS) -> tuple[float, float]:
    """Exact (mean, variance) of a query of :data:`QUERIES` given exactly p·n women.

    Given k women, the n records are independent; a woman's weight has mean
    3.6·65 − 90 and variance 15² + 3.6²·3² (law of total variance through the
    height), the others' mean 3.6·70 − 90 and the same variance. So the average
    has mean ``3.6·(65 f + 70 (1 − f)) − 90`` with f = k/n and variance
    ``(15² + 3.6²·3²)/n``; blood pressure: ``100 f + 106 (1 − f)``, ``3²/n``;
    temperature: ``98.6``, ``0.5²/n``. The conditional distribution is exactly
    Gaussian.
    """
    n = _check_n(n_records)
    k = _women(p, n)
    f = k / n
    if query_name == "average weight":
        mean_height = HEIGHT_MEAN["female"] * f + HEIGHT_MEAN["other"] * (1 - f)
        return WEIGHT_SLOPE * mean_height + WEIGHT_INTERCEPT, (WEIGHT_SD**2 + WEIGHT_SLOPE**2 * HEIGHT_SD**2) / n
    if query_name == "average blood pressure":
        return BP_MEAN["female"] * f + BP_MEAN["other"] * (1 - f), BP_SD**2 / n
    if query_name == "average temperature":
        return TEMP_MEAN, TEMP_SD**2 / n
    raise ValidationError(f"query_name must be one of {list(QUERIES)!r}; got {query_name!r}")


# ---------------------------------------------------------------------------------------
# Θ of §4.2 as PyMC models: the paper's "possible conditional distributions"
# ---------------------------------------------------------------------------------------
#: One member of the paper's Θ (§4.2, "We now describe the set Θ of possible
#: distributions"): parameter -> default. Defaults are the middles of the
#: paper's ranges (:data:`THETA_RANGES`); the standard deviations are the
#: paper's (height 3 for women, 8 otherwise; weight 15; blood pressure 10;
#: temperature 2).
THETA_DEFAULTS: MappingProxyType[str, float] = MappingProxyType({
    "p_female": 0.5,
    "mu_female": 65.0,
    "mu_other": 70.0,
    "height_sd_female": 3.0,
    "height_sd_other": 8.0,
    "k1": 3.25,
    "k2": 85.0,
    "weight_sd": 15.0,
    "bp_female": 100.0,
    "bp_gap": 8.0,
    "bp_sd": 10.0,
    "temp_other": 98.6,
    "temp_gap": 0.15,
    "temp_sd": 2.0,
})

#: The paper's ranges: p ∈ (.25, .75), μ_F ∈ (64, 66), μ_O ∈ (69, 71),
#: k₁ ∈ (3, 3.5), k₂ ∈ (80, 90), 6 ≤ b_F − b_O ≤ 10 (read as a gap of 6 to 10
#: between the two blood-pressure means, see :func:`hospital_pymc_model`),
#: 0 ≤ t_F − t_O ≤ 0.3. The open ends are included: the suprema over the open
#: ranges are the values at the closed corners.
THETA_RANGES: MappingProxyType[str, tuple[float, float]] = MappingProxyType({
    "p_female": (0.25, 0.75),
    "mu_female": (64.0, 66.0),
    "mu_other": (69.0, 71.0),
    "k1": (3.0, 3.5),
    "k2": (80.0, 90.0),
    "bp_gap": (6.0, 10.0),
    "temp_gap": (0.0, 0.3),
})

#: Corners of the parameters that move each query's sensitivity or variance
#: given the share of women (k₂, p and the means' common offsets do not).
QUERY_GRIDS: MappingProxyType[str, MappingProxyType[str, tuple[float, ...]]] = MappingProxyType({
    "average weight": MappingProxyType({"k1": (3.0, 3.5), "mu_female": (64.0, 66.0), "mu_other": (69.0, 71.0)}),
    "average blood pressure": MappingProxyType({"bp_gap": (6.0, 10.0)}),
    "average temperature": MappingProxyType({"temp_gap": (0.0, 0.3)}),
})

#: Column of each query of :data:`QUERIES`.
_QUERY_COLUMN = {"average weight": "weight", "average blood pressure": "blood_pressure", "average temperature": "temperature"}

_POSITIVE = ("height_sd_female", "height_sd_other", "weight_sd", "bp_sd", "temp_sd")


def _hospital_theta(theta: dict[str, Any]) -> dict[str, float]:
    """Defaults overridden by ``theta``, checked."""
    unknown = sorted(set(theta) - set(THETA_DEFAULTS))
    if unknown:
        raise ValidationError(f"theta must name parameters among {sorted(THETA_DEFAULTS)!r}; got {unknown!r}")
    full = dict(THETA_DEFAULTS)
    for name, value in theta.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
            raise ValidationError(f"{name} must be a finite real number; got {value!r}")
        full[name] = float(value)
    for name in _POSITIVE:
        if not full[name] > 0:
            raise ValidationError(f"{name} must be a standard deviation > 0; got {full[name]!r}")
    if not 0.0 <= full["p_female"] <= 1.0:
        raise ValidationError(f"p_female must be a probability in [0, 1]; got {full['p_female']!r}")
    return full


def _build_hospital_pymc(n_records: int, **theta: float):
    """``builder(n_records)`` of one member of Θ (module level: it pickles)."""
    import pymc as pm
    import pytensor.tensor as pt

    t = theta
    with pm.Model() as model:
        female = pm.Bernoulli("gender", t["p_female"], shape=n_records)  # 1 = female, as in the paper
        is_f = pt.eq(female, 1)
        height = pm.Normal(
            "height",
            mu=pt.switch(is_f, t["mu_female"], t["mu_other"]),
            sigma=pt.switch(is_f, t["height_sd_female"], t["height_sd_other"]),
            shape=n_records,
        )
        pm.Normal("weight", mu=t["k1"] * height - t["k2"], sigma=t["weight_sd"], shape=n_records)
        pm.Normal(
            "blood_pressure",
            mu=pt.switch(is_f, t["bp_female"], t["bp_female"] + t["bp_gap"]),
            sigma=t["bp_sd"],
            shape=n_records,
        )
        pm.Normal(
            "temperature",
            mu=pt.switch(is_f, t["temp_other"] + t["temp_gap"], t["temp_other"]),
            sigma=t["temp_sd"],
            shape=n_records,
        )
    return model


def hospital_pymc_model(n_records: int = N_RECORDS, **theta: float):
    """One member θ of the paper's Θ (§4.2) as a :class:`~bayespriv.datamodels.pymc.PyMCDataModel`.

    Columns: ``gender`` (1 = female, 0 = other, as in the paper), ``height``,
    ``weight``, ``blood_pressure``, ``temperature``::

        gender      ~ Bernoulli(p_female)
        height      ~ N(mu_female, height_sd_female) if female else N(mu_other, height_sd_other)
        weight      ~ N(k1 · height − k2, weight_sd)
        blood_press ~ N(bp_female, bp_sd) if female else N(bp_female + bp_gap, bp_sd)
        temperature ~ N(temp_other + temp_gap, temp_sd) if female else N(temp_other, temp_sd)

    (second parameters are standard deviations). The secret is the share of
    women, ``DatasetSecret.proportion("gender", 1, p)``: gender has no random
    parents, so conditioning is exact forward sampling with exactly p·n women
    at random positions (route ``"forward"``, no MCMC).

    The paper writes the blood-pressure constraint as 6 ≤ b_F − b_O ≤ 10, but
    its generator gives women the *lower* pressure (100 vs 106); we follow the
    generator's sign, b_O = b_F + ``bp_gap`` with ``bp_gap`` in [6, 10]. Only
    |b_F − b_O| enters the sensitivity and the variance, so both readings give
    the same calibration. Temperature follows the paper, t_F − t_O = ``temp_gap``.

    Parameters
    ----------
    n_records : int, default 50
    **theta : float
        Overrides of :data:`THETA_DEFAULTS`; the model's ``theta`` records them.

    Returns
    -------
    bayespriv.datamodels.pymc.PyMCDataModel
    """
    from bayespriv.datamodels.pymc import PyMCDataModel

    n = _check_n(n_records)
    full = _hospital_theta(theta)
    builder = functools.partial(_build_hospital_pymc, **full)
    return PyMCDataModel(builder, n_records=n, columns=COLUMNS, theta=dict(theta))


def hospital_generator_pymc(n_records: int = N_RECORDS):
    """The paper's *generator* (module docstring) written as a member of the
    PyMC Θ family: same distribution as :func:`hospital_model`, with gender
    coded 1 = female. Used to compare the PyMC sampler with NumPy."""
    return hospital_pymc_model(
        n_records,
        p_female=P_FEMALE, mu_female=HEIGHT_MEAN["female"], mu_other=HEIGHT_MEAN["other"],
        height_sd_female=HEIGHT_SD, height_sd_other=HEIGHT_SD,
        k1=WEIGHT_SLOPE, k2=-WEIGHT_INTERCEPT, weight_sd=WEIGHT_SD,
        bp_female=BP_MEAN["female"], bp_gap=BP_MEAN["other"] - BP_MEAN["female"], bp_sd=BP_SD,
        temp_other=TEMP_MEAN, temp_gap=0.0, temp_sd=TEMP_SD,
    )


def hospital_family(n_records: int = N_RECORDS, grid: dict[str, Any] | None = None):
    """The paper's Θ as a :class:`~bayespriv.datamodels.family.DataModelFamily` of PyMC models.

    Parameters
    ----------
    n_records : int, default 50
    grid : mapping parameter -> list of values, optional
        Default: the corners of every range that moves a query's sensitivity
        or variance (k₁, μ_F, μ_O, the blood-pressure and temperature gaps; 32
        members). :data:`QUERY_GRIDS` holds the smaller grid each query needs.

    Returns
    -------
    DataModelFamily
        With ``covers="corners"``: every quantity the mechanisms need is
        monotone in each parameter over the box (see :func:`family_exact`), so
        the corners attain the suprema over Θ.

    Examples
    --------
    >>> import bayespriv as bp
    >>> fam = hospital_family(grid=dict(QUERY_GRIDS["average blood pressure"]))  # doctest: +SKIP
    >>> cal = bp.calibrate(fam, pymc_secret_pairs(), bp.mean("blood_pressure"), n_draws=1000, rng=0)  # doctest: +SKIP
    >>> cal.worst_theta  # doctest: +SKIP
    {'bp_gap': 10.0}
    """
    from bayespriv.datamodels.family import DataModelFamily

    n = _check_n(n_records)
    if grid is None:
        grid = {"k1": [3.0, 3.5], "mu_female": [64.0, 66.0], "mu_other": [69.0, 71.0],
                "bp_gap": [6.0, 10.0], "temp_gap": [0.0, 0.3]}
    grid = {k: list(v) for k, v in grid.items()}
    _hospital_theta({k: v[0] for k, v in grid.items() if v})  # names and types, early
    return DataModelFamily(functools.partial(hospital_pymc_model, n), grid, covers="corners")


def pymc_secret_pairs(n_records: int = N_RECORDS) -> tuple[bp.SecretPair, ...]:
    """:func:`secret_pairs` for the PyMC models, whose gender column is coded
    1 = female: ``DatasetSecret.proportion("gender", 1, p)``, same shares."""
    def recode(s: bp.DatasetSecret) -> bp.DatasetSecret:
        return bp.DatasetSecret.proportion("gender", 1, s.value)

    return tuple(bp.SecretPair(recode(p.a), recode(p.b)) for p in secret_pairs(n_records))


def theta_moments(query_name: str, p: float, n_records: int = N_RECORDS, **theta: float) -> tuple[float, float]:
    """Exact (mean, variance) of a query of :data:`QUERIES` given exactly p·n women, under member θ.

    With f = k/n the share of women, the records are independent given gender:

    * average weight: mean ``k1 (f μ_F + (1 − f) μ_O) − k2``, variance
      ``(σ_w² + k1² (f σ_F² + (1 − f) σ_O²)) / n`` (law of total variance
      through the height; it depends on f because σ_F ≠ σ_O);
    * average blood pressure: mean ``b_F + (1 − f) gap``, variance ``σ_b² / n``;
    * average temperature: mean ``t_O + f gap_t``, variance ``σ_t² / n``.
    """
    n = _check_n(n_records)
    f = _women(p, n) / n
    t = _hospital_theta(theta)
    if query_name == "average weight":
        mean = t["k1"] * (f * t["mu_female"] + (1 - f) * t["mu_other"]) - t["k2"]
        var = (t["weight_sd"] ** 2 + t["k1"] ** 2 * (f * t["height_sd_female"] ** 2 + (1 - f) * t["height_sd_other"] ** 2)) / n
        return mean, var
    if query_name == "average blood pressure":
        return t["bp_female"] + (1 - f) * t["bp_gap"], t["bp_sd"] ** 2 / n
    if query_name == "average temperature":
        return t["temp_other"] + f * t["temp_gap"], t["temp_sd"] ** 2 / n
    raise ValidationError(f"query_name must be one of {list(QUERIES)!r}; got {query_name!r}")


def family_exact(
    query_name: str,
    n_records: int = N_RECORDS,
    grid: dict[str, Any] | None = None,
    pairs: Any = None,
) -> dict[str, Any]:
    """Closed-form worst case of the family for one query, over the grid and the pairs.

    Enumerates every θ of ``grid`` (default :data:`QUERY_GRIDS` of the query,
    i.e. the corners of the paper's ranges) and every pair of ``pairs``
    (default :func:`pymc_secret_pairs`), with :func:`theta_moments`.

    Returns
    -------
    dict
        ``sensitivity`` — max over θ and pairs of |E[F | a] − E[F | b]|;
        ``worst_theta`` and ``worst_pair`` — where it is attained;
        ``variance_min`` — min over θ and the pairs' secrets of Var(F | s)
        (what APGM subtracts); ``variance_max``.

    For n = 50 and the paper's ranges: weight 3.5·7·0.48 = 11.76 (the paper's
    6.125 uses d(U) = 0.25, see the module docstring) with minimum variance
    (15² + 3²(0.74·3² + 0.26·8²))/50 = 8.694 (paper: 4.5, without the height
    term); blood pressure 10·0.48 = 4.8 and 10²/50 = 2; temperature
    0.3·0.48 = 0.144 and 2²/50 = 0.08.
    """
    if query_name not in QUERIES:
        raise ValidationError(f"query_name must be one of {list(QUERIES)!r}; got {query_name!r}")
    n = _check_n(n_records)
    grid = {k: list(v) for k, v in (QUERY_GRIDS[query_name] if grid is None else grid).items()}
    pairs = pymc_secret_pairs(n) if pairs is None else as_pairs(pairs)
    names = list(grid)
    best: dict[str, Any] = {"sensitivity": -math.inf}
    vmin, vmax = math.inf, -math.inf
    for combo in (dict(zip(names, c)) for c in itertools.product(*grid.values())):
        moments = {}
        for pair in pairs:
            for s in pair.secrets:
                if s not in moments:
                    moments[s] = theta_moments(query_name, s.value, n, **combo)
        for pair in pairs:
            d = abs(moments[pair.a][0] - moments[pair.b][0])
            if d > best["sensitivity"] + 1e-12:
                best = {"sensitivity": d, "worst_theta": dict(combo), "worst_pair": pair}
        vmin = min(vmin, min(v for _, v in moments.values()))
        vmax = max(vmax, max(v for _, v in moments.values()))
    return {**best, "variance_min": vmin, "variance_max": vmax}
