"""The census model of the distribution-privacy paper on the UCI Adult data.

Acceptance criterion: calibrating by sampling (2000 subsets of 100 records per
secret) reproduces the exact without-replacement moments of
:meth:`EmpiricalDataModel.moments` within Monte-Carlo error.

Tolerances (fixed seed; hold for any seed with the stated probability):

* means: |μ̂_c − μ_c| ≤ z·sqrt(Σ_cc / m) with the *exact* Σ_cc, m = 2000 draws
  (CLT), z for α = 1e-3 split (Bonferroni) over 2 secrets × 5 components;
* variances: |s²_c − Σ_cc| ≤ z·se_c with the calibration's distribution-free
  standard error se_c = sqrt((m̂₄ − s⁴)/m) (plug-in fourth moment, asymptotic),
  α = 1e-3 split over 2 × 5 variances.

Broken twin: the samples of one secret compared with the exact moments of the
other secret must fail the same mean check.

A fresh census model checks its numeric columns at construction and each text
column on its first use (the table holds more than ``EAGER_TEXT_CELLS`` text
cells): missing values in a column the calibration never reads cost no scan; in
one it reads, they are refused with the constructor's message. The broken twin
of that check is in ``tests/datamodels/test_empirical_fresh.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.datamodels import empirical as emp
from bayespriv.models.census import census_model, census_query, income_pairs, load_adult

ALPHA = 1e-3
N_DRAWS = 2000

pytestmark = pytest.mark.adult


@pytest.fixture(scope="module")
def table(adult_dir):
    return load_adult(adult_dir)


def test_load_adult_counts(table):
    assert len(table) == 45222
    assert int((table["income"] == ">50K").sum()) == 11208
    assert set(table["income"]) == {"<=50K", ">50K"}
    assert not table.isna().any().any()
    assert table["age"].between(17, 90).all()
    assert table["education-num"].between(1, 16).all()
    assert table["hours-per-week"].between(1, 99).all()


def test_load_adult_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"adult.data and adult.test.*missing \['adult.data', 'adult.test'\]"):
        load_adult(tmp_path)


def test_income_pairs():
    pair = income_pairs()
    assert (pair.a.value, pair.b.value) == (0.45, 0.55)
    assert pair.a.column == "income" and pair.a.category == ">50K"
    assert income_pairs(0.3).b.value == 0.65
    with pytest.raises(bp.ValidationError, match="delta_p must be a number in"):
        income_pairs(0.0)


def _mean_failures(cal, exact, z):
    out = []
    for s in cal.secrets:
        mean, cov = exact[s]
        se = np.sqrt(np.diag(cov) / cal.n_draws)
        bad = np.abs(cal.means[s] - mean) > z * se
        out += [f"{s.label}: {name}" for name, b in zip(cal.component_names, bad) if b]
    return out


def test_calibration_reproduces_exact_moments(table):
    model = census_model(table)
    pairs, query = income_pairs(), census_query()
    cal = bp.calibrate(model, pairs, query, n_draws=N_DRAWS, rng=np.random.default_rng(20230425))
    exact = {s: model.moments(s, query) for s in pairs.secrets}
    n_checks = len(pairs.secrets) * query.k
    z = stats.norm.isf(ALPHA / (2 * n_checks))

    assert _mean_failures(cal, exact, z) == []
    for s in pairs.secrets:
        i = cal.index(s)
        var_hat = np.diag(cal.covs[s])
        var_se = np.diag(cal.cov_se[i])
        assert np.all(np.abs(var_hat - np.diag(exact[s][1])) <= z * var_se), s.label

    # broken twin: the moments of the wrong secret are caught by the same check
    a, b = pairs.secrets
    swapped = {a: exact[b], b: exact[a]}
    assert len(_mean_failures(cal, swapped, z)) >= 2


def test_exact_moments_are_the_paper_scale(table):
    """Sanity of the exact moments: shares and ranges of the five statistics."""
    model = census_model(table)
    mean, cov = model.moments(income_pairs().a, census_query())
    assert 35 < mean[0] < 45 and 9 < mean[1] < 12 and 0 < mean[2] < 100 and 0 < mean[3] < 100 and 35 < mean[4] < 50
    assert np.all(np.linalg.eigvalsh(cov) > 0)


def test_a_fresh_model_scans_only_the_text_columns_the_calibration_reads(table, monkeypatch):
    """Missing values in occupation and native-country, which nothing reads: no scan, no refusal. The
    secret's column (income) is scanned once; the query's text columns are checked by the set of
    their cells, which their features need anyway."""
    damaged = table.copy()
    damaged.loc[3, "occupation"] = None
    damaged.loc[5, "native-country"] = None
    scanned = []
    real = emp._text_missing
    monkeypatch.setattr(emp, "_text_missing", lambda series: scanned.append(series.name) or real(series))
    model = census_model(damaged)
    bp.calibrate(model, income_pairs(), census_query(), n_draws=200, rng=0)
    assert scanned == ["income"]
    assert model._kinds["occupation"] == model._kinds["native-country"] == emp._UNSCANNED
    assert {model._kinds[c] for c in ("income", "sex", "marital-status")} == {emp._PLAIN_TEXT}


@pytest.mark.parametrize("column", ["sex", "marital-status", "income", "age"])
def test_a_missing_value_in_a_column_the_calibration_reads_is_refused(table, column):
    """The query's and the secret's text columns on first use, the numbers at construction: one message."""
    damaged = table.copy()
    damaged.loc[10, column] = None
    with pytest.raises(bp.ValidationError) as info:
        bp.calibrate(census_model(damaged), income_pairs(), census_query(), n_draws=200, rng=0)
    assert str(info.value) == ("table must be free of missing values (None, NaN, NaT, pd.NA) in every column; "
                               f"got nan in column {column!r} at row 10 (1 missing in that column)")
