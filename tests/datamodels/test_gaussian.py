"""GaussianDataModel: exact conditioning and the closed form of §4.2.

F = mean(j) given mean(i) = a is exactly Gaussian, so the tolerances below are
exact (no CLT): Δ̂ − Δ ~ N(0, 2σ²/N) and (N−1)s²/σ² ~ χ²_{N−1}, with N draws.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import bayespriv as bp

N_RECORDS = 40
N_DRAWS = 3000


def _spd(seed: int, m: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    return A @ A.T + 0.5 * np.eye(m)


COVS = [_spd(s) for s in (1, 2, 3)] + [np.array([[4.0, -1.9, 0.0], [-1.9, 1.0, 0.2], [0.0, 0.2, 2.0]])]
COLS = ["x0", "x1", "x2"]


class ShiftOnlySecretColumn(bp.GaussianDataModel):
    """Broken twin: forces the column mean but forgets to shift correlated columns."""

    def _sample(self, secret, n_draws, rng, columns):
        z = rng.standard_normal((n_draws, self.n_records, len(self.columns)))
        x = self.mean + z @ self._factor.T
        i = self.columns.index(secret.column)
        x[:, :, i] += (secret.value - x[:, :, i].mean(axis=1))[:, None]
        return {c: x[:, :, self.columns.index(c)] for c in columns}


def _closed_form(V, i, j, a, b, n):
    return abs(V[i, j] / V[i, i]) * abs(a - b), (V[j, j] - V[i, j] ** 2 / V[i, i]) / n


def _checks(model_cls, V, rng):
    """Return (sensitivity ok, variance ok) for mean(j) under mean(i)=a vs b.

    False-failure probability α = 1e-4 per call, split (Bonferroni) over one
    normal check of Δ̂ and two exact χ² checks of the two variances.
    """
    i, j, a, b = 0, 1, -1.0, 2.0
    model = model_cls(np.arange(3.0), V, COLS, N_RECORDS)
    pair = bp.SecretPair(bp.DatasetSecret.mean(COLS[i], a), bp.DatasetSecret.mean(COLS[i], b))
    cal = bp.calibrate(model, pair, bp.mean(COLS[j]), n_draws=N_DRAWS, rng=rng)
    delta, var = _closed_form(V, i, j, a, b, N_RECORDS)
    alpha = 1e-4 / 3
    z = stats.norm.isf(alpha / 2)
    sens_ok = abs(cal.sensitivity(1) - delta) <= z * np.sqrt(2 * var / N_DRAWS)
    lo, hi = stats.chi2.ppf([alpha / 4, 1 - alpha / 4], N_DRAWS - 1) / (N_DRAWS - 1)
    var_ok = all(lo <= c[0, 0] / var <= hi for c in cal.covs.values())
    return sens_ok, var_ok


@pytest.mark.parametrize("idx", range(len(COVS)))
def test_calibrated_sensitivity_and_variance_match_closed_form(idx):
    assert _checks(bp.GaussianDataModel, COVS[idx], rng=100 + idx) == (True, True)


@pytest.mark.parametrize("idx", range(len(COVS)))
def test_broken_conditioning_is_caught(idx):
    sens_ok, _ = _checks(ShiftOnlySecretColumn, COVS[idx], rng=100 + idx)
    assert not sens_ok


def test_every_drawn_dataset_has_the_secret_mean_exactly():
    model = bp.GaussianDataModel([1, 2, 3], COVS[0], COLS, 25)
    batch = model.sample(bp.DatasetSecret.mean("x2", 7.5), 100, rng=0)
    np.testing.assert_allclose(batch["x2"].mean(axis=1), 7.5, atol=1e-10)


def test_moments_closed_form_matches_section_4_2():
    V = COVS[3]
    model = bp.GaussianDataModel([0.0, 1.0, 2.0], V, COLS, N_RECORDS)
    m, c = model.moments(bp.DatasetSecret.mean("x0", 2.0), bp.mean("x1"))
    assert m[0] == pytest.approx(1.0 + V[0, 1] / V[0, 0] * 2.0)
    assert c[0, 0] == pytest.approx((V[1, 1] - V[0, 1] ** 2 / V[0, 0]) / N_RECORDS)


def test_moments_of_a_stacked_linear_query_match_sampling():
    """Vector query: sample mean within 5 s.e. per component (α ≈ 6e-7 each, CLT exact here)."""
    V = COVS[1]
    model = bp.GaussianDataModel([0.0, 1.0, 2.0], V, COLS, 10)
    q = bp.stack(bp.mean("x1"), bp.mean("x2"))
    secret = bp.DatasetSecret.mean("x0", 1.0)
    m, c = model.moments(secret, q)
    draws = q(model.sample(secret, 20000, rng=5))
    se = np.sqrt(np.diag(c) / 20000)
    assert np.all(np.abs(draws.mean(0) - m) <= 5 * se)


def test_unsupported_secrets_are_refused():
    model = bp.GaussianDataModel([0, 0, 0], COVS[0], COLS, 10)
    with pytest.raises(bp.UnsupportedSecretError, match="column means"):
        model.sample(bp.DatasetSecret.proportion("x0", 1, 0.5), 5, rng=0)
    with pytest.raises(bp.UnsupportedSecretError, match="distribution secrets"):
        model.sample(bp.DistributionSecret("p", 0.5), 5, rng=0)
    with pytest.raises(bp.ValidationError, match="secret column"):
        model.sample(bp.DatasetSecret.mean("nope", 1.0), 5, rng=0)
    with pytest.raises(bp.UnsupportedSecretError, match="linear query"):
        model.moments(None, bp.mean("x0", bounds=(0, 1)))


def test_constructor_validation():
    with pytest.raises(bp.ValidationError, match="mean must be of length 3"):
        bp.GaussianDataModel([0, 0], COVS[0], COLS, 10)
    with pytest.raises(bp.ValidationError, match="symmetric"):
        bp.GaussianDataModel([0, 0, 0], np.triu(COVS[0]), COLS, 10)
    with pytest.raises(bp.ValidationError, match="semi-definite"):
        bp.GaussianDataModel([0, 0, 0], -np.eye(3), COLS, 10)
    with pytest.raises(bp.ValidationError, match="n_records"):
        bp.GaussianDataModel([0, 0, 0], COVS[0], COLS, 0)


def _batched_product(model, secret, n_draws, rng, columns):
    """The sampler as first written: Z (n_draws, n_records, m) at once, X = μ + Z Lᵀ as a 3-D batched product."""
    z = rng.standard_normal((n_draws, model.n_records, len(model.columns)))
    x = model.mean + z @ model._factor.T
    if secret is not None:
        i = model.columns.index(secret.column)
        shift = secret.value - x[:, :, i].mean(axis=1)
        x += shift[:, None, None] * (model.cov[:, i] / model.cov[i, i])
    return {c: x[:, :, model.columns.index(c)] for c in columns}


@pytest.mark.parametrize("one_thread", [1 << 17, 45])
@pytest.mark.parametrize("block", [1 << 18, 50, 1])
@pytest.mark.parametrize("secret", [None, bp.DatasetSecret.mean("x1", 0.7)])
@pytest.mark.parametrize("columns", [COLS, ["x2"], ["x2", "x0"]])
def test_sampling_draws_the_numbers_of_the_batched_product(monkeypatch, one_thread, block, secret, columns):
    """Same seed, same datasets as the 3-D batched product, up to floating-point rounding (blocks of
    records drawn in order give the same standard normals; only the products' summation order may
    differ), for blocks of every size (one block; 16 records, across the 17-record datasets; one
    record; 5 to 15 records when the one-thread product bound is 45 multiply-adds), with and without
    a mean secret, for column subsets with or without the secret's column."""
    from bayespriv.datamodels import gaussian

    monkeypatch.setattr(gaussian, "BLOCK_ELEMENTS", block)
    monkeypatch.setattr(gaussian, "BLAS_ONE_THREAD_MULADDS", one_thread)
    monkeypatch.setattr(gaussian, "MIN_BLOCK_RECORDS", 1)
    model = bp.GaussianDataModel([1.0, -2.0, 3.0], COVS[3], COLS, 17)
    new = model.sample(secret, 7, rng=11, columns=columns)
    old = _batched_product(model, secret, 7, np.random.default_rng(11), columns)
    assert list(new) == list(columns)
    for c in columns:
        assert new[c].shape == (7, 17) and new[c].flags.c_contiguous
        np.testing.assert_allclose(new[c], old[c], rtol=1e-12, atol=1e-12)


def test_blocks_stay_under_the_one_thread_product_bound_unless_too_few_records():
    from bayespriv.datamodels import gaussian

    for n_rows, m in [(1, 3), (3, 3), (5, 5), (2, 40)]:
        records = gaussian._block_records(n_rows, m)
        assert records * n_rows * m <= gaussian.BLAS_ONE_THREAD_MULADDS
        assert records >= gaussian.MIN_BLOCK_RECORDS and records * m <= gaussian.BLOCK_ELEMENTS
    wide = gaussian._block_records(200, 200)  # a one-thread block would hold 3 records: full blocks instead
    assert wide == gaussian.BLOCK_ELEMENTS // 200


def test_sampling_memory_is_the_output_and_one_block(monkeypatch):
    """Peak memory of a draw: the returned columns plus one block of standard normals, not three
    full-size arrays (Z, Z Lᵀ, μ + Z Lᵀ) as the batched product held."""
    import tracemalloc

    from bayespriv.datamodels import gaussian

    monkeypatch.setattr(gaussian, "BLOCK_ELEMENTS", 1 << 18)
    n_draws, n_records = 20, 50_000
    model = bp.GaussianDataModel([0.0, 1.0, 2.0], COVS[0], COLS, n_records)
    output = 8 * n_draws * n_records * len(COLS)
    block = 8 * ((1 << 18) // 3) * 3
    tracemalloc.start()
    try:
        batch = model.sample(bp.DatasetSecret.mean("x0", 1.0), n_draws, rng=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert batch["x1"].shape == (n_draws, n_records)
    assert peak <= output + 2 * block + (1 << 20), (peak, output, block)
