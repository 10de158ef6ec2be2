"""Releases on the same data accounted together (``accounting/joint.py`` and the ledger's charge).

Independent computations: the two-release scenario's joint law (A = mean(x) + mean(y), then B = mean(y)) is exactly Gaussian (mean(x) is fixed by the
secret, mean(y) ~ N(0, 8) is common to both releases), so its joint ε at the charged δ is the analytic
Gaussian one at the Mahalanobis distance of the two released means (Balle & Wang 2018, Theorem 8),
solved here with mpmath. Ten releases of one Gaussian query reduce exactly to their precision-weighted
mean (the same closed form). The attack on the sequence uses fresh datasets.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.ledger.joint import JointAccountingError, JointLeakError
from bayespriv.audit import accuracy_bound, sequence_attack

from tests._gaussian_oracles import analytic_epsilon as mp_epsilon

PAIR = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0))
MODEL = bp.GaussianDataModel([0, 0], [[1, 0], [0, 400]], ["x", "y"], n_records=50)
QA = bp.Query(lambda b: (b["x"].mean(axis=1) + b["y"].mean(axis=1))[:, None], ["x", "y"], "x_plus_y",
              output_names=["x_plus_y"])


#: The ``ledger`` fixture (tests/ledger/conftest.py) starts with this budget.
LEDGER_BUDGETS = {"x": (20.0, 0.5)}


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.DataFrame({c: v[0] for c, v in MODEL.sample(None, 1, rng=7).items()})


@functools.cache  # mechanisms are frozen: tests may share them (each builds on 20 000 draws)
def _mechanisms(**kw):
    ma = bp.mechanisms.APGM(bp.calibrate(MODEL, PAIR, QA, n_draws=20_000, rng=1), epsilon=1.0, delta=1e-3, **kw)
    mb = bp.mechanisms.APGM(bp.calibrate(MODEL, PAIR, bp.mean("y"), n_draws=20_000, rng=2), epsilon=1.0, delta=1e-3,
                            **kw)
    return ma, mb


@pytest.mark.slow
def test_b_after_a_is_charged_at_least_the_true_joint_epsilon(ledger, data):
    """The two-release scenario with the default accountant: both mechanisms add noise; the ledger charges B the
    increase of the joint ε, which is at least the exact joint ε of the two noisy releases at δ = 2e-3."""
    ma, mb = _mechanisms()
    ma.release(data, ledger=ledger)
    mb.release(data, ledger=ledger)
    spent_eps, spent_delta = ledger.spent("x")
    sa, sb = float(ma.noise_cov[0, 0]), float(mb.noise_cov[0, 0])
    cov = np.array([[8.0 + sa, 8.0], [8.0, 8.0 + sb]])  # (mean x + mean y + Z_A, mean y + Z_B), mean y ~ N(0, 400/50)
    r = math.sqrt(np.array([1.0, 0.0]) @ np.linalg.solve(cov, [1.0, 0.0]))
    true_eps = mp_epsilon(r, spent_delta)
    assert spent_delta == pytest.approx(2e-3)
    assert spent_eps >= true_eps, (spent_eps, true_eps)
    assert spent_eps <= true_eps * 1.25  # and not wildly more (Monte-Carlo margin of the accountant)
    rows = ledger.releases()
    assert list(rows["composition"]) == ["joint", "joint"]
    assert rows["joint"].iloc[1]["x"]["method"] == "stacked calibration" and rows["joint"].iloc[1]["x"]["releases"] == [1]


@pytest.mark.slow
def test_one_at_a_time_costs_what_the_joint_release_costs(ledger, data):
    """B after A is charged the joint ε of both; its row records the seed of the stacked draws, and JointGaussian
    on the same draws (the two released together as one query) states the same ε. A twin that drops the seed (its
    own draws) differs: the row's seed is what ties the two."""
    ma, mb = _mechanisms()
    ma.release(data, ledger=ledger)
    mb.release(data, ledger=ledger)
    record = ledger.releases()["joint"].iloc[1]["x"]
    stacked = bp.stack(QA, bp.mean("y"))
    together = bp.JointGaussian([ma, mb], bp.calibrate(MODEL, PAIR, stacked, n_draws=20_000, rng=record["seed"]))
    assert together.delta == pytest.approx(ledger.spent("x")[1])
    assert ledger.spent("x")[0] == pytest.approx(together.epsilon, abs=1e-8)  # units of 1e-9 ε, rounded up
    other = bp.JointGaussian([ma, mb], bp.calibrate(MODEL, PAIR, stacked, n_draws=20_000, rng=record["seed"] + 1))
    assert other.epsilon != pytest.approx(together.epsilon, abs=1e-8)


def test_noiseless_releases_that_reveal_the_secret_are_refused_and_the_summing_twin_is_caught(ledger, data):
    """This module's A and B on the Gaussian route (zero noise, each 'established'): B after A is refused before any
    noise; declared independent (what a summing ledger does) it is charged ε = 2, and the likelihood-ratio attack
    on the pair names the secret far more often than ε = 2 allows."""
    ma, mb = _mechanisms(accountant="gaussian")
    assert not np.any(ma.noise_cov) and not np.any(mb.noise_cov)
    ma.release(data, ledger=ledger)
    before = ledger.spent("x")
    with pytest.raises(JointLeakError, match="together reveal the secret"):
        mb.release(data, ledger=ledger, rng=3)
    assert ledger.spent("x") == before
    mb.release(data, ledger=ledger, options=bp.ReleaseOptions(independent=True))
    assert ledger.spent("x") == pytest.approx((2.0, 2e-3))
    assert "declared_independent" in ledger.releases()["assumptions"].iloc[-1]
    res = sequence_attack([ma, mb], MODEL, PAIR, claimed=ledger.spent("x"), n_trials=400, n_draws=400, rng=4)
    assert res.accuracy > accuracy_bound(2.0, 2e-3) + 0.05  # 1.000 against 0.881: the sum is caught
    assert res.contradicts_claim


@pytest.mark.slow
def test_accepted_sequences_stay_within_what_the_ledger_charged(ledger, data):
    """Whatever the ledger grants on a dataset, the attack on the whole sequence stays within its total."""
    ma, mb = _mechanisms()
    ma.release(data, ledger=ledger)
    mb.release(data, ledger=ledger)
    res = sequence_attack([ma, mb], MODEL, PAIR, claimed=ledger.spent("x"), n_trials=2000, n_draws=2000, rng=5)
    assert not res.contradicts_claim


def test_ten_releases_of_one_gaussian_query_are_charged_the_exact_joint_guarantee(tmp_path):
    """Exact moments: F | a ~ N(0, 4), F | b ~ N(1, 4); APGM's noise σ² each. Ten releases reveal what their mean
    does: F + Z̄, Z̄ ~ N(0, σ²/10); the ledger's total must be that exact ε at δ = 10 δ₁ (to the search's 1e-3),
    less than the sum of ten ε = 1 because the query's own variance masks the secret."""
    a, b = bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 1.0)
    cal = bp.Calibration.from_moments({a: [0.0], b: [1.0]}, {a: [[4.0]], b: [[4.0]]}, bp.SecretPair(a, b),
                                      query=bp.mean("v"), n_records=5)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-4)
    sigma2 = float(mech.noise_cov[0, 0])
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("m", 100.0, 0.5)
    for _ in range(10):
        mech.release_value([0.3], ledger=led, dataset_name="survey-2026")
    spent_eps, spent_delta = led.spent("m")
    joint = [j["m"] for j in led.releases()["joint"]]
    for m, row in enumerate(joint[1:], start=2):  # after m releases: F + Z̄ with Z̄ ~ N(0, σ²/m), at δ = m δ₁
        exact = mp_epsilon(1.0 / math.sqrt(4.0 + sigma2 / m), m * 1e-4)
        assert exact <= row["epsilon"] <= exact * (1 + 2e-3) + 1e-8, m
        assert row["method"] == "same query (combined noise)"
    assert spent_delta == pytest.approx(1e-3)
    # the charges never go back: the total is the largest joint ε reached (it falls again as δ grows)
    assert spent_eps == pytest.approx(max(j["epsilon"] for j in joint), abs=1e-8)  # units round up per charge
    assert spent_eps < 10 * 1.0 / 3  # the sum would be 10


def test_releases_on_other_datasets_are_not_accounted_together(tmp_path):
    a, b = bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 1.0)
    cal = bp.Calibration.from_moments({a: [0.0], b: [1.0]}, {a: [[4.0]], b: [[4.0]]}, bp.SecretPair(a, b), n_records=5)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-4)
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("m", 100.0, 0.5)
    for name in ("a", "b", "c"):
        mech.release_value([0.3], ledger=led, dataset_name=name)
    assert led.spent("m") == pytest.approx((3.0, 3e-4))
    assert [j["m"]["method"] for j in led.releases()["joint"]] == ["first"] * 3


def test_dp_mechanisms_add_by_theorem(tmp_path):
    cal = bp.calibrate(MODEL, PAIR, bp.mean("y", bounds=(-100.0, 100.0)), n_draws=300, rng=1)
    mech = bp.mechanisms.GroupDP(cal, epsilon=0.5, noise="laplace")
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("x", 10.0)
    for _ in range(3):
        mech.release_value([1.0], ledger=led)
    rows = led.releases()
    assert led.spent("x") == pytest.approx((1.5, 0.0))
    assert list(rows["composition"]) == ["dp"] * 3 and all(j is None for j in rows["joint"])
    assert all("sequential_composition" not in a for a in rows["assumptions"])


@pytest.mark.slow
def test_without_the_model_different_queries_are_refused_unless_declared_independent(tmp_path, data):
    ma, mb = _mechanisms()
    paths = [ma.calibration.to_netcdf(tmp_path / "a.nc"), mb.calibration.to_netcdf(tmp_path / "b.nc")]
    la = bp.mechanisms.APGM(bp.load_calibration(paths[0], query=QA), epsilon=1.0, delta=1e-3)
    lb = bp.mechanisms.APGM(bp.load_calibration(paths[1], query=bp.mean("y")), epsilon=1.0, delta=1e-3)
    led = bp.Ledger(tmp_path / "l.sqlite")
    led.set_budget("x", 20.0, 0.5)
    la.release(data, ledger=led)
    with pytest.raises(JointAccountingError, match="cannot be formed.*independent=True"):
        lb.release(data, ledger=led)
    assert len(led.releases()) == 1
    lb.release(data, ledger=led, options=bp.ReleaseOptions(independent=True))
    assert led.releases()["composition"].iloc[-1] == "independent"
    assert led.spent("x") == pytest.approx((2.0, 2e-3))


@pytest.mark.slow
def test_joint_gaussian_reports_a_leak_as_such():
    """The two-release scenario's mechanisms on the papers' route (no noise): JointGaussian on the stacked calibration says
    that the two releases together reveal the secret, instead of failing on an infinite distance."""
    ma, mb = _mechanisms(accountant="gaussian")
    stacked = bp.calibrate(MODEL, PAIR, bp.stack(QA, bp.mean("y")), n_draws=4000, rng=3)
    with pytest.raises(JointLeakError, match=r"together reveal the secret: joint ε = ∞ at δ = 0.002"):
        bp.JointGaussian([ma, mb], stacked)
    na, nb = _mechanisms()  # with the accountant's noise: a finite joint ε, at least the exact one
    few = bp.calibrate(MODEL, PAIR, bp.stack(QA, bp.mean("y")), n_draws=2000, rng=3)
    with pytest.raises(JointLeakError, match=r"the draws cannot establish it: .* calibrate with more draws"):
        bp.JointGaussian([na, nb], few)  # 2 000 draws: the estimate meets δ, its upper bound cannot
    stacked = bp.calibrate(MODEL, PAIR, bp.stack(QA, bp.mean("y")), n_draws=20_000, rng=3)
    joint = bp.JointGaussian([na, nb], stacked)
    sa, sb = float(na.noise_cov[0, 0]), float(nb.noise_cov[0, 0])
    cov = np.array([[8.0 + sa, 8.0], [8.0, 8.0 + sb]])
    r = math.sqrt(np.array([1.0, 0.0]) @ np.linalg.solve(cov, [1.0, 0.0]))
    assert mp_epsilon(r, 2e-3) <= joint.epsilon < joint.epsilon_sum * 10


@pytest.mark.slow
def test_planned_releases_cost_less_noise_than_separate_ones():
    """The hospital's average weight and blood pressure: planned together at (ε, δ) = (1, 1e-3) they need less total
    noise than each released alone at (0.5, 5e-4) (the split the sum of two releases would need)."""
    from bayespriv.models import hospital as H

    weight, blood = H.QUERIES["average weight"], H.QUERIES["average blood pressure"]
    pairs = H.secret_pairs()[::24]  # six of the 144 pairs, spread over the grid of secrets (the ratio is ~0.27 either way)
    plan = bp.ledger.plan_releases(H.hospital_model(), pairs, [weight, blood], epsilon=1.0, delta=1e-3,
                                       n_draws=40_000, rng=11)
    table = plan.summary()
    assert (plan.guarantee.epsilon, plan.guarantee.delta) == (1.0, 1e-3) and plan.guarantee.established
    assert table.loc["total E‖noise‖²", "variance ratio"] < 0.8
    assert list(table.index[:2]) == [weight.name, blood.name]


def _two_node_quilts():
    """i → q, both binary parameters; P(i) uniform, P(q=0 | i=0) = 0.8, P(q=0 | i=1) = 0.4: the quilts of i
    are ∅ (N = {i, q}, e = 0) and {q} (N = {i}, e = max_q log P(q | i=a) / P(q | i=b) = ln 3)."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    from bayespriv.networks.influence import ParameterNetwork
    from bayespriv.networks.quilts import calibrate_quilts

    bn = DiscreteBayesianNetwork([("i", "q")])
    bn.add_cpds(TabularCPD("i", 2, [[0.5], [0.5]]), TabularCPD("q", 2, [[0.8, 0.4], [0.2, 0.6]], ["i"], [2]))
    net = ParameterNetwork(bn, columns={"i": "i", "q": "q"})
    return calibrate_quilts(net, "i", bp.count(lambda b: b["q"] > 0, "q", name="q>0"), n_records=5)


def test_markov_quilt_releases_add_only_over_a_shared_valid_quilt(tmp_path):
    from bayespriv.mechanisms.quilt import APMQM

    cal = _two_node_quilts()
    # Independent computation: max over q of P(q | i=a) / P(q | i=b) — e({q}) = ln(0.6/0.2) = ln 3; quilt ∅: e = 0.
    e_q = math.log(3.0)
    noisy, free = APMQM(cal, epsilon=1.0), APMQM(cal, epsilon=1.2)
    assert noisy.valid_quilts() == {"0|i": {"[]": 0.0}}  # b = 5 = Δ/ε; {q} has e > 1
    assert free.valid_quilts().keys() == {"0|i"} and free.valid_quilts()["0|i"] == pytest.approx({'["q"]': e_q})
    led = bp.Ledger(tmp_path / "b.sqlite")
    led.set_budget("i", epsilon=10)
    df = pd.DataFrame({"q": [0, 1, 1, 0, 1], "i": [0] * 5})
    noisy.release(df, ledger=led)
    noisy.release(df, ledger=led)  # the same quilt ∅ serves both: linear composition, charges add
    assert led.spent("i")[0] == pytest.approx(2.0)
    with pytest.raises(JointAccountingError, match=r"none is shared with release 1 for \['0\|i'\].*nothing was spent"):
        free.release(df, ledger=led)  # its only valid quilt {q} is not valid for the noisy releases
    assert led.spent("i")[0] == pytest.approx(2.0)
    free.release(df, ledger=led, options=bp.ReleaseOptions(independent=True))
    rows = led.releases()
    assert led.spent("i")[0] == pytest.approx(3.2) and list(rows["composition"]) == ["quilt", "quilt", "independent"]
    # Twin: a ledger that summed any two quilt releases would have granted the noiseless one.
    assert free.valid_quilts()["0|i"].keys().isdisjoint(noisy.valid_quilts()["0|i"])
