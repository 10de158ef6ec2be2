"""The hospital model of §4.2 against its closed forms.

Statistical checks (:func:`moment_failures`): given exactly k = p·n women, each
average F is exactly Gaussian N(μ, v) with (μ, v) from ``exact_moments``. With
N draws, the sample mean satisfies |x̄ − μ| ≤ z·sqrt(v/N) with probability
1 − a for z = Φ⁻¹(1 − a/2), and (N − 1)s²/v is χ²_{N−1}, inside its a/2 and
1 − a/2 quantiles with probability 1 − a. With m checks and a = α/m
(Bonferroni), a correct model fails any of them with probability at most
α = 1e-6, whatever the seed; the seed is fixed only for determinism.

Power against the broken twin (gender i.i.d. Bernoulli(p) instead of exactly
p·n women): the means agree but the variance of the average grows by
(shift per unit share)²·p(1 − p)/n: ×1.24 for weight and ×1.77 for blood
pressure at p = 0.26, while with N = 5000 the χ² check tolerates about ±11%.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, norm

import bayespriv as bp
from bayespriv.errors import PrivacyAssumptionWarning, UnsupportedSecretError, ValidationError
from bayespriv.models import hospital as H

ALPHA = 1e-6
SHARES = (0.26, 0.5, 0.74)
N_DRAWS = 5000


def share(p: float) -> bp.DatasetSecret:
    return bp.DatasetSecret.proportion("gender", "female", p)


def moment_failures(model: bp.DataModel, *, n_draws: int = N_DRAWS, shares=SHARES, alpha: float = ALPHA, rng=0) -> list[str]:
    """Checks of mean and variance of every query at every share that fail; [] for a correct model
    except with probability at most ``alpha`` (see the module docstring)."""
    m = 2 * len(shares) * len(H.QUERIES)
    a = alpha / m
    z = norm.isf(a / 2)
    lo, hi = chi2.ppf(a / 2, n_draws - 1), chi2.isf(a / 2, n_draws - 1)
    gen = np.random.default_rng(rng)
    failures = []
    for p in shares:
        batch = model.sample(share(p), n_draws, gen)
        for name, query in H.QUERIES.items():
            x = query(batch)[:, 0]
            mu, v = H.exact_moments(name, p, model.n_records)
            if abs(x.mean() - mu) > z * np.sqrt(v / n_draws):
                failures.append(f"mean of {name} at p={p}: {x.mean():.5g} vs {mu:.5g}")
            stat = (n_draws - 1) * x.var(ddof=1) / v
            if not lo <= stat <= hi:
                failures.append(f"variance of {name} at p={p}: {x.var(ddof=1):.5g} vs {v:.5g}")
    return failures


def bernoulli_twin(n_records: int = 50) -> bp.FunctionDataModel:
    """Broken: draws gender i.i.d. Bernoulli(p) instead of fixing exactly p·n women."""

    def sampler(secret, n_draws, rng):
        female = rng.random((n_draws, n_records)) < secret.value
        return H._draw(female, rng)

    return bp.FunctionDataModel(sampler, columns=H.COLUMNS, n_records=n_records, secret_kinds=(bp.DatasetSecret,))


# -- conditioning ---------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.0, 0.02, 0.26, 0.5, 0.74, 1.0])
def test_exactly_k_women_in_every_dataset(p):
    model = H.hospital_model()
    batch = model.sample(share(p), 3000, rng=1)
    women = (batch["gender"] == "female").sum(axis=1)
    assert np.all(women == round(p * 50))
    assert set(np.unique(batch["gender"])) <= {"female", "other"}
    for col in H.COLUMNS:
        assert batch[col].shape == (3000, 50)


def test_women_are_not_always_in_the_same_records():
    batch = H.hospital_model().sample(share(0.5), 200, rng=2)
    female = batch["gender"] == "female"
    # Each position is female in about half the draws (positions are shuffled per draw).
    assert 0.2 < female.mean(axis=0).min() and female.mean(axis=0).max() < 0.8


def test_moments_match_closed_forms():
    assert moment_failures(H.hospital_model()) == []


def test_moments_match_closed_forms_for_another_n():
    model = H.hospital_model(20)
    assert moment_failures(model, shares=(0.3, 0.5, 0.7)) == []


def test_broken_twin_is_caught_by_the_same_check():
    failures = moment_failures(bernoulli_twin())
    assert failures
    assert any("variance of average blood pressure" in f for f in failures)
    assert any("variance of average weight" in f for f in failures)


def test_exact_moments_values():
    assert H.exact_moments("average weight", 0.5) == pytest.approx((3.6 * 67.5 - 90, (225 + 3.6**2 * 9) / 50))
    assert H.exact_moments("average blood pressure", 0.26) == pytest.approx((100 * 0.26 + 106 * 0.74, 9 / 50))
    assert H.exact_moments("average temperature", 0.74) == pytest.approx((98.6, 0.25 / 50))


# -- refusals ------------------------------------------------------------------------------------
def test_share_that_is_not_a_whole_number_of_patients_is_refused():
    model = H.hospital_model()
    with pytest.raises(UnsupportedSecretError, match=r"p=0\.33, n_records=50"):
        model.sample(share(0.33), 10, rng=0)
    with pytest.raises(UnsupportedSecretError, match=r"p=0\.33, n_records=50"):
        bp.calibrate(model, bp.SecretPair(share(0.33), share(0.5)), H.QUERIES["average weight"], n_draws=10, rng=0)
    with pytest.raises(UnsupportedSecretError, match=r"p=0\.33, n_records=50"):
        H.exact_moments("average weight", 0.33)


def test_only_the_share_of_women_is_accepted():
    model = H.hospital_model()
    with pytest.raises(UnsupportedSecretError, match="DatasetSecret"):
        model.sample(bp.DistributionSecret("p_female", 0.5), 10, rng=0)
    with pytest.raises(UnsupportedSecretError, match="share of women"):
        model.sample(bp.DatasetSecret.proportion("gender", "other", 0.5), 10, rng=0)
    with pytest.raises(UnsupportedSecretError, match="share of women"):
        model.sample(bp.DatasetSecret.mean("height", 66.0), 10, rng=0)
    with pytest.raises(ValidationError, match="query_name"):
        H.exact_moments("average height", 0.5)


# -- the rest of the module ---------------------------------------------------------------------
def test_secret_pairs_are_below_vs_above_half():
    pairs = H.secret_pairs()
    assert len(pairs) == 144
    below = sorted({p.a.value for p in pairs})
    above = sorted({p.b.value for p in pairs})
    assert below == pytest.approx([k / 50 for k in range(13, 25)])
    assert above == pytest.approx([k / 50 for k in range(26, 38)])
    assert all(p.a == share(p.a.value) for p in pairs)


def test_sample_hospital_is_one_reproducible_dataframe():
    df = H.sample_hospital(7)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == list(H.COLUMNS) and len(df) == 50
    assert set(df["gender"]) <= {"female", "other"}
    pd.testing.assert_frame_equal(df, H.sample_hospital(7))
    assert H.QUERIES["average weight"](df).shape == (1,)


def test_paper_values_give_the_papers_classic_sigma2():
    expected = {"average weight": 530.54, "average blood pressure": 87.14, "average temperature": 0.00022}
    a, b = share(0.25), share(0.5)
    for name, paper in H.PAPER.items():
        cal = bp.Calibration.from_moments({a: [0.0], b: [paper.sensitivity]},
                                          {a: [[paper.variance]], b: [[paper.variance]]}, bp.SecretPair(a, b))
        with pytest.warns(PrivacyAssumptionWarning, match="epsilon < 1"):
            mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3, gaussian_calibration="classic")
        assert mech.sigma2 == pytest.approx(expected[name], abs=5e-3 if expected[name] > 1 else 5e-6)
    assert H.PAPER["average temperature"].reported_error == "no noise"
    assert H.PAPER["average weight"].reported_error == "18.90"
