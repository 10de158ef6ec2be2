"""The census scenario of the distribution-privacy paper (Chen & Ohrimenko, AISTATS 2023, §5).

A government body releases five statistics of 100 census records while hiding
the share of high earners (income ``>50K``) to within ±Δp/2 around one half.
Θ resamples the UCI Adult data (records with missing values removed: 45 222
rows, 11 208 of them ``>50K``) without replacement, as the paper does
(appendix C.1: 1000 subsets of 100 records per secret).

The data is never committed: :func:`load_adult` takes the directory holding
``adult.data`` and ``adult.test``; :data:`DEFAULT_ADULT_DIR` is where the
project's tests and benchmarks look for it.

Exact answers: :meth:`bayespriv.EmpiricalDataModel.moments` gives the exact
without-replacement mean and covariance of :func:`census_query` under each
secret of :func:`income_pairs`.

Examples
--------
>>> import bayespriv as bp
>>> from bayespriv.models.census import DEFAULT_ADULT_DIR, load_adult, census_model, census_query, income_pairs
>>> table = load_adult(DEFAULT_ADULT_DIR)  # doctest: +SKIP
>>> cal = bp.calibrate(census_model(table), income_pairs(0.1), census_query(), n_draws=1000, rng=0)  # doctest: +SKIP
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

import bayespriv as bp
from bayespriv.random import RNGLike, as_generator

__all__ = [
    "ADULT_COLUMNS",
    "DEFAULT_ADULT_DIR",
    "load_adult",
    "census_query",
    "income_pairs",
    "workclass_pairs",
    "split_adult",
    "census_model",
]

#: The 15 columns of the UCI Adult files, in order.
ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")

#: Where tests and benchmarks look for the data: ``../shared/data/adult`` next to the project.
DEFAULT_ADULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "adult"


def load_adult(path: str | PathLike[str]) -> pd.DataFrame:
    """The UCI Adult data, both files, without records with missing values.

    Parameters
    ----------
    path : path-like
        Directory holding ``adult.data`` and ``adult.test`` as distributed by
        UCI (no header, fields separated by ``", "``, ``?`` for missing values,
        income labels with a trailing ``.`` in ``adult.test``).

    Returns
    -------
    pandas.DataFrame
        45 222 rows and the 15 columns of :data:`ADULT_COLUMNS`; numeric columns
        as int64, the others as stripped strings; ``income`` is ``"<=50K"`` or
        ``">50K"`` (11 208 rows).

    Raises
    ------
    FileNotFoundError
        When either file is absent (the data is never committed).
    """
    directory = Path(path)
    files = [directory / "adult.data", directory / "adult.test"]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(
            f"load_adult needs adult.data and adult.test in {str(directory)!r}; missing {missing!r}. "
            "Download them from the UCI Machine Learning Repository (Adult / Census Income); "
            "the data is never committed to this project"
        )
    frames = [
        pd.read_csv(
            f,
            header=None,
            names=list(ADULT_COLUMNS),
            sep=",",
            skipinitialspace=True,
            na_values=["?"],
            comment="|",  # the original adult.test starts with "|1x3 Cross validator"
            dtype=str,
            skip_blank_lines=True,
        )
        for f in files
    ]
    table = pd.concat(frames, ignore_index=True)
    for c in ADULT_COLUMNS:
        table[c] = table[c].str.strip().replace({"?": None, "": None})
    table = table.dropna(how="any").reset_index(drop=True)
    table["income"] = table["income"].str.rstrip(".")
    for c in _NUMERIC:
        table[c] = table[c].astype("int64")
    unexpected = sorted(set(table["income"]) - {"<=50K", ">50K"})
    if unexpected:
        raise ValueError(f"income must be '<=50K' or '>50K' in the Adult files; got {unexpected!r}")
    return table


def census_query() -> bp.Query:
    """The paper's five statistics of interest.

    Mean age, mean years of education, number never married, number of women
    and mean weekly hours. The declared bounds are the data-independent ranges
    of the UCI documentation (age 17–90, education 1–16, hours 1–99); they make
    the per-record sensitivity, hence GroupDP, available.
    """
    return bp.stack(
        bp.mean("age", bounds=(17, 90)),
        bp.mean("education-num", bounds=(1, 16)),
        bp.count(lambda b: b["marital-status"] == "Never-married", "marital-status", name="never married"),
        bp.count(lambda b: b["sex"] == "Female", "sex", name="female"),
        bp.mean("hours-per-week", bounds=(1, 99)),
        name="census statistics",
    )


def income_pairs(delta_p: float = 0.1, n_records: int = 100) -> bp.SecretPair:
    """Secret pair: share of ``>50K`` earners ``0.5 − Δp/2`` vs ``0.5 + Δp/2``.

    ``delta_p`` must make ``(0.5 ± Δp/2)·n_records`` whole numbers of records
    (the data model checks it); the defaults give 45 vs 55 of 100.
    """
    if isinstance(delta_p, bool) or not isinstance(delta_p, (int, float)) or not 0.0 < delta_p <= 1.0:
        raise bp.ValidationError(f"delta_p must be a number in (0, 1]; got {delta_p!r}")
    lo, hi = (_snap(0.5 + sign * delta_p / 2.0, n_records) for sign in (-1, 1))
    return bp.SecretPair(
        bp.DatasetSecret.proportion("income", ">50K", lo),
        bp.DatasetSecret.proportion("income", ">50K", hi),
    )


def workclass_pairs(delta_p: float = 0.04, n_records: int = 100) -> bp.SecretPair:
    """Secret pair on the share of private-sector workers (``workclass == "Private"``):
    ``0.5 − Δp/2`` vs ``0.5 + Δp/2`` (the paper's p_W, §5.1)."""
    if isinstance(delta_p, bool) or not isinstance(delta_p, (int, float)) or not 0.0 < delta_p <= 1.0:
        raise bp.ValidationError(f"delta_p must be a number in (0, 1]; got {delta_p!r}")
    lo, hi = (_snap(0.5 + sign * delta_p / 2.0, n_records) for sign in (-1, 1))
    return bp.SecretPair(
        bp.DatasetSecret.proportion("workclass", "Private", lo),
        bp.DatasetSecret.proportion("workclass", "Private", hi),
    )


def split_adult(
    table: pd.DataFrame, rng: RNGLike = None, *, auxiliary: int = 10_000, testing: int = 10_000
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The paper's split (§5.1): ``(modeling, auxiliary, testing)``.

    ``auxiliary`` random records for the attacker's shadow datasets,
    ``testing`` for evaluating the attack, the rest (25 222 of 45 222) for
    modeling the distributions the mechanisms are calibrated on.
    """
    n = len(table)
    if auxiliary + testing >= n:
        raise bp.ValidationError(
            f"auxiliary + testing must leave records for modeling; got {auxiliary} + {testing} of {n} records"
        )
    order = as_generator(rng).permutation(n)
    aux, test, rest = order[:auxiliary], order[auxiliary:auxiliary + testing], order[auxiliary + testing:]
    pick = lambda idx: table.iloc[np.sort(idx)].reset_index(drop=True)  # noqa: E731
    return pick(rest), pick(aux), pick(test)


def _snap(p: float, n_records: int) -> float:
    """``p`` rounded to a whole number of records when it is one up to float noise (0.45 → 45/100)."""
    k = round(p * n_records)
    return k / n_records if abs(p * n_records - k) < 1e-9 else p


def census_model(table: pd.DataFrame, n_records: int = 100) -> bp.EmpiricalDataModel:
    """Θ: ``n_records`` Adult records resampled without replacement from ``table``."""
    return bp.EmpiricalDataModel(table, n_records)
