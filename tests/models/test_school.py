"""The school of Example 1 (Attribute Privacy, FAccT 2022, §5.1) against its closed forms.

Exact checks: the max-influences computed by variable elimination equal the
hand values of the model's docstring (ln 2, ln 6, ln 12, ln 1.2, ln 7.2), and
APMQM's noise scales equal :func:`bayespriv.models.school.noise_scale` on a grid of ε
(including both sides of each threshold).

Statistical checks, each with a false-failure probability stated here and
holding for any seed (the seed is fixed for determinism only):

* counts given φ are Binomial(n, p) with p from :func:`expected_count`; the
  mean of N draws is within z·sqrt(np(1−p)/N) of np, z = Φ⁻¹(1 − a/2), and
  the parameter draws match the CPD, each frequency within z·sqrt(p(1−p)/N);
  a = α/m over the m checks, α = 1e-6;
* the empirical privacy check (:func:`loss_lower_bound`: one-sided
  Clopper–Pearson bounds per bin at a' = α/(4·bins), α = 1e-4): for a private
  release no bin's log-ratio lower bound exceeds the bound.

The noiseless release of the first count must even stay within e(height |
income) = ln 1.2 ≈ 0.18 (with A ∩ N = ∅ the loss is at most the quilt's
max-influence). A half-noise twin is *not* caught on the school: under the
two incomes the counts' distributions overlap heavily, so even half the noise
stays far within ε; the twin is caught on a tight setup in
``tests/mechanisms/test_quilt.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta as beta_dist
from scipy.stats import norm

import bayespriv as bp
from bayespriv.networks.influence import max_influence
from bayespriv.networks.quilts import calibrate_quilts, markov_quilts
from bayespriv.mechanisms.quilt import APMQM
from bayespriv.models import school as S

EPS_GRID = (0.1, 0.18, 0.19, 0.5, 0.69, 0.7, 1.0, 1.97, 1.98, 3.0)


@pytest.fixture(scope="module")
def cals():
    return {key: S.calibration(key) for key in S.QUERIES}


def test_network_structure_and_cpds():
    bn = S.network()
    assert set(bn.edges()) == set(S.EDGES) and set(bn.nodes()) == set(S.NODES)
    for node, (parents, table) in S.CPDS.items():
        np.testing.assert_allclose(table.sum(axis=-1), 1.0, rtol=1e-12)
        assert table.shape == tuple(len(S.VALUES[v]) for v in (*parents, node))
    # weight: base(height) x tilt(gender), renormalised — one entry by hand:
    # gender 0.4, height 64: (0.6, 0.3, 0.15) / 1.05
    np.testing.assert_allclose(S.CPDS["weight"][1][0, 0], np.array([0.6, 0.3, 0.15]) / 1.05)


def test_max_influences_equal_the_hand_values():
    bn = S.network()
    for quilt, want in S.INFLUENCE.items():
        assert max_influence(bn, quilt, "income").value == pytest.approx(want, rel=1e-12, abs=1e-15)
    r = max_influence(bn, {"gender"}, "income")
    assert r.pair in {(0.2, 0.8), (0.8, 0.2)} and r.assignment["gender"] in {0.4, 0.6}


def test_example1_quilt_is_a_markov_quilt_of_income():
    assert S.EXAMPLE1_QUILT in markov_quilts(S.network(), "income")
    assert S.EXAMPLE1_QUILT in markov_quilts(S.parameter_network(), "income")


def test_the_network_is_declared_over_parameters(cals):
    """APMQM takes the network as one over parameters (φ_j governs column j); the bare pgmpy network is refused."""
    net = S.parameter_network()
    assert dict(net.columns) == {v: (v,) for v in S.NODES} and set(S.COLUMNS) == set(S.PARAMETER_COLUMNS.values())
    assert all(tuple(net.networks[0].states[v]) == S.VALUES[v] for v in S.NODES)  # states = parameter values
    assert dict(cals["tall"].columns) == dict(net.columns) and cals["tall"].assumptions == ("parameters_bayes_net",)
    with pytest.raises(bp.ParameterTypeError, match="network must be a ParameterNetwork"):
        calibrate_quilts(S.network(), "income", S.QUERIES["tall"], n_records=S.N_RECORDS)


def test_first_count_released_without_noise(cals):
    """Example 1: A = {height}; with Q = {gender}, A ∩ N = ∅, so no noise."""
    cal = cals["tall"]
    paper = cal.evaluate("income", {"gender"})
    assert paper.quilt == S.EXAMPLE1_QUILT
    assert paper.sensitivity == 0.0 and paper.max_influence == pytest.approx(math.log(2.0))
    mech = APMQM(cal, epsilon=1.0)
    assert mech.scale == 0.0 and mech.noiseless
    assert mech.chosen["income"].quilt.quilt == {"height"}  # zero-score quilt of least e (ln 1.2)
    forced = APMQM(cal, epsilon=1.0, quilts={"income": S.EXAMPLE1_QUILT})
    assert forced.scale == 0.0 and forced.chosen["income"].quilt == S.EXAMPLE1_QUILT
    df = S.sample_school(11)
    assert mech.release(df).value.tolist() == [float((df["height"] > 66).sum())]


def test_second_count_as_algorithm_2_and_as_example_1(cals):
    """A = {height, sat}: Algorithm 2 takes the trivial quilt (n/ε) at ε = 1; the paper's quilt gives
    Δ_{s}F/(ε − ln 2) with Δ_{s}F = n (the erratum explained in models/school.py)."""
    cal = cals["tall_high_sat"]
    n = S.N_RECORDS
    assert cal.evaluate("income", {"gender"}).sensitivity == n  # Δ_{s}F = n for a count
    assert cal.sensitivity == n  # Δ_{h,s}F = n too
    mech = APMQM(cal, epsilon=1.0)
    assert mech.scale == pytest.approx(n / 1.0) and mech.chosen["income"].quilt.quilt == frozenset()
    paper = APMQM(cal, epsilon=1.0, quilts={"income": {"gender"}})
    assert paper.scale == pytest.approx(n / (1.0 - math.log(2.0)), rel=1e-12)
    assert paper.chosen["income"].quilt == S.EXAMPLE1_QUILT
    assert APMQM(cal, epsilon=2.0).chosen["income"].quilt.quilt == {"height", "sat"}


@pytest.mark.parametrize("key", list(S.QUERIES))
def test_noise_scales_equal_the_closed_forms(cals, key):
    for eps in EPS_GRID:
        assert APMQM(cals[key], epsilon=eps).scale == pytest.approx(S.noise_scale(key, eps), rel=1e-12)
        if eps > math.log(2.0):
            forced = APMQM(cals[key], epsilon=eps, quilts={"income": {"gender"}})
            assert forced.scale == pytest.approx(S.noise_scale(key, eps, paper_quilt=True), rel=1e-12)
    with pytest.raises(bp.ValidationError, match=r"quilts\['income'\] must have a max-influence e < epsilon=0.5"):
        APMQM(cals[key], epsilon=0.5, quilts={"income": {"gender"}})
    with pytest.raises(bp.ValidationError, match="epsilon must be > ln 2"):
        S.noise_scale(key, 0.5, paper_quilt=True)


def test_counts_and_parameter_draws_match_the_closed_forms():
    alpha, n_draws = 1e-6, 4000
    rng = np.random.default_rng(5)
    params = {"income": 0.5, "gender": 0.5, "sat": 1300.0, "height": 66.0, "weight": 150.0}
    batch = S.sample_batch(rng, {k: np.full(n_draws, v) for k, v in params.items()}, S.N_RECORDS)
    assert batch["height"].shape == (n_draws, S.N_RECORDS)
    checks = []
    for key, query in S.QUERIES.items():
        f = query(batch)[:, 0]
        mu = S.expected_count(key, params)
        p = mu / S.N_RECORDS
        checks.append((f.mean(), mu, math.sqrt(S.N_RECORDS * p * (1 - p) / n_draws)))
    draws = S.sample_parameters(rng, n_draws, income=0.8)
    for node in ("gender", "sat"):
        table = S.CPDS[node][1][S.VALUES["income"].index(0.8)]
        for value, p in zip(S.VALUES[node], table):
            checks.append(((draws[node] == value).mean(), p, math.sqrt(p * (1 - p) / n_draws)))
    z = norm.isf(alpha / len(checks) / 2)
    for got, want, se in checks:
        assert abs(got - want) <= z * se, (got, want, se)
    assert np.all(draws["income"] == 0.8)


def loss_lower_bound(xa: np.ndarray, xb: np.ndarray, edges: np.ndarray, alpha: float) -> float:
    """Largest lower confidence bound of |log P(B | a)/P(B | b)| over bins B (see the module docstring)."""
    ca, _ = np.histogram(xa, edges)
    cb, _ = np.histogram(xb, edges)
    a1 = alpha / (4 * len(ca))
    best = -np.inf
    for c1, n1, c2, n2 in ((ca, len(xa), cb, len(xb)), (cb, len(xb), ca, len(xa))):
        lower = np.where(c1 > 0, beta_dist.ppf(a1, np.maximum(c1, 1), n1 - c1 + 1), 0.0)
        upper = np.where(c2 < n2, beta_dist.ppf(1 - a1, c2 + 1, np.maximum(n2 - c2, 1)), 1.0)
        with np.errstate(divide="ignore"):
            best = max(best, float(np.max(np.log(lower) - np.log(upper))))
    return best


def releases(mech: APMQM, income: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n independent schools with φ_income fixed, their answers, plus the mechanism's Laplace noise."""
    params = S.sample_parameters(rng, n, income=income)
    f = mech.calibration.query(S.sample_batch(rng, params, S.N_RECORDS))[:, 0]
    return f + mech.scale * rng.laplace(size=n)


def test_empirical_privacy_of_both_releases(cals):
    alpha, n = 1e-4, 20_000
    rng = np.random.default_rng(1)
    quiet = APMQM(cals["tall"], epsilon=1.0)
    counts = np.arange(-0.5, S.N_RECORDS + 1.0, 5.0)
    lb = loss_lower_bound(releases(quiet, 0.2, n, rng), releases(quiet, 0.8, n, rng), counts, alpha)
    assert lb <= math.log(1.2)  # no noise: the loss is at most e(height | income)
    noisy = APMQM(cals["tall_high_sat"], epsilon=1.0)
    edges = np.array([-np.inf, -300, -150, -75, -25, 0, 25, 50, 75, 100, 150, 300, np.inf])
    lb = loss_lower_bound(releases(noisy, 0.2, n, rng), releases(noisy, 0.8, n, rng), edges, alpha)
    assert lb <= 1.0


def test_bad_input():
    with pytest.raises(bp.ValidationError, match="query must be one of"):
        S.noise_scale("tallest", 1.0)
    with pytest.raises(bp.ValidationError, match="income must be one of"):
        S.sample_parameters(0, 3, income=0.3)
    with pytest.raises(bp.ValidationError, match="parameters must be a value for every node"):
        S.sample_batch(0, {"income": 0.2}, 10)
    df = S.sample_school(0, 7)
    assert isinstance(df, pd.DataFrame) and df.shape == (7, 5) and set(df["gender"]) <= {"female", "male"}
