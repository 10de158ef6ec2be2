"""What a release tells its recipient: the noise it carries, the error per component, intervals,
clipping into the query's range, and how it prints.

Statistical tests use fixed seeds and tolerances derived for a stated false-failure probability
(α in each docstring, Bonferroni over the statistics of one test), each with a twin showing that a
wrong recorded noise law (or interval) is caught by the same check.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.mechanisms import APGM, EigM, ExpM
from bayespriv.noise import BitSource, plan_gaussian, plan_laplace
from bayespriv.privacy.guarantee import Guarantee, Release
from bayespriv.noise.release_noise import ReleaseNoise, noise_of_plans

COV = np.array([[1.0, 0.6], [0.6, 2.0]])
#: Directions along which a recorded covariance is checked: the axes and both diagonals (the
#: diagonals see the off-diagonal entries).
DIRECTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]]) / np.array([[1.0], [1.0], [2**0.5], [2**0.5]])


def _calibration(n_records: int = 50, query=None):
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    return bp.Calibration.from_moments({a: np.zeros(2), b: np.array([0.5, 0.2])}, {a: COV, b: COV},
                                       [bp.SecretPair(a, b)], query=query, n_records=n_records)


def _noise_draws(mech, m: int, seed: int) -> np.ndarray:
    """``m`` releases of the answer 0 through the release path (exact sampler, seeded bits)."""
    gen = np.random.default_rng(seed)
    return np.array([mech.release_value(np.zeros(mech.k), rng=gen).value for _ in range(m)])


def _gaussian_law_holds(draws: np.ndarray, cov: np.ndarray, alpha: float) -> bool:
    """Two-sided χ² test of Var(uᵀN) = uᵀ cov u along each of DIRECTIONS (mean 0 is known):
    m·mean((uᵀN)²)/uᵀcov u ~ χ²_m. Bonferroni: false-failure probability ≤ alpha."""
    m, j = draws.shape[0], len(DIRECTIONS)
    lo, hi = stats.chi2.ppf([alpha / (2 * j), 1 - alpha / (2 * j)], m)
    proj = draws @ DIRECTIONS.T
    stat = (proj**2).sum(axis=0) / np.einsum("ij,jk,ik->i", DIRECTIONS, cov, DIRECTIONS)
    return bool(np.all((lo <= stat) & (stat <= hi)))


def _laplace_law_holds(coeffs: np.ndarray, scale: np.ndarray, alpha: float) -> bool:
    """Coefficients of Laplace noise of scale b: Σ_i |c_i|/b ~ Gamma(m, 1) per direction, two-sided.
    Bonferroni over the directions: false-failure probability ≤ alpha."""
    m, d = coeffs.shape
    lo, hi = stats.gamma.ppf([alpha / (2 * d), 1 - alpha / (2 * d)], m)
    stat = np.abs(coeffs).sum(axis=0) / scale
    return bool(np.all((lo <= stat) & (stat <= hi)))


# -- the recorded noise is the noise drawn ------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda cal: EigM(cal, epsilon=1.0, delta=1e-5),
                                  lambda cal: APGM(cal, epsilon=1.0, delta=1e-5)], ids=["EigM", "APGM"])
def test_recorded_gaussian_covariance_is_what_the_mechanism_drew(make):
    """α = 1e-6. 3000 releases through the release path (EigM: correlated noise; APGM: isotropic); twins:
    the same draws against the covariance recorded 0.7 times too small, or (EigM) with the sign of its
    correlation flipped, are rejected."""
    mech = make(_calibration())
    recorded = mech.release_value(np.zeros(2), rng=0).noise_cov
    np.testing.assert_allclose(recorded, mech.noise_cov, rtol=1e-12)
    draws = _noise_draws(mech, 3000, seed=1)
    assert _gaussian_law_holds(draws, recorded, alpha=1e-6)
    assert not _gaussian_law_holds(draws, 0.7 * recorded, alpha=1e-6)
    if recorded[0, 1] != 0:
        assert abs(recorded[0, 1]) > 0.2 * math.sqrt(recorded[0, 0] * recorded[1, 1])  # correlated enough to matter
        assert not _gaussian_law_holds(draws, recorded * np.array([[1.0, -1.0], [-1.0, 1.0]]), alpha=1e-6)


def test_recorded_correlated_gaussian_plan_matches_its_draws():
    """α = 1e-6. A plan of correlated noise (ρ = 0.6): the law a Release records from the plan against
    3000 exact draws; twin: the sign of the correlation flipped is rejected."""
    cov = np.array([[4.0, 2.4], [2.4, 8.0]])
    plan = plan_gaussian(cov)
    law = noise_of_plans(2, plan)
    np.testing.assert_allclose(law.cov, cov, rtol=1e-9)
    bits = BitSource.from_rng(np.random.default_rng(3))
    draws = np.array([plan.release(np.zeros(2), bits) for _ in range(3000)])
    assert _gaussian_law_holds(draws, law.cov, alpha=1e-6)
    assert not _gaussian_law_holds(draws, law.cov * np.array([[1.0, -1.0], [-1.0, 1.0]]), alpha=1e-6)


def test_recorded_laplace_scale_is_what_the_mechanism_drew():
    """α = 1e-6. 3000 releases of ExpM(L) through the release path: |N_c|/b_c summed is Gamma(m, 1);
    twin: the same draws against a recorded scale 0.75 b (or 1.25 b) are rejected."""
    mech = ExpM(_calibration(), epsilon=1.0, noise="laplace")
    release = mech.release_value(np.zeros(2), rng=0)
    scale, basis = release.noise_scale, release.noise_basis
    np.testing.assert_allclose(scale, mech.noise_scale, rtol=1e-12)
    np.testing.assert_array_equal(basis, mech.noise_basis)
    draws = _noise_draws(mech, 3000, seed=4)
    coeffs = np.linalg.solve(basis, draws.T).T
    assert _laplace_law_holds(coeffs, scale, alpha=1e-6)
    assert not _laplace_law_holds(coeffs, 0.75 * scale, alpha=1e-6)
    assert not _laplace_law_holds(coeffs, 1.25 * scale, alpha=1e-6)
    np.testing.assert_allclose(release.noise_sd, np.sqrt(2.0) * scale, rtol=1e-12)


def test_laplace_along_a_rotated_basis_records_its_directions():
    """α = 1e-6. A plan along the diagonals: the recorded basis and scales explain the draws (their
    coefficients in the recorded basis are Laplace of the recorded scales); twin: the draws read in the
    axis basis instead are rejected."""
    basis = np.array([[1.0, 1.0], [1.0, -1.0]]) / 2**0.5
    scale = np.array([1.0, 3.0])
    law = noise_of_plans(2, plan_laplace(scale, basis))
    np.testing.assert_allclose(law.laplace_scale, scale, rtol=1e-12)
    np.testing.assert_array_equal(law.laplace_basis, basis)
    np.testing.assert_allclose(law.sd, np.sqrt(2 * (basis**2) @ scale**2), rtol=1e-12)  # sd implied per component
    plan = plan_laplace(scale, basis)
    bits = BitSource.from_rng(np.random.default_rng(5))
    draws = np.array([plan.release(np.zeros(2), bits) for _ in range(3000)])
    assert _laplace_law_holds(np.linalg.solve(law.laplace_basis, draws.T).T, law.laplace_scale, alpha=1e-6)
    assert not _laplace_law_holds(draws, law.laplace_scale, alpha=1e-6)


# -- intervals --------------------------------------------------------------------------------------------


LAWS = {
    "gaussian": ReleaseNoise.of(2, COV),
    "laplace on the axes": ReleaseNoise.of(2, None, (np.array([1.0, 2.0]), np.eye(2))),
    "laplace along the diagonals": ReleaseNoise.of(2, None, (np.array([1.0, 3.0]),
                                                             np.array([[1.0, 1.0], [1.0, -1.0]]) / 2**0.5)),
    "gaussian plus laplace": ReleaseNoise.of(2, COV, (np.array([0.5, 1.5]), np.array([[1.0, 0.0], [0.6, 0.8]]))),
}


def _sample(law: ReleaseNoise, m: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros((m, law.k))
    if law.gaussian_cov is not None:
        out += rng.multivariate_normal(np.zeros(law.k), law.gaussian_cov, size=m)
    if law.laplace_scale is not None:
        out += rng.laplace(size=(m, law.laplace_scale.size)) * law.laplace_scale @ law.laplace_basis.T
    return out


def _coverage_holds(draws: np.ndarray, half_width: np.ndarray, level: float, alpha: float) -> bool:
    """How many draws fall within ±h, per component, is Binomial(m, level): two-sided, Bonferroni over
    components, false-failure probability ≤ alpha."""
    m, k = draws.shape
    lo, hi = stats.binom.ppf([alpha / (2 * k), 1 - alpha / (2 * k)], m, level)
    inside = (np.abs(draws) <= half_width).sum(axis=0)
    return bool(np.all((lo <= inside) & (inside <= hi)))


@pytest.mark.parametrize("name", list(LAWS))
@pytest.mark.parametrize("level", [0.5, 0.95])
def test_interval_half_width_has_its_coverage(name, level):
    """α = 1e-6 per case. 200,000 draws of each law (NumPy, independent of the library's samplers): the
    share within ±h is Binomial(m, level); twin: h shrunk by 8 % is rejected."""
    law = LAWS[name]
    h = law.half_width(level)
    draws = _sample(law, 200_000, np.random.default_rng(6))
    assert _coverage_holds(draws, h, level, alpha=1e-6)
    assert not _coverage_holds(draws, 0.92 * h, level, alpha=1e-6)


def test_interval_of_a_release_covers_the_true_answer():
    """α = 1e-6. 2000 releases of a known answer through the release path: the 90 % intervals contain it
    a Binomial(2000, 0.9) number of times per component; twin: intervals at level 0.8 claimed as 0.9
    are rejected."""
    mech = APGM(_calibration(), epsilon=1.0, delta=1e-5)
    truth = np.array([3.0, -1.0])
    gen = np.random.default_rng(7)
    releases = [mech.release_value(truth, rng=gen) for _ in range(2000)]
    h90 = releases[0].interval(0.9)[:, 1] - releases[0].value
    h80 = releases[0].interval(0.8)[:, 1] - releases[0].value
    errors = np.array([r.value for r in releases]) - truth
    assert _coverage_holds(errors, h90, 0.9, alpha=1e-6)
    assert not _coverage_holds(errors, h80, 0.9, alpha=1e-6)
    lows, highs = np.array([r.interval(0.9) for r in releases]).transpose(2, 0, 1)
    np.testing.assert_allclose(highs - lows, np.broadcast_to(2 * h90, highs.shape), rtol=1e-12)


def test_closed_form_half_widths():
    assert ReleaseNoise.of(1, np.array([[4.0]])).half_width(0.95)[0] == pytest.approx(2 * 1.959963984540054)
    assert ReleaseNoise.of(1, None, (np.array([2.0]), np.eye(1))).half_width(0.9)[0] == pytest.approx(2 * math.log(10))
    assert ReleaseNoise.of(2, None).half_width(0.9).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 1.5, float("nan"), "0.9", True])
def test_interval_level_must_be_a_probability(level):
    release = APGM(_calibration(), epsilon=1.0, delta=1e-5).release_value(np.zeros(2), rng=0)
    with pytest.raises(bp.BayesPrivError, match="level"):
        release.interval(level)


# -- clipping into the query's valid range ------------------------------------------------------------------


def _count_mechanism(n: int = 20):
    query = bp.stack(bp.count(lambda b: b["x"] > 0, "x"), bp.proportion(lambda b: b["x"] > 0, "x"),
                     bp.mean("x", bounds=(-1.0, 1.0)))
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    cov = np.diag([4.0, 0.01, 0.04])
    cal = bp.Calibration.from_moments({a: np.array([6.0, 0.3, -0.2]), b: np.array([14.0, 0.7, 0.2])}, {a: cov, b: cov},
                                      [bp.SecretPair(a, b)], query=query, n_records=n)
    return ExpM(cal, epsilon=0.05, noise="laplace"), pd.DataFrame({"x": np.linspace(-1.0, 1.0, n)})


def test_valid_range_is_the_querys():
    mech, data = _count_mechanism(20)
    release = mech.release(data, rng=0)
    assert release.valid_range.tolist() == [[0.0, 20.0], [0.0, 1.0], [-1.0, 1.0]]
    unbounded = APGM(_calibration(), epsilon=1.0, delta=1e-5).release_value(np.zeros(2), rng=0)
    assert np.all(np.isinf(unbounded.valid_range)) and unbounded.clipped().value.tolist() == unbounded.value.tolist()


def test_clipping_stays_in_range_is_idempotent_and_only_when_asked():
    """Noise far wider than the ranges (ε = 0.05): raw values leave them; clipped ones never do; the value
    released without clip=True is the raw one, untouched."""
    mech, data = _count_mechanism(20)
    outside = 0
    for seed in range(40):
        raw = mech.release(data, rng=np.random.default_rng(seed))
        kept = mech.release(data, rng=np.random.default_rng(seed), options=bp.ReleaseOptions(clip=True))
        lo, hi = kept.valid_range.T
        assert np.all((lo <= kept.value) & (kept.value <= hi)) and kept.postprocessed == ("clip",)
        assert raw.postprocessed == () and np.array_equal(kept.value, np.clip(raw.value, lo, hi))
        assert np.array_equal(raw.clipped().value, kept.value)
        again = kept.clipped()
        assert np.array_equal(again.value, kept.value) and again.postprocessed == ("clip",)
        outside += int(np.any((raw.value < lo) | (raw.value > hi)))
    assert outside > 20  # the raw releases did leave the range: clipping was exercised, never applied unasked


def test_clipped_interval_stays_in_range_and_keeps_its_coverage():
    """α = 1e-6. The interval of a clipped release is the raw interval's centre moved into the range and
    intersected with it: still covering the truth (in the range) at least as often as the raw one."""
    mech, data = _count_mechanism(20)
    truth = mech.calibration.query(data)
    covered = np.zeros(3)
    for seed in range(300):
        r = mech.release(data, rng=np.random.default_rng(1000 + seed), options=bp.ReleaseOptions(clip=True))
        low, high = r.interval(0.9).T
        assert np.all(r.valid_range[:, 0] <= low) and np.all(high <= r.valid_range[:, 1])
        covered += (low <= truth) & (truth <= high)
    lower = stats.binom.ppf(1e-6 / 3, 300, 0.9)
    assert np.all(covered >= lower)


def test_clip_argument_is_checked_before_anything_is_spent(tmp_path):
    mech, data = _count_mechanism(20)
    ledger = bp.Ledger(tmp_path / "l.sqlite")
    ledger.set_budget("p", 1.0)
    with pytest.raises(bp.BayesPrivError, match="clip must be True or False"):
        mech.release(data, ledger=ledger, options=bp.ReleaseOptions(clip="yes"))
    assert ledger.spent("p") == (0.0, 0.0)
    ledger.close()


# -- printing and JSON ------------------------------------------------------------------------------------


def _hand_release(value, var, names=("mean(weight)",), **kw) -> Release:
    noise = ReleaseNoise.of(len(value), np.diag(var))
    return Release(np.array(value), Guarantee(1.0, 1e-5, 1.0), "APGM", False, query="q", component_names=names, noise=noise, **kw)


def test_a_scalar_release_prints_as_a_scalar_with_its_noise_sd():
    r = _hand_release([148.52080816], [12.3**2])
    assert str(r) == "mean(weight) = 148.52 ± 12.3 (sd)"
    assert "mean(weight)=148.52 ± 12.3 (sd)" in repr(r) and "[" not in repr(r).split(";")[0]
    assert str(_hand_release([0.4123456], [0.0123**2], ("share",))) == "share = 0.41235 ± 0.0123 (sd)"
    assert str(_hand_release([1234567.0], [1234.0**2], ("total",))) == "total = 1234567 ± 1234 (sd)"
    noiseless = Release(np.array([2.5]), Guarantee(1.0, 0.0, 1.0), "Noiseless", False, query="q", component_names=("m",),
                        noise=ReleaseNoise.of(1, None))
    assert noiseless.summary() == ("m = 2.5 (no noise)",)
    first, why = str(noiseless).splitlines()  # a noiseless release says why that is honest
    assert first == "m = 2.5 (no noise)" and why.startswith("no noise: under the adversary's model")
    assert "(ε=1, δ=0)" in why


def test_a_vector_release_prints_one_line_per_component():
    r = _hand_release([1.0, 20.5], [0.25, 4.0], ("a", "b"))
    assert str(r).splitlines() == ["a = 1.0000 ± 0.500 (sd)", "b = 20.500 ± 2.00 (sd)"]


def test_json_round_trip_keeps_everything_a_recipient_reads():
    mech, data = _count_mechanism(20)
    release = mech.release(data, rng=3, options=bp.ReleaseOptions(clip=True))
    text = json.dumps(release.to_dict(level=0.9), allow_nan=False)  # strict JSON: no infinity anywhere
    back = Release.from_dict(json.loads(text))
    assert np.array_equal(back.value, release.value) and back.postprocessed == ("clip",)
    np.testing.assert_array_equal(back.noise_cov, release.noise_cov)
    np.testing.assert_array_equal(back.noise_scale, release.noise_scale)
    np.testing.assert_array_equal(back.valid_range, release.valid_range)
    np.testing.assert_array_equal(back.interval(0.9), release.interval(0.9))
    assert back.guarantee == release.guarantee and back.component_names == release.component_names
    unbounded = APGM(_calibration(), epsilon=1.0, delta=1e-5).release_value(np.zeros(2), rng=0)
    d = json.loads(json.dumps(unbounded.to_dict(), allow_nan=False))
    assert d["valid_range"] == [[None, None], [None, None]]
    assert np.all(np.isinf(Release.from_dict(d).valid_range))
    with pytest.raises(bp.BayesPrivError, match="guarantee"):
        Release.from_dict({"value": [1.0]})


def test_release_without_a_noise_law_says_what_is_missing():
    r = Release(np.array([1.0]), Guarantee(1.0, 0.0, 1.0), "M", False)
    assert str(r) == "[0] = 1"
    with pytest.raises(bp.BayesPrivError, match="noise=None"):
        r.interval(0.9)
    with pytest.raises(bp.BayesPrivError, match="valid_range=None"):
        r.clipped()
