"""EmpiricalDataModel: exact moments by enumeration, sampling checked against them.

Statistical checks (fixed seeds, tolerances that hold for any seed with the
stated false-failure probability α):

* uniformity of the k-subset samplers: Pearson χ² over *every* k-subset
  (≥ 100 expected draws per cell), α = 1e-4 per test;
* sampled moments of a tiny table: each sampled mean is compared with the exact
  mean using the exact standard deviation (CLT normal interval), each sampled
  variance with the exact variance using the exact standard error of the
  unbiased sample variance, Var(s²) = μ₄/m − σ⁴(m − 3)/(m(m − 1)) for m i.i.d.
  draws (μ₄ from the enumeration); Bonferroni over all compared quantities,
  α = 1e-4 per secret. Components that are constant under a secret must match
  exactly;
* exact laws of counts (``exact_law``): against enumeration and exact integer
  arithmetic to 1e-12; the calibration's draws against the law by Pearson χ²,
  α = 1e-3.

Broken twins (a sampler drawing WITH replacement, a model drawing the wrong
number of in-category records, a key sampler with ties, a redraw sampler that
shifts duplicates to the next index instead of redrawing them, a Bernoulli
bitmap corrected by keeping the lowest indices, an exact law with the wrong
stratum sizes) must be caught by the same checks.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.datamodels import empirical as emp
from bayespriv.datamodels import subsets as subset_samplers

ALPHA = 1e-4

# -- a tiny table whose datasets can be enumerated ------------------------------------------
TINY = pd.DataFrame(
    {
        "id": np.arange(7),
        "g": ["a", "a", "a", "b", "b", "b", "b"],
        "x": [1.0, 2.5, -1.0, 4.0, 0.5, 3.0, 7.0],
        "y": [0.0, 1.5, 2.0, 0.3, 1.2, 2.5, 0.9],
    }
)
N_TINY = 4
TINY_QUERY = bp.stack(
    bp.mean("x"),
    bp.count(lambda b: b["g"] == "a", "g", name="n_a"),
    bp.proportion(lambda b: b["y"] > 1, "y", name="share y>1"),
    bp.mean("y", bounds=(0.0, 2.0)),
    bp.count(lambda b: b["x"] > 2, "x", name="n_x>2"),
    name="tiny",
)
# p = 0.25, 0.5, 0.75 of 4 records: k = 1, 2, 3 of the 3 "a" rows
TINY_SECRETS = [None] + [bp.DatasetSecret.proportion("g", "a", p) for p in (0.25, 0.5, 0.75)]


def _enumerate(secret):
    """Query values on every equally likely dataset (rows: datasets)."""
    ids = TINY["id"].to_numpy()
    if secret is None:
        subsets = [list(c) for c in itertools.combinations(ids, N_TINY)]
    else:
        k = round(secret.value * N_TINY)
        inside = ids[TINY["g"] == "a"]
        outside = ids[TINY["g"] != "a"]
        subsets = [
            list(a) + list(b)
            for a in itertools.combinations(inside, k)
            for b in itertools.combinations(outside, N_TINY - k)
        ]
    return np.array([TINY_QUERY(TINY.iloc[s]) for s in subsets])


def _exact(secret):
    values = _enumerate(secret)
    mean = values.mean(axis=0)
    centred = values - mean
    cov = centred.T @ centred / len(values)
    mu4 = (centred**4).mean(axis=0)
    return mean, cov, mu4


def _moment_failures(model, secret, n_draws, rng):
    """Names of the sampled moments that disagree with the enumeration (α = ALPHA in total)."""
    mean, cov, mu4 = _exact(secret)
    batch = model.sample(secret, n_draws, rng, columns=TINY_QUERY.columns)
    values = TINY_QUERY.evaluate(batch)
    var = np.diag(cov)
    random = var > 1e-12
    z = stats.norm.isf(ALPHA / (2 * 2 * int(random.sum())))
    m = n_draws
    failures = []
    for c in range(values.shape[1]):
        mhat = values[:, c].mean()
        if not random[c]:
            if np.abs(values[:, c] - mean[c]).max() > 1e-12:
                failures.append(f"constant component {c}")
            continue
        if abs(mhat - mean[c]) > z * np.sqrt(var[c] / m):
            failures.append(f"mean {c}")
        se_var = np.sqrt(mu4[c] / m - var[c] ** 2 * (m - 3) / (m * (m - 1)))
        if abs(values[:, c].var(ddof=1) - var[c]) > z * se_var:
            failures.append(f"variance {c}")
    return failures


class WithReplacement(bp.EmpiricalDataModel):
    """Broken twin: draws the records of each stratum WITH replacement."""

    def _draw_subsets(self, n_rows, k, n_draws, rng):
        return rng.integers(0, n_rows, size=(n_draws, k))


class OneTooMany(bp.EmpiricalDataModel):
    """Broken twin: draws k + 1 in-category records (and n − k − 1 others)."""

    def _stratum_plan(self, secret):
        plan = super()._stratum_plan(secret)
        if secret is None:
            return plan
        (inside, k), (outside, rest) = plan
        return [(inside, k + 1), (outside, rest - 1)]


# -- exact moments ----------------------------------------------------------------------------
@pytest.mark.parametrize("secret", TINY_SECRETS, ids=lambda s: "none" if s is None else s.label)
def test_moments_equal_enumeration(secret):
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    mean, cov = model.moments(secret, TINY_QUERY)
    exact_mean, exact_cov, _ = _exact(secret)
    np.testing.assert_allclose(mean, exact_mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(cov, exact_cov, rtol=0, atol=1e-10)
    assert mean.shape == (5,) and cov.shape == (5, 5)


def test_moments_need_an_additive_query():
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    q = bp.Query(lambda b: b["x"].max(axis=1, keepdims=True), ["x"], "max x")
    with pytest.raises(bp.UnsupportedSecretError, match="additive.*calibrate by sampling"):
        model.moments(None, q)


def test_moments_are_a_calibration():
    """Exact moments plug into Calibration.from_moments."""
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    pair = bp.SecretPair(*TINY_SECRETS[1:3])
    means, covs = zip(*(model.moments(s, TINY_QUERY) for s in pair.secrets))
    cal = bp.Calibration.from_moments(dict(zip(pair.secrets, means)), dict(zip(pair.secrets, covs)), pair, TINY_QUERY)
    assert np.isclose(cal.sensitivity(np.inf), 1.0)  # n_a moves by exactly one record


# -- sampling -------------------------------------------------------------------------------------
@pytest.mark.parametrize("secret", TINY_SECRETS, ids=lambda s: "none" if s is None else s.label)
def test_sampled_moments_agree_with_exact(secret):
    """α = 1e-4 per secret (see module docstring)."""
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    assert _moment_failures(model, secret, 20_000, np.random.default_rng(11)) == []


def test_broken_twin_with_replacement_is_caught():
    """Drawing 2 of 3 rows with replacement doubles the within-stratum variance (k vs k(N−k)/(N−1))."""
    secret = bp.DatasetSecret.proportion("g", "a", 0.5)
    failures = _moment_failures(WithReplacement(TINY, N_TINY), secret, 20_000, np.random.default_rng(11))
    assert any(f.startswith("variance") for f in failures), failures


def test_broken_twin_wrong_k_is_caught():
    secret = bp.DatasetSecret.proportion("g", "a", 0.25)
    failures = _moment_failures(OneTooMany(TINY, N_TINY), secret, 20_000, np.random.default_rng(11))
    assert "constant component 1" in failures and any(f.startswith("mean") for f in failures), failures


def test_every_dataset_has_k_in_category_and_no_repeat():
    """Tiny table (k=2 of 3 rows: bitmap path; 2 of 4: rejection path) and a larger one."""
    for table, n, p in [(TINY, N_TINY, 0.5), (_wide_table(2000), 50, 0.3)]:
        model = bp.EmpiricalDataModel(table, n)
        secret = bp.DatasetSecret.proportion("g", "a", p)
        batch = model.sample(secret, 3000, rng=5, columns=["id", "g"])
        assert batch["id"].shape == (3000, n)
        assert np.all((batch["g"] == "a").sum(axis=1) == round(p * n))
        ids = np.sort(batch["id"], axis=1)
        assert not np.any(ids[:, 1:] == ids[:, :-1])
        # the ids really are rows of the table with the column values that row has
        np.testing.assert_array_equal(table["g"].to_numpy()[batch["id"].astype(int)], batch["g"])


def _wide_table(n_rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "id": np.arange(n_rows),
            "g": np.where(rng.random(n_rows) < 0.4, "a", "b"),
            "v": rng.normal(size=n_rows),
            "flag": rng.random(n_rows) < 0.5,
            "cat": pd.Categorical(rng.choice(["u", "w"], n_rows)),
        }
    )


def test_column_types_are_cached_for_vectorized_predicates():
    model = bp.EmpiricalDataModel(_wide_table(100), 10)
    batch = model.sample(None, 4, rng=0)
    assert batch["v"].dtype == np.float64 and batch["id"].dtype == np.float64
    assert batch["g"].dtype.kind == "U" and batch["cat"].dtype.kind == "U"
    assert batch["flag"].dtype == bool
    assert (batch["cat"] == "u").dtype == bool


def test_sampling_is_reproducible():
    model = bp.EmpiricalDataModel(_wide_table(500), 20)
    s = bp.DatasetSecret.proportion("g", "a", 0.5)
    a = model.sample(s, 50, rng=3)
    b = model.sample(s, 50, rng=3)
    for c in model.columns:
        np.testing.assert_array_equal(a[c], b[c])


# -- the two subset samplers ----------------------------------------------------------------------
def _subset_pvalue(subsets: np.ndarray, n_rows: int, k: int) -> float:
    """Pearson χ² p-value of the drawn subsets against uniform over all C(n_rows, k)."""
    rows = np.sort(subsets, axis=1)
    assert not np.any(rows[:, 1:] == rows[:, :-1]), "a subset repeats an index"
    assert rows.min() >= 0 and rows.max() < n_rows
    codes = (np.int64(1) << rows.astype(np.int64)).sum(axis=1)
    _, counts = np.unique(codes, return_counts=True)
    cells = math.comb(n_rows, k)
    observed = np.concatenate([counts, np.zeros(cells - counts.size)])
    return float(stats.chisquare(observed).pvalue)


def test_rejection_path_is_uniform():
    """N=20, k=3 (k(k−1)/2N = 0.15: rejection); 1140 subsets, 100 expected each; α = 1e-4."""
    assert subset_samplers._use_rejection(20, 3)
    draws = subset_samplers._subsets_by_rejection(20, 3, 114_000, np.random.default_rng(1))
    assert _subset_pvalue(draws, 20, 3) > ALPHA


def test_redraw_path_is_uniform():
    """N=10, k=4 (≈0.6 repeats per row, up to 3 rounds); 210 subsets, 100 expected each; α = 1e-4."""
    draws = subset_samplers._subsets_by_redraw(10, 4, 21_000, np.random.default_rng(3))
    assert _subset_pvalue(draws, 10, 4) > ALPHA


def test_redraw_path_is_uniform_with_many_repeats():
    """N=6, k=4 (every row has repeats, many rounds); 15 subsets, 200 expected each; α = 1e-4."""
    draws = subset_samplers._subsets_by_redraw(6, 4, 3000, np.random.default_rng(4))
    assert _subset_pvalue(draws, 6, 4) > ALPHA


def _shift_duplicates(n_rows, k, n_draws, rng):
    """Broken twin of the redraw sampler: a repeat becomes the next free index, not a fresh draw."""
    idx = np.sort(rng.integers(0, n_rows, size=(n_draws, k)), axis=1)
    for _ in range(k):  # test helper: a loop is fine here
        dup = np.zeros_like(idx, dtype=bool)
        dup[:, 1:] = idx[:, 1:] == idx[:, :-1]
        idx[dup] = (idx[dup] + 1) % n_rows
        idx.sort(axis=1)
    return idx


def test_broken_twin_shifted_duplicates_are_caught():
    """Shifting repeats to the neighbour favours runs of adjacent indices: the χ² check rejects."""
    draws = _shift_duplicates(10, 4, 21_000, np.random.default_rng(3))
    assert _subset_pvalue(draws, 10, 4) < ALPHA


@pytest.mark.parametrize("secret", TINY_SECRETS, ids=lambda s: "none" if s is None else s.label)
def test_redraw_path_sampled_moments_agree_with_exact(secret, monkeypatch):
    """The model forced onto the redraw path (every stratum, every k) matches the enumeration; α = 1e-4."""
    monkeypatch.setattr(subset_samplers, "REDRAW_MAX_FRACTION", 1.0)
    monkeypatch.setattr(subset_samplers, "_use_rejection", lambda n_rows, k: False)
    calls = []
    real = subset_samplers._subsets_by_redraw
    monkeypatch.setattr(subset_samplers, "_subsets_by_redraw", lambda *a: calls.append(a[:2]) or real(*a))
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    assert _moment_failures(model, secret, 20_000, np.random.default_rng(5)) == []
    assert calls


def test_bernoulli_path_is_uniform_and_chunking_changes_only_the_stream():
    """N=8, k=4 (q = 1/2) and N=9, k=7 (q = 7/9, mostly removals); 200 expected per subset; α = 1e-4 each."""
    draws = subset_samplers._subsets_by_bernoulli(8, 4, 14_000, np.random.default_rng(6))
    assert _subset_pvalue(draws, 8, 4) > ALPHA
    draws = subset_samplers._subsets_by_bernoulli(9, 7, 7200, np.random.default_rng(7), chunk_elements=50)
    assert _subset_pvalue(draws, 9, 7) > ALPHA


def _bernoulli_keep_lowest(n_rows, k, n_draws, rng):
    """Broken twin of the Bernoulli sampler: the size is corrected with the lowest indices, not random ones."""
    mark = rng.random((n_draws, n_rows)) < k / n_rows
    order = np.argsort(~mark, axis=1, kind="stable")  # set bits first, each group in index order
    have = mark.sum(axis=1)
    pick = np.where(np.arange(k) < have[:, None], order[:, :k], 0)
    short = have < k  # too few: add the lowest unset indices
    unset = np.argsort(mark, axis=1, kind="stable")
    for r in np.flatnonzero(short):
        pick[r] = np.concatenate([order[r, :have[r]], unset[r, :k - have[r]]])
    return pick


def test_broken_twin_bernoulli_lowest_indices_are_caught():
    draws = _bernoulli_keep_lowest(8, 4, 14_000, np.random.default_rng(6))
    assert _subset_pvalue(draws, 8, 4) < ALPHA


@pytest.mark.parametrize("secret", TINY_SECRETS, ids=lambda s: "none" if s is None else s.label)
def test_bernoulli_path_sampled_moments_agree_with_exact(secret, monkeypatch):
    """The model forced onto the Bernoulli path (every stratum, every k) matches the enumeration; α = 1e-4."""
    monkeypatch.setattr(subset_samplers, "REDRAW_MAX_FRACTION", 0.0)
    monkeypatch.setattr(subset_samplers, "_use_rejection", lambda n_rows, k: False)
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    assert _moment_failures(model, secret, 20_000, np.random.default_rng(8)) == []


def test_broken_twin_key_ties_are_caught():
    """Keys with ties (two values) bias argpartition towards some subsets: the χ² check rejects."""
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 2, size=(14_000, 8))
    draws = np.argpartition(keys, 3, axis=1)[:, :4]
    assert _subset_pvalue(draws, 8, 4) < ALPHA


def test_dispatch_uses_every_path(monkeypatch):
    calls = []
    real_rej, real_bern = subset_samplers._subsets_by_rejection, subset_samplers._subsets_by_bernoulli
    real_redraw = subset_samplers._subsets_by_redraw
    monkeypatch.setattr(subset_samplers, "_subsets_by_rejection", lambda *a, **kw: calls.append("rejection") or real_rej(*a, **kw))
    monkeypatch.setattr(subset_samplers, "_subsets_by_bernoulli", lambda *a, **kw: calls.append("bernoulli") or real_bern(*a, **kw))
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    model.sample(bp.DatasetSecret.proportion("g", "a", 0.5), 10, rng=0)  # 2 of 3 (bitmap), 2 of 4 (rejection)
    assert calls == ["bernoulli", "rejection"]
    assert subset_samplers.sample_subsets(5, 5, 3, np.random.default_rng(0)).tolist() == [list(range(5))] * 3
    monkeypatch.setattr(subset_samplers, "_subsets_by_redraw", lambda *a: calls.append("redraw") or real_redraw(*a))
    calls.clear()
    for k in (20, 450, 751, 5999):  # of 6000 rows: rejection, redraw (k ≤ N/8), bitmap, bitmap
        subset_samplers.sample_subsets(6000, k, 4, np.random.default_rng(0))
    assert calls == ["rejection", "redraw", "bernoulli", "bernoulli"]
    assert subset_samplers.sample_subsets(5, 0, 3, np.random.default_rng(0)).shape == (3, 0)


# -- errors -------------------------------------------------------------------------------------
def test_table_errors():
    with pytest.raises(bp.ParameterTypeError, match="table must be a pandas DataFrame; got dict"):
        bp.EmpiricalDataModel({"x": [1, 2]}, 1)
    with pytest.raises(bp.ValidationError, match="table must be a non-empty DataFrame"):
        bp.EmpiricalDataModel(pd.DataFrame({"x": []}), 1)
    with_nan = TINY.assign(x=[1.0, np.nan, 2.0, np.nan, 0.0, 1.0, 1.0])
    with pytest.raises(bp.ValidationError, match=r"table must be free of missing values .*; got nan in column 'x' at row 1 "
                                                 r"\(2 missing in that column\)"):
        bp.EmpiricalDataModel(with_nan, 2)
    with pytest.raises(bp.ValidationError, match=r"n_records must be at most the number of rows of table \(7\); got 8"):
        bp.EmpiricalDataModel(TINY, 8)
    with pytest.raises(bp.ParameterTypeError, match="n_records must be an integer"):
        bp.EmpiricalDataModel(TINY, 2.5)


def test_secret_errors():
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    with pytest.raises(bp.ValidationError, match=r"p·n_records must be an integer.*p=0.3, n_records=4, p·n=1.2"):
        model.sample(bp.DatasetSecret.proportion("g", "a", 0.3), 5, rng=0)
    with pytest.raises(bp.ValidationError, match=r"at most the rows of table with g == 'a' \(3\).*p=1, n_records=4, p·n=4"):
        model.sample(bp.DatasetSecret.proportion("g", "a", 1.0), 5, rng=0)
    with pytest.raises(bp.ValidationError, match=r"\(1 − p\)·n_records must be at most the rows of table with g != 'b' \(3\)"):
        model.sample(bp.DatasetSecret.proportion("g", "b", 0.0), 5, rng=0)
    with pytest.raises(bp.ValidationError, match=r"category must be a value of column 'g'; got 'c', values are \['a', 'b'\]"):
        model.sample(bp.DatasetSecret.proportion("g", "c", 0.5), 5, rng=0)
    with pytest.raises(bp.UnsupportedSecretError, match="proportions only.*mean\\(x\\)=1"):
        model.sample(bp.DatasetSecret.mean("x", 1.0), 5, rng=0)
    with pytest.raises(bp.UnsupportedSecretError, match="distribution secrets"):
        model.sample(bp.DistributionSecret("p", 0.5), 5, rng=0)
    with pytest.raises(bp.ValidationError, match="secret column must be a column"):
        model.sample(bp.DatasetSecret.proportion("nope", "a", 0.5), 5, rng=0)
    with pytest.raises(bp.UnsupportedSecretError, match="proportions only"):
        bp.calibrate(model, bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)),
                     TINY_QUERY, n_draws=10, rng=0)


def test_numeric_category():
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    batch = model.sample(bp.DatasetSecret.proportion("x", 1, 0.25), 20, rng=0, columns=["x"])
    assert np.all((batch["x"] == 1.0).sum(axis=1) == 1)
    with pytest.raises(bp.ValidationError, match="category must be a number for the numeric column 'x'"):
        model.sample(bp.DatasetSecret.proportion("x", "one", 0.25), 5, rng=0)


# -- on the Adult data ----------------------------------------------------------------------------
@pytest.mark.adult
def test_adult_datasets_have_exact_counts_and_no_repeats(adult_dir):
    from bayespriv.models.census import census_model, income_pairs, load_adult

    table = load_adult(adult_dir)
    table = table.assign(id=np.arange(len(table)))
    model = census_model(table)
    for secret in income_pairs().secrets:
        batch = model.sample(secret, 2000, rng=1, columns=["id", "income"])
        assert np.all((batch["income"] == ">50K").sum(axis=1) == round(secret.value * 100))
        ids = np.sort(batch["id"], axis=1)
        assert not np.any(ids[:, 1:] == ids[:, :-1])


@pytest.mark.parametrize("n_records", [2000, 10_000])
@pytest.mark.adult
def test_adult_large_n_has_no_repeats(adult_dir, n_records):
    """n = 2000 of 45 222 rows: k(k−1)/2N ≈ 44, the redraw path; n = 10 000 > N/8: the chunked Bernoulli bitmap."""
    from bayespriv.models.census import load_adult

    table = load_adult(adult_dir)
    table = table.assign(id=np.arange(len(table)))
    assert not subset_samplers._use_rejection(len(table), n_records)
    model = bp.EmpiricalDataModel(table, n_records)
    batch = model.sample(None, 150, rng=2, columns=["id"])
    ids = np.sort(batch["id"], axis=1)
    assert not np.any(ids[:, 1:] == ids[:, :-1])


def test_additive_fast_path_equals_materialised_records():
    """sample_query (gather rows of the feature matrix) = evaluate(sample(...)) for the same seed."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({
        "g": rng.choice(["a", "b"], 300), "x": rng.normal(size=300), "y": rng.integers(0, 5, 300).astype(float),
    })
    model = bp.EmpiricalDataModel(table, 40)
    q = bp.stack(bp.mean("x"), bp.count(lambda b: b["g"] == "a", "g"), bp.mean("y", bounds=(0, 3)))
    secret = bp.DatasetSecret.proportion("g", "a", 0.25)
    fast = model.sample_query(secret, 500, 7, q)
    slow = q.evaluate(model.sample(secret, 500, 7, columns=q.columns))
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
    assert np.all(fast[:, 1] == 10)
    np.testing.assert_array_equal(model.sample_query(secret, 500, 7, q), fast)  # cached stratum features
    import pickle

    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(clone.sample_query(secret, 50, 3, q), model.sample_query(secret, 50, 3, q))


# -- feature cache by complete fingerprint ----------------------------------------------------------
def _threshold_query(threshold: float) -> bp.Query:
    return bp.count(lambda b: b["x"] > threshold, "x", name="above")


def test_a_new_query_object_with_the_same_code_and_values_reuses_the_features():
    model = bp.EmpiricalDataModel(TINY, 3)
    first, again = _threshold_query(1.5), _threshold_query(1.5)
    assert first is not again and first.fingerprint == again.fingerprint
    assert model._features(first).H is model._features(again).H


def test_a_changed_closure_value_recomputes_the_features():
    model = bp.EmpiricalDataModel(TINY, 3)
    low, high = model._features(_threshold_query(0.5)), model._features(_threshold_query(1.5))
    assert low is not high
    np.testing.assert_array_equal(low.H[0], (TINY["x"].to_numpy(float) > 0.5).astype(float))
    np.testing.assert_array_equal(high.H[0], (TINY["x"].to_numpy(float) > 1.5).astype(float))


class _Settings:
    limit = 0.5


def test_a_query_reading_mutable_state_is_not_cached_by_fingerprint():
    """A query that reads an attribute of an object covered by its type only has no complete
    fingerprint: a new query object after the attribute changed sees the new value."""
    from bayespriv.queries.query import complete_fingerprint

    model = bp.EmpiricalDataModel(TINY, 3)
    make = lambda: bp.count(lambda b: b["x"] > _Settings.limit, "x", name="above")  # noqa: E731
    assert complete_fingerprint(make()) is None
    before = model._features(make()).H.copy()
    _Settings.limit = 1.5
    try:
        after = model._features(make()).H
    finally:
        _Settings.limit = 0.5
    np.testing.assert_array_equal(after[0], (TINY["x"].to_numpy(float) > 1.5).astype(float))
    assert not np.array_equal(before, after)


def test_string_columns_are_checked_at_construction_and_coded_on_first_use():
    table = TINY.assign(label=["u", None, "v", "u", "v", "u", "v"])
    with pytest.raises(bp.ValidationError, match=r"table must be free of missing values .*; got (None|nan) in column 'label' "
                                                 r"at row 1 \(1 missing in that column\)"):
        bp.EmpiricalDataModel(table, 3)  # even though no query or secret reads the column yet
    mixed = bp.EmpiricalDataModel(TINY.assign(label=[1, 1.0, "1", "a", "b", "a", "b"]), 3)
    assert mixed._column("label").tolist() == ["1", "1.0", "1", "a", "b", "a", "b"]


def test_stratum_feature_copies_do_not_change_the_numbers():
    """Small calibrations gather from the whole feature matrix at the global rows; once a stratum
    has been gathered from often enough, from its cached contiguous copy. Same seed, same rows:
    identical results."""
    model = bp.EmpiricalDataModel(TINY, 3)
    secret = bp.DatasetSecret.proportion("g", "a", 1 / 3)
    first = model.sample_query(secret, 1, np.random.default_rng(5), TINY_QUERY)
    assert not model._features(TINY_QUERY)._strata  # 1 draw gathers fewer records than the copy holds
    for _ in range(3 * emp._COPY_AFTER * len(TINY_QUERY.components)):
        model.sample_query(secret, 1, np.random.default_rng(6), TINY_QUERY)
    assert model._features(TINY_QUERY)._strata  # gathered often enough: the copies exist
    np.testing.assert_array_equal(first, model.sample_query(secret, 1, np.random.default_rng(5), TINY_QUERY))


def test_the_model_keeps_its_own_copy_of_the_table():
    """Modifying the user's table after construction changes nothing in the model (numbers and
    booleans are copied; text columns are copy-on-write snapshots, or deep copies before pandas 3)."""
    table = pd.DataFrame({"x": [1.0, 2.0, 3.0], "flag": [True, False, True], "s": ["a", "b", "a"]})
    model = bp.EmpiricalDataModel(table, 2)
    table.loc[0, ["x", "flag", "s"]] = [99.0, False, "zz"]
    assert model._column("x").tolist() == [1.0, 2.0, 3.0]
    assert model._column("flag").tolist() == [True, False, True]
    assert model._column("s").tolist() == ["a", "b", "a"]


# -- text columns read without coding them ------------------------------------------------------------
def _features_by_codes(model, query):
    """The features the coded path gives (h on the distinct unicode strings, gathered by code)."""
    out = []
    for comp in query.components:
        codes, distinct = model._codes(comp.columns[0])
        out.append(emp._record_values(comp, {comp.columns[0]: distinct[None, :]}, distinct.size)[codes])
    return np.array(out)


def test_plain_text_features_equal_the_coded_features():
    rng = np.random.default_rng(3)
    table = pd.DataFrame({"g": rng.choice(["ab", "b", "Ab", "ba"], 500), "x": rng.normal(size=500)})
    query = bp.stack(bp.count(lambda b: b["g"] == "ab", "g"), bp.proportion(lambda b: b["g"] > "b", "g"),
                     bp.count(lambda b: np.isin(b["g"], ["b", "Ab"]), "g"))
    model = bp.EmpiricalDataModel(table, 20)
    H = model._features(query).H
    assert "g" not in model._coded  # read as objects, never coded
    np.testing.assert_array_equal(H, _features_by_codes(bp.EmpiricalDataModel(table, 20), query))


def test_a_predicate_that_reads_objects_differently_gets_the_unicode_values():
    """Broken twin of the object path: a predicate whose answer depends on the array type is caught
    by the check on the distinct strings and evaluated on unicode, as batches hold them."""
    table = pd.DataFrame({"g": ["a", "b", "a", "c"]})
    typed = bp.count(lambda b: np.full(b["g"].shape, b["g"].dtype.kind == "U"), "g", name="unicode?")
    starts = bp.count(lambda b: np.strings.startswith(b["g"], "a"), "g", name="starts with a")  # fails on objects
    model = bp.EmpiricalDataModel(table, 2)
    np.testing.assert_array_equal(model._features(typed).H[0], [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(model._features(starts).H[0], [1.0, 0.0, 1.0, 0.0])


def test_secret_strata_of_plain_mixed_and_converted_text_columns_agree():
    rng = np.random.default_rng(4)
    labels = rng.choice(["u", "v", "w"], 300)
    plain = bp.EmpiricalDataModel(pd.DataFrame({"g": labels}), 10)
    mixed = bp.EmpiricalDataModel(pd.DataFrame({"g": [1 if v == "w" else v for v in labels]}, dtype=object), 10)
    converted = bp.EmpiricalDataModel(pd.DataFrame({"g": labels}), 10)
    converted._column("g")
    expected = np.flatnonzero(labels == "v")
    for model in (plain, mixed, converted):
        np.testing.assert_array_equal(model._strata("g", "v")[0], expected)
    assert "g" not in plain._coded and "g" in mixed._coded
    np.testing.assert_array_equal(mixed._strata("g", 1)[0], np.flatnonzero(labels == "w"))


def test_integer_columns_are_converted_on_first_use_and_kept_as_they_were():
    table = pd.DataFrame({"n": np.arange(5, dtype=np.int64), "u": np.arange(5, dtype=np.uint8)})
    model = bp.EmpiricalDataModel(table, 2)
    table.loc[0, ["n", "u"]] = [99, 7]
    assert model._column("n").dtype == np.float64 and model._column("n").tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert model._column("u").tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("gather", [1, 7, emp.GATHER_ELEMENTS])
def test_subset_sums_equal_per_component_sums_for_any_block(gather, monkeypatch):
    monkeypatch.setattr(emp, "GATHER_ELEMENTS", gather)
    rng = np.random.default_rng(5)
    H, sub = rng.normal(size=(4, 50)), rng.integers(0, 50, size=(30, 6))
    out = np.ones((30, 4))
    emp._add_subset_sums(out, H, sub)
    np.testing.assert_allclose(out, 1.0 + np.stack([H[c][sub].sum(axis=1) for c in range(4)], axis=1), rtol=1e-13, atol=1e-13)


# -- exact laws of counts (hypergeometric per stratum, convolved) ---------------------------------------
#
# Independent references: (1) enumeration of every equally likely dataset of the tiny table; (2) the
# hypergeometric probabilities written out with exact integers (math.comb, fractions), convolved by hand.
# Agreement to 1e-12 (the library's probabilities are floats from scipy: relative error ~1e-15).
# Against the draws: Pearson χ² over the support (cells merged so that each expects ≥ 20 draws), α = 1e-3
# per test (tests/_law_checks.py); the twin (a model drawing one record too many from the secret's category,
# i.e. wrong stratum sizes) must be rejected by the same test, with a power computed from the noncentral χ²
# (> 1 − 1e-9).
from fractions import Fraction  # noqa: E402

from tests._law_checks import chi2_p_value, power  # noqa: E402

LAW_ALPHA = 1e-3


def _law_by_enumeration(secret, column, category, proportion=False):
    """{value: probability} of the number (or share) of records with column == category, over every dataset."""
    ids = TINY["id"].to_numpy()
    if secret is None:
        subsets = [list(c) for c in itertools.combinations(ids, N_TINY)]
    else:
        k = round(secret.value * N_TINY)
        inside, outside = ids[TINY[secret.column] == secret.category], ids[TINY[secret.column] != secret.category]
        subsets = [list(a) + list(b) for a in itertools.combinations(inside, k)
                   for b in itertools.combinations(outside, N_TINY - k)]
    counts = [int((TINY.iloc[s][column] == category).sum()) for s in subsets]
    out: dict[float, float] = {}
    for c in counts:
        key = c / N_TINY if proportion else float(c)
        out[key] = out.get(key, 0.0) + 1.0 / len(counts)
    return out


def _as_dict(law):
    points, weights = law
    assert points.shape == (weights.size, 1) and abs(weights.sum() - 1) < 1e-12 and np.all(weights > 0)
    return dict(zip(points[:, 0].tolist(), weights.tolist()))


LAW_CASES = [
    (None, "g", "a"),
    (None, "id", 3),
    (bp.DatasetSecret.proportion("g", "a", 0.5), "g", "a"),  # the secret's own column: the count is k
    (bp.DatasetSecret.proportion("g", "b", 0.25), "g", "a"),
    (bp.DatasetSecret.proportion("g", "a", 0.25), "id", 2.0),  # a numeric column, compared as a number
    (bp.DatasetSecret.proportion("g", "a", 0.75), "id", 5),
]


@pytest.mark.parametrize("secret, column, category", LAW_CASES)
@pytest.mark.parametrize("proportion", [False, True])
def test_exact_law_equals_enumeration(secret, column, category, proportion):
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    query = (bp.proportion if proportion else bp.count)(column, category)
    got = _as_dict(model.exact_law(secret, query))
    want = {v: p for v, p in _law_by_enumeration(secret, column, category, proportion).items() if p > 0}
    assert sorted(got) == sorted(want)
    for v in want:
        assert abs(got[v] - want[v]) <= 1e-12


def _hypergeometric_exact(N: int, K: int, k: int) -> dict[int, Fraction]:
    return {x: Fraction(math.comb(K, x) * math.comb(N - K, k - x), math.comb(N, k))
            for x in range(max(0, k - (N - K)), min(k, K) + 1)}


def _convolve_exact(a: dict[int, Fraction], b: dict[int, Fraction]) -> dict[int, Fraction]:
    out: dict[int, Fraction] = {}
    for x, p in a.items():
        for y, q in b.items():
            out[x + y] = out.get(x + y, Fraction(0)) + p * q
    return out


def _census_like(n_rows=600, seed=3):
    """A table where the counted category depends on the secret's column (so the two secrets differ)."""
    g = np.random.default_rng(seed)
    sex = g.choice(["F", "M"], n_rows, p=[0.45, 0.55])
    xray = np.where(g.random(n_rows) < np.where(sex == "F", 0.15, 0.45), "pos", "neg")
    return pd.DataFrame({"sex": sex, "xray": xray})


def test_exact_law_equals_hypergeometrics_in_exact_arithmetic():
    table = _census_like()
    model = bp.EmpiricalDataModel(table, 40)
    secret = bp.DatasetSecret.proportion("sex", "F", 0.35)
    k = 14
    inside, outside = table[table.sex == "F"], table[table.sex != "F"]
    exact = _convolve_exact(_hypergeometric_exact(len(inside), int((inside.xray == "pos").sum()), k),
                            _hypergeometric_exact(len(outside), int((outside.xray == "pos").sum()), 40 - k))
    got = _as_dict(model.exact_law(secret, bp.count("xray", "pos")))
    assert set(got) == {float(x) for x, p in exact.items() if float(p) > 0}
    assert max(abs(got[float(x)] - float(p)) for x, p in exact.items() if float(p) > 0) <= 1e-12
    # without a secret: one hypergeometric over the whole table
    whole = _hypergeometric_exact(len(table), int((table.xray == "pos").sum()), 40)
    got = _as_dict(model.exact_law(None, bp.count("xray", "pos")))
    assert max(abs(got.get(float(x), 0.0) - float(p)) for x, p in whole.items()) <= 1e-12


def test_calibration_draws_follow_the_exact_law_and_the_wrong_stratum_sizes_twin_is_rejected():
    """χ² at α = 1e-3: the calibration's draws fit the exact law; the law of a model drawing one record
    too many from the secret's category (wrong stratum sizes) is rejected (power > 1 − 1e-9, computed)."""
    table = _census_like()
    model = bp.EmpiricalDataModel(table, 50)
    query = bp.count("xray", "pos")
    secret = bp.DatasetSecret.proportion("sex", "F", 0.3)
    n = 20_000
    cal = bp.calibrate(model, bp.SecretPair(secret, bp.DatasetSecret.proportion("sex", "F", 0.5)), query,
                       n_draws=n, rng=11)
    law = model.exact_law(secret, query)
    draws = cal.sample_array[cal.index(secret), :, 0]
    assert chi2_p_value(draws, law) > LAW_ALPHA
    twin = OneTooMany(table, 50).exact_law(secret, query)
    assert power(law, twin, n, LAW_ALPHA) > 1 - 1e-9
    assert chi2_p_value(draws, twin) < LAW_ALPHA


def test_draws_without_a_secret_follow_the_exact_law():
    """χ² at α = 1e-3 for a share without a secret (one hypergeometric over the whole table)."""
    model = bp.EmpiricalDataModel(_census_like(), 50)
    query = bp.proportion("xray", "pos")
    draws = model.sample_query(None, 20_000, np.random.default_rng(12), query)[:, 0]
    assert chi2_p_value(draws, model.exact_law(None, query)) > LAW_ALPHA


def test_exact_law_only_for_queries_that_say_what_they_count():
    model = bp.EmpiricalDataModel(TINY, N_TINY)
    secret = bp.DatasetSecret.proportion("g", "a", 0.5)
    assert model.exact_law(secret, bp.count(lambda b: b["g"] == "a", "g")) is None  # opaque predicate
    assert model.exact_law(secret, bp.mean("x")) is None
    assert model.exact_law(secret, bp.stack(bp.count("g", "a"), bp.count("g", "b"))) is None
    with pytest.raises(bp.ValidationError, match="a number for the numeric column 'x'"):
        model.exact_law(secret, bp.count("x", "1.0"))
    with pytest.raises(bp.errors.UnsupportedSecretError):
        model.exact_law(bp.DatasetSecret.mean("x", 1.0), bp.count("g", "a"))
