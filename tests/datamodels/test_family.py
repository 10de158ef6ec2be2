"""DataModelFamily: Θ as a set; calibrate takes the supremum and names the worst θ.

Family used throughout: (x, y) records N(0, [[1, ρ], [ρ, 1]]), n records, the
secret fixes mean(x) = a or b, the query is mean(y). Then exactly
E[mean y | mean x = a] = ρa and Var = (1 − ρ²)/n, so the sensitivity ρ|a − b|
is largest and the variance smallest at the largest ρ: the worst θ is known in
closed form.
"""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.calibration import ExecutionOptions
from bayespriv.calibration.moments import bonferroni_z

N = 30
RHOS = [0.2, 0.5, 0.8]
A, B = -1.0, 2.0


def _builder(rho: float) -> bp.GaussianDataModel:
    return bp.GaussianDataModel([0.0, 0.0], [[1.0, rho], [rho, 1.0]], ["x", "y"], N)


def _pair() -> bp.SecretPair:
    return bp.SecretPair(bp.DatasetSecret.mean("x", A), bp.DatasetSecret.mean("x", B))


def _family(**kw) -> bp.DataModelFamily:
    return bp.DataModelFamily(_builder, {"rho": RHOS}, **kw)


def test_grid_is_the_cartesian_product_and_members_carry_theta():
    fam = bp.DataModelFamily(lambda rho, s: _builder(rho * s), {"rho": [0.1, 0.2], "s": [1.0, 2.0, 3.0]})
    assert len(fam) == 6
    assert fam.thetas[0] == {"rho": 0.1, "s": 1.0} and fam.thetas[-1] == {"rho": 0.2, "s": 3.0}
    assert [m.theta for m in fam.members] == list(fam.thetas)
    assert fam.columns == ("x", "y") and fam.n_records == N


def test_family_calibration_returns_the_closed_form_worst_case_and_names_it():
    """α = 1e-4: |Δ̂ − Δ| within z·sqrt(2σ²/N_draws) per member (exact Gaussian),
    and the variance estimate of the worst member within exact χ² bounds;
    Bonferroni over 3 + 2 checks."""
    n_draws = 2000
    cal = bp.calibrate(_family(), _pair(), bp.mean("y"), n_draws=n_draws, rng=5)
    assert cal.is_family and len(cal.family) == 3
    assert cal.worst_theta == {"rho": 0.8}
    alpha = 1e-4 / 5
    z = stats.norm.isf(alpha / 2)
    for member, rho in zip(cal.family, RHOS):
        assert member.theta == {"rho": rho}
        var = (1 - rho**2) / N
        assert abs(member.sensitivity(1) - rho * (B - A)) <= z * np.sqrt(2 * var / n_draws)
    assert cal.sensitivity(1) == max(m.sensitivity(1) for m in cal.family)
    lo, hi = stats.chi2.ppf([alpha / 4, 1 - alpha / 4], n_draws - 1) / (n_draws - 1)
    worst_var = (1 - 0.8**2) / N
    assert lo <= cal.variance()[0] / worst_var <= hi
    # conservative bounds hold for the true worst case
    assert cal.sensitivity(1, bound=True) >= 0.8 * (B - A)
    assert cal.variance(bound=True)[0] <= worst_var
    # the summary lists every (θ, pair)
    assert cal.summary().index.names == ["theta", "pair"] and len(cal.summary()) == 3
    assert "family of 3" in repr(cal) and "rho=0.8" in repr(cal)
    assert cal.diagnostics["family"]["worst_theta"] == {"rho": 0.8}


def test_bonferroni_covers_every_member():
    cal = bp.calibrate(_family(), _pair(), bp.mean("y"), n_draws=200, rng=1)
    single = bp.calibrate(_builder(0.5), _pair(), bp.mean("y"), n_draws=200, rng=1)
    per_member_events = 2 * 1 + 2 * 1
    assert single.z == pytest.approx(bonferroni_z(0.95, per_member_events))
    assert all(m.z == pytest.approx(bonferroni_z(0.95, 3 * per_member_events)) for m in cal.family)


def test_apgm_takes_the_sup_over_theta():
    cal = bp.calibrate(_family(), _pair(), bp.mean("y"), n_draws=500, rng=2)
    fam = bp.mechanisms.APGM(cal, epsilon=0.5, delta=1e-5, accountant="gaussian")
    each = [bp.mechanisms.APGM(m, epsilon=0.5, delta=1e-5, accountant="gaussian").sigma2 for m in cal.family]
    assert fam.sigma2 == pytest.approx(max(each))
    assert fam.worst_theta == cal.family[int(np.argmax(each))].theta
    assert len(fam.pair_table) == 3 and fam.pair_table.index[0].startswith("rho=0.2: ")


def test_broken_family_that_ignores_theta_is_caught():
    """Twin: a builder that drops ρ (always 0.2) cannot produce the closed-form
    worst case; the same α = 1e-4 check as above fails."""
    fam = bp.DataModelFamily(lambda rho: _builder(0.2), {"rho": RHOS})
    cal = bp.calibrate(fam, _pair(), bp.mean("y"), n_draws=2000, rng=5)
    z = stats.norm.isf(1e-4 / 5 / 2)
    var = (1 - 0.8**2) / N
    assert abs(cal.sensitivity(1) - 0.8 * (B - A)) > z * np.sqrt(2 * var / 2000)


def test_box_has_corners_and_interior_and_records_the_assumption():
    fam = bp.DataModelFamily.box(_builder, {"rho": (0.2, 0.8)}, interior=1)
    assert [t["rho"] for t in fam.thetas] == pytest.approx([0.2, 0.5, 0.8])
    cal = bp.calibrate(fam, _pair(), bp.mean("y"), n_draws=200, rng=0)
    assert "extremes_at_grid" in cal.assumptions
    g = bp.mechanisms.ExpM(cal, epsilon=1.0, delta=0.1).guarantee  # a δ 200 draws per member can certify
    assert "extremes_at_grid" in g.assumptions


@pytest.mark.subprocess
def test_identical_numbers_serial_process_pool_and_dask():
    fam = _family()
    kw = dict(n_draws=400, rng=9)
    serial = bp.calibrate(fam, _pair(), bp.mean("y"), execution=ExecutionOptions(chunk_size=100), **kw)
    with ProcessPoolExecutor(2) as pool:
        pooled = bp.calibrate(fam, _pair(), bp.mean("y"), execution=ExecutionOptions(executor=pool, chunk_size=100),
                              **kw)
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dasked = bp.calibrate(fam, _pair(), bp.mean("y"), execution=ExecutionOptions(executor=client, chunk_size=100),
                              **kw)
    for other in (pooled, dasked):
        assert other.worst_theta == serial.worst_theta
        for m_s, m_o in zip(serial.family, other.family):
            np.testing.assert_array_equal(m_s.sample_array, m_o.sample_array)


def test_single_model_seeds_are_unchanged_by_the_family_code():
    """A one-member family uses a θ seed level, a single model does not: both
    are reproducible, and the single model matches draw_query_samples."""
    model = _builder(0.5)
    pair = _pair()
    execution = ExecutionOptions(chunk_size=40)
    cal = bp.calibrate(model, pair, bp.mean("y"), n_draws=100, rng=3, execution=execution)
    raw = bp.calibration.draw_query_samples(model, pair.secrets, bp.mean("y"), n_draws=100, rng=3, execution=execution)
    np.testing.assert_array_equal(cal.sample_array, raw)


def test_family_errors_are_clear():
    with pytest.raises(bp.ValidationError, match="grid"):
        bp.DataModelFamily(_builder, {})
    with pytest.raises(bp.ValidationError, match=r"grid\['rho'\].*non-empty"):
        bp.DataModelFamily(_builder, {"rho": []})
    with pytest.raises(bp.ValidationError, match="list of values"):
        bp.DataModelFamily(_builder, {"rho": 0.5})
    with pytest.raises(bp.ParameterTypeError, match="callable"):
        bp.DataModelFamily(3, {"rho": [0.5]})
    with pytest.raises(bp.ParameterTypeError, match="must return a bayespriv DataModel"):
        _ = bp.DataModelFamily(lambda rho: rho, {"rho": [0.5]}).members
    mixed = bp.DataModelFamily(
        lambda n: bp.GaussianDataModel([0.0, 0.0], np.eye(2), ["x", "y"], n), {"n": [10, 20]})
    with pytest.raises(bp.ValidationError, match="same columns and n_records"):
        _ = mixed.members
    with pytest.raises(bp.ValidationError, match="bounds"):
        bp.DataModelFamily.box(_builder, {"rho": (0.8, 0.2)})
    with pytest.raises(bp.ParameterTypeError, match="executor"):
        bp.calibrate(_family(), _pair(), bp.mean("y"), n_draws=10, rng=0, execution=ExecutionOptions(executor=object()))


def test_family_members_pickle():
    fam = _family()
    clone = pickle.loads(pickle.dumps(fam.members[1]))
    assert clone.theta == {"rho": 0.5}
