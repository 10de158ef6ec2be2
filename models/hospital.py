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
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

import bayespriv as bp
from bayespriv.errors import ParameterTypeError, UnsupportedSecretError, ValidationError
from bayespriv.secrets import share_count
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
